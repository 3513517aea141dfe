#pragma once
#include <vector>

#include "lutmm/config.hpp"

namespace lutmm {

// The tile shapes the sm80 family offers (split_k and lut left at their defaults). A deliberately
// small set: each is one JIT instantiation per (bits, group, dtype), compiled only when a run needs it.
const std::vector<KernelConfig>& sm80_kernel_shapes();

}  // namespace lutmm
