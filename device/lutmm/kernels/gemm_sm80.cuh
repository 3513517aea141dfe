#pragma once
// The sm80-family LUT GEMM: out[m, n] = sum_k x[m, k] * table[code[n, k]] * scale[n, k / G] (+ bias[n]).
// mma.sync m16n8k16 on every sm_80+ GPU.
//
// W is the MMA's M-side (A) operand and x the N-side (B) operand, i.e. the block computes out^T tiles:
// a decode step (M = 1..8) fills the n8 side of each MMA with little waste, while W's 16-row side is
// always full. Per k tile, a block streams packed W, x and the scales through a kStages-deep cp.async
// pipeline; each warp dequantizes its 16-row strips straight from the packed words (whose lanes already
// match the A-fragment, so no shuffles), scales them, and multiplies with x fragments from ldmatrix.
// Split-K over gridDim.z; the epilogue reduces the splits in a fixed order.
#include "lutmm/epilogue/epilogue.cuh"
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/lut/lut_dequant.cuh"
#include "lutmm/mma/mma_sm80.cuh"
#include "lutmm/pipeline/stage_loader.cuh"
#include "lutmm/scheduler/split_k.cuh"

namespace lutmm {

template <class K>
LUTMM_DEVICE void gemm_sm80(const GemmParams& p) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_n = warp % K::kWarpsN, warp_m = warp / K::kWarpsN;
  const int g = lane >> 2;
  const scheduler::TileWork work = scheduler::split_k_work<K::kTileN, K::kTileM>(p);
  const int num_kt = work.kt_end - work.kt_begin;

  uint8_t* stages = smem + K::kLutBytes;
  const pipeline::StageLoader<K> loader{p, work.n0, work.m0, tid, p.w_evict_first ? ptx::l2_evict_first_policy() : 0ull};

  // The table: built once per block (shared pair table) or loaded into registers.
  using SharedLut = lut::SharedPairLut<K::kBits>;
  using RegLut = lut::RegisterLut<K::kBits>;
  SharedLut shared_lut{reinterpret_cast<const uint32_t*>(smem), lane};
  RegLut reg_lut;
  if constexpr (K::kSharedLut) {
    SharedLut::build(reinterpret_cast<uint32_t*>(smem), p.table, tid, K::kThreads);
  } else {
    reg_lut.load(p.table);
  }

  // Prologue: fill kStages - 1 stages. One commit per stage, even when empty, keeps the wait count exact.
#pragma unroll
  for (int s = 0; s < K::kStages - 1; ++s) {
    if (s < num_kt) loader.load(stages + s * K::kStageBytes, work.kt_begin + s);
    ptx::cp_async_commit();
  }

  float acc[K::kFragsN][K::kFragsM][4];
#pragma unroll
  for (int fn = 0; fn < K::kFragsN; ++fn)
#pragma unroll
    for (int fm = 0; fm < K::kFragsM; ++fm)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[fn][fm][i] = 0.f;

  for (int it = 0; it < num_kt; ++it) {
    ptx::cp_async_wait<K::kStages - 2>();
    __syncthreads();  // stage `it` is in shared memory, and every warp is done with stage it - 1
    const int next = it + K::kStages - 1;
    if (next < num_kt) loader.load(stages + (next % K::kStages) * K::kStageBytes, work.kt_begin + next);
    ptx::cp_async_commit();

    uint8_t* stage = stages + (it % K::kStages) * K::kStageBytes;
    const uint32_t* ws = reinterpret_cast<const uint32_t*>(pipeline::StageLoader<K>::w_smem(stage));
    const uint8_t* xs = pipeline::StageLoader<K>::x_smem(stage);
    const uint16_t* ss = pipeline::StageLoader<K>::scale_smem(stage);

    uint32_t words[K::kFragsN][K::kBits];
    uint32_t scale_lo[K::kFragsN], scale_hi[K::kFragsN];
#pragma unroll
    for (int t = 0; t < K::kSlices; ++t) {
      const int atom = t / 4, s = t % 4;
      // x fragments (B operand) for this warp's kFragsM 8-column blocks.
      uint32_t b[K::kFragsM][2];
#pragma unroll
      for (int fm = 0; fm + 1 < K::kFragsM; fm += 2) {
        const int q = lane >> 3;
        const int row = warp_m * K::kWarpTileM + (fm + (q >> 1)) * 8 + (lane & 7);
        uint32_t r[4];
        ptx::ldmatrix_x4(r, xs + pipeline::StageLoader<K>::x_offset(row, 2 * t + (q & 1)));
        b[fm][0] = r[0];
        b[fm][1] = r[1];
        b[fm + 1][0] = r[2];
        b[fm + 1][1] = r[3];
      }
      if constexpr (K::kFragsM % 2 == 1) {
        constexpr int fm = K::kFragsM - 1;
        const int row = warp_m * K::kWarpTileM + fm * 8 + (lane & 7);
        uint32_t r[2];
        ptx::ldmatrix_x2(r, xs + pipeline::StageLoader<K>::x_offset(row, 2 * t + ((lane >> 3) & 1)));
        b[fm][0] = r[0];
        b[fm][1] = r[1];
      }
#pragma unroll
      for (int fn = 0; fn < K::kFragsN; ++fn) {
        const int strip = warp_n * K::kFragsN + fn;
        if (s == 0) {  // a new atom: this lane's b words of it
          const uint32_t* src = ws + (strip * K::kAtomsK + atom) * layout::words_per_atom(K::kBits) + lane * K::kBits;
          if constexpr (K::kBits == 4) {
            const dev::uint4_t v = *reinterpret_cast<const dev::uint4_t*>(src);
            words[fn][0] = v.x; words[fn][1] = v.y; words[fn][2] = v.z; words[fn][3] = v.w;
          } else if constexpr (K::kBits == 2) {
            const uint2 v = *reinterpret_cast<const uint2*>(src);
            words[fn][0] = v.x; words[fn][1] = v.y;
          } else {
#pragma unroll
            for (int w = 0; w < K::kBits; ++w) words[fn][w] = src[w];
          }
        }
        // The group scale of rows g and g + 8, reloaded when this slice starts a new group.
        constexpr bool kOneGroupPerStage = K::kGroup == 0 || K::kGroup >= K::kTileK;
        if (t == 0 || (!kOneGroupPerStage && (t * 16) % (K::kGroup == 0 ? 1 : K::kGroup) == 0)) {
          const int grow = kOneGroupPerStage ? 0 : (t * 16) / (K::kGroup == 0 ? 1 : K::kGroup);
          const uint32_t lo = ss[grow * K::kTileN + strip * 16 + g];
          const uint32_t hi = ss[grow * K::kTileN + strip * 16 + g + 8];
          scale_lo[fn] = lo | (lo << 16);
          scale_hi[fn] = hi | (hi << 16);
        }
        uint32_t a[4];
        if constexpr (K::kSharedLut) {
          shared_lut.slice(words[fn], s, a);
        } else {
          reg_lut.slice(words[fn], s, a);
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
  ptx::cp_async_wait<0>();
  __syncthreads();  // the pipeline's shared memory becomes the epilogue's tile

  float* tile = reinterpret_cast<float*>(stages);
  epilogue::stage_accumulators<K>(tile, acc, warp_n, warp_m, lane);
  __syncthreads();
  epilogue::finish<K>(p, tile, work.n0, work.m0, work.tile_id, work.split, tid);
}

}  // namespace lutmm
