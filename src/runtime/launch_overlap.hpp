#pragma once
// How gemm() launches a problem with a config on the current device: as a programmatic dependent of the
// stream's previous kernel (sm_90+), and whether it lets the stream's next kernel launch at its start
// (GemmParams::dependents_early) or only after its main loop; and whether the splits of a tile sum it together
// (GemmParams::split_spread). For tests and tools; gemm() decides the same.
#include "lutmm/config.hpp"

namespace lutmm {

struct LaunchOverlap {
  bool overlap_previous = false;
  bool dependents_early = false;
  bool split_spread = false;
};

LaunchOverlap launch_overlap(const Problem& p, const KernelConfig& c);

}  // namespace lutmm
