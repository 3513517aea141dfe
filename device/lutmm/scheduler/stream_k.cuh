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

// The schedule's arithmetic is 32-bit (a 64-bit division is a software routine of ~100 instructions: five of
// them before the first copies delayed a decode kernel's first k tile by ~0.8 us, docs/NOTES.md v1.14); the
// host refuses Stream-K where (units + 1) x blocks would not fit (schedule_fits, StreamKShape::schedule_fits).
struct StreamK {
  uint32_t units;      // tiles x k_tiles
  uint32_t block, blocks;
  uint32_t next, end;  // this block's remaining units [next, end)

  LUTMM_HOST_DEVICE static uint32_t first_unit(uint32_t block, uint32_t blocks, uint32_t units) {
    return block * units / blocks;
  }
  // The block whose run contains unit u: the largest b with first_unit(b) <= u.
  LUTMM_HOST_DEVICE static uint32_t block_of(uint32_t u, uint32_t blocks, uint32_t units) {
    return ((u + 1) * blocks - 1) / units;
  }
  LUTMM_HOST_DEVICE static bool schedule_fits(uint64_t units, uint64_t blocks) {
    return (units + 1) * blocks <= 0xffffffffull;
  }

  // (Host-callable: the CPU tests walk every block of a grid.) The divisions go through p.stream_k
  // (stream_k_divisors): the same quotients as the static first_unit and block_of above.
  LUTMM_HOST_DEVICE StreamK(const GemmParams& p, uint32_t this_block, uint32_t grid_blocks)
      : units(static_cast<uint32_t>(p.tiles_n) * static_cast<uint32_t>(p.tiles_m) * static_cast<uint32_t>(p.k_tiles)),
        block(this_block),
        blocks(grid_blocks) {
    next = first_unit(p);
    end = p.stream_k.blocks.divide((block + 1) * units);
  }
  LUTMM_HOST_DEVICE uint32_t first_unit(const GemmParams& p) const { return p.stream_k.blocks.divide(block * units); }
  LUTMM_HOST_DEVICE uint32_t block_of(const GemmParams& p, uint32_t u) const {
    return p.stream_k.units.divide((u + 1) * blocks - 1);
  }

  // The next (tile, K range) of this block; false when it has none left.
  template <int kTileN, int kTileM>
  LUTMM_HOST_DEVICE bool next_work(const GemmParams& p, TileWork& w) {
    if (next >= end) return false;
    const uint32_t k_tiles = static_cast<uint32_t>(p.k_tiles), tiles_n = static_cast<uint32_t>(p.tiles_n);
    const uint32_t tile = p.stream_k.k_tiles.divide(next);
    const uint32_t tile_m = p.stream_k.tiles_n.divide(tile);
    w.tile_id = static_cast<int>(tile);
    w.n0 = static_cast<int>(tile - tile_m * tiles_n) * kTileN;  // N fastest, as in split-K: neighbours share x
    w.m0 = static_cast<int>(tile_m) * kTileM;
    w.kt_begin = static_cast<int>(next - tile * k_tiles);
    const uint32_t tile_end = (tile + 1) * k_tiles;
    w.kt_end = static_cast<int>((end < tile_end ? end : tile_end) - tile * k_tiles);
    const uint32_t first = block_of(p, tile * k_tiles);
    w.split = static_cast<int>(block - first);
    w.splits = static_cast<int>(block_of(p, tile_end - 1) - first + 1);
    next = tile * k_tiles + static_cast<uint32_t>(w.kt_end);
    return true;
  }
};

// The divisors of a grid of `blocks` blocks over tiles_n x tiles_m output tiles of k_tiles units each.
LUTMM_HOST_DEVICE StreamKDivisors stream_k_divisors(int tiles_n, int tiles_m, int k_tiles, uint32_t blocks) {
  const uint32_t units =
      static_cast<uint32_t>(tiles_n) * static_cast<uint32_t>(tiles_m) * static_cast<uint32_t>(k_tiles);
  return {FastDivisor::of(blocks), FastDivisor::of(units), FastDivisor::of(static_cast<uint32_t>(k_tiles)),
          FastDivisor::of(static_cast<uint32_t>(tiles_n))};
}

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
