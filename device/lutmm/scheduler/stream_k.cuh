#pragma once
// Stream-K: where whole tiles (or even splits of them) leave SMs idle, e.g. 112 tiles of a 64 x 28672 x 8192
// GEMM on 132 SMs, the grid is one wave of G blocks that share the U = tiles x k_tiles units of work
// (one k tile of one output tile) evenly: block b takes the contiguous units [b U / G, (b + 1) U / G),
// tile-major, so it finishes one tile's K range and starts the next tile's. The blocks that share a tile are
// consecutive; each writes its partial tile, and the last to arrive adds them in block order (a fixed
// order: the same sum every run, whoever arrives last), as split-K does (epilogue/epilogue.cuh).
// The host picks G from the SM count read at run time and the blocks that fit one SM.
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/scheduler/split_k.cuh"

namespace lutmm::scheduler {

struct StreamK {
  int64_t units;      // tiles x k_tiles
  int64_t block, blocks;
  int64_t next, end;  // this block's remaining units [next, end)

  LUTMM_HOST_DEVICE static int64_t first_unit(int64_t block, int64_t blocks, int64_t units) {
    return block * units / blocks;
  }
  // The block whose run contains unit u: the largest b with first_unit(b) <= u.
  LUTMM_HOST_DEVICE static int64_t block_of(int64_t u, int64_t blocks, int64_t units) {
    return ((u + 1) * blocks - 1) / units;
  }

  // (Host-callable: the CPU tests walk every block of a grid.)
  LUTMM_HOST_DEVICE StreamK(const GemmParams& p, int64_t this_block, int64_t grid_blocks)
      : units(static_cast<int64_t>(p.tiles_n) * p.tiles_m * p.k_tiles), block(this_block), blocks(grid_blocks) {
    next = first_unit(block, blocks, units);
    end = first_unit(block + 1, blocks, units);
  }

  // The next (tile, K range) of this block; false when it has none left.
  template <int kTileN, int kTileM>
  LUTMM_HOST_DEVICE bool next_work(const GemmParams& p, TileWork& w) {
    if (next >= end) return false;
    const int64_t tile = next / p.k_tiles;
    w.tile_id = static_cast<int>(tile);
    w.n0 = static_cast<int>(tile % p.tiles_n) * kTileN;  // N fastest, as in split-K: neighbours share x
    w.m0 = static_cast<int>(tile / p.tiles_n) * kTileM;
    w.kt_begin = static_cast<int>(next - tile * p.k_tiles);
    const int64_t tile_end = (tile + 1) * p.k_tiles;
    w.kt_end = static_cast<int>((end < tile_end ? end : tile_end) - tile * p.k_tiles);
    const int64_t first = block_of(tile * p.k_tiles, blocks, units);
    w.split = static_cast<int>(block - first);
    w.splits = static_cast<int>(block_of(tile_end - 1, blocks, units) - first + 1);
    next = tile * p.k_tiles + w.kt_end;
    return true;
  }
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// The block's first work: its one (tile, K split) under split-K, the first item of its run under Stream-K
// (K::kStreamK; false: the run is empty).
template <class K>
LUTMM_DEVICE bool first_work(const GemmParams& p, StreamK& stream, TileWork& work) {
  if constexpr (K::kStreamK) {
    return stream.next_work<K::kTileN, K::kTileM>(p, work);
  } else {
    work = split_k_work<K::kTileN, K::kTileM>(p);
    return true;
  }
}
#endif

}  // namespace lutmm::scheduler
