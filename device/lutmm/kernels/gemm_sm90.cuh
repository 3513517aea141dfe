#pragma once
// The sm90 LUT GEMM (sm_90a): out[m, n] = sum_k x[m, k] * table[code[n, k]] * scale[n, k / G] (+ bias[n]),
// with warpgroup MMAs.
//
// As in the sm80 family, W is the MMA's M side: each warp dequantizes its 16-row strip of W into an A
// fragment in registers (the same LUT dequantizers, the same packed layout), and a warpgroup's four
// fragments form the 64 x 16 A operand of one wgmma.m64nNk16 whose B operand, N = the tile's x rows, the
// tensor cores read straight from shared memory. What that changes against mma.sync:
//  * no ldmatrix of x and no x fragments in registers: at M = 64 x was ~60% of the sm80 kernel's shared-
//    memory traffic, and its accumulators plus x fragments capped it at two warps per scheduler;
//  * the MMA is asynchronous: up to kInFlight slices multiply while the warp looks up the next slices' codes,
//    whose lookups are issued before the current slice's wgmma (kInFlight + kLookahead + 1 A register sets
//    take turns; wgmma_wait<kInFlight> frees the oldest).
// The group scale multiplies the fragment (one HMUL2 per register) before the MMA, as sm80 does at large M.
//
// Work: one (tile, K split) per block, or under Stream-K (scheduler/stream_k.cuh) a run of (tile, K range)
// items, each with its own pipeline fill, main loop and epilogue.
//
// Pipeline: cp.async stages as in sm80 (pipeline/stage_loader.cuh), but a copy into a stage waits one more
// k tile: when iteration it starts, the last kInFlight wgmmas of tile it - 1 may still be reading, so the
// copy goes into the stage of tile it - 2, which every warp finished before the barrier.
//
// x multicast (K::kXMulticast = N > 1, config suffix _mcN): N neighbouring column tiles run as one cluster
// and share their x tiles, which otherwise every column tile reads from L2 again (at M = 64 as many bytes as
// W). W and scales still come by cp.async; x by TMA (ptx/tma.cuh): block r of the cluster loads rows
// r * kTileM / N .. of each stage's x tile and multicasts them into all N blocks. Two mbarriers per stage:
//  * x_full[s] (this block's): one arrival, thread 0's expect_tx of the whole x tile, plus the bytes of the N
//    multicasts; every thread waits on it before the tile's wgmmas;
//  * x_empty[s]: N arrivals, one from each block of the cluster once all its warps are done with the stage
//    (thread 0, after the iteration's barrier, into every block's x_empty); thread 0 waits on its own before
//    multicasting into the stage again, since its copy overwrites the stage in all N blocks.
// Every multicast into a block and every arrival on its barriers is one that block waits for before its
// main loop ends, so no block can exit (or reuse its stages as the epilogue tile) under a peer's traffic.
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm90_config.cuh"
#include "lutmm/kernels/gemm_sm90_parts.cuh"
#include "lutmm/mma/wgmma_sm90.cuh"
#include "lutmm/pipeline/stage_loader.cuh"
#include "lutmm/ptx/cluster.cuh"
#include "lutmm/ptx/timeline.cuh"
#include "lutmm/ptx/tma.cuh"
#include "lutmm/scheduler/split_k.cuh"
#include "lutmm/scheduler/stream_k.cuh"

namespace lutmm {

// x_map: x as a TMA tensor, for x multicast (K::kXMulticast > 1, else null): a second kernel parameter (in
// GemmParams, its 64-byte alignment changed the register allocation of other kernels), [m][k] 16-bit
// elements in boxes of 64 columns (128 bytes: the 128-byte swizzle) x kTileM / kXMulticast rows, zero outside.
template <class K>
LUTMM_DEVICE void gemm_sm90(const GemmParams& p, const ptx::TensorMap* x_map = nullptr) {
  // wgmma exists only on the arch-specific target: instantiated for anything else, the MMAs would vanish
  // (their wrappers trap), so refuse to compile instead (runtime/kernel_source.cpp asks NVRTC for sm_90a).
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(sizeof(K) == 0, "the sm90 kernel family needs the sm_90a target (wgmma)");
#endif
  // [256-byte-row pair table][padding to 1024 bytes][stages (later the epilogue tile)]
  extern __shared__ __align__(1024) uint8_t smem[];
  uint32_t* const pair_table = lut::pair_table_storage<K::kBits, K::kLutRowBytes>(smem);
  // The stages' x tiles are wgmma operands: swizzle atoms start on 1024-byte boundaries. The table stays at
  // the dynamic base (a link-time address: its loads take an immediate base); the stages move up.
  uint8_t* const pipe = smem + ((1024u - (ptx::smem_addr(smem) & 1023u)) & 1023u);

  ptx::Timeline timeline(p.trace);  // (developer instrumentation: empty unless LUTMM_TIMELINE; under Stream-K a line per item)
  const int tid = threadIdx.x, lane = tid & 31, strip = tid >> 5;  // warp w owns 16-row strip w
  using Layout = pipeline::StageLayout<K>;

  // The block's work: one (tile, K split) under split-K, a run of them under Stream-K.
  scheduler::StreamK stream(p, blockIdx.x, gridDim.x);
  scheduler::TileWork work;
  if (!scheduler::first_work<K>(p, stream, work)) return;
  // The first item's W and scales of its first stages, before the previous kernel is done (gemm_sm80.cuh).
  {
    const pipeline::StageLoader<K> loader(p, work.n0, work.m0, tid);
#pragma unroll
    for (int s = 0; s < K::kStages - 2; ++s)
      if (s < work.kt_end - work.kt_begin) loader.load_weights(pipe, s, work.kt_begin + s);
  }
  if (p.dependents_early) ptx::allow_dependent_launch();
  // x multicast: the barriers, initialised and visible to the whole cluster before any block copies or
  // arrives (also before the dependency wait: none of it reads the previous kernel's output).
  constexpr bool kTmaX = K::kXMulticast > 1;
  constexpr int kXRowsPerBlock = K::kTileM / K::kXMulticast;
  constexpr uint32_t kXTileBytes = K::kAtomsK * K::kTileM * 128;
  __shared__ __align__(8) uint64_t x_full[kTmaX ? K::kStages : 1], x_empty[kTmaX ? K::kStages : 1];
  uint32_t x_rank = 0;
  if constexpr (kTmaX) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    x_rank = ptx::cluster_rank();
    if (tid == 0) {
      for (int s = 0; s < K::kStages; ++s) {
        ptx::mbarrier_init(ptx::smem_addr(&x_full[s]), 1);
        ptx::mbarrier_init(ptx::smem_addr(&x_empty[s]), K::kXMulticast);
      }
      ptx::fence_mbarrier_init_cluster();  // (the release the barrier below needs: it can be relaxed)
      ptx::prefetch_tensor_map(x_map);
    }
    ptx::cluster_sync_relaxed();
#endif
  }
  // Thread 0: k tile kt's x rows of this block, into stage s of every block of the cluster.
  auto multicast_x = [x_map, pipe, x_rank, m0 = work.m0](int s, int kt) {  // (x_full: static storage)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uint32_t full = ptx::smem_addr(&x_full[s]);
    ptx::mbarrier_arrive_expect_tx(full, kXTileBytes);
    const uint32_t dst = ptx::smem_addr(Layout::x(pipe, s)) + x_rank * kXRowsPerBlock * 128;
#pragma unroll
    for (int b = 0; b < K::kAtomsK; ++b)
      ptx::tma_load_2d_multicast(dst + b * K::kTileM * 128, x_map, kt * K::kTileK + b * 64,
                                 m0 + static_cast<int>(x_rank) * kXRowsPerBlock, full,
                                 static_cast<uint16_t>((1u << K::kXMulticast) - 1));
#endif
  };
  // The table, a part of the weights like W, before the dependency wait: it overlaps the previous kernel's
  // tail (0.963x over 8 shapes of M = 32..128, 64 x 1280 x 5120 8.95 -> 8.27 us; docs/NOTES.md v1.16). The
  // first barrier of the main loop publishes it.
  const lut::KernelLut<K::kBits, K::kLutRowBytes> dequantizer(pair_table, p.table, tid, K::kThreads);
  ptx::grid_dependency_wait();
  timeline.mark(1);

  // Descriptor of stage 0's x block 0; stage s, block b, slice s16 add (s * kStageBytes + b * kTileM * 128 +
  // 32 * s16) >> 4 to its start-address field.
  const uint64_t desc0 = mma::wgmma_desc_k_major_sw128(ptx::smem_addr(Layout::x(pipe, 0)));
  // The A register sets (Sm90SliceQueue): never more than a k tile's slices in flight, so every wgmma of
  // tile it - 2 is done when iteration it starts.
  constexpr int kInFlight = Sm90SliceQueue<K>::kInFlight, kLookahead = Sm90SliceQueue<K>::kLookahead;
  constexpr int kABuffers = Sm90SliceQueue<K>::kABuffers;

  for (bool first_item = true;; first_item = false) {
    const int num_kt = work.kt_end - work.kt_begin;
    const pipeline::StageLoader<K> loader(p, work.n0, work.m0, tid);
    // Prologue: kStages - 2 tiles ahead (one commit per stage, even when empty, keeps the wait count exact).
#pragma unroll
    for (int s = 0; s < K::kStages - 2; ++s) {
      if (s < num_kt) {
        if (first_item) {
          loader.load_x(pipe, s, work.kt_begin + s);  // (its weights came before the dependency wait)
        } else {
          loader.load(pipe, s, work.kt_begin + s);
        }
        if constexpr (kTmaX) {
          if (tid == 0) multicast_x(s, work.kt_begin + s);
        }
      }
      ptx::cp_async_commit();
    }

    float acc[1][K::kFragsM][4];
    sm90_zero_accumulators<K>(acc);
    uint32_t a[kABuffers][4];
    Sm90StripDequantizer<K> strip_lookups(dequantizer, strip, lane);

    for (int it = 0; it < num_kt; ++it) {
      ptx::cp_async_wait<K::kStages - 3>();
      if constexpr (!kTmaX) mma::fence_proxy_async_shared();  // this thread's x copies (and zeroed rows) ->
                                                               // visible to the tensor cores
      __syncthreads();  // stage `it` is complete (W, scales; x: below); every warp is done with stage it - 2
      if (it == 0) timeline.mark(2);
      const int next = it + K::kStages - 2;
      if (next < num_kt) loader.load(pipe, next % K::kStages, work.kt_begin + next);
      ptx::cp_async_commit();
      if constexpr (kTmaX) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (tid == 0 && next < num_kt) {
          const int s = next % K::kStages;
          if (it >= 2) {  // stage s held tile it - 2: release it in every block, then wait for all to have
            const uint32_t empty = ptx::smem_addr(&x_empty[s]);
            for (int r = 0; r < K::kXMulticast; ++r) ptx::mbarrier_arrive_cluster(ptx::map_to_rank(empty, r));
            ptx::mbarrier_wait(empty, static_cast<uint32_t>((it - 2) / K::kStages) & 1u);
          }
          multicast_x(s, work.kt_begin + next);
        }
        ptx::mbarrier_wait(ptx::smem_addr(&x_full[it % K::kStages]), static_cast<uint32_t>(it / K::kStages) & 1u);
#endif
      }

      const int stage = it % K::kStages;
      // Slice t's A fragment: its codes looked up, times its rows' group scales.
      auto dequantize = [&](int t) { strip_lookups.slice(pipe, stage, t, a[t % kABuffers]); };
      // Lookahead: slice t + kLookahead's lookups are issued before slice t's wgmma. (The wgmma fence,
      // commit and wait are compiler barriers for memory, so the compiler cannot move the shared-memory
      // lookups across them itself: without this each slice's lookup latency sat between two wgmmas.)
#pragma unroll
      for (int t = 0; t < kLookahead; ++t) dequantize(t);
#pragma unroll
      for (int t = 0; t < K::kSlices; ++t) {
        if (t + kLookahead < K::kSlices) dequantize(t + kLookahead);
        const uint32_t offset = stage * K::kStageBytes + (t / 4) * (K::kTileM * 128) + (t % 4) * 32;
        mma::wgmma_fence();
        mma::wgmma_m64k16_rs<K::kTileM, K::kBf16>(acc[0], a[t % kABuffers], desc0 + (offset >> 4));
        mma::wgmma_commit();
        mma::wgmma_wait<kInFlight>();  // slice t - kInFlight is done: its A registers are free again
      }
    }
    mma::wgmma_wait<0>();
    mma::wgmma_fence_operands(acc[0]);
    timeline.mark(3);
    // The next kernel of the stream may start launching into the SMs this grid leaves (see gemm_sm80).
    ptx::allow_dependent_launch();
    ptx::cp_async_wait<0>();
    __syncthreads();  // the pipeline's shared memory becomes the epilogue's tile

    float* tile = reinterpret_cast<float*>(Layout::stage(pipe, 0));
    epilogue::stage_accumulators<K>(tile, acc, strip, 0, lane);
    __syncthreads();
    timeline.mark(4);
    sm90_finish_tile<K>(p, tile, work, tid);
    timeline.print(90);
    if constexpr (!K::kStreamK) {
      break;
    } else {
      if (!stream.next_work<K::kTileN, K::kTileM>(p, work)) break;
    }
    __syncthreads();  // every thread is done reading the epilogue tile before the next item's copies land
  }
}

}  // namespace lutmm
