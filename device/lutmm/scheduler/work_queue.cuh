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
// Each chunk's partial tile goes to its own workspace slot [tile][c] (a tile of one chunk is the output), and
// nothing else happens at a chunk's end: an arrival count per tile cost every chunk a release, whose fence
// waited for the block's copies in flight (1 x 8192 x 8192: 12.8 -> 19.0 us at four chunks a block,
// docs/NOTES.md v1.16). Once the queue is empty and its copies have landed, a block counts itself finished
// (one release); when all G have, block b sums tiles b, b + G, ... in chunk order 0 .. C-1 (the same sum every
// run, whichever block computed which chunk) and stores them. The blocks wait for each other, so the runtime
// launches the queue only where the whole grid is resident at once (the spread split-K's promise,
// runtime/gemm.cpp).
//
// Counters (p.tile_counters): [0] the queue's head, [1] the blocks that finished their chunks, [2] the blocks
// that finished summing; the last of those resets all three (the next launch finds zeros).
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
  LUTMM_DEVICE uint32_t take(const GemmParams& p, uint32_t count = 1) const {
    return ptx::atomic_add_relaxed_gpu(p.tile_counters, count) + gridDim.x;
  }
  // One thread, once its block's chunks are stored (after a barrier): counts the block finished and, where tiles
  // have several chunks, waits until all G blocks have (their slots are then visible to this thread, and to the
  // block after a barrier). Returns whether this block must call done_summing after its sums.
  LUTMM_DEVICE bool finish(const GemmParams& p) const {
    uint32_t* const finished = p.tile_counters + 1;
    const uint32_t before = ptx::atomic_add_acq_rel_gpu(finished, 1u);
    if (chunks_per_tile == 1) {  // nothing to sum: the last resets the head and this count
      if (before == gridDim.x - 1) {
        p.tile_counters[0] = 0u;
        *finished = 0u;
      }
      return false;
    }
    while (ptx::load_acquire_gpu(finished) < gridDim.x) __nanosleep(32);
    return true;
  }
  // One thread, after its block's sums: the last block to get here resets the three counters (every block has
  // seen `finished` reach G, and taken its last chunk, before).
  LUTMM_DEVICE void done_summing(const GemmParams& p) const {
    if (ptx::atomic_add_acq_rel_gpu(p.tile_counters + 2, 1u) == gridDim.x - 1) {
      p.tile_counters[0] = 0u;
      p.tile_counters[1] = 0u;
      p.tile_counters[2] = 0u;
    }
  }
#endif
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// Where thread 0 leaves the ids it took for the rest of the block: two words of static shared memory, in the
// kernels that use the queue only (kUsed; nothing elsewhere: static shared memory can cost a block its place).
// The id of the block's chunk s sits in word s % 2 from one barrier before its first copy until one after.
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
