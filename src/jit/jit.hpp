#pragma once
// The JIT: NVRTC compiles a tiny generated translation unit that instantiates one header-only kernel
// for one (config, bits, dtype, group) and one GPU architecture; cubins are cached in memory and on disk.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace lutmm::jit {

struct CompileRequest {
  std::string source;        // the generated .cu text; may #include any embedded device header
  std::string kernel_name;   // an extern "C" __global__ function defined in source
  int arch = 80;             // compute capability as 80, 86, 90, ...
  bool arch_specific = false;  // sm_90a-style target (wgmma, setmaxnreg)
  std::vector<std::string> extra_options;
};

struct KernelResources {
  int registers = -1;
  int spill_store_bytes = -1;  // from ptxas' report; -1 when not reported
  int spill_load_bytes = -1;
  int stack_frame_bytes = -1;
  int static_shared_bytes = -1;  // "N bytes smem" of ptxas' report (0 when it names none); -1 when not reported
  // ptxas' advisory "(C75xx) Potential Performance Loss: wgmma.mma_async instructions are serialized ..." for
  // this function: it then waits for every wgmma before the next (~20% slower at M = 64, docs/NOTES.md v1.26)
  bool wgmma_serialized = false;
};

struct CompiledKernel {
  // The cubin, or, when is_ptx, NUL-terminated PTX text that the driver compiles at load time (what NVRTC
  // gives for a GPU newer than it knows: see nvrtc_target). LoadedKernel::load takes either.
  std::vector<char> cubin;
  bool is_ptx = false;
  std::string target;          // what NVRTC built: "sm_80", "sm_90a", or "compute_121" when is_ptx
  std::string log;             // NVRTC + ptxas log (ptxas -v is always on)
  KernelResources resources;
  double compile_ms = 0;       // 0 when it came from a cache
  bool from_disk_cache = false;
  bool from_memory_cache = false;
};

std::string nvrtc_version();                       // "13.0"
std::vector<int> nvrtc_supported_archs();           // e.g. 75 80 86 ... 121
std::string cache_directory();                      // $LUTMM_CACHE_DIR or ~/.cache/lutmm (created on demand)
std::string cache_key(const CompileRequest& r);     // hex hash of source, every embedded header, options, NVRTC version
KernelResources parse_ptxas_report(const std::string& log);
// The same for one entry function of a log that reports several (ptxas reports every kernel of a module);
// the one-argument form takes the largest value of each field over all entries.
KernelResources parse_ptxas_report(const std::string& log, const std::string& kernel_name);

// The --gpu-architecture value compile() uses for (arch, arch_specific): sm_<arch>[a] when NVRTC supports
// arch; else the newest supported arch s < arch: sm_<s> when s has the same major (a cubin for sm_XY runs on
// every X.z GPU with z >= Y), compute_<s> PTX for a newer major (the driver JITs it on load). Throws Error
// for an arch older than NVRTC supports, and for arch_specific with an arch NVRTC lacks (sm_XYa code runs
// on exactly X.Y, so there is nothing to fall back to).
std::string nvrtc_target(int arch, bool arch_specific);

// Compiles with NVRTC (no cache). Throws lutmm::Error carrying the NVRTC log on failure.
CompiledKernel compile(const CompileRequest& r);
// The cached path: memory, then disk (atomic temp+rename; a corrupt file is rebuilt), then compile.
CompiledKernel compile_cached(const CompileRequest& r);
// Forgets the in-memory cubins (not the disk cache, not loaded kernels): for tests of the disk path.
void clear_memory_cache();

// Launch attributes beyond grid, block and shared memory (cuLaunchKernelEx), sm_90+ features both:
struct LaunchAttributes {
  // programmatic dependent launch: the kernel may begin while the stream's previous kernel drains, and
  // must wait for it (griddepcontrol.wait) before touching memory that kernel may write
  bool overlap_previous = false;
  // thread-block clusters of cluster_x x 1 x cluster_z blocks (1 x 1 x 1: no clusters); gridDim.x and z
  // must be multiples
  unsigned int cluster_x = 1;
  unsigned int cluster_z = 1;
};

// Encodes a TMA tensor map (CUtensorMap: 128 bytes, 64-byte aligned, into `map`) of a row-major
// [rows][cols] matrix of 16-bit elements at `base`, read in boxes of box_rows x box_cols with box_cols = 64
// (one 128-byte row, the 128-byte swizzle that wgmma reads); elements outside the matrix read as zero.
void encode_tensor_map_2d_u16(void* map, const void* base, uint64_t cols, uint64_t rows, uint32_t box_cols,
                              uint32_t box_rows);

// A kernel loaded into the current CUDA context through the driver API (entry points resolved at run
// time through cudart, so the library loads and its CPU parts work on machines without a driver).
class LoadedKernel {
 public:
  LoadedKernel() = default;
  LoadedKernel(const LoadedKernel&) = delete;  // owns the library
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  // Loads a cubin or NUL-terminated PTX (CompiledKernel::cubin either way) as a context-independent library
  // (cuLibraryLoadData), initialising the CUDA runtime first: it launches in whatever context the launch's
  // stream or the calling thread has (the primary one, one of the caller's own, a green context). Throws Error
  // with the CUDA error string.
  static std::shared_ptr<LoadedKernel> load(const std::vector<char>& cubin, const std::string& kernel_name);
  ~LoadedKernel();
  // Sets the dynamic shared-memory limit once (cudaFuncAttributeMaxDynamicSharedMemorySize equivalent);
  // asking again for the same or fewer bytes costs nothing. Thread-safe.
  void set_max_dynamic_shared_memory(int bytes);
  // Blocks of block_threads threads and shared_bytes of dynamic shared memory one SM holds at once (its
  // registers, shared memory and thread limits; cuOccupancyMaxActiveBlocksPerMultiprocessor).
  int max_active_blocks_per_sm(int block_threads, int shared_bytes) const;
  // How many clusters of 1 x 1 x cluster_z blocks the GPU holds at once (a cluster's blocks share a GPC, so
  // this can be less than the blocks per SM times the SMs over cluster_z).
  int max_active_clusters(dim3 block, int shared_bytes, unsigned int cluster_z) const;
  void launch(dim3 grid, dim3 block, int shared_bytes, cudaStream_t stream, void** args,
              const LaunchAttributes& attributes = {}) const;
  const std::string& name() const { return name_; }

 private:
  // The kernel as the launch and occupancy calls take it: the library kernel cast to CUfunction (documented for
  // them; they then act on the stream's or the current context).
  CUfunc_st* function() const { return static_cast<CUfunc_st*>(kernel_); }
  void* library_ = nullptr;  // CUlibrary
  void* kernel_ = nullptr;   // CUkernel
  std::string name_;
  std::atomic<int> max_dynamic_smem_set_{0};
  std::mutex smem_mutex_;  // serialises raising the limit, so it only ever grows
};

// compile_cached + load, memoised per (cache key, device).
std::shared_ptr<LoadedKernel> get_kernel(const CompileRequest& r);

// The driver function `symbol` as of driver ABI `abi` (cudaTypedefs.h: PFN_<symbol>_v<abi>), through cudart's
// entry points so that nothing links libcuda; nullptr where this driver has none (or there is no driver), with
// the reason in *why when given. Never throws.
void* driver_entry_point(const char* symbol, unsigned int abi, std::string* why = nullptr);

}  // namespace lutmm::jit
