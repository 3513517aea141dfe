// The Stream-K schedule (device/lutmm/scheduler/stream_k.cuh), walked on the CPU for every block of a grid:
// every (tile, k tile) unit is done exactly once, a block's items are contiguous, the blocks sharing a tile
// number themselves 0..S-1 in K order (the fixed order their partial tiles are added in), and the host's
// workspace sizing (stream_k_shape) agrees with the kernel's count of sharing blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "described_gpus.hpp"
#include "lutmm/config.hpp"
#include "lutmm/scheduler/stream_k.cuh"

namespace lutmm {
namespace {

constexpr int kTileN = 256, kTileM = 64;

// Returns the most blocks that shared one tile.
int walk(int tiles_n, int tiles_m, int k_tiles, int blocks) {
  GemmParams p{};
  p.tiles_n = tiles_n;
  p.tiles_m = tiles_m;
  p.k_tiles = k_tiles;
  p.stream_k = scheduler::stream_k_divisors(tiles_n, tiles_m, k_tiles, static_cast<uint32_t>(blocks));
  const int64_t tiles = static_cast<int64_t>(tiles_n) * tiles_m;
  std::vector<int> done(static_cast<size_t>(tiles * k_tiles), 0);
  std::map<int, std::vector<scheduler::TileWork>> by_tile;
  for (int b = 0; b < blocks; ++b) {
    scheduler::StreamK sk(p, b, blocks);
    EXPECT_EQ(sk.next, scheduler::StreamK::first_unit(b, blocks, sk.units));  // (the divisors' quotients)
    EXPECT_EQ(sk.end, scheduler::StreamK::first_unit(b + 1, blocks, sk.units));
    scheduler::TileWork w{};
    int64_t last_unit = -1;
    while (sk.next_work<kTileN, kTileM>(p, w)) {
      EXPECT_LT(w.kt_begin, w.kt_end);
      EXPECT_EQ(w.n0, (w.tile_id % tiles_n) * kTileN);
      EXPECT_EQ(w.m0, (w.tile_id / tiles_n) * kTileM);
      const int64_t first = static_cast<int64_t>(w.tile_id) * k_tiles + w.kt_begin;
      if (last_unit >= 0) EXPECT_EQ(first, last_unit + 1) << "block " << b << " skips units";
      for (int kt = w.kt_begin; kt < w.kt_end; ++kt) ++done[static_cast<size_t>(w.tile_id) * k_tiles + kt];
      last_unit = static_cast<int64_t>(w.tile_id) * k_tiles + w.kt_end - 1;
      by_tile[w.tile_id].push_back(w);
    }
  }
  for (size_t u = 0; u < done.size(); ++u) EXPECT_EQ(done[u], 1) << "unit " << u;
  int most = 0;
  for (const auto& [tile, items] : by_tile) {
    // the items arrive in block order, which is K order; each knows its place and the count
    for (size_t i = 0; i < items.size(); ++i) {
      EXPECT_EQ(items[i].split, static_cast<int>(i)) << "tile " << tile;
      EXPECT_EQ(items[i].splits, static_cast<int>(items.size())) << "tile " << tile;
      if (i > 0) EXPECT_EQ(items[i].kt_begin, items[i - 1].kt_end) << "tile " << tile;
    }
    EXPECT_EQ(items.front().kt_begin, 0);
    EXPECT_EQ(items.back().kt_end, k_tiles);
    most = std::max(most, static_cast<int>(items.size()));
  }
  EXPECT_EQ(static_cast<int64_t>(by_tile.size()), tiles);
  return most;
}

// The schedule's divisions by a multiply-high, an add and a shift (scheduler/fast_divisor.cuh) give the quotient of
// every 32-bit dividend: divisors 1 .. 4096 and powers of two, their neighbours and a few large ones, against
// dividends at the ends of the range, around multiples of the divisor and pseudo-random ones.
TEST(StreamK, FastDivisorsDivideEvery32BitDividend) {
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int b = 12; b < 32; ++b)
    for (int64_t e : {-1, 0, 1}) divisors.push_back(static_cast<uint32_t>((int64_t{1} << b) + e));
  for (uint32_t d : {7168u, 123457u, 1000000007u, 0x7fffffffu, 0xfffffffeu, 0xffffffffu}) divisors.push_back(d);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto random = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 32);
  };
  int wrong = 0;
  for (uint32_t d : divisors) {
    const scheduler::FastDivisor f = scheduler::FastDivisor::of(d);
    std::vector<uint32_t> xs = {0u, 1u, d - 1, d, d + 1, 0xffffffffu, 0xfffffffeu, 0x80000000u, 0x7fffffffu};
    for (uint32_t q : {1u, 2u, 3u, 1000u, 0xffffffffu / d})
      for (int64_t e : {-1, 0, 1}) xs.push_back(static_cast<uint32_t>(static_cast<int64_t>(q) * d + e));
    for (int i = 0; i < 64; ++i) xs.push_back(random());
    for (uint32_t x : xs)
      if (f.divide(x) != x / d && ++wrong <= 10) ADD_FAILURE() << x << " / " << d << ": " << f.divide(x);
  }
  EXPECT_EQ(wrong, 0);
}

TEST(StreamK, EveryUnitOnceAndSharedTilesInKOrder) {
  walk(112, 1, 128, 132);  // 64 x 28672 x 8192 on 256 x 64 tiles, one block per H200 SM
  walk(56, 1, 64, 132);    // more blocks than tiles: every tile shared by two or three blocks
  walk(7, 3, 5, 21);       // one unit per block
  walk(7, 3, 5, 1);        // one block does everything
  walk(1, 1, 1, 1);
  walk(33, 2, 17, 50);
}

TEST(StreamK, HostWorkspaceSizingMatchesTheKernelsSharing) {
  const DeviceInfo dev = test::described_h200();
  auto check = [&](const char* name, const std::vector<std::array<int64_t, 3>>& shapes) {
    const KernelConfig c = KernelConfig::parse(name);
    for (const auto& [m, n, k] : shapes) {
      const Problem p = Problem::of(m, n, k);
      const StreamKShape s = stream_k_shape(c, p, dev);
      ASSERT_GT(s.blocks, 0);
      EXPECT_LE(s.blocks, dev.sm_count * resident_blocks_per_sm(c, p, dev));
      const int tiles_n = static_cast<int>((n + c.tile_n - 1) / c.tile_n), tiles_m = static_cast<int>((m + c.tile_m - 1) / c.tile_m);
      EXPECT_EQ(s.tiles, static_cast<int64_t>(tiles_n) * tiles_m);
      EXPECT_EQ(walk(tiles_n, tiles_m, s.k_tiles, s.blocks), s.max_sharing) << name << " " << m << "x" << n << "x" << k;
    }
  };
  check("sm90_n256_m64_k64_s4_w16x1_skstream_lutsmem256", {{64, 28672, 8192}, {64, 14336, 4096}, {77, 4096, 4096}});
  // the sm80 family's decode tiles
  check("sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256", {{1, 28672, 8192}, {8, 14336, 4096}, {1, 4096, 4096}});
}

}  // namespace
}  // namespace lutmm
