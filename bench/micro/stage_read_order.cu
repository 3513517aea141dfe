// What the decode kernels' copies alone can do: their copy skeleton (a kStages-deep cp.async pipeline of 16 KB W
// stages, two 4-warp blocks an SM, a Stream-K-like run of units a block; no table, no MMA) over a 28672 x 8192 and an
// 8192 x 8192 4-bit weight. Three DRAM orders of a stage:
//   strips   today's packed layout: a 256-row tile's k tile is 16 runs of 1 KB, one per 16-row strip, K / 2 * 16
//            bytes (64 KB at K = 8192) apart; each strip's k tiles follow each other;
//   groups8  8 KB runs: the k tile of 128 rows contiguous (two runs a stage, a k-tile-major order of 128-row groups);
//   tiles    the stage's 16 KB contiguous (a k-tile-major order of 256-row groups);
// 3-6 stages; plain launches and programmatic dependents (PDL: the first stages copied before the wait, the next
// launch allowed at once, as the decode kernels launch), with the stages' 48 KB or the kernels' 112 KB of shared
// memory a block (the 64 KB table beside the stages). Each stage's words are read back from shared memory (as the
// kernels' LDS.128 of their codes) and folded into one word a thread, so nothing is elided. Back-to-back launches
// over rotating copies (> 4x the L2), CUDA events around them: microseconds and TB/s a launch (docs/NOTES.md v1.36:
// the time the kernels would take if their compute hid entirely). No GPU, or a failed CUDA call: a message and exit
// status 1. Not part of the CMake build; scripts/build-micro builds it (-I device) and `scripts/gpu-check micro` runs it.
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "lutmm/ptx/memory.cuh"
#include "copy_skeleton.hpp"
#include "micro_gpu.hpp"

namespace {

using namespace micro_skeleton;

enum Order { strips = 0, groups8 = 1, tiles = 2 };

// Byte offset of 16-byte chunk c (0 .. 1023) of k tile kt of tile t in each order.
__device__ int64_t chunk_offset(int order, int t, int kt, int c) {
  if (order == strips) return strips_chunk_offset(t, kt, c);  // (today's: 16 runs of 1 KB)
  if (order == groups8) {
    const int half = c / 512, in_run = c % 512;  // two 128-row groups, 8 KB each a k tile
    return (int64_t{t} * 2 + half) * (kStripBytes * 8) + int64_t{kt} * 8192 + in_run * 16;
  }
  return int64_t{t} * (kStripBytes * 16) + int64_t{kt} * kStageBytes + c * 16;
}

// Launched as a programmatic dependent (the "pdl" rows), as the decode kernels are: the first stages' copies go out
// before the wait for the previous launch, the next launch may start at once (copy_skeleton.hpp: stream_units).
template <int kStages>
__global__ void __launch_bounds__(kThreads) read_stages(const uint8_t* w, int order, int tiles, uint32_t* out) {
  extern __shared__ __align__(16) uint8_t smem[];
  const uint32_t units = tiles * kKTiles, blocks = gridDim.x;
  const uint32_t first = blockIdx.x * units / blocks, end = (blockIdx.x + 1) * units / blocks;
  const int tid = threadIdx.x;
  const uint32_t fold = stream_units<kStages>(
      smem, first, end, tid, /*copies=*/true,
      [&](uint32_t u, int c) { return w + chunk_offset(order, static_cast<int>(u / kKTiles), static_cast<int>(u % kKTiles), c); },
      [](uint32_t, int, uint32_t&) {});
  out[blockIdx.x * kThreads + tid] = fold;
}

}  // namespace

int main() {
  const int sms = micro_sm_count_or_exit();
  const int blocks = 2 * sms, copies = 5;  // 5 x 117 MB: > 4x a 60 MB L2 (and any of today's)
  const std::vector<uint8_t*> w = micro_weight_copies(kWeightBytes, copies);
  uint32_t* out = nullptr;
  micro_check_or_exit(cudaMalloc(&out, sizeof(uint32_t) * blocks * kThreads), "cudaMalloc of the output");
  const char* names[] = {"strips (today: 16 runs of 1 KB a stage)", "groups8 (2 runs of 8 KB)", "tiles (one 16 KB run)"};
  std::printf("28672 x 8192 and 8192 x 8192 4-bit, %d blocks of %d threads, stages of 16 KB, %.0f MB of rotating copies\n",
              blocks, kThreads, copies * kWeightBytes / 1e6);
  constexpr int kLaunches = 30;
  // One row per order (all_orders) or today's alone, kStages deep: 3 is the decode kernels' (with the 64 KB table
  // beside them); deeper ones say what more bytes in flight would give the bare stream (two blocks an SM up to 6
  // stages: 2 x 96 KB). pdl: launched as programmatic dependents. footprint_kb > 0: the block asks for that much shared
  // memory (the decode kernels' 112 KB: the 64 KB table beside the stages), so that no more than two blocks fit an SM
  // and the next launch's blocks enter only as this one's leave.
  auto run = [&](auto stages_constant, int pass, int rows, bool all_orders, bool pdl, int footprint_kb) {
    constexpr int kStages = decltype(stages_constant)::value;
    const int smem = footprint_kb > 0 ? footprint_kb * 1024 : kStages * kStageBytes, tiles = rows / kTileRows;
    const int64_t bytes = int64_t{rows} * kK / 2, per_copy = kWeightBytes / bytes;  // regions of one copy
    micro_check_or_exit(cudaFuncSetAttribute(read_stages<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                        "cudaFuncSetAttribute (dynamic shared memory)");
    cudaLaunchAttribute attribute;
    cudaLaunchConfig_t config = micro_launch_config(blocks, kThreads, smem, pdl, attribute);
    for (int order = 0; order < (all_orders ? 3 : 1); ++order) {
      const float ms = best_of_runs_ms([&] {
        for (int l = 0; l < kLaunches; ++l) {
          const uint8_t* region = w[l % copies] + (l / copies) % per_copy * bytes;
          micro_check_or_exit(cudaLaunchKernelEx(&config, read_stages<kStages>, region, order, tiles, out), "a launch");
        }
      });
      micro_check_or_exit(cudaGetLastError(), "the timed launches");
      const double us = ms * 1e3 / kLaunches;
      std::printf("pass %d  %5d x 8192  %d stages %s %3d KB  %-42s %8.2f us a launch  %6.3f TB/s\n", pass, rows,
                  kStages, pdl ? "pdl" : "   ", smem / 1024, names[order], us, bytes / us / 1e6);
    }
  };
  using S3 = std::integral_constant<int, 3>;
  for (int pass = 0; pass < 2; ++pass) {  // (the second pass: the same, to see the spread)
    run(S3{}, pass, kRows, true, false, 0);
    run(std::integral_constant<int, 4>{}, pass, kRows, false, false, 0);
    run(std::integral_constant<int, 5>{}, pass, kRows, false, false, 0);
    run(std::integral_constant<int, 6>{}, pass, kRows, false, false, 0);
    run(S3{}, pass, 8192, false, false, 0);  // (8192^2: 15 regions of 33.5 MB rotate)
    run(std::integral_constant<int, 5>{}, pass, 8192, false, false, 0);
    run(S3{}, pass, kRows, false, true, 0);
    run(S3{}, pass, 8192, false, true, 0);
    run(S3{}, pass, kRows, false, true, 112);
    run(S3{}, pass, 8192, false, true, 112);
    run(S3{}, pass, kRows, true, false, 112);
    run(S3{}, pass, 8192, false, false, 112);
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
