#pragma once
// The sm80-family LUT GEMM: out[m, n] = sum_k x[m, k] * table[code[n, k]] * scale[n, k / G] (+ bias[n]).
// mma.sync m16n8k16 on every sm_80+ GPU.
//
// W is the MMA's M-side (A) operand and x the N-side (B) operand, i.e. the block computes out^T tiles:
// a decode step (M = 1..8) fills the n8 side of each MMA with little waste, while W's 16-row side is
// always full. Per k tile, a block streams packed W, x and the scales through a kStages-deep cp.async
// pipeline; each warp dequantizes its 16-row strips straight from the packed words (whose lanes already
// match the A-fragment, so no shuffles) and multiplies with x fragments from ldmatrix. Split-K over
// gridDim.z; the epilogue reduces the splits in a fixed order. Under Stream-K (K::kStreamK, decode: one tile
// row) a block takes a run of units (one k tile of one output tile) instead, which may cover parts of
// several tiles (scheduler/stream_k.cuh): decode blocks stream W at a rate of their own, so a grid whose
// tiles leave block slots empty or doubly loaded is as slow as its busiest slot, and Stream-K gives every
// slot the same number of units. The run streams through the stages without a break at tile boundaries
// (unit g of the run sits in stage g % kStages; each copy aims at its own tile), and a finished tile's
// epilogue stages its accumulators in the stage of its last unit, the one stage no copy is landing in.
//
// Where the group scale is applied depends on how many MMAs share one dequantized fragment:
//  * few (kFragsM <= 2, decode and small batches): the unscaled table values go into the MMA, each group's
//    partial sums collect in float and are scaled once per group (4 FFMA per fragment and group instead
//    of 4 HMUL2 per fragment and k16 slice; also exact in float);
//  * many (large M): the fragment is scaled once (HMUL2) and reused by every MMA, keeping one set of
//    accumulators in registers.
#include "lutmm/epilogue/epilogue.cuh"
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/lut/lut_dequant.cuh"
#include "lutmm/mma/mma_sm80.cuh"
#include "lutmm/pipeline/stage_loader.cuh"
#include "lutmm/ptx/timeline.cuh"
#include "lutmm/scheduler/split_k.cuh"
#include "lutmm/scheduler/stream_k.cuh"

#ifndef LUTMM_PREWAIT_SLICES  // experiments: -DLUTMM_PREWAIT_SLICES=n overrides the rule (below, kPrewaitSlices)
#define LUTMM_PREWAIT_SLICES (-1)
#endif
#ifndef LUTMM_L2_AHEAD  // experiments: -DLUTMM_L2_AHEAD=n through LUTMM_NVRTC_OPTIONS overrides the choice
#define LUTMM_L2_AHEAD (-1)
#endif
// Diagnostics (wrong results by design; through LUTMM_NVRTC_OPTIONS, which is part of the cache key):
// -DLUTMM_EXPERIMENT_NO_LOADS times the main loop's compute alone (no copies after the prologue's stages),
// -DLUTMM_EXPERIMENT_NO_COMPUTE its copy skeleton alone (copies, waits and barriers, no dequantization or
// MMA), -DLUTMM_EXPERIMENT_NO_X (pipeline/stage_loader.cuh) leaves x's copies out, and
// -DLUTMM_EXPERIMENT_NO_BLOCK_BARRIER leaves out the main loop's block barrier (with -DLUTMM_BULK_W=1 each warp still
// waits for W's bytes: the time of warps that never wait for each other, an upper bound for a loop whose x and scales
// come per warp). docs/NOTES.md v1.7, v1.20, v1.36 and v1.48 split the decode time with them.

namespace lutmm {

template <class K>
LUTMM_DEVICE void gemm_sm80(const GemmParams& p) {
  // [256-byte-row pair table][the pipeline stages (later the epilogue tile)]
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t* const pair_table = lut::pair_table_storage<K::kBits, K::kLutRowBytes>(smem);
  constexpr bool kScaleInAcc = K::kFragsM <= 2;
  // k tiles of W prefetched into L2 beyond the stages. The register path (kWInRegisters) keeps only one k
  // tile in flight per warp and needs it (1x8192x28672: 52 -> 41 us with 4); the cp.async stages keep
  // enough in flight themselves (2 or 6 tiles ahead: no gain or slower; docs/NOTES.md, v1.5).
  constexpr int kL2Ahead = LUTMM_L2_AHEAD >= 0 ? LUTMM_L2_AHEAD : (K::kWInRegisters ? 4 : 0);
  constexpr int kGroup = K::kGroup;  // 0: one scale per row
  // Slices of the first k tile a warp dequantizes before the dependency wait, into registers (PrewaitFirstSlices<K>,
  // kernels/gemm_sm80_config.cuh): a dependent launch's blocks are resident a few us before the previous kernel
  // releases them, with W's first stages and the table in shared memory but the SM's pipes idle, and where the
  // decode loop, not HBM, binds (the H200's 8192^2), the loop after the wait is bound by the SM's issue
  // (docs/NOTES.md, v1.43 and v1.47: H200 1 x 8192^2 0.97x, 1-2 x 8192 x 28672 0.985-0.99x). Costs
  // kPrewaitSlices x kFragsN x 4 registers through the first k tile. Only in the variant, which the runtime
  // launches on sm_90+ (where launches overlap) for runs of 8+ k tiles outside cluster launches, on GPUs whose
  // HBM outruns the loop (runtime/gemm.cpp: prewait_first_slices); compiled into every kernel it was 1.024x
  // slower over every M <= 8 shape on an H100, 1.2x on small ones that never took it (v1.48-v1.50).
  // -DLUTMM_PREWAIT_SLICES=P forces P on every kernel (0: off everywhere).
  constexpr int kPrewaitRule =
      K::kPrewait && ptx::kDependentLaunch
          ? sm80_prewait_slices(K::kTileN, K::kTileM, K::kTileK, K::kWarpsN, K::kWarpsM, K::kWarpsK, K::kStreamK,
                                K::kWInRegisters)
          : 0;
  constexpr int kPrewaitWanted = LUTMM_PREWAIT_SLICES >= 0 ? LUTMM_PREWAIT_SLICES : kPrewaitRule;
  constexpr int kPrewaitSlices = K::kStreamK || K::kWInRegisters ? 0
                                 : kPrewaitWanted < K::kGroupSlices ? kPrewaitWanted
                                                                    : K::kGroupSlices;

  static_assert(!K::kStreamK || K::kTileM * K::kEpilogueLd * 4 <= K::kStageBytes,
                "Stream-K stages the epilogue tile in one stage");
  ptx::Timeline timeline(p.trace);  // (developer instrumentation: empty unless LUTMM_TIMELINE)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // warps: kWarpsN along N fastest, then kWarpsM along M, then the kWarpsK groups of the k tile's slices
  const int warp_n = warp % K::kWarpsN, warp_m = (warp / K::kWarpsN) % K::kWarpsM;
  const int warp_k = warp / (K::kWarpsN * K::kWarpsM);
  const int g = lane >> 2;
  // The table's entries first: their round trip overlaps the index arithmetic and copies below instead of
  // following them (v1.28's trace: blocks that enter after the previous kernel ended have the prologue on the
  // critical path; v1.29, with the x rows past M unzeroed: 0.973x over 55 decode and small shapes, 1 x 4096 x
  // 4096 5.60 -> 5.38 us).
  const uint32_t table_entry = lut::table_entry_of_lane_now<K::kBits>(p.table, lane);
  // The block's work: one (tile, K split) under split-K, a run of them under Stream-K.
  scheduler::StreamK stream(p, blockIdx.x, gridDim.x);
  scheduler::TileWork work;
  if (!scheduler::first_work<K>(p, stream, work)) return;
  int num_kt = work.kt_end - work.kt_begin;
  // Stream-K: the next unit of the run to copy (its tile, k tile and stage, and how many are left), counted
  // along instead of divided out (a 64-bit division per k tile made the decode loop ~6% slower), and the stage of
  // the unit being multiplied.
  struct UnitCursor {
    int tile, kt, stage, left;
  };
  UnitCursor copy_next{work.tile_id, work.kt_begin, 0,
                       K::kStreamK ? static_cast<int>(stream.end - stream.first_unit(p)) : 0};
  int compute_stage = 0;

  // Launched as a programmatic dependent (sm_90+, runtime/gemm.cpp), this block may run while the stream's
  // previous kernel drains. Until grid_dependency_wait it touches nothing that kernel may write: it copies the
  // W and scales of its first stages, builds the table and (kPrewaitSlices) dequantizes its first slices
  // (weights are taken to be unchanged by it: a GEMM right after a kernel that writes them is launched without
  // the overlap, GemmOptions::weights_just_written) and, where the grid fills the GPU or leaves most of it idle, lets the stream's next kernel launch already
  // (p.dependents_early; otherwise after the main loop, below). Copying the first stages here instead of
  // prefetching them into L2 took 0.1-0.5 us off small and decode GEMMs (docs/NOTES.md, v1.12). (Under
  // Stream-K: the first item's.)
  using Layout = pipeline::StageLayout<K>;
  pipeline::StageLoader<K> loader(p, work.n0, work.m0, tid);
  // kBulkW: W's stages by bulk copies, each warp of the first row and K group its own strips, each stage counted on
  // an mbarrier (pipeline::BulkWBarriers).
  constexpr bool kBulkW = pipeline::kBulkW<K>;
  const pipeline::BulkWBarriers<K> w_bars;
  if constexpr (kBulkW) {
    if (tid == 0) w_bars.init();
    __syncthreads();  // (before any warp's first copy)
  }
  auto copy_w_bulk = [&](int s, int kt) {
    if (kBulkW && warp < K::kWarpsN) loader.copy_w_bulk(smem, s, kt, w_bars.bar(s), warp * K::kFragsN, lane);
  };
  // Stream-K: copies unit c of the run (W and scales, x, or both) through the loader of its own tile, and
  // steps c to the next unit.
  enum class Part { weights, x, all };
  auto copy_unit = [&](UnitCursor& c, Part part) {
    if (c.left <= 0) return;
    auto go = [&](const pipeline::StageLoader<K>& l) {
      if (part != Part::x) l.load_weights(smem, c.stage, c.kt);
      if (part != Part::weights) l.load_x(smem, c.stage, c.kt);
    };
    if (c.tile == work.tile_id) {
      go(loader);
    } else {  // (one tile row: every tile's m0 is work.m0)
      go(pipeline::StageLoader<K>(p, (c.tile % p.tiles_n) * K::kTileN, work.m0, tid));
    }
    if (++c.kt == p.k_tiles) {
      c.kt = 0;
      ++c.tile;
    }
    if (++c.stage == K::kStages) c.stage = 0;
    --c.left;
  };
  const UnitCursor run_start = copy_next;
#pragma unroll
  for (int s = 0; s < K::kStages - 1; ++s) {
    if constexpr (K::kStreamK) {
      copy_unit(copy_next, Part::weights);
    } else {
      if (s < num_kt) {
        loader.load_weights(smem, s, work.kt_begin + s);
        copy_w_bulk(s, work.kt_begin + s);
      }
    }
    if constexpr (kPrewaitSlices > 0) ptx::cp_async_commit();  // (stage 0's W alone is waited for below)
  }
  if constexpr (K::kStreamK) copy_next = run_start;  // (x of the same units after the dependency wait)
  for (int d = K::kWInRegisters ? 0 : K::kStages - 1; d < K::kStages - 1 + kL2Ahead && d < num_kt; ++d)
    loader.prefetch_w(work.kt_begin + d);
  timeline.mark_before_wait(0);
  // The table, a part of the weights like W: built here, it overlaps the previous kernel's tail instead of
  // delaying the first k tile (0.94x over 17 decode and small shapes, 1 x 4096 x 4096 6.47 -> 5.94 us,
  // 2 x 320 x 1280 2.65 -> 2.41; docs/NOTES.md v1.16). The main loop's first barrier publishes it.
  const lut::KernelLut<K::kBits, K::kLutRowBytes> dequantizer(pair_table, table_entry, tid, K::kThreads);
  // This lane's b words of atom `atom` of strip `strip`, from stage W tile ws.
  auto stage_strip_words = [&](const uint32_t* ws, int strip, int atom, uint32_t (&words)[K::kBits]) {
    lut::load_lane_words<K::kBits>(ws + (strip * K::kAtomsK + atom) * layout::words_per_atom(K::kBits) + lane * K::kBits,
                                   words);
  };
  // kPrewaitSlices > 0: this warp's first slices of the first k tile, dequantized (unscaled) from stage 0.
  uint32_t a_pre[kPrewaitSlices > 0 ? kPrewaitSlices : 1][K::kFragsN][4];
  if constexpr (kPrewaitSlices > 0) {
    ptx::cp_async_wait<K::kStages - 2>();  // stage 0's W (a commit a stage above)
    __syncthreads();                       // ... and the table, from every thread
    w_bars.wait(0, 0);
    const uint32_t* ws = reinterpret_cast<const uint32_t*>(Layout::w(smem, 0));
    if (num_kt > 0) {
#pragma unroll
      for (int wk = 0; wk < K::kWarpsK; ++wk) {
        if (K::kWarpsK > 1 && wk != warp_k) continue;
        uint32_t words[K::kFragsN][K::kBits];
#pragma unroll
        for (int j = 0; j < kPrewaitSlices; ++j) {
          const int t = wk * K::kGroupSlices + j, atom = t / 4, s = t % 4;
#pragma unroll
          for (int fn = 0; fn < K::kFragsN; ++fn) {
            if (s == 0) stage_strip_words(ws, warp_n * K::kFragsN + fn, atom, words[fn]);
            dequantizer.slice(words[fn], s, a_pre[j][fn]);
          }
        }
      }
    }
  }
  timeline.mark_before_wait(1);
  if (p.dependents_early) ptx::allow_dependent_launch();
  ptx::grid_dependency_wait();
  timeline.mark(1);
  // Prologue: x of the first kStages - 1 stages. One commit per stage, even when empty, keeps the wait count
  // exact (the first group also holds the weight copies above).
#pragma unroll
  for (int s = 0; s < K::kStages - 1; ++s) {
    if constexpr (K::kStreamK) {
      copy_unit(copy_next, Part::x);
    } else {
      if (s < num_kt) loader.load_x(smem, s, work.kt_begin + s);
    }
    ptx::cp_async_commit();
  }

  float part[kScaleInAcc ? K::kFragsN : 1][kScaleInAcc ? K::kFragsM : 1][4];  // one group's partial sums

  // W straight to registers (kWInRegisters): this lane's words of its strips, one k tile ahead.
  constexpr int kWRegFn = K::kWInRegisters ? K::kFragsN : 1, kWRegAtoms = K::kWInRegisters ? K::kAtomsK : 1;
  uint32_t w_cur[kWRegFn][kWRegAtoms][K::kBits], w_next[kWRegFn][kWRegAtoms][K::kBits];
  const uint32_t* w_lane[kWRegFn];
  bool w_ok[kWRegFn];
  if constexpr (K::kWInRegisters) {
    const int64_t k_atoms = p.k_padded / layout::kAtomCols;
#pragma unroll
    for (int fn = 0; fn < kWRegFn; ++fn) {
      const int atom_row = work.n0 / 16 + warp_n * K::kFragsN + fn;
      w_ok[fn] = atom_row * 16 < p.n_padded;
      w_lane[fn] = p.packed + (static_cast<int64_t>(atom_row) * k_atoms) * layout::words_per_atom(K::kBits) + lane * K::kBits;
    }
  }
  auto load_w = [&](uint32_t (&dst)[kWRegFn][kWRegAtoms][K::kBits], int kt) {
#pragma unroll
    for (int fn = 0; fn < kWRegFn; ++fn)
#pragma unroll
      for (int a = 0; a < kWRegAtoms; ++a) {
        if (w_ok[fn]) {
          ptx::ldg_stream(dst[fn][a], w_lane[fn] + (static_cast<int64_t>(kt) * K::kAtomsK + a) * layout::words_per_atom(K::kBits));
        } else {
#pragma unroll
          for (int w = 0; w < K::kBits; ++w) dst[fn][a][w] = 0u;
        }
      }
  };
  if constexpr (K::kWInRegisters) {
    if (num_kt > 0) load_w(w_cur, work.kt_begin);
  }

  // ldmatrix row addresses: lane supplies row (lane & 7) of matrix (lane >> 3); for slice t the chunk is
  // 2t + (matrix & 1), stored at chunk (2t ^ ((matrix & 1) ^ row % 8)) since 2t is even: a per-lane base for
  // each t % 4, the rest immediate offsets (Layout::x_slice_lane).
  constexpr int kXLanes = 4;  // (kSlices is a multiple of 4: whole atoms)
  int x_lane[kXLanes];
  {
    const int key = ((lane >> 3) & 1) ^ (lane & 7);
    // x4: matrices 2 and 3 (lanes 16..31) are the next 8-column block; x2 reads the addresses of lanes 0..15
    const int row = warp_m * K::kWarpTileM + (K::kFragsM >= 2 ? ((lane >> 4) & 1) * 8 : 0) + (lane & 7);
#pragma unroll
    for (int q = 0; q < kXLanes; ++q) x_lane[q] = Layout::x_slice_lane(row, key, q);
  }
  // The x fragments (B operands) of slice t for this warp's kFragsM 8-column blocks, from stage x tile xs.
  auto load_x_fragments = [&](const uint8_t* xs, int t, uint32_t (&b)[K::kFragsM][2]) {
    const uint32_t at = ptx::smem_addr(xs) + x_lane[t % kXLanes] + (t / 4) * Layout::kXQuadStep;
#pragma unroll
    for (int fm = 0; fm + 1 < K::kFragsM; fm += 2) {
      uint32_t r[4];
      ptx::ldmatrix_x4(r, at + fm * Layout::kXBlockStep);
      b[fm][0] = r[0];
      b[fm][1] = r[1];
      b[fm + 1][0] = r[2];
      b[fm + 1][1] = r[3];
    }
    if constexpr (K::kFragsM % 2 == 1) {
      constexpr int fm = K::kFragsM - 1;
      uint32_t r[2];
      ptx::ldmatrix_x2(r, at + fm * Layout::kXBlockStep);
      b[fm][0] = r[0];
      b[fm][1] = r[1];
    }
  };

  // Scales: this lane's rows are scale_row0 + c (c: group row x tile_n + the fragment's rows, known at compile
  // time); where the holes allow it (Layout::kScaleValuesAdd), one base a lane and immediate offsets.
  const int scale_row0 = warp_n * K::kWarpTileN + g;
  constexpr bool kScalesAdd = Layout::template kScaleValuesAdd<K::kWarpTileN>;
  const int scale_lane = Layout::scale_value(scale_row0);
  // The decode warps' scales of one group row by one transposed ldmatrix: the warp's rows lie in 16-byte runs of 8
  // (run 2f + h: rows 16 f + 8 h .. + 7 of strip f); matrix f's row addresses alternate runs 2f and 2f + 1, so lane
  // (g, t) receives (row g, row g + 8) of strip f in register f: one instruction and at most 4 wavefronts for the
  // group instead of two 2-byte loads (a wavefront each) a strip (0.993x over 10 decode shapes, 1 x 8192 x 28672
  // 32.33 -> 31.76 us, 16 x 28672 x 8192 39.55 -> 38.93; docs/NOTES.md v1.35).
  constexpr bool kScalesLdsm = kScaleInAcc && kScalesAdd && (K::kFragsN == 1 || K::kFragsN == 2 || K::kFragsN == 4);
  const int scale_run_lane = kScalesLdsm ? Layout::scale_run_lane(warp_n * K::kWarpTileN, lane) : 0;

  // This lane's b words of atom `atom` of strip `strip`, from stage W tile ws (or the registers).
  auto load_strip_words = [&](const uint32_t* ws, int fn, int strip, int atom, uint32_t (&words)[K::kBits]) {
    if constexpr (K::kWInRegisters) {
#pragma unroll
      for (int w = 0; w < K::kBits; ++w) words[w] = w_cur[fn][atom][w];
    } else {
      stage_strip_words(ws, strip, atom, words);
    }
  };

  for (;;) {  // (one item, unless Stream-K)
  float acc[K::kFragsN][K::kFragsM][4];
#pragma unroll
  for (int fn = 0; fn < K::kFragsN; ++fn)
#pragma unroll
    for (int fm = 0; fm < K::kFragsM; ++fm)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[fn][fm][i] = 0.f;

  // k tile `it` of the item; kFirst (the first tile, with kPrewaitSlices > 0, hence never under Stream-K: one
  // item): a warp's first kPrewaitSlices slices come from a_pre.
  auto k_tile = [&](int it, const bool kFirst) {  // (called with a constant kFirst, inlined: it folds)
    ptx::cp_async_wait<K::kStages - 2>();
#ifndef LUTMM_EXPERIMENT_NO_BLOCK_BARRIER
    __syncthreads();  // stage `it` is in shared memory, and every warp is done with stage it - 1
#endif
    // (kBulkW: W's bytes, which each thread waits for itself)
    w_bars.wait(it % K::kStages, (it / K::kStages) & 1);
    if (it == 0) timeline.mark(2);
    const int next = it + K::kStages - 1;
    if constexpr (K::kStreamK) {
#ifndef LUTMM_EXPERIMENT_NO_LOADS
      copy_unit(copy_next, Part::all);
#endif
    } else {
#ifndef LUTMM_EXPERIMENT_NO_LOADS
      if (next < num_kt) {
        loader.load(smem, next % K::kStages, work.kt_begin + next);
        copy_w_bulk(next % K::kStages, work.kt_begin + next);
      }
#endif
    }
    ptx::cp_async_commit();
    if (kL2Ahead > 0 && next + kL2Ahead < num_kt) loader.prefetch_w(work.kt_begin + next + kL2Ahead);

    const int kt = work.kt_begin + it;
    if constexpr (K::kWInRegisters) {
      if (it + 1 < num_kt) load_w(w_next, kt + 1);  // in flight while this tile computes
    }
    const int stage = K::kStreamK ? compute_stage : it % K::kStages;
    if constexpr (K::kStreamK) compute_stage = compute_stage + 1 == K::kStages ? 0 : compute_stage + 1;
    const uint32_t* ws = reinterpret_cast<const uint32_t*>(Layout::w(smem, stage));
    const uint8_t* xs = Layout::x(smem, stage);
    const uint8_t* ss = Layout::scales(smem, stage);
    // the scale of row g + 8h of strip fn of this warp in group row grow (scale_lane, kScalesAdd: above)
    auto scale = [&](int grow, int fn, int h) {
      const int c = grow * K::kTileN + fn * 16 + h * 8;
      const int at = kScalesAdd ? scale_lane + Layout::scale_value(c) : Layout::scale_value(scale_row0 + c);
      return *reinterpret_cast<const uint16_t*>(ss + at);
    };
    // Groups longer than a k tile (and one scale per row) start and end at tile boundaries.
    const bool long_group_starts = it == 0 || (kGroup > K::kTileK && (kt * K::kTileK) % kGroup == 0);
    const bool long_group_ends =
        it == num_kt - 1 || (kGroup > K::kTileK && ((kt + 1) * K::kTileK) % kGroup == 0);

    uint32_t words[K::kFragsN][K::kBits];
    uint32_t scale_pairs[kScalesLdsm ? K::kFragsN : 1];  // (kScalesLdsm) this group row's (row g, row g + 8) a strip
    uint32_t scale_lo[K::kFragsN], scale_hi[K::kFragsN];  // packed pairs (kScaleInAcc: raw 16-bit)
#ifdef LUTMM_EXPERIMENT_NO_COMPUTE
    if (p.k > 0) return;  // (always true; a plain `return` would make the code below unreachable to the compiler)
#endif
#pragma unroll
    for (int wk = 0; wk < K::kWarpsK; ++wk) {
      if (K::kWarpsK > 1 && wk != warp_k) continue;  // this warp group's run of slices: [wk, wk + 1) * kGroupSlices
#pragma unroll
      for (int j = 0; j < K::kGroupSlices; ++j) {
        const int t = wk * K::kGroupSlices + j;
        const bool first = j == 0, last = j == K::kGroupSlices - 1;
        const int atom = t / 4, s = t % 4;
        constexpr bool kShortGroups = kGroup != 0 && kGroup <= K::kTileK;
        // a warp group's run of slices may start or end inside a scale group: its partial sums are folded
        // with the group's scale there (the other groups fold theirs; the epilogue adds them)
        const bool group_start = kShortGroups ? ((t * 16) % (kShortGroups ? kGroup : 1) == 0 || first)
                                              : (first && long_group_starts);
        const bool group_end = kShortGroups ? (((t + 1) * 16) % (kShortGroups ? kGroup : 1) == 0 || last)
                                            : (last && long_group_ends);
        const int grow = kShortGroups ? (t * 16) / (kShortGroups ? kGroup : 1) : 0;  // scale row in the stage

        uint32_t b[K::kFragsM][2];
        load_x_fragments(xs, t, b);
#pragma unroll
        for (int fn = 0; fn < K::kFragsN; ++fn) {
          const int strip = warp_n * K::kFragsN + fn;
          const bool pre = kFirst && j < kPrewaitSlices;  // (known at compile time)
          if (!pre && (s == 0 || (kFirst && j == kPrewaitSlices)))  // a new atom (or the first not in a_pre)
            load_strip_words(ws, fn, strip, atom, words[fn]);
          uint32_t a[4];
          if (pre) {
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = a_pre[j < kPrewaitSlices ? j : 0][fn][i];
          } else {
            dequantizer.slice(words[fn], s, a);
          }
          if constexpr (kScaleInAcc) {
            if (group_start) {
#pragma unroll
              for (int fm = 0; fm < K::kFragsM; ++fm)
#pragma unroll
                for (int i = 0; i < 4; ++i) part[fn][fm][i] = 0.f;
            }
#pragma unroll
            for (int fm = 0; fm < K::kFragsM; ++fm) mma::mma_m16n8k16<K::kBf16>(part[fn][fm], a, b[fm]);
            if (group_end) {  // fold the group: rows g (c0, c1) and g + 8 (c2, c3) have their own scale
              float lo, hi;
              if constexpr (kScalesLdsm) {
                if (fn == 0)
                  ptx::ldmatrix_trans(scale_pairs, ptx::smem_addr(ss) + scale_run_lane +
                                                       Layout::scale_value(grow * K::kTileN));
                lo = mma::to_float<K::kBf16>(static_cast<uint16_t>(scale_pairs[fn] & 0xffffu));
                hi = mma::to_float<K::kBf16>(static_cast<uint16_t>(scale_pairs[fn] >> 16));
              } else {
                lo = mma::to_float<K::kBf16>(scale(grow, fn, 0));
                hi = mma::to_float<K::kBf16>(scale(grow, fn, 1));
              }
#pragma unroll
              for (int fm = 0; fm < K::kFragsM; ++fm) {
                acc[fn][fm][0] += part[fn][fm][0] * lo;
                acc[fn][fm][1] += part[fn][fm][1] * lo;
                acc[fn][fm][2] += part[fn][fm][2] * hi;
                acc[fn][fm][3] += part[fn][fm][3] * hi;
              }
            }
          } else {
            if (first || (kShortGroups && group_start)) {  // the scale of rows g and g + 8, as pairs
              const uint32_t lo = scale(grow, fn, 0);
              const uint32_t hi = scale(grow, fn, 1);
              scale_lo[fn] = lo | (lo << 16);
              scale_hi[fn] = hi | (hi << 16);
            }
            a[0] = mma::mul_x2<K::kBf16>(a[0], scale_lo[fn]);
            a[1] = mma::mul_x2<K::kBf16>(a[1], scale_hi[fn]);
            a[2] = mma::mul_x2<K::kBf16>(a[2], scale_lo[fn]);
            a[3] = mma::mul_x2<K::kBf16>(a[3], scale_hi[fn]);
#pragma unroll
            for (int fm = 0; fm < K::kFragsM; ++fm) mma::mma_m16n8k16<K::kBf16>(acc[fn][fm], a, b[fm]);
          }
        }
      }
    }
    if constexpr (K::kWInRegisters) {
#pragma unroll
      for (int fn = 0; fn < kWRegFn; ++fn)
#pragma unroll
        for (int a = 0; a < kWRegAtoms; ++a)
#pragma unroll
          for (int w = 0; w < K::kBits; ++w) w_cur[fn][a][w] = w_next[fn][a][w];
    }
  };
  int it0 = 0;
  if constexpr (kPrewaitSlices > 0) {
    if (num_kt > 0) {
      k_tile(0, true);
      it0 = 1;
    }
  }
  for (int it = it0; it < num_kt; ++it) k_tile(it, false);
  // The next kernel of the stream may start launching now, into the SMs this grid's blocks leave (a second
  // launch_dependents after an early one does nothing). Letting it launch at the start on every grid packed
  // its waiting blocks onto whichever SMs had room and made mid-sized GEMMs up to 2x slower (docs/NOTES.md,
  // v1.5 and v1.12): the runtime asks for that only where no such room exists (p.dependents_early).
  timeline.mark(3);
  ptx::allow_dependent_launch();
  // The epilogue's tile: the pipeline's shared memory; under Stream-K the stage of the item's last unit
  // (the next units' copies are landing in the others).
  if constexpr (!K::kStreamK) ptx::cp_async_wait<0>();
  __syncthreads();
  const int tile_stage = K::kStreamK ? (compute_stage + K::kStages - 1) % K::kStages : 0;
  float* tile = reinterpret_cast<float*>(Layout::stage(smem, tile_stage));
  // The warp groups' partial tiles are added in group order 0, 1, ...: the same sum every run.
#pragma unroll
  for (int wk = 0; wk < K::kWarpsK; ++wk) {
    if (K::kWarpsK == 1 || wk == warp_k) epilogue::stage_accumulators<K>(tile, acc, warp_n, warp_m, lane, wk > 0);
    __syncthreads();
  }
  timeline.mark(4);
  if constexpr (K::kStreamK) {  // (never clusters)
    epilogue::finish<K>(p, tile, work.n0, work.m0, work.tile_id, work.split, tid, work.splits);
  } else if (p.cluster_splits) {
    epilogue::finish_in_cluster<K>(p, tile, work.n0, work.m0, tid);
  } else {
    epilogue::finish<K>(p, tile, work.n0, work.m0, work.tile_id, work.split, tid);
  }
  timeline.print(80);
  if constexpr (!K::kStreamK) {
    break;
  } else {
    if (!stream.next_work<K::kTileN, K::kTileM>(p, work)) {
      ptx::cp_async_wait<0>();  // (only empty groups are left)
      break;
    }
    num_kt = work.kt_end - work.kt_begin;
    loader.aim(work.n0, work.m0);
  }
  }
}

}  // namespace lutmm
