// The mma.sync ceiling of a GPU: every warp issues m16n8k16 bf16 MMAs (float accumulators) on CHAINS independent
// accumulator sets, from 4 to 16 warps per SM. What the sm80 kernel family could reach if it did nothing
// but MMAs (docs/NOTES.md v1.9: 559-643 TFLOP/s on the H200, against ~790 for wgmma through cuBLAS).
// Not part of the CMake build (no library code involved); on a GPU machine:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o mma_sync_peak bench/micro/mma_sync_peak.cu && ./mma_sync_peak
// (-gencode=arch=compute_80,code=sm_80 for an A100).
#include <cstdio>
#include <cuda_runtime.h>

#include "micro_gpu.hpp"
template <int CHAINS>
__global__ void peak(float* out, int iters, unsigned seed) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = (seed * (threadIdx.x + 1 + i)) & 0x3f803f80u;
  for (int i = 0; i < 2; ++i) b[i] = (seed * (threadIdx.x + 7 + i)) & 0x3f803f80u;
  float d[CHAINS][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float s = 0;
  for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (s == 1234.5f) out[threadIdx.x] = s;
}
template <int CHAINS>
void run(int sms, int warps_per_block, int blocks_per_sm) {
  float* out; cudaMalloc(&out, 4096);
  int iters = 4096;
  dim3 grid(sms * blocks_per_sm), block(32 * warps_per_block);
  peak<CHAINS><<<grid, block>>>(out, 16, 3);
  const float best = best_of_runs_ms([&] { peak<CHAINS><<<grid, block>>>(out, iters, 3); });
  double flops = 2.0 * 16 * 8 * 16 * CHAINS * (double)iters * grid.x * warps_per_block;
  printf("chains %2d warps/SM %2d: %.1f TFLOP/s (%.3f ms)\n", CHAINS, warps_per_block * blocks_per_sm, flops / best / 1e9, best);
  cudaFree(out);
}
int main() {
  const int sms = micro_sm_count_or_exit();
  run<8>(sms, 4, 1); run<8>(sms, 8, 1); run<8>(sms, 4, 4); run<16>(sms, 4, 1); run<16>(sms, 8, 2); run<4>(sms, 8, 2);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
