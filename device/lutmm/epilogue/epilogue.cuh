#pragma once
// The end of a block's work: accumulator fragments -> a float tile in shared memory -> the output.
//  * one split: add bias, round to the dtype, 16-byte stores of 8 outputs (N is a multiple of 8).
//  * several splits (split-K, or the blocks that share a tile under Stream-K): every block writes its float
//    tile to its own workspace slot; the block that arrives last at the tile's counter sums the slots in
//    split order 0, 1, ..., S-1 (a fixed order, so the result is bitwise the same whoever arrives last),
//    stores, and resets the counter for the next launch;
//    or, in the SplitSpread<K> kernels, which the runtime launches only where every block of the grid is
//    resident at once, all S blocks wait for the S-th arrival and each sums and stores a 1/S share of the
//    tile (same order, same bits; a block that waits too long leaves its share to the last arrival, so a
//    broken residency promise costs time, never a hang): one block reloading all S slots was bound by its
//    SM's L2 bandwidth (1.7 us of 11.7 on 64x4096x4096 with four splits of 32 KB tiles; docs/NOTES.md
//    v1.15). A variant of its own rather than a launch parameter, because any change to the epilogue moves
//    the register allocation of the (inlined) main loop (v1.12) and the other kernels stay as they were;
//    or, with flagged slots (p.split_flags, where the whole grid is resident and the tile is small), the block of
//    the last split sums, polling words that carry each value with its mark (finish_flagged);
//  * several splits in one thread-block cluster (sm_90+, finish_in_cluster): the blocks exchange their tiles'
//    shares through distributed shared memory, no global round trip.
// Fragment ownership (mma m16n8k16 C, W rows are the MMA's M side): lane (g = lane / 4, t4 = lane % 4)
// holds rows n = g and g + 8 of the strip, columns m = 2 t4 and 2 t4 + 1 of the 8-column block.
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm80_config.cuh"  // (sm80_epilogue_bytes, epilogue_tile_index)
#include "lutmm/mma/mma_sm80.cuh"
#include "lutmm/mma/wgmma_sm90.cuh"
#include "lutmm/ptx/cluster.cuh"
#include "lutmm/ptx/memory.cuh"
#include "lutmm/ptx/tma.cuh"

namespace lutmm::epilogue {

// How long a block of the spread split-K sum (SplitSpread<K>, finish) waits for its tile's other splits before
// it leaves its share to the last arrival. Far above a normal wait (the splits of a one-wave grid arrive
// within a few us of each other); -DLUTMM_SPREAD_PATIENCE_NS=0 makes every early block leave (a GPU test
// runs the fallback that way).
#ifndef LUTMM_SPREAD_PATIENCE_NS
#define LUTMM_SPREAD_PATIENCE_NS 20000
#endif
inline constexpr long long kSpreadPatienceNs = LUTMM_SPREAD_PATIENCE_NS;

// Where value (r, c) of the staged float tile lies: padded rows, or unpadded ones swizzled (epilogue_tile_index).
template <class K>
LUTMM_DEVICE constexpr int tile_at(int r, int c) {
  static_assert(K::kEpilogueLd == K::kTileN + 4 || (K::kEpilogueLd == K::kTileN && K::kTileN % 32 == 0),
                "epilogue_tile_index swizzles unpadded rows in 32-float runs");
  return epilogue_tile_index(K::kEpilogueLd, K::kTileN, r, c);
}

// add: += into the tile (the second and later warp groups of a k-split block) instead of =.
template <class K>
LUTMM_DEVICE void stage_accumulators(float* tile, const float (&acc)[K::kFragsN][K::kFragsM][4], int warp_n,
                                     int warp_m, int lane, bool add = false) {
  const int g = lane >> 2, t4 = lane & 3;
  auto put = [&](int at, float v) { tile[at] = add ? tile[at] + v : v; };
#pragma unroll
  for (int fn = 0; fn < K::kFragsN; ++fn) {
#pragma unroll
    for (int fm = 0; fm < K::kFragsM; ++fm) {
      const int n = (warp_n * K::kFragsN + fn) * 16 + g;
      const int m = warp_m * K::kWarpTileM + fm * 8 + 2 * t4;
      // (row m + 1 has row m's swizzle: m is even)
      const int at = tile_at<K>(m, n), at8 = tile_at<K>(m, n + 8);
      put(at, acc[fn][fm][0]);
      put(at + K::kEpilogueLd, acc[fn][fm][1]);
      put(at8, acc[fn][fm][2]);
      put(at8 + K::kEpilogueLd, acc[fn][fm][3]);
    }
  }
}

// Stores `rows` rows from m0 and the columns from n0 of the tile; value(r, c, v) fills v[0..7] for row m0 + r,
// columns c..c+7 of the tile. The 8-column chunks are dealt out: this thread takes chunks first, first + step, ...
template <class K, class ValueAt>
LUTMM_DEVICE void store_output(const GemmParams& p, int n0, int m0, int rows, int first, int step, ValueAt value) {
  constexpr int kChunksPerRow = K::kTileN / 8;
  for (int i = first; i < rows * kChunksPerRow; i += step) {
    const int r = i / kChunksPerRow, c = (i % kChunksPerRow) * 8;
    const int n = n0 + c;
    if (n >= p.n) continue;
    float v[8];
    value(r, c, v);
    if (p.bias != nullptr) {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] += mma::to_float<K::kBf16>(p.bias[n + j]);
    }
    uint32_t packed[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) packed[j] = mma::pack_x2<K::kBf16>(v[2 * j], v[2 * j + 1]);
    *reinterpret_cast<dev::uint4_t*>(p.out + static_cast<int64_t>(m0 + r) * p.n + n) =
        dev::uint4_t{packed[0], packed[1], packed[2], packed[3]};
  }
}
// The same for the tile's rows up to M.
template <class K, class ValueAt>
LUTMM_DEVICE void store_output(const GemmParams& p, int n0, int m0, int first, int step, ValueAt value) {
  store_output<K>(p, n0, m0, p.m - m0 < K::kTileM ? p.m - m0 : K::kTileM, first, step, value);
}

// Stores the block's float tile (shared memory, tile_at) as the output.
template <class K>
LUTMM_DEVICE void store_tile(const GemmParams& p, const float* tile, int n0, int m0, int tid) {
  store_output<K>(p, n0, m0, tid, K::kThreads, [&](int r, int c, float* v) {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = tile[tile_at<K>(r, c) + j];
  });
}

// Sums the S = splits slots of the tile in split order and stores the output, every block of the tile a 1/S
// share of its 8-column chunks (chunks split, split + S, ... in units of the block's threads).
template <class K>
LUTMM_DEVICE void store_spread_sum(const GemmParams& p, const float* slots, int n0, int m0, int split, int splits,
                                   int tid) {
  constexpr int kTileFloats = K::kTileM * K::kTileN;
  store_output<K>(p, n0, m0, split * K::kThreads + tid, K::kThreads * splits, [&](int r, int c, float* v) {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = 0.f;
    const float* at = slots + r * K::kTileN + c;
    // up to eight splits' chunks requested before the first add
    for (int s0 = 0; s0 < splits; s0 += 8) {
      float4 a[8], b[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        if (s0 + u < splits) {
          const float* slot = at + static_cast<int64_t>(s0 + u) * kTileFloats;
          a[u] = __ldcg(reinterpret_cast<const float4*>(slot));
          b[u] = __ldcg(reinterpret_cast<const float4*>(slot + 4));
        }
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        if (s0 + u < splits) {
          v[0] += a[u].x; v[1] += a[u].y; v[2] += a[u].z; v[3] += a[u].w;
          v[4] += b[u].x; v[5] += b[u].y; v[6] += b[u].z; v[7] += b[u].w;
        }
      }
    }
  });
}

// Split-K over flagged slots (p.split_flags; the runtime's rule, runtime/gemm.cpp flagged_tile, says where; this code
// needs at most one pair of the tile's stored values a thread, which finish() checks). One split's block sums the
// tile: the last one under split-K (S - 1, whose blocks the GPU dispatches last), the first one under Stream-K (split
// 0's item on a shared tile is the last of its run, the others' are the first of theirs: they stored long before).
// Every other block writes each value of its pair into a 64-bit word with a mark, (value bits << 32) | 1, by one
// store whose words are each single-copy atomic, and goes on: no fence and no counter. Their round trips (the slot
// stores' release, the counter's atomic, the reload after it) were most of the ~1 us by which a decode GEMM's
// last-arrival sum outlasted its other blocks (docs/NOTES.md v1.29). The summer polls the words of its pair, adds
// them in split order with its own value in its place (the order of the last-arrival sum: the same bits), stores the
// pair's two outputs itself (no barrier, no pass through the tile: 1 x 4096 x 4096 5.07 -> 4.89 us, v1.31), and
// clears the words, so every word is zero again when the next launch, which cannot write before this one has
// finished, uses it.
// The words of split s sit in slot s of the tile below the summer, s - 1 above it. The summer waits for its tile's
// other splits: the runtime asks for this only where the whole grid is resident at once (one wave, no MPS), so they
// run; one that found them missing for a second (the promise broken) stops the kernel with a trap rather than hang
// or store a partial sum.
inline constexpr long long kFlaggedPatienceNs = 1000000000ll;

// Waits until the words of one pair (at, at + 1) carry a mark in each of the `others` slots (kTileFloats words
// apart), copies them into seen and clears them. One look at each missing word at a time, issued again as soon as it
// is back (no sleep: each look is an L2 round trip already). Two or three looks in flight, a few hundred clocks
// apart, made 1 x 4096 x 4096 1.06x and 1.11x slower (docs/NOTES.md v1.31; the code is in
// docs/experiments/flagged-from-registers.patch).
template <int kTileFloats, int kOthers>
LUTMM_DEVICE void take_marked_pair(unsigned long long* at, int others, unsigned long long (&seen)[kOthers][2]) {
  unsigned long long look[kOthers][2];
  uint32_t missing = (1u << others) - 1u;  // the slots not seen marked yet
#pragma unroll
  for (int s = 0; s < kOthers; ++s)
    if (s < others) ptx::load_relaxed_gpu(at + s * kTileFloats, look[s][0], look[s][1]);
  const uint64_t since = ptx::global_timer_ns();
  for (uint32_t round = 1; missing != 0u; ++round) {
#pragma unroll
    for (int s = 0; s < kOthers; ++s) {
      if (((missing >> s) & 1u) == 0u) continue;
      if ((look[s][0] & look[s][1] & 1ull) != 0ull) {
        seen[s][0] = look[s][0];
        seen[s][1] = look[s][1];
        missing &= ~(1u << s);
      } else {
        ptx::load_relaxed_gpu(at + s * kTileFloats, look[s][0], look[s][1]);
      }
    }
    if (round % 8 == 0 && ptx::global_timer_ns() - since > static_cast<uint64_t>(kFlaggedPatienceNs)) __trap();
  }
#pragma unroll
  for (int s = 0; s < kOthers; ++s)
    if (s < others) ptx::store_relaxed_gpu(at + s * kTileFloats, 0ull, 0ull, ptx::l2_evict_last_policy());
}
LUTMM_DEVICE unsigned long long flagged_word(float v) {  // (value bits << 32) | the mark
  return (static_cast<unsigned long long>(__float_as_uint(v)) << 32) | 1ull;
}
LUTMM_DEVICE float flagged_value(unsigned long long w) { return __uint_as_float(static_cast<uint32_t>(w >> 32)); }
// The pair's sum in split order, the summer's own values `own` in their place (first under Stream-K, last under
// split-K).
template <bool kStreamK, int kOthers>
LUTMM_DEVICE void add_in_split_order(const unsigned long long (&seen)[kOthers][2], int others, float (&own)[2]) {
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    float v = 0.f;
    if constexpr (kStreamK) v += own[e];
#pragma unroll
    for (int s = 0; s < kOthers; ++s)
      if (s < others) v += flagged_value(seen[s][e]);
    if constexpr (!kStreamK) v += own[e];
    own[e] = v;
  }
}

template <class K>
LUTMM_DEVICE void finish_flagged(const GemmParams& p, float* tile, int n0, int m0, int tile_id, int split, int tid,
                                 int rows, int splits) {
  constexpr int kTileFloats = K::kTileM * K::kTileN, kOthers = kFlaggedMaxSplits - 1;
  unsigned long long* const words = p.split_flags + static_cast<int64_t>(tile_id) * kOthers * kTileFloats;
  const int summer = K::kStreamK ? 0 : splits - 1;
  const int others = splits - 1;  // the slots: splits 0 .. S - 2 under split-K, 1 .. S - 1 under Stream-K
  const int i = 2 * tid;  // this thread's pair: values i, i + 1 of the stored rows (row-major; tile_n is even)
  if (i >= rows * K::kTileN) return;
  const float* const t = tile + tile_at<K>(i / K::kTileN, i % K::kTileN);
  if (split != summer) {
    const int slot = K::kStreamK ? split - 1 : split;
    ptx::store_relaxed_gpu(words + slot * kTileFloats + i, flagged_word(t[0]), flagged_word(t[1]),
                           ptx::l2_evict_last_policy());  // (kept in L2: ptx/memory.cuh)
    return;
  }
  unsigned long long seen[kOthers][2];
  take_marked_pair<kTileFloats>(words + i, others, seen);
  float v[2] = {t[0], t[1]};
  add_in_split_order<K::kStreamK>(seen, others, v);
  // The pair straight to the output (no barrier, no second pass through the tile): columns n, n + 1 of row r, both
  // below N or both past it (N is a multiple of 8).
  const int r = i / K::kTileN, n = n0 + i % K::kTileN;
  if (n >= p.n) return;
  if (p.bias != nullptr) {
#pragma unroll
    for (int e = 0; e < 2; ++e) v[e] += mma::to_float<K::kBf16>(p.bias[n + e]);
  }
  *reinterpret_cast<uint32_t*>(p.out + static_cast<int64_t>(m0 + r) * p.n + n) = mma::pack_x2<K::kBf16>(v[0], v[1]);
}

// Whether finish() takes the flagged path for this tile: the device's check of the runtime's rule (runtime/gemm.cpp
// flagged_tile says where p.split_flags is set). (Its rows from m0 and `splits > 1` again, though finish() has both:
// the condition written inline in finish(), or given finish()'s rows, changed the sm80 kernels' SASS, the Stream-K
// ones by four registers; v1.31.)
template <class K>
LUTMM_DEVICE bool flagged_tile(const GemmParams& p, int m0, int splits) {
  const int rows = p.m - m0 < K::kTileM ? p.m - m0 : K::kTileM;
  return p.split_flags != nullptr && splits > 1 && rows * K::kTileN <= 2 * K::kThreads && splits <= kFlaggedMaxSplits;
}

// How many blocks share the tile: p.splits for every tile under split-K; under Stream-K (K::kStreamK) it
// varies per tile and comes as stream_splits.
template <class K>
LUTMM_DEVICE void finish(const GemmParams& p, float* tile, int n0, int m0, int tile_id, int split, int tid,
                         int stream_splits = 0) {
  // (read at each use, as p.splits itself: a local copy changed the sm80 kernels' SASS)
  auto splits = [&]() { if constexpr (K::kStreamK) { return stream_splits; } else { return p.splits; } };
  if (splits() == 1) {
    store_tile<K>(p, tile, n0, m0, tid);
    return;
  }
  constexpr int kTileFloats = K::kTileM * K::kTileN;
  constexpr int kQuads = K::kTileN / 4;  // float4s per tile row
  const int rows = p.m - m0 < K::kTileM ? p.m - m0 : K::kTileM;  // rows past M are never read back
  if constexpr (K::kFlaggedSums && !K::kSplitSpread) {
    if (flagged_tile<K>(p, m0, splits())) {
      finish_flagged<K>(p, tile, n0, m0, tile_id, split, tid, rows, splits());
      return;
    }
  }
  float* slots = p.workspace + static_cast<int64_t>(tile_id) * p.splits * kTileFloats;
  float* mine = slots + static_cast<int64_t>(split) * kTileFloats;
  // (The slots' lines kept in L2 across launches, ptx/memory.cuh: l2_evict_last_policy.)
  const uint64_t keep_in_l2 = ptx::l2_evict_last_policy();
  for (int i = tid; i < rows * kQuads; i += K::kThreads) {
    const int r = i / kQuads, c = (i % kQuads) * 4;
    const float* s = tile + tile_at<K>(r, c);
    ptx::store_l2_hint(reinterpret_cast<float4*>(mine + r * K::kTileN + c), make_float4(s[0], s[1], s[2], s[3]),
                       keep_in_l2);
  }
  // Whether this block arrived last, told to every thread by the barrier itself (a __shared__ flag would
  // add 128 bytes of static shared memory: enough to cost a block its place where two fill an SM exactly).
  // The barrier orders every thread's slot stores before thread 0's counter increment, whose release makes
  // them visible device-wide; its acquire (in the last block) makes the other blocks' slots visible to the
  // loads after the second barrier. One acq_rel atomic by one thread instead of a sequentially consistent
  // fence in every thread before and after it (__threadfence: MEMBAR.SC.GPU, ~1 us per GEMM; NOTES v1.10).
  __syncthreads();
  uint32_t* const counter = p.tile_counters + tile_id;
  if constexpr (K::kSplitSpread) {
    // The counter word holds the arrivals in bits 0..15 and, in bits 16..31, a bit per split whose block
    // stopped waiting (splits <= 16: runtime/gemm.cpp, spread_pays). The arrivals count up from 0; the last
    // resets the word at once (the next launch, which cannot start before every block of this one has left,
    // finds 0), so a waiting block, which saw `arrived` others on arriving, knows all have arrived when the
    // count reaches S or falls back to `arrived` or below. The reset is a release after the last arrival's
    // acquire: a block that reads the 0 sees every slot as one that reads S does.
    // The runtime launches this variant only where the whole grid is resident at once, but a GPU shared
    // with other work (time slicing, green contexts holding part of the SMs, MPS) can break that promise.
    // So no block waits forever: one that has waited kSpreadPatienceNs sets its split's bit while the count
    // is still below S (a compare-and-swap, so never after the last arrival) and leaves, and the last
    // arrival sums the share of every split whose bit it finds besides its own. Each share is summed once,
    // by the same code in split order, so the output is bitwise the same whoever sums it.
    // Thread 0 decides; the decision reaches the other threads through the staged tile's first word (every
    // thread is past its reads of the tile: the barrier above): the shares to sum as a split mask, 0 to leave.
    uint32_t* const decision = reinterpret_cast<uint32_t*>(tile);
    if (tid == 0) {
      const uint32_t all = static_cast<uint32_t>(splits()), own = 1u << split;
      const uint32_t old = ptx::atomic_add_acq_rel_gpu(counter, 1u), arrived = old & 0xffffu;
      uint32_t shares = own;
      if (arrived == all - 1) {
        ptx::store_release_gpu(counter, 0u);
        shares |= old >> 16;
      } else {
        // (the clock read at the first look and every 16th after it: a waiting block reacts to the last
        // arrival as soon as without the patience)
        const uint32_t since = static_cast<uint32_t>(ptx::global_timer_ns());  // (differences mod 2^32 ns)
        for (uint32_t seen = old + 1, looks = 1;; ++looks) {
          const uint32_t count = seen & 0xffffu;
          if (count >= all || count <= arrived) break;  // all have arrived (or the last has reset the word)
          if (looks % 16 == 1 &&
              static_cast<uint32_t>(ptx::global_timer_ns()) - since >= static_cast<uint32_t>(kSpreadPatienceNs)) {
            const uint32_t found = ptx::atomic_cas_acq_rel_gpu(counter, seen, seen | (own << 16));
            if (found == seen) {
              shares = 0;  // the last arrival sums this share
              break;
            }
            seen = found;
            continue;
          }
          __nanosleep(32);
          seen = ptx::load_acquire_gpu(counter);
        }
      }
      *decision = shares;
    }
    __syncthreads();  // (thread 0's acquire, then the barrier: every slot is visible to every thread)
    const uint32_t shares = *decision;
#pragma unroll 1
    for (int s = 0; s < splits(); ++s)
      if ((shares >> s) & 1u) store_spread_sum<K>(p, slots, n0, m0, s, splits(), tid);
    return;
  }
  const bool last = __syncthreads_or(tid == 0 && ptx::atomic_add_acq_rel_gpu(counter, 1u) ==
                                                     static_cast<uint32_t>(splits() - 1));
  if (!last) return;
  // Sum the slots in split order into the tile, then store as a single split does. A thread owns the
  // float4s tid, tid + kThreads, ... of the tile (the ones it wrote to its slot above, so reading its own
  // slot back needs no ordering) and takes them kBatch at a time through the splits, loading four splits
  // before adding them: up to 4 x kBatch loads in flight (one split of one chunk at a time before).
  constexpr int kQuadsPerThread = (K::kTileM * kQuads + K::kThreads - 1) / K::kThreads;
  constexpr int kBatch = kQuadsPerThread < 4 ? kQuadsPerThread : 4, kRound = 4;
  const int quads = rows * kQuads;
#pragma unroll 1
  for (int base = 0; base < kQuadsPerThread; base += kBatch) {
    float4 v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < splits(); s0 += kRound) {
      float4 a[kRound][kBatch];
#pragma unroll
      for (int u = 0; u < kRound; ++u) {
        const float* slot = slots + static_cast<int64_t>(s0 + u) * kTileFloats;
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int i = tid + (base + j) * K::kThreads;
          a[u][j] = s0 + u < splits() && i < quads ? __ldcg(reinterpret_cast<const float4*>(slot + i * 4))
                                                   : make_float4(0.f, 0.f, 0.f, 0.f);  // (slot[r * kTileN + c])
        }
      }
#pragma unroll
      for (int u = 0; u < kRound; ++u)
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          v[j].x += a[u][j].x; v[j].y += a[u][j].y; v[j].z += a[u][j].z; v[j].w += a[u][j].w;
        }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = tid + (base + j) * K::kThreads;
      if (i < quads) {
        float* t = tile + tile_at<K>(i / kQuads, (i % kQuads) * 4);
        t[0] = v[j].x; t[1] = v[j].y; t[2] = v[j].z; t[3] = v[j].w;
      }
    }
  }
  __syncthreads();
  store_tile<K>(p, tile, n0, m0, tid);
  if (tid == 0) p.tile_counters[tile_id] = 0;
}

// The splits of one output tile are the blocks of one cluster (cluster dims 1 x 1 x splits); block r is split
// r. Each block's float tile stays in its own shared memory, and the tile's rows are dealt out in S = splits
// contiguous shares: block r sums and stores rows [r * R / S, (r + 1) * R / S) of the R stored ones, each
// over the S tiles in split order 0, 1, ..., S-1 (a fixed order: bitwise the same result every run, whichever
// way the partials travel). Saves finish()'s round trip through the workspace (stores, the counter, the
// reloads): 0.2-0.8 us per small GEMM on the H200 (docs/NOTES.md v1.10).
//
// How the partials travel, in the sm90 kernels where the pipeline's shared memory has room for the incoming
// shares next to the tile (ClusterPush<K>::kFits; all but the largest tiles): pushed by bulk copies. Each
// block initialises an mbarrier for the (S - 1) shares it will receive; one relaxed cluster barrier (every block
// is done with its main loop, so the memory the shares land in is free, and its barrier is initialised); then thread 0
// copies share r of its tile into receive slot `rank` of block r, for every other r (cp.async.bulk, S - 1
// copies), and each block waits on its own mbarrier, sums, stores, and meets the others at a last relaxed
// barrier (no block leaves while its tile may still be read by a copy). No fence with cluster scope: the
// barrier with release semantics that pulling needs (the others read this block's tile after it) costs a
// MEMBAR.ALL.GPU, ~0.3 us on the sm90 kernels (docs/NOTES.md v1.27). (The sm80 kernels, whose small cluster
// GEMMs ran 1-14% slower pushed, K::kClusterPush, pull.)
// Receive area (after the tile, 16-byte aligned): slot s holds ceil(R / S) rows (kEpilogueLd floats each);
// the mbarrier follows the slots. Otherwise: pulled, each block reading its rows' chunks from the S tiles
// through distributed shared memory between two barriers, every split's chunk requested before the first add
// (one remote round trip instead of S: 2-4% on the small cluster GEMMs, docs/NOTES.md v1.12).
inline constexpr int kMaxClusterSplits = 8;  // the portable cluster size (runtime/gemm.cpp: cluster_split_k)

template <class K>
struct ClusterPush {
  // (cluster tiles are never Stream-K ones, so their rows are the padded, unswizzled ones of tile_at)
  static_assert(K::kEpilogueLd == K::kTileN + 4, "the cluster epilogue reads the tile's padded rows directly");
  static constexpr int kRowBytes = K::kEpilogueLd * 4;                             // a staged tile row
  static constexpr int kTileBytes = sm80_epilogue_bytes(K::kTileN, K::kTileM);     // the staged tile
  static constexpr int kSlotsBytes = (K::kTileM + kMaxClusterSplits - 1) * kRowBytes;  // S slots of ceil(R / S) rows
  // The shared memory from the tile's start that the kernels leave to the epilogue: the stages, or the tile
  // where it is larger (sm80_dynamic_shared_bytes, sm90_dynamic_shared_bytes).
  static constexpr int kRegionBytes = K::kStages * K::kStageBytes > kTileBytes ? K::kStages * K::kStageBytes : kTileBytes;
  // receive slots right after the tile (16-byte aligned: kRowBytes is), then the mbarrier
  static constexpr bool kFits = K::kClusterPush && kTileBytes + kSlotsBytes + 8 <= kRegionBytes;
  static_assert(kRowBytes % 16 == 0 && kTileBytes == K::kTileM * kRowBytes, "bulk copies of whole rows");
};

template <class K>
LUTMM_DEVICE void finish_in_cluster(const GemmParams& p, float* tile, int n0, int m0, int tid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t rank = ptx::cluster_rank();
  const uint32_t tile_addr = ptx::smem_addr(tile);
  const int splits = p.splits;
  if constexpr (ClusterPush<K>::kFits) {
    using Push = ClusterPush<K>;
    const int rows = p.m - m0 < K::kTileM ? p.m - m0 : K::kTileM;  // (as store_output: rows past M stay out)
    const int slot_rows = (rows + splits - 1) / splits;
    auto share_begin = [&](int r) { return r * rows / splits; };
    const int own_begin = share_begin(static_cast<int>(rank)), own_rows = share_begin(static_cast<int>(rank) + 1) - own_begin;
    const uint32_t recv = tile_addr + Push::kTileBytes;
    const uint32_t bar = recv + static_cast<uint32_t>(splits * slot_rows * Push::kRowBytes);
    mma::fence_proxy_async_shared();  // this thread's part of the staged tile -> the copies (async proxy)
    if (tid == 0) {
      ptx::mbarrier_init(bar, 1);
      ptx::fence_mbarrier_init_cluster();
    }
    ptx::cluster_sync_relaxed();  // every block's main loop done, every barrier initialised
    if (tid == 0) {
      // (after the barrier: shares may land before it, but the phase cannot complete without this arrival)
      ptx::mbarrier_arrive_expect_tx(bar, static_cast<uint32_t>((splits - 1) * own_rows * Push::kRowBytes));
      for (int r = 0; r < splits; ++r) {
        const int begin = share_begin(r), count = share_begin(r + 1) - begin;
        if (r == static_cast<int>(rank) || count == 0) continue;
        const uint32_t slot = recv + static_cast<uint32_t>(static_cast<int>(rank) * slot_rows * Push::kRowBytes);
        ptx::copy_shared_to_cluster(ptx::map_to_rank(slot, static_cast<uint32_t>(r)),
                                    tile_addr + static_cast<uint32_t>(begin * Push::kRowBytes),
                                    static_cast<uint32_t>(count * Push::kRowBytes),
                                    ptx::map_to_rank(bar, static_cast<uint32_t>(r)));
      }
    }
    ptx::mbarrier_wait</*kClusterAcquire=*/true>(bar, 0);
    const float* slots = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(tile) + Push::kTileBytes);
    store_output<K>(p, n0, m0 + own_begin, own_rows, tid, K::kThreads, [&](int r, int c, float* v) {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = 0.f;
#pragma unroll
      for (int s = 0; s < kMaxClusterSplits; ++s) {
        if (s < splits) {
          const float* part = s == static_cast<int>(rank) ? tile + (own_begin + r) * K::kEpilogueLd + c
                                                          : slots + (s * slot_rows + r) * K::kEpilogueLd + c;
          const float4 a = *reinterpret_cast<const float4*>(part), b = *reinterpret_cast<const float4*>(part + 4);
          v[0] += a.x; v[1] += a.y; v[2] += a.z; v[3] += a.w;
          v[4] += b.x; v[5] += b.y; v[6] += b.z; v[7] += b.w;
        }
      }
    });
    ptx::cluster_sync_relaxed();  // every copy out of this block's tile has landed
  } else {
    ptx::cluster_sync();
    store_output<K>(p, n0, m0, static_cast<int>(rank) * K::kThreads + tid, K::kThreads * splits,
                    [&](int r, int c, float* v) {
#pragma unroll
                      for (int j = 0; j < 8; ++j) v[j] = 0.f;
                      const uint32_t at = tile_addr + static_cast<uint32_t>(r * K::kEpilogueLd + c) * 4u;
                      float4 a[kMaxClusterSplits], b[kMaxClusterSplits];
#pragma unroll
                      for (int s = 0; s < kMaxClusterSplits; ++s) {
                        if (s < splits) {
                          const uint32_t remote = ptx::map_to_rank(at, static_cast<uint32_t>(s));
                          a[s] = ptx::load_cluster_f32x4(remote);
                          b[s] = ptx::load_cluster_f32x4(remote + 16u);
                        }
                      }
#pragma unroll
                      for (int s = 0; s < kMaxClusterSplits; ++s) {
                        if (s < splits) {
                          v[0] += a[s].x; v[1] += a[s].y; v[2] += a[s].z; v[3] += a[s].w;
                          v[4] += b[s].x; v[5] += b[s].y; v[6] += b[s].z; v[7] += b[s].w;
                        }
                      }
                    });
    ptx::cluster_sync_relaxed();  // (the reads above are done: their values went into the stores)
  }
#else
  __trap();  // the host launches clusters only on sm_90+
#endif
}

}  // namespace lutmm::epilogue

namespace lutmm {

// The kernel traits K with the spread split-K sum (epilogue::finish): a kernel variant of its own, which the
// runtime launches only where every block of the grid is resident at once (runtime/gemm.cpp: one_wave).
template <class K>
struct SplitSpread : K {
  static constexpr bool kSplitSpread = true;
  static_assert(!K::kStreamK, "Stream-K tiles are shared by varying numbers of blocks: the last arrival sums");
};

}  // namespace lutmm
