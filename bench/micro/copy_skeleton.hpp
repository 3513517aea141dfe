#pragma once
// The decode kernels' copy skeleton, shared by bench/micro/stage_read_order.cu and switch_fence.cu: a 28672 x 8192
// 4-bit weight cut as the 256 x 8 x 128 decode tiles cut it (a stage: one 256-row tile's 128-deep k tile, 16 KB, in
// today's packed order of 16 runs of 1 KB, one per 16-row strip), and a block's run of units (one k tile of one tile)
// streamed through kStages cp.async stages by 128 threads, each stage's words read back from shared memory (as the
// kernels' LDS.128 of their codes, so that nothing is elided).
#include <cstdint>

#include "lutmm/ptx/memory.cuh"

namespace micro_skeleton {

constexpr int kThreads = 128, kStageBytes = 16384, kChunks = kStageBytes / 16;
constexpr int kRows = 28672, kK = 8192, kTileRows = 256, kKTile = 128;
constexpr int kKTiles = kK / kKTile;
constexpr int64_t kStripBytes = int64_t{kK} / 2 * 16;  // one 16-row strip, all of K (4 bits a weight)
constexpr int64_t kWeightBytes = int64_t{kRows} * kK / 2;

// Byte offset of 16-byte chunk c (0 .. 1023) of k tile kt of tile t in today's packed order: 16 strips x 64 chunks,
// 1 KB a strip; each strip's k tiles follow each other.
__device__ inline int64_t strips_chunk_offset(int t, int kt, int c) {
  const int strip = c / 64, in_run = c % 64;
  return (int64_t{t} * 16 + strip) * kStripBytes + int64_t{kt} * 1024 + in_run * 16;
}

// Streams units [first, end) of a block's run: the first kStages - 1 stages' copies go out before the wait for the
// stream's previous launch, and the next launch may start at once (as the decode kernels launch with
// dependents_early; without the programmatic-dependent attribute both are no-ops); then each unit waits for its stage,
// issues the copies kStages - 1 units ahead, reads its stage back into the returned fold, and calls
// after(u, stage, fold) (the stage it read, which no copy is landing in until the next unit's). source(u, c): the
// global address of chunk c of unit u; copies: whether this thread issues its chunks (tid, tid + kThreads, ...).
template <int kStages, class Source, class AfterUnit>
__device__ uint32_t stream_units(uint8_t* smem, uint32_t first, uint32_t end, int tid, bool copies, Source source,
                                 AfterUnit after) {
  auto copy = [&](uint32_t u, int stage) {
    if (u < end && copies) {
      const uint32_t dst = lutmm::ptx::smem_addr(smem + stage * kStageBytes);
#pragma unroll
      for (int j = 0; j < kChunks / kThreads; ++j) {
        const int c = tid + j * kThreads;
        lutmm::ptx::cp_async_16(dst + c * 16, source(u, c));
      }
    }
    lutmm::ptx::cp_async_commit();  // (one group a stage, even when empty: the wait count stays exact)
  };
  for (int s = 0; s < kStages - 1; ++s) copy(first + s, s);
  lutmm::ptx::allow_dependent_launch();
  lutmm::ptx::grid_dependency_wait();
  uint32_t fold = 0;
  int stage = 0;
  for (uint32_t u = first; u < end; ++u) {
    lutmm::ptx::cp_async_wait<kStages - 2>();
    __syncthreads();
    copy(u + kStages - 1, (stage + kStages - 1) % kStages);
    const uint4* words = reinterpret_cast<const uint4*>(smem + stage * kStageBytes);
#pragma unroll
    for (int j = 0; j < kChunks / kThreads; ++j) {
      const uint4 v = words[tid + j * kThreads];
      fold ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    after(u, stage, fold);
    stage = stage + 1 == kStages ? 0 : stage + 1;
  }
  return fold;
}

}  // namespace micro_skeleton
