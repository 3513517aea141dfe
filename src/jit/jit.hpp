#pragma once
// The JIT: NVRTC compiles a tiny generated translation unit that instantiates one header-only kernel
// for one (config, bits, dtype, group) and one GPU architecture; cubins are cached in memory and on disk.
#include <cstdint>
#include <memory>
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
};

struct CompiledKernel {
  std::vector<char> cubin;
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

// Compiles with NVRTC (no cache). Throws lutmm::Error carrying the NVRTC log on failure.
CompiledKernel compile(const CompileRequest& r);
// The cached path: memory, then disk (atomic temp+rename; a corrupt file is rebuilt), then compile.
CompiledKernel compile_cached(const CompileRequest& r);

// A kernel loaded into the current CUDA context through the driver API (entry points resolved at run
// time through cudart, so the library loads and its CPU parts work on machines without a driver).
class LoadedKernel {
 public:
  LoadedKernel() = default;
  static std::shared_ptr<LoadedKernel> load(const std::vector<char>& cubin, const std::string& kernel_name);
  ~LoadedKernel();
  // Sets the dynamic shared-memory limit once (cudaFuncAttributeMaxDynamicSharedMemorySize equivalent).
  void set_max_dynamic_shared_memory(int bytes);
  void launch(dim3 grid, dim3 block, int shared_bytes, cudaStream_t stream, void** args) const;
  const std::string& name() const { return name_; }

 private:
  void* module_ = nullptr;    // CUmodule
  void* function_ = nullptr;  // CUfunction
  std::string name_;
  int max_dynamic_smem_set_ = 0;
};

// compile_cached + load, memoised per (cache key, device).
std::shared_ptr<LoadedKernel> get_kernel(const CompileRequest& r);

}  // namespace lutmm::jit
