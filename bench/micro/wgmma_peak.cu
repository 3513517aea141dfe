// The warpgroup-MMA rate of a GPU by operand form and N: every warpgroup issues wgmma.m64nNk16 (bf16, float
// accumulators) back to back, A from registers (RS, as the sm90 LUT kernels feed their dequantized W) or from
// shared memory (SS), B from shared memory, with 1..4 warpgroups per SM and 1 or 3 wgmmas in flight.
// The question it answers (docs/NOTES.md v1.13): whether m64n64k16 with A from registers, the M = 64 kernels'
// MMA, runs at a fraction of the tensor cores' rate that N = 128..256, or A from shared memory, would not; and
// (v1.38) what N = 8 and 16, the decode shapes' x rows, leave of it: a decode wgmma path at M = 16 needs ~224
// TFLOP/s of its MMAs to run 28672 x 8192 at 80% of the HBM floor, at M = 8 ~112.
// "fresh A" rewrites the A registers before every wgmma (one LOP3 per register), as the LUT kernels do.
// Not part of the CMake build; on a GPU machine, from the repository root:
//   nvcc -O3 -std=c++20 -gencode=arch=compute_90a,code=sm_90a -I device -o wgmma_peak bench/micro/wgmma_peak.cu
//   ./wgmma_peak
#include <cstdio>
#include <cuda_runtime.h>

#include "micro_gpu.hpp"

#include "lutmm/mma/wgmma_sm90.cuh"
#include "lutmm/ptx/memory.cuh"

namespace {

enum class AFrom { registers, fresh_registers, shared };

// Shared memory: A (64 rows x 64 k, 8 KB) then B (N rows x 64 k), both K-major in 128-byte-swizzle atoms
// (mma/wgmma_sm90.cuh); the values are pseudo-random bf16 in [1, 2) (never zero), read but not checked.
template <int N, AFrom kA, int kInFlight>
__global__ void peak(float* out, int iters, unsigned seed) {
  extern __shared__ __align__(1024) uint8_t smem[];
  constexpr int kBytes = (64 + N) * 128;
  for (int i = threadIdx.x; i < kBytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3f803f80u | ((seed * (i + 1)) & 0x007f007fu);
  lutmm::mma::fence_proxy_async_shared();
  __syncthreads();
  const uint64_t desc_a = lutmm::mma::wgmma_desc_k_major_sw128(lutmm::ptx::smem_addr(smem));
  const uint64_t desc_b = lutmm::mma::wgmma_desc_k_major_sw128(lutmm::ptx::smem_addr(smem + 64 * 128));
  uint32_t a[4];
  for (int i = 0; i < 4; ++i) a[i] = 0x3f803f80u | ((seed * (threadIdx.x + 3 + i)) & 0x007f007fu);
  float d[N / 8][4];
  for (int j = 0; j < N / 8; ++j)
    for (int i = 0; i < 4; ++i) d[j][i] = 0.f;
  lutmm::mma::wgmma_fence_operands(d);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {  // the four k16 slices of the 64-wide rows: +32 bytes each
      if constexpr (kA == AFrom::fresh_registers) {
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] ^= static_cast<uint32_t>(it + s) & 0x00010001u;
      }
      lutmm::mma::wgmma_fence();
      if constexpr (kA == AFrom::shared) {
        lutmm::mma::wgmma_m64k16_ss<N, true>(d, desc_a + 2 * s, desc_b + 2 * s);
      } else {
        lutmm::mma::wgmma_m64k16_rs<N, true>(d, a, desc_b + 2 * s);
      }
      lutmm::mma::wgmma_commit();
      lutmm::mma::wgmma_wait<kInFlight - 1>();
    }
  }
  lutmm::mma::wgmma_wait<0>();
  lutmm::mma::wgmma_fence_operands(d);
  float sum = 0.f;
  for (int j = 0; j < N / 8; ++j)
    for (int i = 0; i < 4; ++i) sum += d[j][i];
  if (sum == 1234.5f) out[threadIdx.x] = sum;  // (keeps the MMAs alive)
}

template <int N, AFrom kA, int kInFlight>
void run(int sms, int warpgroups_per_sm) {
  float* out = nullptr;
  cudaMalloc(&out, 4096);
  const int bytes = (64 + N) * 128;
  cudaFuncSetAttribute(peak<N, kA, kInFlight>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  // one block per warpgroup, warpgroups_per_sm of them on each SM
  const dim3 grid(sms * warpgroups_per_sm), block(128);
  const int iters = 2048;
  peak<N, kA, kInFlight><<<grid, block, bytes>>>(out, 16, 3u);
  const float best = best_of_runs_ms([&] { peak<N, kA, kInFlight><<<grid, block, bytes>>>(out, iters, 3u); });
  const double flops = 2.0 * 64 * N * 16 * 4.0 * iters * grid.x;
  const char* a = kA == AFrom::shared ? "SS" : (kA == AFrom::registers ? "RS" : "RS fresh A");
  std::printf("m64n%-3d %-10s  warpgroups/SM %d  in flight %d: %6.1f TFLOP/s  (%.3f ms)\n", N, a, warpgroups_per_sm,
              kInFlight, flops / best / 1e9, best);
  cudaFree(out);
}

template <int N>
void run_n(int sms) {
  for (int wg : {1, 2, 4}) {
    if (N == 256 && wg == 4) continue;  // (128 accumulators a thread: four warpgroups do not fit one SM's registers)
    run<N, AFrom::registers, 1>(sms, wg);
    run<N, AFrom::registers, 3>(sms, wg);
    run<N, AFrom::fresh_registers, 3>(sms, wg);
    run<N, AFrom::shared, 1>(sms, wg);
    run<N, AFrom::shared, 3>(sms, wg);
  }
}

}  // namespace

int main() {
  const int sms = micro_sm_count_or_exit();
  run_n<8>(sms);   // (the decode shapes: N = the x rows, M <= 8 and M = 16)
  run_n<16>(sms);
  run_n<64>(sms);
  run_n<128>(sms);
  run_n<256>(sms);
  const cudaError_t e = cudaGetLastError();
  std::printf("%s\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
