#pragma once
// Which output tile and which K range a block owns. The grid is (N tiles, M tiles, splits): blockIdx.x
// walks N fastest, so the blocks that share one x tile run side by side and read it from L2 once.
// The host picks the split count from the SM count read at run time (never a compile-time constant) and
// gives every split at least one k tile: splits = ceil(k_tiles / k_tiles_per_split).
#include "lutmm/kernels/gemm_params.cuh"

namespace lutmm::scheduler {

struct TileWork {
  int n0, m0;          // first W row / first x row of the tile
  int tile_id;         // index of the output tile (counters, workspace)
  int split;           // which K split (its place in the tile's fixed summation order)
  int splits;          // how many blocks share the tile
  int kt_begin, kt_end;  // k tiles [begin, end)
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)  // (TileWork alone is host-visible, for the CPU tests)
// The k tiles [begin, end) of split `split`.
LUTMM_DEVICE void split_k_range(const GemmParams& p, int split, int& begin, int& end) {
  begin = split * p.k_tiles_per_split;
  end = begin + p.k_tiles_per_split < p.k_tiles ? begin + p.k_tiles_per_split : p.k_tiles;
#if defined(LUTMM_SPLIT_LATE_LESS) && LUTMM_SPLIT_LATE_LESS > 0
  // (Experiment, -DLUTMM_SPLIT_LATE_LESS=d.) The last split, dispatched last, takes d k tiles fewer and the first d
  // splits one more each (where the splits divide the k tiles evenly and d < both the split count and its length).
  constexpr int d = LUTMM_SPLIT_LATE_LESS;
  const int n = p.splits, len = p.k_tiles_per_split;
  if (n > d && len > d && n * len == p.k_tiles) {
    begin = split < d ? split * (len + 1) : d * (len + 1) + (split - d) * len;
    end = split == n - 1 ? p.k_tiles : begin + (split < d ? len + 1 : len);
  }
#endif
}

template <int kTileN, int kTileM>
LUTMM_DEVICE TileWork split_k_work(const GemmParams& p) {
  TileWork w;
  w.n0 = blockIdx.x * kTileN;
  w.m0 = blockIdx.y * kTileM;
  w.tile_id = blockIdx.y * gridDim.x + blockIdx.x;
  w.split = blockIdx.z;
  w.splits = p.splits;
  split_k_range(p, w.split, w.kt_begin, w.kt_end);
  return w;
}
#endif

}  // namespace lutmm::scheduler
