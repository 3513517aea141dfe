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
              ASSERT_TRUE(h.split_k >= 1 || h.split_k == kStreamK) << p.str();
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

// Choices the H200 measurements of session 3 settled (docs/TUNING.md, docs/NOTES.md v1.7): each was the
// tuned best, or the heuristic's pick there was measured well behind it.
TEST(Heuristic, FollowsTheMeasuredChoicesOnTheH200) {
  // the sm80 family's rules, measured on the H200 before the sm90 family existed: the same GPU with the
  // warpgroup MMA out of reach (a what-if sm_89 with the H200's SMs and memory)
  DeviceInfo h200_sm80_only = described_h200();
  h200_sm80_only.cc_major = 8;
  h200_sm80_only.cc_minor = 9;
  auto pick = [&](int64_t m, int64_t n, int64_t k, int bits = 4, int group = 128, const DeviceInfo& gpu = described_h200()) {
    return heuristic_config(make_problem(m, n, k, bits, group, DType::bf16), gpu);
  };
  // 4-bit decode on large weights: three 256-deep stages (two of them copied before the dependency wait)
  // and the 256-byte-row table (1.3-1.4x over k128)
  for (const int64_t m : {1, 2, 4, 8}) {
    const KernelConfig c = pick(m, 8192, 28672);
    EXPECT_EQ(c.name(), "sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256") << m;
  }
  // ... but not for 3-bit codes, whose pair index is not a byte
  EXPECT_NE(pick(1, 8192, 28672, 3).lut, LutPlacement::shared_wide);
  // M = 33..64 on larger weights: one warp row over 64 columns, the 256-byte-row table (1.04-1.06x) ...
  EXPECT_EQ(pick(64, 28672, 8192, 4, 128, h200_sm80_only).name(), "sm80_n128_m64_k64_s4_w4x1_sk1_lutsmem256");
  // ... where the H200 has no warpgroup MMA; it has, and from M = 49 on weights of 32M values or more its
  // kernel wins (session 5: 64 x 28672 x 8192 88 vs 110 us, 1024 x 8192 x 8192 228 vs 382, 4096 x 8192 x 8192
  // 898 vs 1534), but not on the smallest layers (session 5: 64 x 1280 x 5120 15 vs 11 us) or at M <= 16
  // (session 7: 128-deep k tiles, four stages: 72.5 us; two warpgroups below 64M weights, 1.03-1.17x)
  EXPECT_EQ(pick(64, 28672, 8192).name(), "sm90_n256_m64_k128_s4_w16x1_sk1_lutsmem256");
  EXPECT_EQ(pick(64, 14336, 4096).name(), "sm90_n128_m64_k128_s4_w8x1_sk1_lutsmem256");
  EXPECT_EQ(pick(64, 4096, 4096).name(), "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256");
  EXPECT_EQ(pick(256, 4096, 4096).name(), "sm90_n128_m64_k128_s4_w8x1_sk1_lutsmem256");
  EXPECT_EQ(pick(256, 1280, 1280).name(), "sm90_n128_m64_k128_s4_w8x1_sk2_lutsmem256");  // (1.27x over one split)
  EXPECT_EQ(pick(128, 14336, 4096).name(), "sm90_n256_m64_k128_s4_w16x1_sk1_lutsmem256");
  EXPECT_EQ(pick(4096, 8192, 8192).name(), "sm90_n256_m128_k64_s4_w16x1_sk1_lutsmem256");  // (session 6: 910 vs 945 us on 128 x 256)
  EXPECT_EQ(pick(128, 8192, 8192).family, 90);
  EXPECT_EQ(pick(64, 8192, 8192, 3).lut, LutPlacement::shared);  // 3-bit: no 256-byte rows
  EXPECT_EQ(pick(16, 28672, 8192).family, 80);
  // session 6, after the cheaper split-K epilogue: M = 33..80 on 2-8M weights (64 x 1280 x 5120: 9.8 vs 10.8
  // us), 256-row tiles of N = 80 where their waves fit the SMs better, N < 1024 at large M, N = 32 where it
  // gives a tile per SM (333 x 1536 x 1536: 1.59x), K split into runs of two k tiles for decode tiles
  EXPECT_EQ(pick(64, 1280, 5120).name(), "sm90_n128_m32_k128_s4_w8x1_sk5_lutsmem256");
  EXPECT_EQ(pick(1024, 4608, 1152).name(), "sm90_n256_m80_k64_s4_w16x1_sk1_lutsmem256");
  EXPECT_EQ(pick(1024, 10240, 1280).tile_m, 128);  // (estimated 0.83 of the taller tile's waves: not enough)
  // (the 128-byte pair table from session 16 where K <= 320: 0.93-0.99x of the register table on six M = 2048 ..
  // 8192 layers; the register table stays at K = 321 .. 640: 4096 x 640 x 640 1.07x slower with the pair table)
  // (session 20: in 96-row tiles where those run the grid in one wave, 129 tiles against 96 of 128 rows: 0.90x, and
  // 4096 x 640 x 2560 in 160-row ones, 130 tiles against 96 of 256 x 128: 0.76x)
  EXPECT_EQ(pick(4096, 320, 320, 4, 64).name(), "sm90_n128_m96_k64_s6_w8x1_sk1_lutsmem");
  EXPECT_EQ(pick(4096, 640, 2560).name(), "sm90_n128_m160_k64_s5_w8x1_sk1_lutsmem256");
  EXPECT_EQ(pick(4608, 640, 2560).name(), "sm90_n128_m192_k64_s4_w8x1_sk1_lutsmem256");  // (0.83x; m160: two waves)
  EXPECT_EQ(pick(8192, 320, 1280).tile_m, 192);  // (0.81x of 256 x 128)
  EXPECT_EQ(pick(4096, 640, 640).lut, LutPlacement::registers);
  EXPECT_EQ(pick(1024, 640, 2560).name(), "sm90_n128_m80_k64_s6_w8x1_sk2_lutsmem256");
  EXPECT_EQ(pick(333, 1536, 1536).name(), "sm90_n128_m32_k128_s4_w8x1_sk1_lutsmem256");
  EXPECT_EQ(pick(2, 1280, 320, 4, 64).name(), "sm80_n64_m8_k64_s6_w4x1_sk3_lutreg");
  EXPECT_EQ(pick(77, 320, 768).name(), "sm80_n64_m16_k128_s4_w4x1_sk3_lutreg");
  // sessions 14-15 (docs/NOTES.md v1.19): small-weight decode from 2M weights with K > 1024 on eight one-strip
  // warps with the pair table (the tuned best on 4 x 2304 x 1152 and 2 x 3072 x 1536; 36 shapes 0.89x of the
  // register table's 64-row tiles), not on K = 1024 (1.02-1.05x slower there) ...
  EXPECT_EQ(pick(2, 1536, 2048).name(), "sm80_n128_m8_k128_s4_w8x1_sk8_lutsmem");
  EXPECT_EQ(pick(4, 2304, 1152).name(), "sm80_n128_m8_k128_s4_w8x1_sk5_lutsmem");
  EXPECT_EQ(pick(2, 3072, 1536).name(), "sm80_n128_m8_k128_s4_w8x1_sk4_lutsmem");
  // (at most eight splits, a cluster's worth, where K <= 5120: session 16, 0.95x over 108 shapes; the tuned pick on
  // 2 x 1280 x 2816 has eight, the one-wave rule alone gave eleven)
  EXPECT_EQ(pick(2, 1280, 2816).split_k, 8);
  EXPECT_EQ(pick(1, 512, 8192).split_k, 16);
  EXPECT_EQ(pick(1, 4096, 1024).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk2_lutsmem256");  // (session 19: 0.98x, below)
  // ... below 2M weights (or K = 1024) with K a multiple of 256: 64-row tiles with two warp groups, one 256-deep k
  // tile a split (the tuned best on 2 x 1280 x 1280; session 16: 0.75-1.02x on 140 shapes), where that makes at
  // most 1.5 blocks an SM (K = 1024 from N = 4096: 1.23-1.57x slower, left on the register table as above)
  EXPECT_EQ(pick(2, 1280, 1280).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk5_lutsmem");
  EXPECT_EQ(pick(8, 512, 2048).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk8_lutsmem");
  EXPECT_EQ(pick(1, 2048, 1024).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem");
  // ... and M = 33..80 with K of 768..2048 on 128 x 16 tiles with the 256-byte-row table, about 0.6 blocks an SM
  // (the tuned best on 64 x 1280 x 1280 and 77 x 1280 x 768; 14 shapes 0.72-0.99x), not where K is shorter
  EXPECT_EQ(pick(64, 1280, 1280).name(), "sm80_n128_m16_k128_s4_w4x1_sk2_lutsmem256");
  EXPECT_EQ(pick(77, 1280, 768).name(), "sm80_n128_m16_k128_s4_w4x1_sk2_lutsmem256");
  EXPECT_EQ(pick(77, 640, 768).name(), "sm80_n128_m16_k128_s4_w4x1_sk3_lutsmem256");
  EXPECT_EQ(pick(64, 640, 640).lut, LutPlacement::registers);
  // ... and at M = 9..32 where the decode rule holds (2M weights, K > 1024: 6 shapes 0.53-0.86x), not on K = 1024
  EXPECT_EQ(pick(32, 1280, 2048).name(), "sm80_n128_m16_k128_s4_w4x1_sk4_lutsmem256");
  EXPECT_EQ(pick(16, 4096, 1024).lut, LutPlacement::registers);
  // ... and the tuned best of the session-5 H200 database on a few more shapes (the sm80 expectations below
  // are the sm80 family's own rules, checked where they are the only ones)
  EXPECT_EQ(pick(32, 8192, 28672).name(), "sm90_n128_m32_k128_s4_w8x1_sk4_lutsmem");
  EXPECT_EQ(pick(4096, 1536, 1536).name(), "sm90_n256_m128_k64_s4_w16x1_sk1_lutsmem256");
  // session 15: the pair table where the register table had won (0.73-0.87x on six M = 300..512 layers, 0.82-0.86x
  // on six M = 33..80 layers of 2-8M weights)
  // (in two splits since session 16: 512 of K a split up to M = 512 where K <= 2048, 0.72-0.82x on four layers)
  EXPECT_EQ(pick(300, 1152, 1152).name(), "sm90_n128_m64_k128_s4_w8x1_sk2_lutsmem256");
  EXPECT_EQ(pick(77, 1280, 2048).name(), "sm90_n128_m32_k128_s4_w8x1_sk4_lutsmem");
  EXPECT_EQ(pick(1024, 1152, 1152).name(), "sm90_n128_m80_k64_s6_w8x1_sk1_lutsmem");
  EXPECT_EQ(pick(32, 28672, 8192).family, 80);
  EXPECT_EQ(pick(4096, 320, 1280).family, 90);
  // M = 16 and 32 on the largest weights: four strips per warp (1.03-1.07x, session 4)
  EXPECT_EQ(pick(16, 28672, 8192).name(), "sm80_n256_m16_k128_s3_w4x1_sk2_lutsmem256");
  EXPECT_EQ(pick(32, 8192, 28672, 4, 128, h200_sm80_only).name(), "sm80_n256_m32_k128_s3_w4x1_sk8_lutsmem");
  EXPECT_EQ(pick(16, 8192, 8192).tile_n, 128);
  // large M: one warp row; 80 columns on small weights (no padding either way at 1024) ...
  EXPECT_EQ(pick(1024, 1152, 1152).tile_m, 80);
  EXPECT_EQ(pick(1024, 5120, 640, 4, 128, h200_sm80_only).tile_m, 80);
  // ... four strips of 64 columns a warp with the 128-byte-row table where there are 1.5 such tiles per SM
  // (3 on small weights): 1.04-1.18x over 128 x 64 tiles with the 256-byte-row table
  EXPECT_EQ(pick(1024, 4096, 14336, 4, 128, h200_sm80_only).name(), "sm80_n256_m64_k64_s3_w4x1_sk1_lutsmem");
  EXPECT_EQ(pick(4096, 1536, 1536, 4, 128, h200_sm80_only).name(), "sm80_n256_m64_k64_s3_w4x1_sk1_lutsmem");
  EXPECT_EQ(pick(256, 8192, 8192).name(), "sm90_n256_m128_k64_s4_w16x1_sk2_lutsmem256");
  // N that 128 does not divide: 64-row tiles (4096 x 320 x 1280: 1.65x)
  EXPECT_EQ(pick(4096, 320, 1280, 4, 128, h200_sm80_only).tile_n, 64);
  // ... and where their 128-deep k tiles do not fit K (K = 320), the wide tiles, never a decode tile
  // (the first fix of this rule fell through to an 8-column tile: 3.07x slower)
  const KernelConfig k320 = pick(4096, 320, 320, 4, 64, h200_sm80_only);
  EXPECT_GE(k320.tile_m, 64) << k320.name();
  // M = 333 that 64- and 80-column tiles pad by over 10%, on few tiles: 32 columns and the 256-byte table
  // (the register table ran 1.56x slower there)
  EXPECT_EQ(pick(333, 1536, 1536, 4, 128, h200_sm80_only).name(), "sm80_n128_m32_k128_s4_w4x1_sk1_lutsmem256");
  // ... and on four strips a warp where there is a 256 x 32 tile per SM (333 x 6144 x 1536: 1.69x)
  EXPECT_EQ(pick(333, 6144, 1536, 4, 128, h200_sm80_only).name(), "sm80_n256_m32_k128_s3_w4x1_sk1_lutsmem");
  // M <= 80 on wide tiles splits K down to 512 (64 x 1280 x 1280: two splits 1.24x faster than one)
  EXPECT_EQ(pick(64, 1280, 1280).split_k, 2);
  // ... where K <= 2048 (32 x 4096 x 4096: eight splits 1.26x slower than four)
  EXPECT_EQ(pick(32, 4096, 4096).split_k, 4);
  // two warp groups splitting each k tile on small grids: 4-bit decode of 8-16M weights (4096 x 4096:
  // 1.12x; 64-row tiles since session 16, 0.95-0.97x), small weights at M = 33..80 with K > 2048 (64 x 1280 x
  // 5120: 1.35x) ...
  EXPECT_EQ(pick(4, 4096, 4096).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256");
  // ... and since session 19 on 4-8M weights too, where K >= 2048 or N >= 4096 (0.93x over 30 layers: 8 x 2048 x
  // 2048 4.92 -> 3.84 us, 8 x 5632 x 1024 5.04 -> 4.01), not below 4M (2-4M: 1.07x slower over 5)
  EXPECT_EQ(pick(8, 2048, 2048).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256");
  EXPECT_EQ(pick(1, 5120, 1024).name(), "sm80_n64_m8_k256_s3_w4x1x2_sk2_lutsmem256");
  EXPECT_NE(pick(2, 1536, 1536).warps_k, 2);
  // ... and Stream-K on four blocks an SM where the 64-row tiles alone exceed the SMs (the tuned best on
  // 2 x 9216 x 1536, 0.77x; 0.77-0.95x on N = 10240 .. 14336 with K = 1024 .. 1536)
  EXPECT_EQ(pick(2, 9216, 1536).name(), "sm80_n128_m8_k128_s2_w4x1_skstream_lutsmem_occ4");
  // more than a wave of sm90 tiles: two splits where they fill the last wave much better and keep 2048 of K
  // (4096 x 1536 x 6144: 0.89x), not below (4096 x 640 x 2560 1.28x slower in two)
  EXPECT_EQ(pick(4096, 1536, 6144).name(), "sm90_n256_m128_k64_s4_w16x1_sk2_lutsmem256");
  EXPECT_EQ(pick(4096, 640, 2560).split_k, 1);
  EXPECT_EQ(pick(64, 1280, 5120, 4, 128, h200_sm80_only).warps_k, 2);
  EXPECT_EQ(pick(1, 8192, 8192).warps_k, 1);
  // N <= 64 at large M: the widest tile along M with about half a block per SM, two splits
  EXPECT_EQ(pick(4096, 64, 1536).name(), "sm80_n64_m64_k128_s3_w4x1_sk2_lutreg");
  EXPECT_EQ(pick(1024, 32, 1152).name(), "sm80_n64_m16_k128_s4_w4x1_sk2_lutreg");
  // wide tiles keep 1024 of K per split (1024 x 640 x 2560: two splits 1.45x faster than four)
  EXPECT_EQ(pick(1024, 640, 2560, 4, 128, h200_sm80_only).split_k, 2);
  // session 17, from the tuning of 200 held-out model layers (docs/NOTES.md v1.21; A/B'd on the H200 against the
  // rules before, 0.84x over the 64 keys whose pick changed): 4-bit decode on 16-100M weights on whichever of three
  // tiles fills its resident slots best, ties to the first: 128 x 8 x 256 in two stages with the 256-byte-row table,
  // two blocks an SM (8192 x 8192, 8192 x 3584: 9.4 -> 7.0 us) ...
  EXPECT_EQ(pick(1, 8192, 8192).name(), "sm80_n128_m8_k256_s2_w4x1_sk4_lutsmem256");
  EXPECT_EQ(pick(1, 8192, 3584).name(), "sm80_n128_m8_k256_s2_w4x1_sk4_lutsmem256");
  // ... with the 128-byte-row table, three an SM (1 x 7168 x 5120: 12.9 -> 8.1 us) ...
  EXPECT_EQ(pick(1, 7168, 5120).name(), "sm80_n128_m8_k256_s2_w4x1_sk7_lutsmem");
  EXPECT_EQ(pick(2, 12288, 3072).name(), "sm80_n128_m8_k256_s2_w4x1_sk4_lutsmem");
  // ... 64-row tiles, three an SM, where the 128-row ones would need more than eight splits (1 x 3072 x 8192: 10.3
  // -> 7.5 us) ...
  EXPECT_EQ(pick(1, 3072, 8192).name(), "sm80_n64_m8_k256_s3_w4x1_sk8_lutsmem");
  EXPECT_EQ(pick(8, 6144, 5120).name(), "sm80_n64_m8_k256_s3_w4x1_sk4_lutsmem");
  // ... and for K that 256 does not divide, 64-deep k tiles of 256 rows and eight warps (2 x 18176 x 4544: 47.8 ->
  // 18.2 us), 64 rows where those fill under half the slots (2 x 2048 x 10944: 14.5 -> 9.4)
  EXPECT_EQ(pick(2, 18176, 4544, 4, 64).name(), "sm80_n256_m8_k64_s6_w8x1_sk3_lutsmem256");
  EXPECT_EQ(pick(2, 2048, 10944, 4, 64).name(), "sm80_n64_m8_k64_s6_w4x1_sk8_lutsmem256");
  // ... and at M = 9..16 where the rule for those fills under 3/4 of its slots: 64 x 16 x 128 tiles, three an SM
  // (16 x 6144 x 3072: 9.1 -> 7.3 us), or k64 ones (9 x 2048 x 10944: 14.1 -> 12.4); not where it fills them (16 x
  // 3584 x 14336: 64-row tiles 1.04x slower) nor where the 64-row tiles are too few (16 x 1536 x 8960: 1.40x slower)
  EXPECT_EQ(pick(16, 6144, 4096).name(), "sm80_n64_m16_k128_s4_w4x1_sk4_lutsmem");
  EXPECT_EQ(pick(9, 2048, 10944, 4, 64).name(), "sm80_n64_m16_k64_s6_w4x1_sk8_lutsmem");
  EXPECT_EQ(pick(16, 3584, 14336).name(), "sm80_n128_m16_k256_s3_w4x1_sk8_lutsmem256");
  EXPECT_EQ(pick(16, 1536, 8960).name(), "sm80_n128_m16_k128_s4_w4x1_sk10_lutsmem");
  // the one-wave rule's rounding up stays within the resident slots unless rounding down leaves 40% idle (1 x 5120 x
  // 13824 in the rule above; 9 x 9216 x 7168: 72 tiles in three splits, 20.2 -> 15.7 us; 16 x 37888 x 3584 keeps two)
  EXPECT_EQ(pick(9, 9216, 7168).split_k, 3);
  EXPECT_EQ(pick(16, 37888, 3584).split_k, 2);
  // Stream-K from 15 k tiles a block (8 x 37888 x 3584, 15.7: 28.1 -> 22.8 us), not below (1 x 28672 x 4096, 13.6)
  EXPECT_EQ(pick(8, 37888, 3584).split_k, kStreamK);
  EXPECT_NE(pick(1, 28672, 4096).split_k, kStreamK);
  EXPECT_EQ(pick(1, 28672, 8192).split_k, kStreamK);
  // layers of 512..1535 channels at M >= 4096, 768..1535 from M = 2048: four warpgroups (4096 x 1152 x 1152: 42.1 ->
  // 31.5 us, 4096 x 1024 x 4096 123.9 -> 59.9, 2048 x 1024 x 4096 62.7 -> 35.7), not at M = 1024 (level) nor where K <= 640 (the register
  // table's rule above)
  EXPECT_EQ(pick(4096, 1152, 1152).name(), "sm90_n256_m80_k64_s4_w16x1_sk1_lutsmem256");
  // (4608 x 640 x 2560: 128 x 192 tiles since session 20, one wave of 120 tiles, 0.83x of 256 x 128: the "one wave"
  // pin further up)
  EXPECT_EQ(pick(2048, 1280, 768).name(), "sm90_n256_m80_k64_s4_w16x1_sk1_lutsmem256");
  EXPECT_EQ(pick(1024, 1152, 1152).tile_n, 128);
  EXPECT_EQ(pick(2048, 640, 2560).tile_n, 128);  // (640 rows pad 256-row tiles by a sixth: 1.15x slower at M = 2048)
  // M = 65..128 on wide layers with few 128 x 128 tiles and short K: 128 x 16 tiles, not the narrow-layer rule's
  // 64 x 32 ones (77 x 6144 x 1536: 17.9 -> 9.9 us)
  EXPECT_EQ(pick(77, 6144, 1536).name(), "sm80_n128_m16_k256_s3_w4x1_sk1_lutsmem256");
  // K that 128 does not divide keeps the sm90 family on its 64-deep tiles (32 x 18176 x 4544: the sm80 fallback
  // ran 1.9x behind the tuned pick)
  EXPECT_EQ(pick(32, 18176, 4544, 4, 64).name(), "sm90_n128_m64_k64_s6_w8x1_sk1_lutsmem");
  // session 18 (docs/NOTES.md v1.22; A/B'd on the H200 against session 17's rules, 0.74x over 18 layers, none
  // slower): N that 128 does not divide below M = 1024 on the sm90 tiles (96 x 4672 x 4544: 45.5 -> 23.0 us) ...
  EXPECT_EQ(pick(96, 4672, 4544, 4, 64).name(), "sm90_n256_m64_k64_s4_w16x1_sk3_lutsmem256");
  EXPECT_EQ(pick(48, 1088, 4096).family, 90);
  // ... M = 65..80 on 8-32M weights with K > 1536 on two warpgroups of N = 80 (72 x 5120 x 5120: 30.4 -> 18.7 us,
  // 65 x 1920 x 7680: 24.6 -> 15.9), not with shorter K (the 128 x 16 rule above) ...
  EXPECT_EQ(pick(72, 5120, 5120).name(), "sm90_n128_m80_k64_s6_w8x1_sk3_lutsmem");
  EXPECT_EQ(pick(65, 1920, 7680).name(), "sm90_n128_m80_k64_s6_w8x1_sk7_lutsmem");
  // ... and at M = 1024..2047 on 768..1535 channels with K >= 4096: four warpgroups in two splits, N = 64 or 80
  // whichever fills the SMs better (1024 x 1024 x 4096: 31.0 -> 22.1 us; 1024 x 1280 x 5120: 38.3 -> 33.7)
  EXPECT_EQ(pick(1024, 1024, 4096).name(), "sm90_n256_m64_k128_s4_w16x1_sk2_lutsmem256");
  EXPECT_EQ(pick(1024, 1280, 5120).name(), "sm90_n256_m80_k64_s4_w16x1_sk2_lutsmem256");
  // ... 128 rows there where they fill the SMs as well (1500 x 1280 x 5120: 55.9 -> 42.0 us tuned, held-out set C),
  // and N = 1024..3071 otherwise on four warpgroups of N = 64 where their waves take less work (1500 x 1280 x 1280:
  // 190 two-warpgroup tiles in two waves, 22.8 -> 13.7 us), not where the two-warpgroup tiles make one wave
  // (1024 x 1280 x 1280, the tuned pick)
  EXPECT_EQ(pick(1500, 1280, 5120).name(), "sm90_n256_m128_k64_s4_w16x1_sk2_lutsmem256");
  EXPECT_EQ(pick(1500, 1280, 1280).name(), "sm90_n256_m64_k128_s4_w16x1_sk1_lutsmem256");
  EXPECT_EQ(pick(1024, 1280, 1280).name(), "sm90_n128_m80_k64_s6_w8x1_sk1_lutsmem");
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
          EXPECT_TRUE(c.split_k >= 1 || c.split_k == kStreamK) << "split-K is resolved: " << c.name();
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
  // ... and on an H200 the warpgroup-MMA family there (1.6-1.7x faster than the best sm80 tile, measured):
  // its MMA at the dense rate and x read once per warpgroup. Before the model knew the family, the tuned
  // best of the H200 database sat at rank 79 of the candidates on average, now at 23.
  EXPECT_EQ(large.family, 90) << large.name();
  const KernelConfig sm80_best = KernelConfig::parse("sm80_n256_m64_k64_s3_w4x1_sk1_lutsmem");
  EXPECT_LT(estimate_config_us(KernelConfig::parse("sm90_n128_m256_k64_s4_w8x1_sk1_lutsmem"), big, dev),
            estimate_config_us(sm80_best, big, dev));
}

}  // namespace
}  // namespace lutmm
