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
template <int kTileN, int kTileM>
LUTMM_DEVICE TileWork split_k_work(const GemmParams& p) {
  TileWork w;
  w.n0 = blockIdx.x * kTileN;
  w.m0 = blockIdx.y * kTileM;
  w.tile_id = blockIdx.y * gridDim.x + blockIdx.x;
  w.split = blockIdx.z;
  w.splits = p.splits;
  w.kt_begin = w.split * p.k_tiles_per_split;
  const int end = w.kt_begin + p.k_tiles_per_split;
  w.kt_end = end < p.k_tiles ? end : p.k_tiles;
  return w;
}
#endif

}  // namespace lutmm::scheduler
