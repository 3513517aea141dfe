#pragma once
// Division by a divisor the host knows, as a multiply-high, an add and a shift (Granlund and Montgomery, 1994: with
// l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d) + 1, x / d = (mulhi(m, x) + x) >> l for every 32-bit x, the sum
// taken in 64 bits). The Stream-K schedule divides by the grid's block count, its unit count, the k tiles of a tile
// and the tiles along N before a block's first copy; as 32-bit divisions these are I2F / MUFU.RCP / F2I chains whose
// special-function instructions queue behind the SM's other block's shared-memory loads (the MIO queue): a block that
// entered after the previous kernel ended spent 1.2 us from entry to its first W copy on 1 x 28672 x 8192 (docs/NOTES.md
// v1.30). Host-callable: the runtime fills them into GemmParams, and the CPU tests walk the schedule with them.
#include "lutmm/common.cuh"

namespace lutmm::scheduler {

struct FastDivisor {
  uint32_t divisor = 1, multiplier = 1, shift = 0;  // (the defaults divide by 1)

  static LUTMM_HOST_DEVICE FastDivisor of(uint32_t d) {
    FastDivisor f;
    f.divisor = d;
    uint32_t l = 0;
    while (l < 32 && (1ull << l) < d) ++l;
    // 2^l - d < d <= 2^32, so the product fits 64 bits and the quotient 32
    f.multiplier = static_cast<uint32_t>(((1ull << 32) * ((1ull << l) - d)) / d + 1);
    f.shift = l;
    return f;
  }

  LUTMM_HOST_DEVICE uint32_t divide(uint32_t x) const {
#if defined(LUTMM_EXPERIMENT_SLOW_DIVISION)  // (-DLUTMM_EXPERIMENT_SLOW_DIVISION=1: the plain division, for A/B runs)
    return x / divisor;
#else
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(x, multiplier);
#else
    const uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(x) * multiplier) >> 32);
#endif
    return static_cast<uint32_t>((static_cast<uint64_t>(high) + x) >> shift);
#endif
  }
};

// The Stream-K schedule's divisors (scheduler/stream_k.cuh, GemmParams::stream_k): the grid's blocks, its units
// (tiles_n x tiles_m x k_tiles), the k tiles of a tile and the tiles along N.
struct StreamKDivisors {
  FastDivisor blocks, units, k_tiles, tiles_n;
};

}  // namespace lutmm::scheduler
