#pragma once
// What a split-K launch needs in its per-stream workspace: one float tile per output tile and split, one
// counter per output tile. gemm() grows the workspace by this rule; the tuner sizes its runs by it.
#include <cstddef>

#include "lutmm/config.hpp"

namespace lutmm {

struct SplitKWorkspace {
  size_t float_bytes = 0;  // 0 when the launch has a single split
  size_t counters = 0;
};

SplitKWorkspace split_k_workspace(const KernelConfig& c, const Problem& p, const DeviceInfo& dev);

}  // namespace lutmm
