// Configs: names round-trip, problem rules, the config space and the heuristic on GPUs described by
// value (tests/described_gpus.hpp).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "described_gpus.hpp"
#include "lutmm/config.hpp"
#include "lutmm/error.hpp"
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/shapes.hpp"
#include "runtime/kernel_shapes.hpp"
#include "runtime/launch_choices.hpp"
#include "runtime/workspace.hpp"

namespace lutmm {
namespace {

using test::described_a100;
using test::described_h200;
using test::described_sm86;

Problem problem(int64_t m, int64_t n, int64_t k, int bits = 4, int g = 128) { return Problem::of(m, n, k, bits, g); }

int group_for(int64_t k) { return k % 128 == 0 ? 128 : (k % 64 == 0 ? 64 : static_cast<int>(k)); }

TEST(KernelConfig, NameRoundTrips) {
  for (const auto& shape : sm80_kernel_shapes()) {
    for (int split : {0, 1, 3, 16, kStreamK}) {
      for (LutPlacement lut : {LutPlacement::shared, LutPlacement::shared_wide, LutPlacement::registers}) {
        for (bool wreg : {false, true}) {
          for (int min_blocks : {1, shape.min_blocks, 4}) {
            KernelConfig c = shape;
            c.split_k = split;
            c.lut = lut;
            c.w_in_registers = wreg;
            c.min_blocks = min_blocks;
            EXPECT_EQ(KernelConfig::parse(c.name()), c) << c.name();
          }
        }
      }
    }
  }
  for (const auto& shape : sm90_kernel_shapes())
    for (int split : {0, 1, 3, 16, kStreamK})
      for (LutPlacement lut : {LutPlacement::shared, LutPlacement::shared_wide, LutPlacement::registers})
        for (int multicast : {1, 2, 4})
          for (bool ws : {false, true}) {
            KernelConfig c = shape;
            c.split_k = split;
            c.lut = lut;
            c.x_multicast = multicast;
            c.warp_specialized = ws;
            EXPECT_EQ(KernelConfig::parse(c.name()), c) << c.name();
          }
  EXPECT_EQ(KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_mc2").x_multicast, 2);
  EXPECT_EQ(KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256").x_multicast, 1);
  EXPECT_EQ(KernelConfig::parse("sm90_n256_m64_k64_s4_w16x1_sk2_lutsmem256").family, 90);
  EXPECT_EQ(KernelConfig::parse("sm90_n256_m64_k64_s4_w16x1_skstream_lutsmem256").split_k, kStreamK);
  EXPECT_EQ(KernelConfig::parse("sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem").name(), "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem");
  EXPECT_TRUE(KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_skauto_lutsmem_wreg").w_in_registers);
  EXPECT_EQ(KernelConfig::parse("sm80_n128_m8_k128_s2_w4x1_sk8_lutsmem_occ4").min_blocks, 4);
  EXPECT_EQ(KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_skauto_lutsmem_wreg_occ2").min_blocks, 2);
  EXPECT_EQ(KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_skauto_lutsmem").min_blocks, 1);
  // two warp groups along K: x2 after the warp layout; one group is the plain name
  const KernelConfig split = KernelConfig::parse("sm80_n64_m32_k128_s4_w4x1x2_sk2_lutreg");
  EXPECT_EQ(split.warps_k, 2);
  EXPECT_EQ(split.threads(), 256);
  EXPECT_EQ(KernelConfig::parse("sm80_n64_m32_k128_s4_w4x1_sk2_lutreg").warps_k, 1);
}

// The warpgroup-MMA family needs sm_90a: offered and valid on the H200 only, with its own shape rules.
TEST(KernelConfig, Sm90FamilyRunsOnSm90Only) {
  const Problem p = problem(64, 8192, 8192);
  const KernelConfig c = KernelConfig::parse("sm90_n256_m64_k64_s4_w16x1_skauto_lutsmem256");
  EXPECT_EQ(config_invalid_reason(c, p, described_h200()), "");
  for (const DeviceInfo& other : {described_a100(), described_sm86()}) {
    EXPECT_NE(config_invalid_reason(c, p, other).find("sm_90 GPUs only"), std::string::npos);
    for (const KernelConfig& v : valid_configs(p, other)) EXPECT_EQ(v.family, 80) << v.name();
  }
  int sm90 = 0;
  for (const KernelConfig& v : valid_configs(p, described_h200())) sm90 += v.family == 90;
  EXPECT_GT(sm90, 0);
  // whole warpgroups, one strip per warp; no _wreg or _occN (those belong to the sm80 kernel)
  KernelConfig bad = c;
  bad.warps_n = 8;
  EXPECT_NE(config_invalid_reason(bad, p, described_h200()).find("warpgroups"), std::string::npos);
  bad = c;
  bad.w_in_registers = true;
  EXPECT_NE(config_invalid_reason(bad, p, described_h200()).find("_wreg"), std::string::npos);
  // a 3-bit problem cannot use the 256-byte-row table here either
  EXPECT_NE(config_invalid_reason(c, problem(64, 8192, 8192, 3), described_h200()).find("lutsmem256"), std::string::npos);
}

// x multicast (_mcN): clusters of 2 or 4 column tiles of the sm90 family, split-K only, whole 8-row swizzle
// atoms per block, a whole number of clusters along N; forcible, not offered (measured slower).
TEST(KernelConfig, XMulticastRules) {
  const DeviceInfo dev = described_h200();
  const KernelConfig mc = KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_mc2");
  EXPECT_EQ(config_invalid_reason(mc, problem(64, 4096, 4096), dev), "");
  KernelConfig four = mc;
  four.x_multicast = 4;
  EXPECT_EQ(config_invalid_reason(four, problem(64, 4096, 4096), dev), "");
  // 1280 / 128 = 10 column tiles: pairs yes, fours no
  EXPECT_EQ(config_invalid_reason(mc, problem(64, 1280, 5120), dev), "");
  EXPECT_NE(config_invalid_reason(four, problem(64, 1280, 5120), dev).find("multiple of 4 column tiles"), std::string::npos);
  KernelConfig bad = mc;
  bad.x_multicast = 3;
  EXPECT_NE(config_invalid_reason(bad, problem(64, 4096, 4096), dev).find("clusters of 2 or 4"), std::string::npos);
  bad = mc;
  bad.split_k = kStreamK;
  EXPECT_NE(config_invalid_reason(bad, problem(64, 4096, 4096), dev).find("Stream-K"), std::string::npos);
  bad = KernelConfig::parse("sm90_n128_m8_k128_s4_w8x1_sk4_lutsmem256_mc2");  // 4 rows a block
  EXPECT_NE(config_invalid_reason(bad, problem(8, 4096, 4096), dev).find("multiple of 16"), std::string::npos);
  bad = KernelConfig::parse("sm80_n128_m64_k128_s3_w4x1x2_sk2_lutsmem");
  bad.x_multicast = 2;
  EXPECT_NE(config_invalid_reason(bad, problem(64, 4096, 4096), dev).find("sm90 family"), std::string::npos);
  EXPECT_NE(config_invalid_reason(mc, problem(64, 4096, 4096), described_a100()).find("sm_90 GPUs only"), std::string::npos);
  // its barriers' static shared memory counts (the sm_90 compiler reserves 1 KB with them)
  KernelConfig plain = mc;
  plain.x_multicast = 1;
  EXPECT_EQ(config_shared_bytes(mc, problem(64, 4096, 4096)), config_shared_bytes(plain, problem(64, 4096, 4096)) + 1024);
  for (int64_t m : {1, 64, 1024})
    for (const KernelConfig& v : valid_configs(problem(m, 4096, 4096), dev)) EXPECT_EQ(v.x_multicast, 1) << v.name();
}

// Stream-K: both families, not with W streamed into registers; the sm80 item loop's registers leave two
// 4-warp blocks a SM, one of 8 warps.
TEST(KernelConfig, StreamKRules) {
  const DeviceInfo dev = described_h200();
  const KernelConfig sk = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256");
  EXPECT_EQ(sk.split_k, kStreamK);
  EXPECT_EQ(config_invalid_reason(sk, problem(1, 28672, 8192), dev), "");
  EXPECT_EQ(resident_blocks_per_sm(sk, problem(1, 28672, 8192), dev), 2);
  const StreamKShape shape = stream_k_shape(sk, problem(1, 28672, 8192), dev);
  EXPECT_EQ(shape.blocks, 2 * dev.sm_count);  // 224 tiles of 32 k tiles each: 27 or 28 k tiles a block,
  EXPECT_EQ(shape.max_sharing, 3);             // so a tile meets two blocks, or three
  KernelConfig eight = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1x2_skstream_lutsmem256");
  EXPECT_EQ(resident_blocks_per_sm(eight, problem(1, 28672, 8192), dev), 1);
  KernelConfig wreg = KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_sk1_lutsmem_wreg");
  wreg.split_k = kStreamK;
  EXPECT_NE(config_invalid_reason(wreg, problem(1, 4096, 4096), dev).find("Stream-K"), std::string::npos);
  EXPECT_NE(config_invalid_reason(sk, problem(9, 4096, 4096), dev).find("one tile row"), std::string::npos);
  // the heuristic: Stream-K where split-K leaves over a tenth of the slots idle and the runs are long
  EXPECT_EQ(heuristic_config(problem(1, 28672, 8192), dev).split_k, kStreamK);
  EXPECT_NE(heuristic_config(problem(1, 8192, 28672), dev).split_k, kStreamK);  // 256 blocks on 264 slots
  EXPECT_NE(heuristic_config(problem(1, 14336, 4096), dev).split_k, kStreamK);  // 7 k tiles a block
  // an A100's 108 slots (one such block a SM): 224 tiles make a third wave of 8 blocks
  EXPECT_EQ(heuristic_config(problem(1, 28672, 8192), described_a100()).split_k, kStreamK);
  bool offered = false;
  for (const KernelConfig& c : valid_configs(problem(1, 28672, 8192), dev)) offered |= c.split_k == kStreamK;
  EXPECT_TRUE(offered);
  for (const KernelConfig& c : valid_configs(problem(64, 4096, 4096), dev)) EXPECT_NE(c.split_k, kStreamK) << c.name();
  // The epilogue tile is staged in one stage: rows padded by 4 floats where they fit, else unpadded. 256 x 16 x 128
  // with the 256-byte table: 16 KB stages of W alone (x and scales in the holes) hold the 16 KB unpadded tile, not
  // the 16.6 KB padded one; 64 x 16 x 64's 2 KB stages hold neither.
  EXPECT_EQ(sm80_stream_k_epilogue_ld(256, 8, 16384), 260);
  EXPECT_EQ(sm80_stream_k_epilogue_ld(256, 16, 16384), 256);
  const KernelConfig wide = KernelConfig::parse("sm80_n256_m16_k128_s3_w4x1_skstream_lutsmem256");
  EXPECT_EQ(config_invalid_reason(wide, problem(16, 28672, 8192), dev), "");
  const KernelConfig shallow = KernelConfig::parse("sm80_n64_m16_k64_s6_w4x1_skstream_lutsmem256");
  const std::string why = config_invalid_reason(shallow, problem(16, 8192, 8192), dev);
  EXPECT_NE(why.find("4096-byte epilogue tile in one 2048-byte stage"), std::string::npos) << why;
}

// The pre-wait variant's slices (kernels/gemm_sm80_config.cuh: sm80_prewait_slices): a warp's first slices of its
// first k tile, at most 8 and at most 64 registers (16 / frags_n), on one-x-block warps whose run of a k tile is at
// most two atoms; none under Stream-K, with W in registers, or on M = 16 warps.
TEST(KernelConfig, PrewaitSlicesFollowTheMeasuredRule) {
  auto slices = [](const char* name) {
    const KernelConfig c = KernelConfig::parse(name);
    return sm80_prewait_slices(c.tile_n, c.tile_m, c.tile_k, c.warps_n, c.warps_m, c.warps_k, c.split_k == kStreamK,
                               c.w_in_registers);
  };
  EXPECT_EQ(slices("sm80_n128_m8_k256_s3_w4x1x2_sk4_lutsmem256"), 8);  // 1 x 8192^2's pick: 2 strips, 8 slices a run
  EXPECT_EQ(slices("sm80_n256_m8_k128_s3_w4x1_sk8_lutsmem256"), 4);    // 4 strips a warp: 4 x 4 x 4 registers
  EXPECT_EQ(slices("sm80_n64_m8_k128_s4_w4x1_sk2_lutsmem"), 8);
  EXPECT_EQ(slices("sm80_n64_m8_k64_s6_w4x1_sk1_lutsmem"), 4);         // the whole run of a 64-deep tile
  EXPECT_EQ(slices("sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256"), 0);    // 16 slices a run
  EXPECT_EQ(slices("sm80_n128_m16_k128_s4_w4x1_sk4_lutsmem256"), 0);   // two x blocks a warp
  EXPECT_EQ(slices("sm80_n256_m8_k128_s3_w4x1_skstream_lutsmem256"), 0);
  EXPECT_EQ(slices("sm80_n64_m8_k128_s4_w4x1_sk2_lutsmem_wreg"), 0);
}

// Peak DRAM bytes an SM gets a clock, from the device's reported clocks (0 where any is unknown).
TEST(Device, MemoryBytesPerSmClock) {
  DeviceInfo h200 = described_h200();
  EXPECT_EQ(h200.memory_bytes_per_sm_clock(), 0.0);  // (nothing reported)
  h200.sm_clock_khz = 1980000;
  h200.memory_bytes_per_second = 2ll * 3201000 * 1000 * 6144 / 8;
  EXPECT_NEAR(h200.memory_bytes_per_sm_clock(), 18.8, 0.1);
  h200.sm_count = 0;
  EXPECT_EQ(h200.memory_bytes_per_sm_clock(), 0.0);
}

// The staged epilogue tile's index (epilogue_tile_index): each row's values in their own row, the accumulator
// fragment stores of a warp on 32 different banks (unpadded rows too, through the swizzle), and the aligned runs of
// 4 and 8 floats that the readers take contiguous.
TEST(KernelConfig, EpilogueTileIndexIsABijectionWithConflictFreeFragmentStores) {
  struct Tile { int tile_n, tile_m, ld; };
  for (const Tile t : {Tile{256, 16, 256}, Tile{256, 8, 260}, Tile{128, 16, 132}, Tile{64, 8, 68}, Tile{256, 32, 256}}) {
    const std::string what = std::to_string(t.tile_n) + " x " + std::to_string(t.tile_m) + ", ld " + std::to_string(t.ld);
    std::set<int> seen;
    for (int r = 0; r < t.tile_m; ++r)
      for (int c = 0; c < t.tile_n; ++c) {
        const int at = epilogue_tile_index(t.ld, t.tile_n, r, c);
        ASSERT_EQ(at / t.ld, r) << what << ": (" << r << ", " << c << ") left its row";
        ASSERT_LT(at % t.ld, t.tile_n) << what;
        ASSERT_TRUE(seen.insert(at).second) << what << ": (" << r << ", " << c << ") shares its place";
        if (c % 8 == 0)
          for (int j = 1; j < 8; ++j) ASSERT_EQ(epilogue_tile_index(t.ld, t.tile_n, r, c + j), at + j) << what;
      }
    // stage_accumulators: lane (g, t4) stores W rows strip * 16 + g (+ 8) of x columns fm * 8 + 2 t4 (+ 1)
    for (int strip = 0; strip < t.tile_n / 16; ++strip)
      for (int fm = 0; fm < t.tile_m / 8; ++fm)
        for (int reg = 0; reg < 4; ++reg) {
          std::set<int> banks;
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane / 4, t4 = lane % 4;
            const int n = strip * 16 + g + (reg >= 2 ? 8 : 0), m = fm * 8 + 2 * t4 + (reg % 2);
            banks.insert(epilogue_tile_index(t.ld, t.tile_n, m, n) % 32);
          }
          EXPECT_EQ(banks.size(), 32u) << what << ", strip " << strip << ", fm " << fm << ", register " << reg;
        }
  }
}

// The warp-specialized sm90 kernel (_ws): split-K tiles of 4 or 8 warps plus a producer warp, its own x
// copies (no multicast); forcible, not offered (measured no faster).
TEST(KernelConfig, WarpSpecializedRules) {
  const DeviceInfo dev = described_h200();
  const KernelConfig ws = KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_ws");
  EXPECT_TRUE(ws.warp_specialized);
  EXPECT_EQ(ws.name(), "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_ws");
  EXPECT_EQ(ws.threads(), 9 * 32);  // (the producer warp)
  EXPECT_FALSE(KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256").warp_specialized);
  EXPECT_EQ(config_invalid_reason(ws, problem(64, 4096, 4096), dev), "");
  EXPECT_EQ(config_invalid_reason(ws, problem(5, 1000, 2048, 3, 32), dev).find("lutsmem256"), 0u);
  KernelConfig bad = ws;
  bad.split_k = kStreamK;
  EXPECT_NE(config_invalid_reason(bad, problem(64, 4096, 4096), dev).find("Stream-K"), std::string::npos);
  bad = ws;
  bad.x_multicast = 2;
  EXPECT_NE(config_invalid_reason(bad, problem(64, 4096, 4096), dev).find("multicast"), std::string::npos);
  bad = KernelConfig::parse("sm90_n256_m64_k128_s4_w16x1_sk1_lutsmem256_ws");
  EXPECT_NE(config_invalid_reason(bad, problem(64, 4096, 4096), dev).find("128 rows"), std::string::npos);
  bad = KernelConfig::parse("sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem_ws");
  EXPECT_NE(config_invalid_reason(bad, problem(16, 4096, 4096), dev).find("sm90 family"), std::string::npos);
  EXPECT_NE(config_invalid_reason(ws, problem(64, 4096, 4096), described_a100()).find("sm_90 GPUs only"), std::string::npos);
  // its barriers' static shared memory counts (the sm_90 compiler reserves 1 KB with them)
  KernelConfig plain = ws;
  plain.warp_specialized = false;
  EXPECT_EQ(config_shared_bytes(ws, problem(64, 4096, 4096)), config_shared_bytes(plain, problem(64, 4096, 4096)) + 1024);
  for (int64_t m : {1, 64, 1024})
    for (const KernelConfig& v : valid_configs(problem(m, 4096, 4096), dev)) EXPECT_FALSE(v.warp_specialized) << v.name();
}

TEST(KernelConfig, BadNamesNameTheConfigArgument) {
  for (const char* bad : {"", "sm80", "sm80_n64_m16_k128_s4_w4x1_sk2", "sm80_n64_m16_k128_s4_w4x1_sk2_lutfoo",
                          "sm80_n64_m16_k128_s4_w4x1_sk0_lutsmem", "sm80_n63_m16_k128_s4_w4x1_sk2_lutsmem",
                          "sm90_n64_m16_k128_s4_w4x1_sk2_lutsmem", "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem_x",
                          "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem_wreg_wreg", "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem_occ1",
                          "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem_occ", "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem_occ3_wreg",
                          "sm80_n64_m32_k128_s4_w4x1x1_sk2_lutreg", "sm80_n64_m32_k128_s4_w4x1x_sk2_lutreg",
                          "sm80_n64_m32_k128_s4_w4x1x4_sk2_lutreg", "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_mc1",
                          "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_mc", "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem_mc2_occ2"}) {
    try {
      KernelConfig::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'config'"), std::string::npos) << e.what();
    }
  }
}

TEST(Problem, RulesNameTheArgument) {
  auto expect_bad = [](Problem p, const char* arg) {
    try {
      check_problem(p);
      ADD_FAILURE() << "accepted " << p.str();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + arg + "'"), std::string::npos) << e.what();
    }
  };
  expect_bad(problem(0, 64, 128), "m");
  expect_bad(problem(1, 60, 128), "n");
  expect_bad(problem(1, 64, 120, 4, 120), "k");
  expect_bad(problem(1, 64, 128, 5), "bits");
  expect_bad(problem(1, 64, 320, 4, 128), "group_size");
  EXPECT_NO_THROW(check_problem(problem(1, 8, 16, 2, 16)));
  EXPECT_NO_THROW(check_problem(problem(449, 2304, 1152, 3, 64)));
}

// Every shape of both embedded sets has valid configs on each described GPU, and the heuristic's
// choice is one of them, with a concrete split.
TEST(ConfigSpace, EveryShapeHasValidConfigsAndTheHeuristicPicksOne) {
  for (const DeviceInfo& dev : {described_h200(), described_a100(), described_sm86()}) {
    for (const char* set : {"diffusion", "llm"}) {
      for (const Shape& s : load_shapes(set)) {
        for (int bits : {2, 3, 4}) {
          const Problem p = problem(s.m, s.n, s.k, bits, group_for(s.k));
          const auto configs = valid_configs(p, dev);
          ASSERT_FALSE(configs.empty()) << p.str() << " on " << dev.name;
          for (const auto& c : configs) EXPECT_EQ(config_invalid_reason(c, p, dev), "") << c.name();
          const KernelConfig h = heuristic_config(p, dev);
          EXPECT_EQ(config_invalid_reason(h, p, dev), "") << p.str() << " " << h.name();
          EXPECT_TRUE(h.split_k >= 1 || h.split_k == kStreamK) << h.name();
        }
      }
    }
  }
}

TEST(ConfigSpace, InvalidReasonsAreSpecific) {
  const DeviceInfo dev = described_h200();
  KernelConfig c = KernelConfig::parse("sm80_n64_m16_k128_s4_w4x1_skauto_lutsmem");
  EXPECT_NE(config_invalid_reason(c, problem(1, 1280, 320, 4, 64), dev).find("tile_k"), std::string::npos);
  DeviceInfo old = dev;
  old.cc_major = 7; old.cc_minor = 5;
  EXPECT_NE(config_invalid_reason(c, problem(1, 1280, 1280), old).find("sm_80"), std::string::npos);
  DeviceInfo tiny = dev;
  tiny.smem_per_block_optin = 48 * 1024;
  EXPECT_NE(config_invalid_reason(c, problem(1, 1280, 1280), tiny).find("shared memory"), std::string::npos);
  c.split_k = 100;
  EXPECT_NE(config_invalid_reason(c, problem(1, 1280, 1280), dev).find("split_k"), std::string::npos);
  // _occN is valid only where N blocks' shared memory fits one SM: four 53 KB blocks on an H200, not an A100
  const KernelConfig occ4 = KernelConfig::parse("sm80_n128_m8_k128_s2_w4x1_skauto_lutsmem_occ4");
  EXPECT_EQ(config_invalid_reason(occ4, problem(1, 8192, 8192), dev), "");
  EXPECT_EQ(resident_blocks_per_sm(occ4, problem(1, 8192, 8192), dev), 4);
  EXPECT_NE(config_invalid_reason(occ4, problem(1, 8192, 8192), described_a100()).find("_occ4 needs 4 blocks"), std::string::npos);
  // 256-byte pair-table rows need a byte-sized pair index: 4-bit codes only; the 64 KB table counts
  KernelConfig wide = KernelConfig::parse("sm80_n128_m8_k128_s4_w4x1_skauto_lutsmem256");
  EXPECT_EQ(config_invalid_reason(wide, problem(1, 8192, 8192), dev), "");
  EXPECT_EQ(resident_blocks_per_sm(wide, problem(1, 8192, 8192), dev), 2);
  EXPECT_NE(config_invalid_reason(wide, problem(1, 8192, 8192, 3), dev).find("4-bit"), std::string::npos);
  // x and the scales of all three 256-deep stages fit the table's free row halves: a stage is W alone
  // (16 KB), so two blocks of 64 + 48 KB share an H200 SM
  KernelConfig deep = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1_skauto_lutsmem256");
  EXPECT_TRUE(sm80_io_in_holes(4, 128, 128, 8, 256, 3, 256));
  EXPECT_EQ(sm80_shared_bytes(4, 128, 128, 8, 256, 3, 256), (64 + 48) * 1024);
  EXPECT_EQ(resident_blocks_per_sm(deep, problem(1, 8192, 8192), dev), 2);
  // 80-row x tiles of three 64-deep stages take 246 of the 256 holes; 128-row ones do not fit
  EXPECT_TRUE(sm80_io_in_holes(4, 128, 128, 80, 64, 3, 256));
  EXPECT_FALSE(sm80_io_in_holes(4, 128, 128, 128, 64, 3, 256));
  EXPECT_FALSE(sm80_io_in_holes(4, 128, 128, 8, 256, 3, 128));
  KernelConfig wide_occ4 = occ4;
  wide_occ4.lut = LutPlacement::shared_wide;
  EXPECT_NE(config_invalid_reason(wide_occ4, problem(1, 8192, 8192), dev).find("_occ4 needs 4 blocks"), std::string::npos);
  KernelConfig occ8 = occ4;
  occ8.min_blocks = 8;
  EXPECT_NE(config_invalid_reason(occ8, problem(1, 8192, 8192), dev).find("shared memory on one SM"), std::string::npos);
  // four strips x 64 columns a warp: 128 accumulators a thread, no room for the register table
  KernelConfig big_warp = KernelConfig::parse("sm80_n256_m64_k64_s3_w4x1_skauto_lutsmem");
  EXPECT_EQ(config_invalid_reason(big_warp, problem(1024, 8192, 8192), dev), "");
  big_warp.lut = LutPlacement::registers;
  EXPECT_NE(config_invalid_reason(big_warp, problem(1024, 8192, 8192), dev).find("registers"), std::string::npos);
}

// Split-K auto: 8- and 16-column tiles aim at one block per SM (two for weights of 16 MB or more), each
// split keeping two k tiles (the last one may keep one); wider tiles fill the resident slots, each split
// keeping eight k tiles.
TEST(SplitK, AutoFollowsTheMeasuredRules) {
  const DeviceInfo dev = described_h200();
  const KernelConfig narrow = KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_skauto_lutsmem");
  const KernelConfig decode = KernelConfig::parse("sm80_n128_m8_k128_s4_w4x1_skauto_lutsmem");
  const KernelConfig wide = KernelConfig::parse("sm80_n128_m32_k128_s4_w4x1_skauto_lutsmem");
  EXPECT_EQ(resolve_split_k(narrow, problem(4, 1152, 256), dev), 1);            // K = 256
  EXPECT_EQ(resolve_split_k(narrow, problem(4, 6912, 1152), dev), 1);           // 108 tiles: ~1 per SM
  EXPECT_EQ(resolve_split_k(narrow, problem(1, 1152, 1152), dev), 5);  // 18 tiles; 9 k tiles in runs of two
  EXPECT_EQ(resolve_split_k(decode, problem(1, 4096, 4096), dev), 4);           // 8 MB: 32 tiles x 4
  EXPECT_EQ(resolve_split_k(decode, problem(1, 4096, 14336), dev), 8);          // 29 MB: 32 tiles x 8
  EXPECT_EQ(resolve_split_k(decode, problem(1, 28672, 8192), dev), 1);          // 224 tiles
  // short K: rounded down where the rounded-up count would leave a split under four k tiles
  const KernelConfig deep = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1x2_skauto_lutsmem256");
  const KernelConfig deep64 = KernelConfig::parse("sm80_n64_m8_k256_s3_w4x1_skauto_lutreg");
  EXPECT_EQ(resolve_split_k(deep, problem(2, 9216, 1536), dev), 1);    // 72 tiles, 6 k tiles: not 2
  EXPECT_EQ(resolve_split_k(deep64, problem(2, 3072, 1536), dev), 2);  // 48 tiles: not 3
  EXPECT_EQ(resolve_split_k(deep, problem(1, 9216, 2048), dev), 2);    // 9 MB, 132 / 72 = 1.8; 8 k tiles: up
  // ... and down where up would pass the resident slots (19 MB, 264 / 72 = 3.7: 288 blocks would be two waves;
  // session 17), unless down leaves 40% of them idle
  EXPECT_EQ(resolve_split_k(deep, problem(1, 9216, 4096), dev), 3);
  EXPECT_EQ(resolve_split_k(KernelConfig::parse("sm80_n256_m16_k128_s3_w4x1_skauto_lutsmem256"), problem(16, 37888, 3584), dev), 2);
  EXPECT_EQ(resolve_split_k(wide, problem(300, 1152, 1152), dev), 1);           // 9 k tiles
  EXPECT_EQ(resolve_split_k(wide, problem(300, 1152, 1920), dev), 1);           // 15 k tiles
  const int long_k = resolve_split_k(wide, problem(300, 1152, 4096), dev);      // 32 k tiles
  EXPECT_GE(long_k, 2);
  EXPECT_LE(long_k, 4);
}

TEST(SplitK, AutoFillsTheGpuAndNeverLeavesAnEmptySplit) {
  const KernelConfig c = KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_skauto_lutsmem");
  for (const DeviceInfo& dev : {described_h200(), described_a100()}) {
    for (int64_t k : {128, 1152, 4096, 14336, 28672}) {
      for (int64_t n : {32, 1152, 4096, 28672}) {
        const Problem p = problem(1, n, k, 4, 128);
        const int s = resolve_split_k(c, p, dev);
        const int k_tiles = static_cast<int>((k + 127) / 128);
        const int per = (k_tiles + s - 1) / s;
        EXPECT_GE(s, 1);
        EXPECT_LE(s, k_tiles);
        EXPECT_GT(k_tiles - (s - 1) * per, 0) << "empty last split";
        const int64_t tiles = (n + 63) / 64;
        const int64_t resident = static_cast<int64_t>(resident_blocks_per_sm(c, p, dev)) * dev.sm_count;
        EXPECT_GE(resident_blocks_per_sm(c, p, dev), 1);
        if (tiles >= resident) {
          EXPECT_EQ(s, 1) << "n=" << n << " k=" << k;
        } else {
          EXPECT_LE(tiles * s, resident) << "a second wave for n=" << n << " k=" << k;
          if (tiles * 2 <= resident && k_tiles >= 4) EXPECT_GE(s, 2) << "an idle GPU for n=" << n << " k=" << k;
        }
      }
    }
  }
  // A forced split is kept when it fits, clamped to the k tiles otherwise.
  KernelConfig forced = c;
  forced.split_k = 3;
  EXPECT_EQ(resolve_split_k(forced, problem(1, 4096, 4096), described_h200()), 3);
}

// Split counts offered: {auto, 1, 2, 4, 8}, those past a tile's k tiles become one k tile a split, and no two
// offered configs of one tile and table resolve to the same count.
TEST(KernelConfig, ShortKOffersOneKTileASplitOnce) {
  const DeviceInfo dev = described_h200();
  const Problem p = problem(2, 320, 1280);  // 256-deep tiles: five k tiles
  std::set<std::string> names;
  std::map<std::string, std::set<int>> resolved;  // tile and table -> resolved counts of the fixed splits
  for (const KernelConfig& c : valid_configs(p, dev)) {
    names.insert(c.name());
    if (c.split_k <= 0) continue;  // (auto and Stream-K)
    KernelConfig shape = c;
    shape.split_k = 0;
    EXPECT_TRUE(resolved[shape.name()].insert(resolve_split_k(c, p, dev)).second) << c.name() << " repeats a count";
  }
  EXPECT_TRUE(names.count("sm80_n64_m8_k256_s3_w4x1x2_sk5_lutsmem")) << "one k tile a split";
  EXPECT_FALSE(names.count("sm80_n64_m8_k256_s3_w4x1x2_sk8_lutsmem")) << "more splits than k tiles";
  EXPECT_TRUE(names.count("sm80_n64_m8_k128_s4_w4x1_sk8_lutsmem")) << "ten 128-deep k tiles: eight splits stay";
}

// The split-K workspace: a float slot per tile and split, a counter per tile, and, where the runtime may sum small
// decode tiles from flagged slots (runtime/gemm.cpp: flagged_tile; epilogue/epilogue.cuh: finish_flagged), after the
// counters (rounded up to 16 bytes: the kernels move pairs of 64-bit words) kFlaggedMaxSplits - 1 slots of tile_m x
// tile_n words a tile, two counter words each; under Stream-K the same where the blocks sharing a tile are at most
// kFlaggedMaxSplits and the tile's values make at most a pair a thread.
TEST(SplitKWorkspace, FlaggedSlotsFollowTheCountersWhereSmallDecodeTilesMayUseThem) {
  const DeviceInfo dev = described_h200();
  const KernelConfig c = KernelConfig::parse("sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256");  // 256 threads
  const size_t flag_counters = size_t{kFlaggedMaxSplits - 1} * 8 * 64 * 2;  // a tile's flag words, in counters
  // 1 x 4096 x 4096: 64 tiles of four splits; one row of 64 values makes 32 pairs (<= a quarter of 256 threads)
  SplitKWorkspace w = split_k_workspace(c, problem(1, 4096, 4096), dev);
  EXPECT_EQ(w.float_bytes, size_t{64} * 4 * 8 * 64 * sizeof(float));
  EXPECT_EQ(w.counters, 64 + 64 * flag_counters);
  // 2 x 4104 x 4096: 65 tiles; the flag words start at counter 68 (16-byte aligned)
  w = split_k_workspace(c, problem(2, 4104, 4096), dev);
  EXPECT_EQ(w.counters, 68 + 65 * flag_counters);
  // 4 rows: 128 pairs, more than a quarter of the threads; eight splits, the sm90 family: no flag words
  EXPECT_EQ(split_k_workspace(c, problem(4, 4096, 4096), dev).counters, 64u);
  for (const char* name : {"sm80_n64_m8_k256_s3_w4x1x2_sk8_lutsmem256", "sm90_n128_m8_k128_s4_w8x1_sk4_lutsmem"}) {
    const KernelConfig other = KernelConfig::parse(name);
    const SplitKWorkspace o = split_k_workspace(other, problem(1, 4096, 4096), dev);
    const size_t tiles = static_cast<size_t>(4096 / other.tile_n);
    EXPECT_TRUE(o.counters <= tiles) << name << ": " << o.counters << " counters for " << tiles << " tiles";
  }
  // Stream-K: the blocks that share a tile (at most kFlaggedMaxSplits) may sum it from flagged slots too, where the
  // tile's values make at most a pair a thread: 1 x 28672 x 8192 on 128 x 8 tiles of 128 threads (224 tiles, each
  // shared by at most two or three of the 264 blocks: 27.2 of a tile's 32 k tiles a block)
  const KernelConfig stream = KernelConfig::parse("sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256");
  const Problem decode = problem(1, 28672, 8192);
  const StreamKShape sk = stream_k_shape(stream, decode, dev);
  ASSERT_EQ(sk.tiles, 224);
  ASSERT_GE(sk.max_sharing, 2);
  ASSERT_LE(sk.max_sharing, kFlaggedMaxSplits);
  w = split_k_workspace(stream, decode, dev);
  EXPECT_EQ(w.float_bytes, size_t{224} * sk.max_sharing * 8 * 128 * sizeof(float));
  EXPECT_EQ(w.counters, 224 + 224 * size_t{kFlaggedMaxSplits - 1} * 8 * 128 * 2);
  // two rows on 128 threads: 256 values, a pair each; four rows: none
  EXPECT_GT(split_k_workspace(stream, problem(2, 28672, 8192), dev).counters, 224u);
  EXPECT_EQ(split_k_workspace(stream, problem(4, 28672, 8192), dev).counters, 224u);
  // one split: no workspace at all
  EXPECT_EQ(split_k_workspace(KernelConfig::parse("sm80_n64_m8_k256_s3_w4x1x2_sk1_lutsmem256"), problem(1, 4096, 4096), dev)
                .counters,
            0u);
}

// The launch text of `lutmm bench`'s CSV and `lutmm verify`: the parts that are on, in a fixed order, '+' between.
TEST(LaunchChoices, TextNamesThePartsThatAreOnInOrder) {
  EXPECT_EQ(LaunchChoices{}.str(), "");
  EXPECT_EQ(LaunchChoices{.overlap_previous = true}.str(), "");  // (implied by sm_90+: not named)
  EXPECT_EQ((LaunchChoices{.dependents_early = true, .prewait = true}.str()), "early+prewait");
  EXPECT_EQ(LaunchChoices{.split_flagged = true}.str(), "flagged");
  EXPECT_EQ((LaunchChoices{true, true, true, true, true, true}.str()), "cluster+spread+flagged+early+prewait");
}

}  // namespace
}  // namespace lutmm
