#pragma once
// The work queue (decode, K::kQueue): a one-wave grid of blocks that stay resident and take chunks of work
// from a counter until none are left. A decode block streams W at a rate of its own, which differs from SM to
// SM and with its neighbour: under split-K or Stream-K, where every block's share is fixed at launch, the
// slowest block sets the time (1 x 8192 x 8192: exits spread over 9.4 .. 15.0 us after the first entry,
// docs/NOTES.md v1.15), while here a block that streams faster takes more chunks.
//
// Chunk c of output tile t (id t x C + c, C = p.queue_chunks, tile-major) covers the k tiles
// [c K / C, (c + 1) K / C) of that tile, K = p.k_tiles; the host keeps every chunk at least kStages - 1 k tiles
// long, so the prologue's copies stay inside a block's first chunk and the copy cursor, kStages - 1 units
// ahead of the MMAs, is never more than one chunk ahead. Block b's first chunk is chunk b (known before the
// dependency wait: its first stages are copied early); the counter hands out chunks G, G + 1, ... (G blocks).
//
// Each chunk's partial tile goes to its own workspace slot [tile][c] (a tile of one chunk is the output), and the
// block arrives at the tile's count without waiting for the answer: it looks at it at its next chunk's end (or
// its own end), and the last arrival adds the tile's slots in chunk order 0 .. C-1 (the same sum every run,
// whichever block computed which chunk), stores the tile and resets the count. No block waits for another.
//
// Counters (p.tile_counters): [0, tiles) the arrival counts, [tiles] the queue's head, [tiles + 1] the blocks
// that took their last chunk; the last of those resets both (the next launch finds zeros).
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/scheduler/split_k.cuh"
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#include "lutmm/ptx/memory.cuh"
#endif

namespace lutmm::scheduler {

// (32-bit arithmetic, as Stream-K's: the host refuses the queue where queue_fits does not hold.)
struct WorkQueue {
  uint32_t chunks_per_tile, chunks, k_tiles, tiles_n, tiles;

  LUTMM_HOST_DEVICE explicit WorkQueue(const GemmParams& p)
      : chunks_per_tile(static_cast<uint32_t>(p.queue_chunks)),
        chunks(static_cast<uint32_t>(p.tiles_n) * static_cast<uint32_t>(p.tiles_m) * static_cast<uint32_t>(p.queue_chunks)),
        k_tiles(static_cast<uint32_t>(p.k_tiles)),
        tiles_n(static_cast<uint32_t>(p.tiles_n)),
        tiles(static_cast<uint32_t>(p.tiles_n) * static_cast<uint32_t>(p.tiles_m)) {}

  LUTMM_HOST_DEVICE static bool queue_fits(uint64_t k_tiles, uint64_t chunks_per_tile, uint64_t chunks) {
    return k_tiles * chunks_per_tile <= 0xffffffffull && chunks + 0x100000ull <= 0xffffffffull;
  }
  // First k tile of chunk c of a tile (c = chunks_per_tile: the tile's end).
  LUTMM_HOST_DEVICE uint32_t chunk_begin(uint32_t c) const { return c * k_tiles / chunks_per_tile; }

  // The work of chunk `id`; false once the queue is empty (id >= chunks).
  template <int kTileN, int kTileM>
  LUTMM_HOST_DEVICE bool work_of(uint32_t id, TileWork& w) const {
    if (id >= chunks) return false;
    const uint32_t tile = id / chunks_per_tile, c = id - tile * chunks_per_tile;
    w.tile_id = static_cast<int>(tile);
    w.n0 = static_cast<int>(tile % tiles_n) * kTileN;
    w.m0 = static_cast<int>(tile / tiles_n) * kTileM;
    w.kt_begin = static_cast<int>(chunk_begin(c));
    w.kt_end = static_cast<int>(chunk_begin(c + 1));
    w.split = static_cast<int>(c);
    w.splits = static_cast<int>(chunks_per_tile);
    return true;
  }

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  // The next chunk from the counter (one thread of the block takes it; the ids grow: a block that got one
  // past the end gets none later).
  LUTMM_DEVICE uint32_t take(const GemmParams& p) const {
    return ptx::atomic_add_relaxed_gpu(p.tile_counters + tiles, 1u) + gridDim.x;
  }
  // The block's last take is done (one thread, after it): the last block to get here resets the head and
  // this count. Its release orders the block's takes before it; the last one's acquire puts every block's
  // takes before the reset.
  LUTMM_DEVICE void leave(const GemmParams& p) const {
    uint32_t* const left = p.tile_counters + tiles + 1;
    if (ptx::atomic_add_acq_rel_gpu(left, 1u) == gridDim.x - 1) {
      p.tile_counters[tiles] = 0u;
      *left = 0u;
    }
  }
#endif
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// Where thread 0 leaves the ids it took for the rest of the block: two words of static shared memory, in the
// kernels that use the queue only (kUsed; nothing elsewhere: static shared memory can cost a block its place).
// The id of the block's chunk s sits in word s % 2 from one barrier before its first copy until the next
// take, a chunk later.
template <bool kUsed>
LUTMM_DEVICE uint32_t* queue_mailbox() {
  if constexpr (kUsed) {
    __shared__ uint32_t mailbox[2];
    return mailbox;
  } else {
    return nullptr;
  }
}
#endif

}  // namespace lutmm::scheduler
