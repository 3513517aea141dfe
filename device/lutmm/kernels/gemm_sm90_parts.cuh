#pragma once
// What the two sm90 kernels share (kernels/gemm_sm90.cuh, block-synchronous; kernels/gemm_sm90_ws.cuh,
// warp-specialized): how many slices a warp keeps in flight, a warp's dequantizer of its 16-row strip, and
// the end of the block's work.
#include "lutmm/epilogue/epilogue.cuh"
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/lut/lut_dequant.cuh"
#include "lutmm/mma/mma_sm80.cuh"
#include "lutmm/mma/wgmma_sm90.cuh"
#include "lutmm/pipeline/stage_layout.cuh"
#include "lutmm/scheduler/split_k.cuh"

#ifndef LUTMM_SM90_IN_FLIGHT  // experiments: -DLUTMM_SM90_IN_FLIGHT=n / -DLUTMM_SM90_LOOKAHEAD=n through
#define LUTMM_SM90_IN_FLIGHT 0  // LUTMM_NVRTC_OPTIONS override the choices below where a tile's slices allow
#endif
#ifndef LUTMM_SM90_LOOKAHEAD
#define LUTMM_SM90_LOOKAHEAD 0
#endif

namespace lutmm {

// wgmmas in flight per warpgroup, and slices dequantized ahead of the one multiplied: two and one where a k
// tile has 4 slices (4 A register sets); three and two with 8 slices (8 sets), 2% faster at M = 32..333 than
// two and one (docs/NOTES.md, v1.11: 64x4096x4096 12.69 -> 12.41 us; four and three, two and three no better).
// (Stream-K keeps two and one: its item loop's registers spill with eight sets on 256 x 64 tiles.) The
// experiment switches replace both where they fit the sets.
//
// Slice t's A fragment lives in set t % kABuffers from its lookups, kLookahead slices ahead of its wgmma,
// until that wgmma is done kInFlight slices later: kInFlight + kLookahead + 1 sets take turns. kABuffers
// divides kSlices, so the index carries across k tiles.
template <class K>
struct Sm90SliceQueue {
  static constexpr int kABuffers = K::kSlices < 8 || K::kStreamK ? 4 : 8;
  static constexpr bool kSwitched = LUTMM_SM90_IN_FLIGHT > 0 && LUTMM_SM90_LOOKAHEAD > 0 &&
                                    LUTMM_SM90_IN_FLIGHT + LUTMM_SM90_LOOKAHEAD + 1 <= kABuffers;
  static constexpr int kInFlight = kSwitched ? LUTMM_SM90_IN_FLIGHT : (kABuffers < 8 ? 2 : 3);
  static constexpr int kLookahead = kSwitched ? LUTMM_SM90_LOOKAHEAD : (kABuffers < 8 ? 1 : 2);
  static_assert(K::kSlices % kABuffers == 0 && kInFlight + kLookahead < kABuffers && kInFlight < K::kSlices &&
                    kLookahead >= 1,
                "A buffers cycle within a k tile");
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// A warp's A fragments: slice t (k16) of its 16-row strip of one stage's W, looked up and times the rows'
// group scales (one HMUL2 per register, as sm80 does at large M). Called in slice order (across k tiles
// too): a new atom's words are loaded at its first slice, the scales at each group's first slice (long
// groups: every k tile's first).
template <class K>
struct Sm90StripDequantizer {
  static constexpr int kGroup = K::kGroup;
  static constexpr bool kShortGroups = kGroup != 0 && kGroup <= K::kTileK;
  using Layout = pipeline::StageLayout<K>;
  using Lut = lut::KernelLut<K::kBits, K::kLutRowBytes>;

  const Lut& lut;
  const int strip, lane, g;
  uint32_t words[K::kBits];
  uint32_t scale_lo = 0, scale_hi = 0;

  LUTMM_DEVICE Sm90StripDequantizer(const Lut& table, int strip_, int lane_)
      : lut(table), strip(strip_), lane(lane_), g(lane_ >> 2) {}

  LUTMM_DEVICE void slice(uint8_t* pipe, int stage, int t, uint32_t (&frag)[4]) {
    const uint32_t* ws = reinterpret_cast<const uint32_t*>(Layout::w(pipe, stage));
    const uint8_t* ss = Layout::scales(pipe, stage);
    auto scale = [&](int e) { return static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(ss + Layout::scale_value(e))); };
    const int atom = t / 4, s = t % 4;
    if (s == 0) {  // a new atom: this lane's words of it
      lut::load_lane_words<K::kBits>(ws + (strip * K::kAtomsK + atom) * layout::words_per_atom(K::kBits) + lane * K::kBits,
                                     words);
    }
    // the scale of rows g and g + 8 as pairs, at each group's first slice (long groups: every k tile)
    if (t == 0 || (kShortGroups && (t * 16) % (kShortGroups ? kGroup : 1) == 0)) {
      const int grow = kShortGroups ? (t * 16) / (kShortGroups ? kGroup : 1) : 0;
      const uint32_t lo = scale(grow * K::kTileN + strip * 16 + g);
      const uint32_t hi = scale(grow * K::kTileN + strip * 16 + g + 8);
      scale_lo = lo | (lo << 16);
      scale_hi = hi | (hi << 16);
    }
    lut.slice(words, s, frag);
    frag[0] = mma::mul_x2<K::kBf16>(frag[0], scale_lo);
    frag[1] = mma::mul_x2<K::kBf16>(frag[1], scale_hi);
    frag[2] = mma::mul_x2<K::kBf16>(frag[2], scale_lo);
    frag[3] = mma::mul_x2<K::kBf16>(frag[3], scale_hi);
  }
};

// A warp's zeroed accumulators (its 16 rows of the warpgroup's 64 x kTileM tile), made known to the compiler
// as changed by the wgmmas from here on.
template <class K>
LUTMM_DEVICE void sm90_zero_accumulators(float (&acc)[1][K::kFragsM][4]) {
#pragma unroll
  for (int j = 0; j < K::kFragsM; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[0][j][i] = 0.f;
  mma::wgmma_fence_operands(acc[0]);
}

// The staged float tile of one (tile, K range) to the output: alone, through the workspace with the other
// splits, or through the cluster's shared memory.
template <class K>
LUTMM_DEVICE void sm90_finish_tile(const GemmParams& p, float* tile, const scheduler::TileWork& work, int tid) {
  if constexpr (K::kStreamK) {  // (never clusters: the cluster epilogue left out keeps the item loop unspilled)
    epilogue::finish<K>(p, tile, work.n0, work.m0, work.tile_id, work.split, tid, work.splits);
  } else if (p.cluster_splits) {
    epilogue::finish_in_cluster<K>(p, tile, work.n0, work.m0, tid);
  } else {
    epilogue::finish<K>(p, tile, work.n0, work.m0, work.tile_id, work.split, tid, work.splits);
  }
}
#endif

}  // namespace lutmm
