#pragma once
// Properties of the GPUs, read at run time (nothing about a GPU is a compile-time constant in lutmm).
#include <cstdint>
#include <string>

namespace lutmm {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;   // compute capability
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int smem_per_block_optin = 0;     // the most dynamic shared memory one block may ask for
  int smem_per_sm = 0;
  int max_threads_per_sm = 0;
  int regs_per_sm = 0;
  bool shared_via_mps = false;      // contexts on it are MPS clients (which may get only part of the SMs)
  int sm_clock_khz = 0;             // peak SM clock; 0 where the driver does not report it
  int64_t memory_bytes_per_second = 0;  // peak DRAM bandwidth (memory clock x bus width); 0 where not reported
  // Peak DRAM bytes per SM per SM clock: what one SM's share of HBM brings it in a cycle (H100 SXM ~12.8, H200
  // ~18.8); 0 where unknown.
  double memory_bytes_per_sm_clock() const {
    return sm_count > 0 && sm_clock_khz > 0 ? static_cast<double>(memory_bytes_per_second) / sm_count / (sm_clock_khz * 1e3)
                                            : 0.0;
  }
  int arch() const { return cc_major * 10 + cc_minor; }  // 80, 86, 89, 90, 100, ...
};

int device_count();                        // 0 when there is no driver or no device; never throws
const DeviceInfo& device_info(int device);  // cached; throws Error for a bad index or CUDA failure
// The SMs the calling thread's current context may run on: a green context's partition, else the whole
// device's; 0 where no context is current or the driver cannot tell (before CUDA 12.4). Never throws.
int context_sm_count();
// device_info(device) as a context with context_sms SMs sees it: where that is fewer than the device has (a green
// context), sm_count is the context's, so grids, splits and the tuning database's keys follow the SMs the kernels
// can use. Cached like device_info.
const DeviceInfo& device_info(int device, int context_sms);
const DeviceInfo& current_device_info();    // the device current on the calling thread, as its context sees it
std::string cuda_runtime_version();         // "13.0"
std::string cuda_driver_version();          // "13.0", or "none" without a driver

}  // namespace lutmm
