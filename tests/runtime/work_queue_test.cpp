// The work queue (device/lutmm/scheduler/work_queue.cuh), walked on the CPU: its chunks cover every (tile, k tile)
// unit exactly once, a tile's chunks come in K order and number themselves 0..C-1 (the fixed order the tile's
// slots are added in), every chunk is at least stages - 1 k tiles long where the host's shape says so, and
// the host's grid and workspace (work_queue_shape, split_k_workspace) agree with it.
#include <gtest/gtest.h>

#include <vector>

#include "described_gpus.hpp"
#include "lutmm/config.hpp"
#include "lutmm/scheduler/work_queue.cuh"
#include "runtime/kernel_shapes.hpp"
#include "runtime/workspace.hpp"

namespace lutmm {
namespace {

using test::described_a100;
using test::described_h200;

constexpr int kTileN = 128, kTileM = 8;

Problem problem(int64_t m, int64_t n, int64_t k) { return Problem::of(m, n, k, 4, 128); }

// Walks every chunk id of a queue of tiles_n x tiles_m tiles, k_tiles each, cut into `chunks` per tile.
void walk(int tiles_n, int tiles_m, int k_tiles, int chunks, int min_len) {
  GemmParams p{};
  p.tiles_n = tiles_n;
  p.tiles_m = tiles_m;
  p.k_tiles = k_tiles;
  p.queue_chunks = chunks;
  const scheduler::WorkQueue q(p);
  const int tiles = tiles_n * tiles_m;
  ASSERT_EQ(q.chunks, static_cast<uint32_t>(tiles * chunks));
  std::vector<int> done(static_cast<size_t>(tiles) * k_tiles, 0);
  for (uint32_t id = 0; id < q.chunks; ++id) {
    scheduler::TileWork w{};
    ASSERT_TRUE((q.work_of<kTileN, kTileM>(id, w)));
    EXPECT_EQ(w.tile_id, static_cast<int>(id) / chunks);
    EXPECT_EQ(w.split, static_cast<int>(id) % chunks);
    EXPECT_EQ(w.splits, chunks);
    EXPECT_EQ(w.n0, (w.tile_id % tiles_n) * kTileN);
    EXPECT_EQ(w.m0, (w.tile_id / tiles_n) * kTileM);
    EXPECT_GE(w.kt_end - w.kt_begin, min_len) << "chunk " << id;
    if (w.split == 0) EXPECT_EQ(w.kt_begin, 0);
    if (w.split == chunks - 1) EXPECT_EQ(w.kt_end, k_tiles);
    if (w.split > 0) {  // K order: this chunk starts where the tile's previous one ends
      scheduler::TileWork prev{};
      ASSERT_TRUE((q.work_of<kTileN, kTileM>(id - 1, prev)));
      EXPECT_EQ(w.kt_begin, prev.kt_end);
    }
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) ++done[static_cast<size_t>(w.tile_id) * k_tiles + kt];
  }
  for (size_t u = 0; u < done.size(); ++u) EXPECT_EQ(done[u], 1) << "unit " << u;
  scheduler::TileWork w{};
  EXPECT_FALSE((q.work_of<kTileN, kTileM>(q.chunks, w)));  // past the end: the queue is empty
  EXPECT_FALSE((q.work_of<kTileN, kTileM>(q.chunks + 1000, w)));
}

TEST(WorkQueue, ChunksCoverEveryUnitOnceInKOrder) {
  walk(64, 1, 32, 16, 2);  // 1 x 8192 x 8192 on 128 x 8 x 256 tiles
  walk(224, 1, 32, 5, 6);  // uneven: 32 k tiles in five chunks of 6 or 7
  walk(7, 3, 10, 3, 3);    // several tile rows, 10 k tiles in 3 + 3 + 4
  walk(5, 1, 4, 1, 4);     // one chunk a tile: the whole K
}

TEST(WorkQueue, HostShapeAndWorkspaceMatchTheKernel) {
  const DeviceInfo dev = described_h200();
  const KernelConfig c = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1x2_skqueue_lutsmem256");
  ASSERT_EQ(c.split_k, kWorkQueue);
  for (const Problem& p : {problem(1, 8192, 8192), problem(4, 28672, 8192), problem(1, 4096, 4096),
                           problem(8, 14336, 4096), problem(1, 1280, 768)}) {
    ASSERT_EQ(config_invalid_reason(c, p, dev), "") << p.str();
    const WorkQueueShape s = work_queue_shape(c, p, dev);
    EXPECT_TRUE(s.fits);
    EXPECT_EQ(s.tiles, (p.n + 127) / 128) << p.str();
    EXPECT_EQ(s.k_tiles, static_cast<int>((p.k + 255) / 256));
    EXPECT_GE(s.chunks_per_tile, 1);
    EXPECT_GE(s.k_tiles / s.chunks_per_tile, c.stages - 1) << p.str() << ": chunks shorter than the prologue";
    // one wave (two 8-warp blocks an SM), never more blocks than chunks
    EXPECT_LE(s.blocks, 2 * dev.sm_count);
    EXPECT_LE(s.blocks, s.tiles * s.chunks_per_tile);
    walk(static_cast<int>(s.tiles), 1, s.k_tiles, s.chunks_per_tile, c.stages - 1);
    const SplitKWorkspace ws = split_k_workspace(c, p, dev);
    EXPECT_EQ(ws.counters, static_cast<size_t>(s.tiles) + 2);  // arrivals, the head, the leavers
    const size_t slots = s.chunks_per_tile > 1 ? static_cast<size_t>(s.tiles * s.chunks_per_tile) : 0;
    EXPECT_EQ(ws.float_bytes, slots * 128 * 8 * sizeof(float)) << p.str();
  }
  // about four chunks a block where K allows: 1 x 8192 x 8192 has 64 tiles of 32 k tiles on 264 blocks
  const WorkQueueShape big = work_queue_shape(c, problem(1, 8192, 8192), dev);
  EXPECT_EQ(big.blocks, 2 * dev.sm_count);
  EXPECT_EQ(big.chunks_per_tile, 16);
  EXPECT_EQ(resident_blocks_per_sm(c, problem(1, 8192, 8192), dev), 2);
}

TEST(KernelConfig, WorkQueueRules) {
  const DeviceInfo dev = described_h200();
  const KernelConfig q = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1_skqueue_lutsmem256");
  EXPECT_EQ(q.split_k, kWorkQueue);
  EXPECT_EQ(q.name(), "sm80_n128_m8_k256_s3_w4x1_skqueue_lutsmem256");
  EXPECT_EQ(resolve_split_k(q, problem(1, 8192, 8192), dev), kWorkQueue);
  EXPECT_EQ(config_invalid_reason(q, problem(1, 8192, 8192), dev), "");
  EXPECT_EQ(config_invalid_reason(q, problem(1, 8192, 8192), described_a100()), "");
  // one tile row, sm80 family, no _wreg, whole GPUs only, K long enough for the prologue
  EXPECT_NE(config_invalid_reason(q, problem(9, 8192, 8192), dev).find("one tile row"), std::string::npos);
  KernelConfig wreg = KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_sk1_lutsmem_wreg");
  wreg.split_k = kWorkQueue;
  EXPECT_NE(config_invalid_reason(wreg, problem(1, 4096, 4096), dev).find("_wreg"), std::string::npos);
  KernelConfig sm90 = KernelConfig::parse("sm90_n128_m8_k128_s4_w8x1_sk1_lutsmem256");
  sm90.split_k = kWorkQueue;
  EXPECT_NE(config_invalid_reason(sm90, problem(1, 4096, 4096), dev).find("sm80 family"), std::string::npos);
  DeviceInfo shared = dev;
  shared.shared_via_mps = true;
  EXPECT_NE(config_invalid_reason(q, problem(1, 8192, 8192), shared).find("MPS"), std::string::npos);
  const KernelConfig deep = KernelConfig::parse("sm80_n64_m8_k64_s6_w4x1_skqueue_lutreg");
  EXPECT_NE(config_invalid_reason(deep, problem(1, 4096, 256), dev).find("stages - 1"), std::string::npos);
  EXPECT_EQ(config_invalid_reason(deep, Problem::of(1, 4096, 320, 4, 64), dev), "");
  // the mailbox's static shared memory counts (a 128-byte allocation)
  KernelConfig split = q;
  split.split_k = 4;
  EXPECT_EQ(config_shared_bytes(q, problem(1, 8192, 8192)), config_shared_bytes(split, problem(1, 8192, 8192)) + 128);
  // offered on the decode tiles, not at M = 64
  bool offered = false;
  for (const KernelConfig& c : valid_configs(problem(1, 8192, 8192), dev)) offered |= c.split_k == kWorkQueue;
  EXPECT_TRUE(offered);
  for (const KernelConfig& c : valid_configs(problem(64, 4096, 4096), dev)) EXPECT_NE(c.split_k, kWorkQueue) << c.name();
}

}  // namespace
}  // namespace lutmm
