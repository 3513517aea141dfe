#pragma once
// The stage loader of the warp-specialized sm90 kernel (kernels/gemm_sm90_ws.cuh): its producer warp fills a
// whole stage (pipeline/stage_layout.cuh, the sm90 order [x][W][scales]) and the stage's full mbarrier learns
// when every byte is in:
//  * W and scales: the warp's 32 lanes copy them with cp.async, 16 bytes at a time, each lane then arriving
//    on the barrier once its copies have landed (cp.async.mbarrier.arrive.noinc: the barrier counts these 32
//    arrivals). One bulk copy per 16-row strip (a strip's k tile is one contiguous run in global memory and
//    in the stage) was tried first: correct, but 10-15% slower on the long-K shapes (docs/NOTES.md, v1.13).
//    Strips past the padded N copy the last real strip again and scale columns past it the last real
//    chunk, as StageLoader does (tile_strip_words, tile_scale_columns): their rows are never stored.
//  * x: one TMA box per 64-column block of the tile (the tensor map of runtime/gemm.cpp, kTileM rows),
//    which writes the wgmma's 128-byte swizzle itself and zero-fills rows past M and columns past K; lane 0
//    tells the barrier to expect those bytes.
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/layout/packed_layout.cuh"
#include "lutmm/pipeline/stage_layout.cuh"
#include "lutmm/pipeline/stage_loader.cuh"
#include "lutmm/ptx/memory.cuh"
#include "lutmm/ptx/tma.cuh"

namespace lutmm::pipeline {

template <class K>
struct ProducerStageLoader {
  using Layout = StageLayout<K>;
  static constexpr int kLanes = 32;
  static constexpr int kStripTileBytes = K::kAtomsK * layout::words_per_atom(K::kBits) * 4;
  static constexpr int kChunksPerStrip = kStripTileBytes / 16;
  static constexpr int kWChunks = K::kWBytes / 16;
  static constexpr int kScaleChunksPerRow = K::kTileN / 8;
  static constexpr int kScaleChunks = K::kScaleRows * kScaleChunksPerRow;
  static constexpr uint32_t kXBytes = K::kAtomsK * K::kTileM * 128;  // (whole boxes, zero-filled or not)
  // The full barrier's arrivals per phase: lane 0's expect_tx and every lane's copies.
  static constexpr uint32_t kFullArrivals = 1 + kLanes;
  static_assert(kStripTileBytes % 16 == 0 && (K::kTileN / 16) * kStripTileBytes == K::kWBytes, "a stage's W is its strips");

  const GemmParams& p;
  const ptx::TensorMap* x_map;
  int n0, m0, lane;

  LUTMM_DEVICE ProducerStageLoader(const GemmParams& params, const ptx::TensorMap* map, int n0_, int m0_, int lane_)
      : p(params), x_map(map), n0(n0_), m0(m0_), lane(lane_) {}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // W and scales of k tile kt into stage s, this lane's share; then its arrival on `full` once they land.
  // (Weights: the kernel may copy them before the dependency wait.)
  LUTMM_DEVICE void load_weights(uint8_t* smem, int s, int kt, uint32_t full) const {
    const uint32_t w_dst = ptx::smem_addr(Layout::w(smem, s));
    const int64_t w_step = static_cast<int64_t>(kt) * kStripTileBytes;
#pragma unroll
    for (int j = 0; j < dev::ceil_div(kWChunks, kLanes); ++j) {
      const int i = lane + j * kLanes;
      const int strip = i / kChunksPerStrip, c = i % kChunksPerStrip;
      if (kWChunks % kLanes == 0 || i < kWChunks)
        ptx::cp_async_16(w_dst + i * 16,
                         reinterpret_cast<const uint8_t*>(tile_strip_words<K::kBits>(p, n0, strip) + c * 4) + w_step);
    }
    const uint32_t s_dst = ptx::smem_addr(Layout::scales(smem, s));
    const int64_t row0 = K::kGroup == 0 ? 0 : static_cast<int64_t>(kt) * K::kTileK / K::kGroup;
#pragma unroll
    for (int j = 0; j < dev::ceil_div(kScaleChunks, kLanes); ++j) {
      const int i = lane + j * kLanes;
      const int r = i / kScaleChunksPerRow, c = i % kScaleChunksPerRow;
      if (kScaleChunks % kLanes == 0 || i < kScaleChunks)
        ptx::cp_async_16(s_dst + i * 16, tile_scale_columns(p, n0, c * 8) + (row0 + r) * p.n_padded);
    }
    ptx::cp_async_mbarrier_arrive(full);
  }
  // Lane 0: x of k tile kt into stage s, and the barrier's expect_tx of its bytes (maybe the previous
  // kernel's output: after the dependency wait).
  LUTMM_DEVICE void load_x(uint8_t* smem, int s, int kt, uint32_t full) const {
    ptx::mbarrier_arrive_expect_tx(full, kXBytes);
    const uint32_t dst = ptx::smem_addr(Layout::x(smem, s));
#pragma unroll
    for (int b = 0; b < K::kAtomsK; ++b)
      ptx::tma_load_2d(dst + b * K::kTileM * 128, x_map, kt * K::kTileK + b * 64, m0, full);
  }
#endif
};

}  // namespace lutmm::pipeline
