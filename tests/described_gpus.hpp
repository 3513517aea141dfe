#pragma once
// GPUs described by value, as lutmm would read them at run time, for the tests of everything that only
// looks at a DeviceInfo (config validity, split-K, the heuristic, the ranking model, tuning keys). index -1:
// not a device of this machine, so nothing may be measured on them.
#include "lutmm/device.hpp"

namespace lutmm::test {

inline DeviceInfo described(const char* name, int cc_major, int cc_minor, int sm_count, int64_t l2_mb,
                            int smem_per_block_kb, int smem_per_sm_kb, int max_threads_per_sm) {
  DeviceInfo d;
  d.index = -1;
  d.name = name;
  d.cc_major = cc_major;
  d.cc_minor = cc_minor;
  d.sm_count = sm_count;
  d.l2_bytes = l2_mb << 20;
  d.smem_per_block_optin = smem_per_block_kb * 1024;
  d.smem_per_sm = smem_per_sm_kb * 1024;
  d.max_threads_per_sm = max_threads_per_sm;
  d.regs_per_sm = 65536;
  return d;
}

inline DeviceInfo described_h200() { return described("NVIDIA H200", 9, 0, 132, 60, 227, 228, 2048); }
inline DeviceInfo described_a100() { return described("NVIDIA A100-SXM4-80GB", 8, 0, 108, 40, 163, 164, 2048); }
// An sm_86 card: 99 KB of shared memory per block.
inline DeviceInfo described_sm86() { return described("RTX-class sm_86", 8, 6, 84, 6, 99, 100, 1536); }

}  // namespace lutmm::test
