#pragma once
// One pipeline stage = the packed W, x and scales a block needs for one k tile, moved global -> shared
// with cp.async (16-byte copies, no registers involved), to the places pipeline/stage_layout.cuh gives.
// Each thread's copies sit at fixed places of the tile, so their addresses are computed once and each k
// tile only adds one offset (the address arithmetic would otherwise rival the dequantization in
// instructions: ~110 of a decode k tile's 640 instructions before, docs/NOTES.md v1.7). Rows of x past M
// are neither copied nor zeroed: whatever a stage holds there meets the MMA as x columns past M, which only
// feed output columns past M, and no epilogue stores or sums those (leaving them took ~0.1 us off the
// prologue of every decode block; docs/NOTES.md v1.29). Columns past K are zero-filled by the copy
// itself (src-size 0): they meet real W rows.
// Strips past the padded N (the last tile of an N that the tile does not divide) copy the last real strip
// again: their rows are never stored, and an always-valid source needs no predicate in the main loop.
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/layout/packed_layout.cuh"
#include "lutmm/pipeline/stage_layout.cuh"
#include "lutmm/ptx/memory.cuh"
#include "lutmm/ptx/tma.cuh"

#ifndef LUTMM_BULK_W  // experiment: -DLUTMM_BULK_W=1, W's stages by bulk copies (below, kBulkW)
#define LUTMM_BULK_W 0
#endif

namespace lutmm::pipeline {

// Whether a kernel's W stages come by one bulk copy a strip (sm_90+, the TMA unit), counted on an mbarrier a
// stage, instead of 16-byte cp.async copies by every thread: a strip's k tile is one contiguous run in both
// global and shared memory (layout/packed_layout.cuh, stage_layout.cuh). Split-K sm80 kernels with W through
// shared memory only.
template <class K>
inline constexpr bool kBulkW = LUTMM_BULK_W != 0 && ptx::kDependentLaunch && !K::kStreamK && !K::kWInRegisters && !K::kWgmmaLayout;

// kBulkW's mbarriers, one a stage (8 bytes each, in static shared memory that only kBulkW kernels declare: any static
// shared memory beyond the table can cost a block its place on an SM, docs/NOTES.md v1.7). A use of a stage is one
// phase, so k tile it waits for parity (it / kStages) & 1 of barrier it % kStages. The kWarpsN warps of the block's
// first warp row and K group copy a stage, each its own strips (copy_w_bulk), and arrive once. (Nothing where kBulkW
// is false.)
template <class K>
struct BulkWBarriers {
  uint32_t bar0 = storage();
  LUTMM_DEVICE static uint32_t storage() {
    if constexpr (kBulkW<K>) {
      __shared__ __align__(8) uint64_t bars[K::kStages];
      return ptx::smem_addr(bars);
    } else {
      return 0u;
    }
  }
  LUTMM_DEVICE uint32_t bar(int s) const { return bar0 + 8 * s; }
  // By one thread; a block barrier follows it before any thread copies or waits.
  LUTMM_DEVICE void init() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kBulkW<K>) {
      for (int s = 0; s < K::kStages; ++s) ptx::mbarrier_init(bar(s), K::kWarpsN);
      ptx::fence_mbarrier_init_cluster();  // (visible to the TMA unit before the copies)
    }
#endif
  }
  LUTMM_DEVICE void wait(int s, uint32_t parity) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kBulkW<K>) ptx::mbarrier_wait(bar(s), parity);
#endif
  }
};

// Where a tile's weight copies read, for the tile whose first W row is n0 (this loader's and the warp-
// specialized kernel's, pipeline/producer_stage_loader.cuh). The packed words of its 16-row strip `strip` at
// k tile 0: a strip past the padded N reads the last real strip again (see above).
template <int kBits>
LUTMM_DEVICE const uint32_t* tile_strip_words(const GemmParams& p, int n0, int strip) {
  const int64_t k_atoms = p.k_padded / layout::kAtomCols;
  const int last_row = p.n_padded / 16 - 1;
  const int atom_row = n0 / 16 + strip < last_row ? n0 / 16 + strip : last_row;
  return p.packed + static_cast<int64_t>(atom_row) * k_atoms * layout::words_per_atom(kBits);
}
// The group-row-0 scales of its 8 columns from column n0 + column: past the padded N, the last real 8.
LUTMM_DEVICE const uint16_t* tile_scale_columns(const GemmParams& p, int n0, int column) {
  return p.scales + (n0 + column < p.n_padded ? n0 + column : p.n_padded - 8);
}

template <class K>
struct StageLoader {
  using Layout = StageLayout<K>;
  static constexpr int kWordsPerAtom = layout::words_per_atom(K::kBits);
  static constexpr int kChunksPerStrip = K::kAtomsK * kWordsPerAtom / 4;
  static constexpr int kWChunks = (K::kTileN / 16) * kChunksPerStrip;
  static constexpr int kWIters = dev::ceil_div(kWChunks, K::kThreads);
  static constexpr int kXChunksPerRow = K::kTileK / 8;
  // (none when the sm90 kernel brings x by TMA multicast, K::kXMulticast > 1)
  static constexpr int kXIters = K::kXMulticast > 1 ? 0 : dev::ceil_div(K::kTileM * kXChunksPerRow, K::kThreads);
  static constexpr int kXSlots = kXIters > 0 ? kXIters : 1;  // (arrays of the x copies: never zero-length)
  static constexpr int kScaleChunksPerRow = K::kTileN / 8;
  static constexpr int kSIters = dev::ceil_div(K::kScaleRows * kScaleChunksPerRow, K::kThreads);
  // L2 prefetch of W: the 128-byte lines of the block's strips for one k tile (atoms are 256, 384 or 512
  // bytes, whole lines).
  static constexpr int kStripTileBytes = K::kAtomsK * kWordsPerAtom * 4;
  static constexpr int kLinesPerStrip = kStripTileBytes / 128;
  static constexpr int kLines = (K::kTileN / 16) * kLinesPerStrip;
  static constexpr int kPrefetchIters = dev::ceil_div(kLines, K::kThreads);

  const GemmParams& p;
  int tid;
  // W: this thread's source at k tile 0 (always a real strip, see above)
  const uint8_t* w_src[kWIters];
  // x: source row start at k = 0 (null when this thread has no chunk), chunk column, destination offset
  const uint16_t* x_src[kXSlots];
  int x_col[kXSlots], x_dst[kXSlots];
  // scales: source for group row 0 (clamped to the last real column block like W)
  const uint16_t* s_src[kSIters];
  // kBulkW: strip 0 of the tile at k tile 0, the bytes from one strip to the next, the last real strip of the tile
  // (strips past it read it again, as tile_strip_words)
  const uint8_t* w_bulk_src;
  int64_t w_bulk_stride;
  int w_bulk_last;
  // W prefetch: this thread's line at k tile 0 (null when it has none)
  const uint8_t* prefetch_src[kPrefetchIters];

  LUTMM_DEVICE StageLoader(const GemmParams& params, int n0, int m0, int thread) : p(params), tid(thread) {
    aim(n0, m0);
  }

  // The sources of the tile whose first W row is n0 and first x row m0 (again for each Stream-K item).
  LUTMM_DEVICE void aim(int n0, int m0) {
    const int rows = p.m - m0 < K::kTileM ? p.m - m0 : K::kTileM;  // x rows of this tile below M
    const int64_t k_atoms = p.k_padded / layout::kAtomCols;
#pragma unroll
    for (int j = 0; j < (K::kWInRegisters || kBulkW<K> ? 0 : kWIters); ++j) {  // W in registers: the kernel loads it
      const int i = tid + j * K::kThreads;
      const int strip = i / kChunksPerStrip, c = i % kChunksPerStrip;
      w_src[j] = reinterpret_cast<const uint8_t*>(tile_strip_words<K::kBits>(p, n0, strip) + c * 4);
    }
    if constexpr (kBulkW<K>) {
      w_bulk_src = reinterpret_cast<const uint8_t*>(tile_strip_words<K::kBits>(p, n0, 0));
      w_bulk_stride = k_atoms * kWordsPerAtom * 4;
      w_bulk_last = p.n_padded / 16 - 1 - n0 / 16;
    }
#pragma unroll
    for (int j = 0; j < kPrefetchIters; ++j) {
      const int i = tid + j * K::kThreads;
      const int atom_row = n0 / 16 + i / kLinesPerStrip;
      prefetch_src[j] = i < kLines && atom_row * 16 < p.n_padded
                            ? reinterpret_cast<const uint8_t*>(p.packed + static_cast<int64_t>(atom_row) * k_atoms * kWordsPerAtom) +
                                  (i % kLinesPerStrip) * 128
                            : nullptr;
    }
#pragma unroll
    for (int j = 0; j < kXIters; ++j) {
      const int i = tid + j * K::kThreads;
      const int r = i / kXChunksPerRow, c = i % kXChunksPerRow;
      x_col[j] = c * 8;
      x_dst[j] = Layout::x_offset(r, c);
      x_src[j] = r < rows ? p.x + static_cast<int64_t>(m0 + r) * p.k + c * 8 : nullptr;
    }
#pragma unroll
    for (int j = 0; j < kSIters; ++j) {
      const int i = tid + j * K::kThreads;
      const int r = i / kScaleChunksPerRow, c = i % kScaleChunksPerRow;
      s_src[j] = tile_scale_columns(p, n0, c * 8) + static_cast<int64_t>(r) * p.n_padded;
    }
  }

  // Starts moving k tile kt of the block's W from DRAM into L2, ahead of its cp.async (see gemm_sm80.cuh).
  LUTMM_DEVICE void prefetch_w(int kt) const {
#pragma unroll
    for (int j = 0; j < kPrefetchIters; ++j)
      if (prefetch_src[j] != nullptr) ptx::prefetch_l2_line(prefetch_src[j] + static_cast<int64_t>(kt) * kStripTileBytes);
  }

  // Stage s <- k tile kt. One shared address per area; every copy's destination is it plus an offset
  // computed once (x) or known at compile time (W, scales).
  LUTMM_DEVICE void load(uint8_t* smem, int s, int kt) const {
    copy_w(smem, s, kt);
    copy_x(smem, s, kt);
    copy_scales(smem, s, kt);
  }
  // The same in two parts: the weights (W and scales, which the kernels take to be unchanged by the stream's
  // previous kernel, so they may be copied before grid_dependency_wait) and x (that kernel's output, maybe).
  LUTMM_DEVICE void load_weights(uint8_t* smem, int s, int kt) const {
    copy_w(smem, s, kt);
    copy_scales(smem, s, kt);
  }
  LUTMM_DEVICE void load_x(uint8_t* smem, int s, int kt) const { copy_x(smem, s, kt); }

  // kBulkW: strips first_strip .. + kFragsN of stage s <- k tile kt of W by bulk copies, counted on the stage's
  // mbarrier `bar` (one arrival with the bytes to expect). Lane 0 of a warp of the first warp row and K group copies
  // (the strips of its warp_n); the others call it too and do nothing.
  LUTMM_DEVICE void copy_w_bulk(uint8_t* smem, int s, int kt, uint32_t bar, int first_strip, int lane) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kBulkW<K>) {
      if (lane == 0) {
        ptx::mbarrier_arrive_expect_tx(bar, K::kFragsN * kStripTileBytes);
        const uint32_t stage_addr = ptx::smem_addr(Layout::w(smem, s)) + first_strip * kStripTileBytes;
        const uint8_t* src = w_bulk_src + static_cast<int64_t>(kt) * kStripTileBytes;
#pragma unroll
        for (int f = 0; f < K::kFragsN; ++f) {
          const int strip = first_strip + f < w_bulk_last ? first_strip + f : w_bulk_last;
          ptx::bulk_copy_global_to_shared(stage_addr + f * kStripTileBytes, src + strip * w_bulk_stride,
                                          kStripTileBytes, bar);
        }
      }
    }
#endif
  }

 private:
  LUTMM_DEVICE void copy_w(uint8_t* smem, int s, int kt) const {
    const uint32_t stage_addr = ptx::smem_addr(Layout::w(smem, s));
    const int64_t w_step = static_cast<int64_t>(kt) * kStripTileBytes;
#pragma unroll
    for (int j = 0; j < (K::kWInRegisters || kBulkW<K> ? 0 : kWIters); ++j) {
      if (kWChunks % K::kThreads == 0 || tid + j * K::kThreads < kWChunks)
        ptx::cp_async_16(stage_addr + (tid + j * K::kThreads) * 16, w_src[j] + w_step);
    }
  }
  LUTMM_DEVICE void copy_x(uint8_t* smem, int s, int kt) const {
#ifdef LUTMM_EXPERIMENT_NO_X
    if (p.k > 0) return;  // (diagnostic: wrong results; x's copies left out)
#endif
    const int k0 = kt * K::kTileK;
    const uint32_t x_addr = ptx::smem_addr(Layout::x(smem, s));
#pragma unroll
    for (int j = 0; j < kXIters; ++j) {
      if (x_src[j] != nullptr) {
        const bool valid = k0 + x_col[j] < p.k;
        ptx::cp_async_16(x_addr + x_dst[j], valid ? x_src[j] + k0 : p.x, valid);
      }
    }
  }
  LUTMM_DEVICE void copy_scales(uint8_t* smem, int s, int kt) const {
    const int k0 = kt * K::kTileK;
    const uint32_t scale_addr = ptx::smem_addr(Layout::scales(smem, s));
    const int64_t srow0 = K::kGroup == 0 ? 0 : k0 / K::kGroup;
#pragma unroll
    for (int j = 0; j < kSIters; ++j) {
      if (tid + j * K::kThreads < K::kScaleRows * kScaleChunksPerRow)
        ptx::cp_async_16(scale_addr + Layout::scale_chunk(tid + j * K::kThreads), s_src[j] + srow0 * p.n_padded);
    }
  }
};

}  // namespace lutmm::pipeline
