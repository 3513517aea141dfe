// GPU properties through cudart, read once per device and kept for the process; the current context's SM
// partition through two driver functions resolved at run time (jit::driver_entry_point: no link to libcuda).
#include "lutmm/device.hpp"

#include <cuda.h>  // (types only)
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "jit/jit.hpp"
#include "lutmm/error.hpp"

namespace lutmm {

namespace {

// cudart reports versions as 1000*major + 10*minor (13000 -> "13.0").
std::string format_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

void check(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear it so it does not resurface in the caller's next CUDA call
  throw_error(what + " failed: " + cudaGetErrorString(status));
}

int attribute(cudaDeviceAttr attr, int device, const char* name) {
  int value = 0;
  check(cudaDeviceGetAttribute(&value, attr, device),
        std::string("cudaDeviceGetAttribute(") + name + ") of device " + std::to_string(device));
  return value;
}

DeviceInfo query(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties of device " + std::to_string(device));
  DeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, device, "compute capability major");
  info.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, device, "compute capability minor");
  info.sm_count = attribute(cudaDevAttrMultiProcessorCount, device, "multiprocessor count");
  info.l2_bytes = attribute(cudaDevAttrL2CacheSize, device, "L2 cache size");
  info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.smem_per_block_optin =
      attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device, "shared memory per block (opt-in)");
  info.smem_per_sm = attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device, "shared memory per multiprocessor");
  info.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device, "threads per multiprocessor");
  info.regs_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, device, "registers per multiprocessor");
  int mps = 0;  // (a driver that does not know the attribute has no MPS to report)
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device) != cudaSuccess) cudaGetLastError();
  info.shared_via_mps = mps != 0;
  // (optional: a driver or virtual GPU that does not report them leaves 0, "unknown")
  auto optional_attribute = [device](cudaDeviceAttr attr) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return value;
  };
  info.sm_clock_khz = optional_attribute(cudaDevAttrClockRate);
  const int64_t memory_khz = optional_attribute(cudaDevAttrMemoryClockRate);
  const int64_t bus_bits = optional_attribute(cudaDevAttrGlobalMemoryBusWidth);
  info.memory_bytes_per_second = 2 * memory_khz * 1000 * bus_bits / 8;  // (double data rate)
  return info;
}

}  // namespace

int device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // No driver, no device, a driver too old for this runtime: all mean "no usable GPU" here.
    cudaGetLastError();
    return 0;
  }
  return count;
}

const DeviceInfo& device_info(int device) {
  const int count = device_count();
  if (device < 0 || device >= count)
    throw_argument_error("device",
                         count == 0 ? std::string("a CUDA device index, but this machine has no usable CUDA device")
                                    : "a CUDA device index in [0, " + std::to_string(count) + ")",
                         std::to_string(device));
  // Entries are never erased, and a map's nodes never move: references handed out stay valid.
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<const DeviceInfo>> cache;
  std::lock_guard lock(mutex);
  auto& slot = cache[device];
  if (!slot) slot = std::make_unique<const DeviceInfo>(query(device));
  return *slot;
}

int context_sm_count() {
  struct Api {
    CUresult (*get_current)(CUcontext*) = nullptr;
    CUresult (*get_resource)(CUcontext, CUdevResource*, CUdevResourceType) = nullptr;
  };
  static const Api api = [] {
    Api a;
    if (device_count() == 0) return a;
    a.get_current = reinterpret_cast<decltype(a.get_current)>(jit::driver_entry_point("cuCtxGetCurrent", 4000));
    a.get_resource = reinterpret_cast<decltype(a.get_resource)>(jit::driver_entry_point("cuCtxGetDevResource", 12040));
    return a;
  }();
  if (api.get_current == nullptr || api.get_resource == nullptr) return 0;
  CUcontext context = nullptr;
  if (api.get_current(&context) != CUDA_SUCCESS || context == nullptr) return 0;
  // Per thread, the last context asked about (a gemm() call asks every time): one driver call when it is the same.
  // (A context destroyed and another created at the same handle keeps the first's count on this thread: its grids
  // are then sized for the wrong number of SMs, which costs time, not correctness.)
  thread_local CUcontext last = nullptr;
  thread_local int last_sms = 0;
  if (context != last) {
    CUdevResource sms{};
    const bool known = api.get_resource(context, &sms, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS;
    last_sms = known ? static_cast<int>(sms.sm.smCount) : 0;
    last = context;
  }
  return last_sms;
}

const DeviceInfo& device_info(int device, int context_sms) {
  const DeviceInfo& whole = device_info(device);
  if (context_sms <= 0 || context_sms >= whole.sm_count) return whole;
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<const DeviceInfo>> cache;  // (never erased, as above)
  std::lock_guard lock(mutex);
  auto& slot = cache[{device, context_sms}];
  if (!slot) {
    DeviceInfo part = whole;
    part.sm_count = context_sms;
    slot = std::make_unique<const DeviceInfo>(part);
  }
  return *slot;
}

const DeviceInfo& current_device_info() {
  int device = -1;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device_info(device, context_sm_count());
}

std::string cuda_runtime_version() {
  int version = 0;
  check(cudaRuntimeGetVersion(&version), "cudaRuntimeGetVersion");
  return format_version(version);
}

std::string cuda_driver_version() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess || version == 0) {
    cudaGetLastError();
    return "none";
  }
  return format_version(version);
}

}  // namespace lutmm
