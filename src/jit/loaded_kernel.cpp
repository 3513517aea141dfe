// Module loading and launches through the driver API. libcuda is never linked: its entry points are
// resolved at run time through cudart (cudaGetDriverEntryPointByVersion), so lutmm loads, and everything
// but this file works, on machines without a driver. <cuda.h> is included for its types only.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <mutex>

#include "jit/jit.hpp"
#include "lutmm/error.hpp"

namespace lutmm::jit {

namespace {

// The driver ABI versions these signatures belong to (cudaTypedefs.h: PFN_cuLibraryLoadData_v12000, ...);
// asking for the 12.0 ABI pins each symbol to the signature declared here on newer drivers too.
constexpr unsigned int kDriverAbi = 12000;

struct DriverApi {
  CUresult (*library_load_data)(CUlibrary*, const void*, CUjit_option*, void**, unsigned int, CUlibraryOption*, void**,
                                unsigned int) = nullptr;
  CUresult (*library_get_kernel)(CUkernel*, CUlibrary, const char*) = nullptr;
  CUresult (*library_unload)(CUlibrary) = nullptr;
  CUresult (*kernel_set_attribute)(CUfunction_attribute, int, CUkernel, CUdevice) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*occupancy_max_active_blocks)(int*, CUfunction, int, size_t) = nullptr;
  CUresult (*occupancy_max_active_clusters)(int*, CUfunction, const CUlaunchConfig*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                            unsigned int, unsigned int, CUstream, void**, void**) = nullptr;
  CUresult (*launch_kernel_ex)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*tensor_map_encode_tiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                      const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                      CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = nullptr;
};

// Creates the runtime's primary context of the current device and makes it current on this thread, so the
// driver calls below act on the same context as the caller's cudaMalloc and streams.
void ensure_runtime() {
  const cudaError_t status = cudaFree(nullptr);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw_error(std::string("CUDA runtime initialisation failed: ") + cudaGetErrorString(status));
  }
}

// ensure_runtime once per thread, for the hot paths (launch, get_kernel): a runtime call per launch costs
// more than a flag test. A later cudaSetDevice on the thread binds that device's context itself.
void ensure_runtime_on_this_thread() {
  thread_local bool ready = false;
  if (!ready) {
    ensure_runtime();
    ready = true;
  }
}

template <typename Fn>
void resolve(const char* symbol, Fn& fn) {
  std::string why;
  void* const address = driver_entry_point(symbol, kDriverAbi, &why);
  if (address == nullptr) throw_error(std::string("cannot resolve the CUDA driver function ") + symbol + ": " + why);
  fn = reinterpret_cast<Fn>(address);
}

// Resolved once per process (retried after a failure, e.g. before a driver was usable).
const DriverApi& driver() {
  static DriverApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    ensure_runtime();
    DriverApi a;
    resolve("cuLibraryLoadData", a.library_load_data);
    resolve("cuLibraryGetKernel", a.library_get_kernel);
    resolve("cuLibraryUnload", a.library_unload);
    resolve("cuKernelSetAttribute", a.kernel_set_attribute);
    resolve("cuCtxGetDevice", a.ctx_get_device);
    resolve("cuOccupancyMaxActiveBlocksPerMultiprocessor", a.occupancy_max_active_blocks);
    resolve("cuOccupancyMaxActiveClusters", a.occupancy_max_active_clusters);
    resolve("cuLaunchKernel", a.launch_kernel);
    resolve("cuLaunchKernelEx", a.launch_kernel_ex);
    resolve("cuGetErrorString", a.get_error_string);
    resolve("cuTensorMapEncodeTiled", a.tensor_map_encode_tiled);
    api = a;
  });
  return api;
}

void check(CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (driver().get_error_string(result, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown CUDA error";
  throw_error(what + ": " + text + " (CUresult " + std::to_string(static_cast<int>(result)) + ")");
}

std::string describe(dim3 d) {
  std::string out = "(";
  out.append(std::to_string(d.x)).append(", ").append(std::to_string(d.y)).append(", ");
  return out.append(std::to_string(d.z)).append(")");
}

}  // namespace

void* driver_entry_point(const char* symbol, unsigned int abi, std::string* why) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status = cudaGetDriverEntryPointByVersion(symbol, &address, abi, cudaEnableDefault, &found);
  if (status == cudaSuccess && found == cudaDriverEntryPointSuccess && address != nullptr) return address;
  cudaGetLastError();  // (not to resurface in the caller's next CUDA call)
  if (why != nullptr) *why = status != cudaSuccess ? cudaGetErrorString(status) : "not found in this driver";
  return nullptr;
}

std::shared_ptr<LoadedKernel> LoadedKernel::load(const std::vector<char>& cubin, const std::string& kernel_name) {
  if (cubin.empty()) throw_argument_error("cubin", "a cubin or PTX image", "an empty buffer");
  if (kernel_name.empty()) throw_argument_error("kernel_name", "the name of a kernel in the image", "an empty string");
  ensure_runtime();
  const DriverApi& api = driver();

  // The driver tells a cubin (ELF) from PTX by its content; PTX must end with a NUL.
  const bool elf = cubin.size() >= 4 && std::memcmp(cubin.data(),
                                                    "\x7f"
                                                    "ELF",
                                                    4) == 0;
  std::vector<char> ptx;
  const void* image = cubin.data();
  if (!elf && cubin.back() != '\0') {
    ptx.assign(cubin.begin(), cubin.end());
    ptx.push_back('\0');
    image = ptx.data();
  }
  // The JIT's error log says why PTX did not compile (or a cubin does not fit this GPU).
  char error_log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof error_log))};
  // A library, not a module: a module belongs to the context current when it is loaded, a library's kernels
  // launch in whichever context the stream (or the calling thread) has, so one load serves the primary context,
  // contexts of the caller's own and green contexts (SM partitions) of the device alike.
  CUlibrary library = nullptr;
  const CUresult loaded = api.library_load_data(&library, image, options, values, 2, nullptr, nullptr, 0);
  if (loaded != CUDA_SUCCESS) {
    std::string what = "cannot load the module of kernel '" + kernel_name + "' (" + (elf ? "cubin" : "PTX") + ")";
    if (error_log[0] != '\0') what.append(" [").append(error_log).append("]");
    check(loaded, what);
  }
  auto kernel = std::make_shared<LoadedKernel>();
  kernel->library_ = library;  // unloaded by the destructor from here on, also if the lookup below throws
  kernel->name_ = kernel_name;
  CUkernel handle = nullptr;
  check(api.library_get_kernel(&handle, library, kernel_name.c_str()),
        "kernel '" + kernel_name + "' not found in its module");
  kernel->kernel_ = handle;
  return kernel;
}

LoadedKernel::~LoadedKernel() {
  // Errors are ignored: at process exit the context may already be gone, and a destructor cannot throw.
  if (library_ != nullptr) driver().library_unload(static_cast<CUlibrary>(library_));
}

void LoadedKernel::set_max_dynamic_shared_memory(int bytes) {
  if (bytes < 0) throw_argument_error("bytes", "a dynamic shared memory size >= 0", std::to_string(bytes));
  if (kernel_ == nullptr) throw_error("set_max_dynamic_shared_memory on a LoadedKernel that holds no kernel");
  if (bytes <= max_dynamic_smem_set_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(smem_mutex_);
  if (bytes <= max_dynamic_smem_set_.load(std::memory_order_relaxed)) return;
  // (for the current context's device, in every context of it: a LoadedKernel serves one device)
  ensure_runtime_on_this_thread();
  CUdevice device = 0;
  check(driver().ctx_get_device(&device), "cannot read the current context's device");
  check(driver().kernel_set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes,
                                      static_cast<CUkernel>(kernel_), device),
        "cannot allow " + std::to_string(bytes) + " bytes of dynamic shared memory for kernel '" + name_ + "'");
  max_dynamic_smem_set_.store(bytes, std::memory_order_release);
}

int LoadedKernel::max_active_blocks_per_sm(int block_threads, int shared_bytes) const {
  if (kernel_ == nullptr) throw_error("max_active_blocks_per_sm on a LoadedKernel that holds no kernel");
  ensure_runtime_on_this_thread();
  int blocks = 0;  // (for the current context)
  check(driver().occupancy_max_active_blocks(&blocks, function(), block_threads,
                                             static_cast<size_t>(shared_bytes)),
        "cannot compute the occupancy of kernel '" + name_ + "'");
  return blocks;
}

int LoadedKernel::max_active_clusters(dim3 block, int shared_bytes, unsigned int cluster_z) const {
  if (kernel_ == nullptr) throw_error("max_active_clusters on a LoadedKernel that holds no kernel");
  if (cluster_z == 0) throw_argument_error("cluster_z", "a cluster depth >= 1", "0");
  ensure_runtime_on_this_thread();
  CUlaunchAttribute cluster{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 1;
  cluster.value.clusterDim.y = 1;
  cluster.value.clusterDim.z = cluster_z;
  CUlaunchConfig config{};
  config.gridDimX = 1; config.gridDimY = 1; config.gridDimZ = cluster_z;  // (a multiple of the cluster)
  config.blockDimX = block.x; config.blockDimY = block.y; config.blockDimZ = block.z;
  config.sharedMemBytes = static_cast<unsigned int>(shared_bytes);
  config.attrs = &cluster;
  config.numAttrs = 1;
  int clusters = 0;
  check(driver().occupancy_max_active_clusters(&clusters, function(), &config),
        "cannot compute the cluster occupancy of kernel '" + name_ + "'");
  return clusters;
}

void LoadedKernel::launch(dim3 grid, dim3 block, int shared_bytes, cudaStream_t stream, void** args,
                          const LaunchAttributes& attributes) const {
  if (kernel_ == nullptr) throw_error("launch of a LoadedKernel that holds no kernel");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) throw_argument_error("grid", "every dimension >= 1", describe(grid));
  if (block.x == 0 || block.y == 0 || block.z == 0)
    throw_argument_error("block", "every dimension >= 1", describe(block));
  if (shared_bytes < 0) throw_argument_error("shared_bytes", ">= 0", std::to_string(shared_bytes));
  if (attributes.cluster_z == 0 || grid.z % attributes.cluster_z != 0)
    throw_argument_error("cluster_z", "a cluster depth >= 1 that divides grid.z = " + std::to_string(grid.z),
                         std::to_string(attributes.cluster_z));
  if (attributes.cluster_x == 0 || grid.x % attributes.cluster_x != 0)
    throw_argument_error("cluster_x", "a cluster width >= 1 that divides grid.x = " + std::to_string(grid.x),
                         std::to_string(attributes.cluster_x));
  const bool cluster = attributes.cluster_x > 1 || attributes.cluster_z > 1;
  // A thread that never touched the runtime has no current context; bind the primary one once.
  ensure_runtime_on_this_thread();
  CUresult result;
  if (attributes.overlap_previous || cluster) {
    CUlaunchAttribute list[2] = {};
    unsigned int count = 0;
    if (attributes.overlap_previous) {
      list[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      list[count++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster) {
      list[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      list[count].value.clusterDim.x = attributes.cluster_x;
      list[count].value.clusterDim.y = 1;
      list[count++].value.clusterDim.z = attributes.cluster_z;
    }
    CUlaunchConfig config{};
    config.gridDimX = grid.x; config.gridDimY = grid.y; config.gridDimZ = grid.z;
    config.blockDimX = block.x; config.blockDimY = block.y; config.blockDimZ = block.z;
    config.sharedMemBytes = static_cast<unsigned int>(shared_bytes);
    config.hStream = reinterpret_cast<CUstream>(stream);
    config.attrs = list;
    config.numAttrs = count;
    result = driver().launch_kernel_ex(&config, function(), args, nullptr);
  } else {
    result = driver().launch_kernel(function(), grid.x, grid.y, grid.z, block.x, block.y,
                                    block.z, static_cast<unsigned int>(shared_bytes),
                                    reinterpret_cast<CUstream>(stream), args, nullptr);
  }
  if (result == CUDA_SUCCESS) return;  // (the message below costs more host time than the launch's own checks)
  check(result, "launch of kernel '" + name_ + "' with grid " + describe(grid) + ", block " + describe(block) + ", " +
                    std::to_string(shared_bytes) + " bytes of dynamic shared memory" +
                    (cluster ? ", clusters of " + std::to_string(attributes.cluster_x) + " x 1 x " +
                                   std::to_string(attributes.cluster_z)
                             : "") +
                    " failed");
}

void encode_tensor_map_2d_u16(void* map, const void* base, uint64_t cols, uint64_t rows, uint32_t box_cols,
                              uint32_t box_rows) {
  static_assert(sizeof(CUtensorMap) == 128, "a 128-byte tensor map");
  if (reinterpret_cast<uintptr_t>(map) % 64 != 0)
    throw_argument_error("map", "a 64-byte aligned 128-byte buffer", "a misaligned one");
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0)
    throw_argument_error("base", "a 16-byte aligned device address", "a misaligned one");
  if (cols == 0 || rows == 0 || (cols * 2) % 16 != 0)
    throw_argument_error("cols", "rows of a multiple of 8 elements (16-byte row pitch)", std::to_string(cols));
  if (box_cols * 2 != 128 || box_rows == 0 || box_rows > 256)
    throw_argument_error("box", "64 columns (the 128-byte swizzle span) x 1..256 rows",
                         std::to_string(box_cols) + " x " + std::to_string(box_rows));
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  check(driver().tensor_map_encode_tiled(static_cast<CUtensorMap*>(map), CU_TENSOR_MAP_DATA_TYPE_UINT16, 2,
                                         const_cast<void*>(base), dims, strides, box, element_strides,
                                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled (" + std::to_string(rows) + " x " + std::to_string(cols) + " elements, box " +
            std::to_string(box_rows) + " x " + std::to_string(box_cols) + ")");
}

std::shared_ptr<LoadedKernel> get_kernel(const CompileRequest& r) {
  const std::string key = cache_key(r);  // validates r
  ensure_runtime_on_this_thread();
  int device = -1;
  if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) {
    cudaGetLastError();
    throw_error(std::string("cudaGetDevice failed: ") + cudaGetErrorString(status));
  }
  const std::string slot = key + "@" + std::to_string(device);
  // Never destroyed: unloading modules from a static destructor would run after cudart's own teardown.
  static auto* const mutex = new std::mutex;
  static auto* const loaded = new std::map<std::string, std::shared_ptr<LoadedKernel>>;
  {
    std::lock_guard lock(*mutex);
    if (auto it = loaded->find(slot); it != loaded->end()) return it->second;
  }
  const CompiledKernel compiled = compile_cached(r);  // deduplicates concurrent builds of this key itself
  std::shared_ptr<LoadedKernel> kernel = LoadedKernel::load(compiled.cubin, r.kernel_name);
  std::lock_guard lock(*mutex);
  // A racing thread may have loaded it first: keep one module per slot, drop ours.
  return loaded->emplace(slot, std::move(kernel)).first->second;
}

}  // namespace lutmm::jit
