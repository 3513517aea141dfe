#pragma once
// The warp-specialized sm90 LUT GEMM (config suffix _ws, sm_90a). The same work per warp as the block-
// synchronous kernel of kernels/gemm_sm90.cuh (read that first): each warp dequantizes its 16-row strip of W
// into the A operand of wgmma.m64nNk16, whose B operand, the tile's x rows, the tensor cores read from
// shared memory. What differs is how the stages are fed and handed over:
//  * one more warp, the producer (after the consumer warps), fills whole stages (pipeline/
//    producer_stage_loader.cuh: W and scales by its lanes' cp.async, x by TMA), up to kStages k tiles ahead;
//  * two mbarriers per stage instead of a block barrier per k tile:
//      full[s]:  33 arrivals (lane 0's expect_tx of the x bytes, and each producer lane once its cp.async
//                copies of W and scales have landed) plus the x bytes; a consumer warp waits on it before
//                its first lookup in the stage;
//      empty[s]: one arrival per consumer warp once its wgmmas of the stage are done (kInFlight slices into
//                the next k tile); the producer waits on it before copying into the stage again;
//  * so the consumer warps never wait for each other in the main loop, and a warp looks up its next k
//    tile's first slices while this tile's last wgmmas multiply (the slice queue runs across k tiles).
// Why: the block-synchronous kernel at M = 33..128 on a few thousand columns looked bound per k tile by its
// barrier and the cold lookup chain before each tile's first wgmma (docs/NOTES.md v1.12). Measured (v1.13):
// from 2% faster to 15% slower than it; a forcible config, not offered (runtime/config.cpp), and the
// skeleton for producer/consumer kernels to come.
//
// The producer warp exits once its last copies have landed. The block barriers of the epilogue
// (__syncthreads, the cluster barrier of finish_in_cluster) then count the consumer warps alone: a barrier
// for all threads is released when the threads it still waits for are the exited ones (PTX ISA, `exit`).
// Consumer-only barriers before that are named barriers of kThreads threads.
//
// x lands by TMA and the wgmmas read it, both in the async proxy: no proxy fence. A consumer's lookups read W
// and scales with ordinary loads after its wait on full[s] (acquire); its arrival on empty[s] (release,
// after the wgmma wait that ends the tensor cores' reads of the stage) orders them before the producer's
// next copies into the stage.
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm90_config.cuh"
#include "lutmm/kernels/gemm_sm90_parts.cuh"
#include "lutmm/mma/wgmma_sm90.cuh"
#include "lutmm/pipeline/producer_stage_loader.cuh"
#include "lutmm/ptx/memory.cuh"
#include "lutmm/ptx/timeline.cuh"
#include "lutmm/ptx/tma.cuh"
#include "lutmm/scheduler/split_k.cuh"

namespace lutmm {

// x_map: x as a TMA tensor ([m][k] 16-bit elements, boxes of 64 columns x kTileM rows, zero outside).
template <class K>
LUTMM_DEVICE void gemm_sm90_ws(const GemmParams& p, const ptx::TensorMap* x_map) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(sizeof(K) == 0, "the sm90 kernel family needs the sm_90a target (wgmma)");
#endif
  static_assert(K::kWarpSpecialized, "a warp-specialized config (kernels/gemm_sm90_config.cuh)");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // [256-byte-row pair table][padding to 1024 bytes][stages (later the epilogue tile)], as gemm_sm90.
  extern __shared__ __align__(1024) uint8_t smem[];
  uint32_t* const pair_table = lut::pair_table_storage<K::kBits, K::kLutRowBytes>(smem);
  uint8_t* const pipe = smem + ((1024u - (ptx::smem_addr(smem) & 1023u)) & 1023u);
  __shared__ __align__(8) uint64_t full[K::kStages], empty[K::kStages];
  constexpr int kConsumerBarrier = 1;  // (named barrier id: 0 is __syncthreads')
  constexpr int kProducerWarp = K::kThreads / 32;
  using Loader = pipeline::ProducerStageLoader<K>;

  ptx::Timeline timeline(p.trace);  // (developer instrumentation: empty unless LUTMM_TIMELINE)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  using Layout = pipeline::StageLayout<K>;
  const scheduler::TileWork work = scheduler::split_k_work<K::kTileN, K::kTileM>(p);
  const int num_kt = work.kt_end - work.kt_begin;  // >= 1: the host never makes an empty split
  auto full_bar = [&](int s) { return ptx::smem_addr(&full[s]); };
  auto empty_bar = [&](int s) { return ptx::smem_addr(&empty[s]); };

  if (tid == K::kThreads) {
    for (int s = 0; s < K::kStages; ++s) {
      ptx::mbarrier_init(full_bar(s), Loader::kFullArrivals);
      ptx::mbarrier_init(empty_bar(s), K::kWarpsN);
    }
    ptx::fence_mbarrier_init_cluster();  // (the initialisations, visible to the TMA unit)
    ptx::prefetch_tensor_map(x_map);
  }
  __syncthreads();

  // ---- the producer warp ----
  if (warp == kProducerWarp) {
    const Loader loader(p, x_map, work.n0, work.m0, lane);
    const int ahead = num_kt < K::kStages ? num_kt : K::kStages;
    // Every stage's W and scales before the previous kernel is done (they are weights: gemm_sm80.cuh), x after.
    for (int s = 0; s < ahead; ++s) loader.load_weights(pipe, s, work.kt_begin + s, full_bar(s));
    ptx::grid_dependency_wait();
    if (lane == 0)
      for (int s = 0; s < ahead; ++s) loader.load_x(pipe, s, work.kt_begin + s, full_bar(s));
    for (int it = ahead; it < num_kt; ++it) {
      const int s = it % K::kStages;
      ptx::mbarrier_wait(empty_bar(s), static_cast<uint32_t>(it / K::kStages - 1) & 1u);  // tile it - kStages
      loader.load_weights(pipe, s, work.kt_begin + it, full_bar(s));
      if (lane == 0) loader.load_x(pipe, s, work.kt_begin + it, full_bar(s));
    }
    ptx::cp_async_wait<0>();  // (the lanes' last copies land before they exit)
    return;
  }

  // ---- the consumers: warps 0 .. kWarpsN - 1, warp w owning 16-row strip w ----
  const int strip = warp;
  // The table before the dependency wait, as the W copies (it is part of the weights: gemm_sm90.cuh)
  const lut::KernelLut<K::kBits, K::kLutRowBytes> dequantizer(pair_table, p.table, tid, K::kThreads);
  if (p.dependents_early) ptx::allow_dependent_launch();
  ptx::grid_dependency_wait();  // (before any output: the previous kernel may read or write it)
  timeline.mark(1);
  if constexpr (K::kSharedLut) ptx::named_barrier_sync(kConsumerBarrier, K::kThreads);  // the shared table

  const uint64_t desc0 = mma::wgmma_desc_k_major_sw128(ptx::smem_addr(Layout::x(pipe, 0)));  // (gemm_sm90)
  constexpr int kInFlight = Sm90SliceQueue<K>::kInFlight, kLookahead = Sm90SliceQueue<K>::kLookahead;
  constexpr int kABuffers = Sm90SliceQueue<K>::kABuffers;
  float acc[1][K::kFragsM][4];
  sm90_zero_accumulators<K>(acc);
  uint32_t a[kABuffers][4];
  Sm90StripDequantizer<K> strip_lookups(dequantizer, strip, lane);
  auto wait_full = [&](int it) {
    ptx::mbarrier_wait(full_bar(it % K::kStages), static_cast<uint32_t>(it / K::kStages) & 1u);
  };

  wait_full(0);
  timeline.mark(2);
#pragma unroll
  for (int t = 0; t < kLookahead; ++t) strip_lookups.slice(pipe, 0, t, a[t % kABuffers]);
  for (int it = 0; it < num_kt; ++it) {
    const int stage = it % K::kStages, next_stage = (it + 1) % K::kStages;
    const bool has_next = it + 1 < num_kt;
#pragma unroll
    for (int t = 0; t < K::kSlices; ++t) {
      // slice t + kLookahead's lookups before slice t's wgmma (gemm_sm90.cuh), past the tile's end into the
      // next tile once its bytes are in
      const int ahead = t + kLookahead;
      if (ahead < K::kSlices) {
        strip_lookups.slice(pipe, stage, ahead, a[ahead % kABuffers]);
      } else if (has_next) {
        if (ahead == K::kSlices) wait_full(it + 1);
        strip_lookups.slice(pipe, next_stage, ahead - K::kSlices, a[ahead % kABuffers]);
      }
      const uint32_t offset = stage * K::kStageBytes + (t / 4) * (K::kTileM * 128) + (t % 4) * 32;
      mma::wgmma_fence();
      mma::wgmma_m64k16_rs<K::kTileM, K::kBf16>(acc[0], a[t % kABuffers], desc0 + (offset >> 4));
      mma::wgmma_commit();
      mma::wgmma_wait<kInFlight>();  // slice t - kInFlight is done: its A registers are free again
      // ... and at t = kInFlight - 1 that is the previous tile's last slice: its stage is free
      if (t == kInFlight - 1 && it > 0 && lane == 0) ptx::mbarrier_arrive(empty_bar((it - 1) % K::kStages));
    }
  }
  mma::wgmma_wait<0>();
  mma::wgmma_fence_operands(acc[0]);
  timeline.mark(3);
  ptx::allow_dependent_launch();  // (gemm_sm80.cuh)
  // Every consumer warp is done with the stages (and every copy landed: each was waited for), so they
  // become the epilogue's tile.
  ptx::named_barrier_sync(kConsumerBarrier, K::kThreads);
  float* tile = reinterpret_cast<float*>(Layout::stage(pipe, 0));
  epilogue::stage_accumulators<K>(tile, acc, strip, 0, lane);
  __syncthreads();  // (the producer warp has exited or is about to: see above)
  timeline.mark(4);
  sm90_finish_tile<K>(p, tile, work, tid);
  timeline.print(90);
#endif
}

}  // namespace lutmm
