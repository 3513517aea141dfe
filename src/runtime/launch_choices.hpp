#pragma once
// How gemm() launches a problem with a config on the current device: as a programmatic dependent of the
// stream's previous kernel (sm_90+), and whether it lets the stream's next kernel launch at its start
// (GemmParams::dependents_early) or only after its main loop; whether it runs the kernel variant whose
// splits of a tile sum it together (epilogue/epilogue.cuh: SplitSpread), whether the splits reduce in a
// thread-block cluster, whether the last split sums the tile from flagged slots, and whether the warps dequantize
// their first slices before the dependency wait. For tests and tools; gemm() decides the same.
#include <string>

#include "lutmm/config.hpp"

namespace lutmm {

struct LaunchChoices {
  bool overlap_previous = false;
  bool dependents_early = false;
  bool split_spread = false;  // (runtime/gemm.cpp: spread_pays, one_wave)
  bool cluster_split = false;  // (runtime/gemm.cpp: cluster_split_k)
  bool split_flagged = false;  // (runtime/gemm.cpp: flagged_split_k; epilogue/epilogue.cuh: finish_flagged)
  bool prewait = false;        // (runtime/gemm.cpp: prewait_first_slices; kernels/gemm_sm80.cuh: PrewaitFirstSlices)
  // The choices that are on, joined by '+' in this order: "cluster", "spread", "flagged", "early", "prewait" (the
  // previous kernel's overlap is implied by sm_90+); "" when none is. `lutmm bench`'s launch column, `lutmm verify`.
  std::string str() const;
};

LaunchChoices launch_choices(const Problem& p, const KernelConfig& c);

}  // namespace lutmm
