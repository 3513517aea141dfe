// The heuristic never picks an invalid config, and the ranking model that orders the tuner's candidates
// gives every valid config a finite estimate and prefers what the physics says (GPUs described by value).
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "tune_test_util.hpp"

namespace lutmm {
namespace {

using test::described_a100;
using test::described_h200;
using test::make_problem;

// The groups a caller may use for K: 32..256 where they divide K, and one scale per row.
std::vector<int> groups_for(int64_t k) {
  std::vector<int> groups;
  for (int g : {32, 64, 128, 256})
    if (k % g == 0) groups.push_back(g);
  groups.push_back(static_cast<int>(k));
  return groups;
}

TEST(Heuristic, NeverPicksAnInvalidConfigForAnyShapeOnTheDescribedGpus) {
  int checked = 0;
  for (const DeviceInfo& dev : {described_h200(), described_a100()}) {
    for (const char* set : {"diffusion", "llm"}) {
      for (const Shape& s : load_shapes(set)) {
        for (int bits : {2, 3, 4}) {
          for (int group : groups_for(s.k)) {
            for (DType dtype : {DType::bf16, DType::f16}) {
              const Problem p = make_problem(s.m, s.n, s.k, bits, group, dtype);
              const KernelConfig h = heuristic_config(p, dev);
              ASSERT_EQ(config_invalid_reason(h, p, dev), "") << p.str() << " on " << dev.name << ": " << h.name();
              ASSERT_GE(h.split_k, 1) << p.str();
              ASSERT_EQ(resolve_split_k(h, p, dev), h.split_k) << "a split that leaves an empty part: " << h.name();
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(RankModel, EveryRankedConfigIsValidDistinctAndEstimated) {
  for (const DeviceInfo& dev : {described_h200(), described_a100()}) {
    for (const char* set : {"diffusion", "llm"}) {
      for (const Shape& s : load_shapes(set)) {
        const Problem p = make_problem(s.m, s.n, s.k, 4, s.k % 128 == 0 ? 128 : (s.k % 64 == 0 ? 64 : static_cast<int>(s.k)));
        const std::vector<KernelConfig> ranked = rank_configs(p, dev);
        ASSERT_FALSE(ranked.empty()) << p.str();
        std::set<std::string> names;
        double previous = 0;
        for (const KernelConfig& c : ranked) {
          EXPECT_EQ(config_invalid_reason(c, p, dev), "") << c.name();
          EXPECT_GE(c.split_k, 1) << "split-K is resolved: " << c.name();
          EXPECT_TRUE(names.insert(c.name()).second) << "listed twice: " << c.name();
          const double us = estimate_config_us(c, p, dev);
          EXPECT_TRUE(std::isfinite(us) && us > 0) << c.name() << " " << us;
          EXPECT_GE(us, previous) << "best estimate first";
          previous = us;
        }
      }
    }
  }
}

TEST(RankModel, DecodeWantsNarrowTilesAndSplitKLargeMWantsBigTiles) {
  const DeviceInfo dev = described_h200();
  // M = 1, 4096 x 4096: 64 tiles of 64 rows cannot fill 132 SMs; the model must reach for split-K.
  const KernelConfig decode = rank_configs(make_problem(1, 4096, 4096), dev).front();
  EXPECT_LE(decode.tile_m, 16) << decode.name();
  EXPECT_GT(decode.split_k, 1) << decode.name();
  // M = 4096, 28672 x 8192: compute-bound, tiles of 8 or 16 rows would decode W 256-512 times.
  const Problem big = make_problem(4096, 28672, 8192);
  const KernelConfig large = rank_configs(big, dev).front();
  EXPECT_GE(large.tile_m, 64) << large.name();
  EXPECT_EQ(large.split_k, 1) << large.name();
  KernelConfig narrow = KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_sk1_lutsmem");
  EXPECT_GT(estimate_config_us(narrow, big, dev), 2 * estimate_config_us(large, big, dev));
  EXPECT_THROW(estimate_config_us(large, make_problem(1, 60, 128), dev), Error);
}

}  // namespace
}  // namespace lutmm
