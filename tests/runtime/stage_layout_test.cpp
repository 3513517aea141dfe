// The shared-memory layout of the pipeline stages (device/lutmm/pipeline/stage_layout.cuh), checked on the
// CPU for the kernels that keep x and the scales in the free halves ("holes") of the 256-byte pair-table
// rows and for ones that do not: every 16-byte chunk has a place of its own, holes stay inside holes (the
// table's first halves are never touched), the stage area does not overlap the table, the main loop's
// shortcut for ldmatrix addresses agrees with the general one, values are read where their chunk was
// copied, the eight rows one ldmatrix reads sit in eight different 16-byte bank groups, and the main loop's
// split addresses (a lane base plus immediates, for x and the scales) agree with the general ones, and the
// decode warps' transposed ldmatrix of the scales hands each lane its strips' rows g and g + 8.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/kernels/gemm_sm90_config.cuh"
#include "lutmm/pipeline/stage_layout.cuh"

namespace lutmm {
namespace {

template <class K>
void check_layout(const std::string& what) {
  using L = pipeline::StageLayout<K>;
  constexpr int kTableBytes = K::kDynamicLutBytes;  // the 256-byte-row table, or 0
  constexpr int kXChunksPerRow = K::kTileK / 8;
  constexpr int kScaleChunks = (K::kScaleRows * K::kTileN * 2 + 15) / 16;
  std::set<int> taken;
  // in_holes: where x and the scales go when the kernel keeps them in the holes; W never does
  auto place = [&](int offset, const char* kind, int s, int i, bool in_holes) {
    SCOPED_TRACE(what + " " + kind + " stage " + std::to_string(s) + " chunk " + std::to_string(i));
    EXPECT_EQ(offset % 16, 0);
    EXPECT_TRUE(taken.insert(offset).second) << "two chunks at byte " << offset;
    if (in_holes) {
      EXPECT_GE(offset % 256, 128) << "in the table's half of a row";
      EXPECT_LE(offset + 16, kTableBytes) << "past the table";
    } else {
      EXPECT_GE(offset, kTableBytes) << "inside the table";
      EXPECT_LE(offset + 16, kTableBytes + K::kStages * K::kStageBytes) << "past the stages";
    }
  };
  for (int s = 0; s < K::kStages; ++s) {
    EXPECT_GE(L::stage_offset(s), kTableBytes);
    for (int r = 0; r < K::kTileM; ++r)
      for (int c = 0; c < kXChunksPerRow; ++c) place(L::x_base(s) + L::x_offset(r, c), "x", s, r * kXChunksPerRow + c, K::kIoInHoles);
    for (int i = 0; i < kScaleChunks; ++i) place(L::scale_base(s) + L::scale_chunk(i), "scales", s, i, K::kIoInHoles);
    for (int e = 0; e < K::kScaleRows * K::kTileN; ++e)
      ASSERT_EQ(L::scale_value(e), L::scale_chunk(e / 8) + (e % 8) * 2) << what << " scale value " << e;
  }
  // W of every stage: the stage area, clear of the table and of x and the scales
  for (int s = 0; s < K::kStages; ++s)
    for (int b = 0; b < K::kWBytes; b += 16) place(L::stage_offset(s) + b, "W", s, b / 16, false);
  // ldmatrix: lanes 8j..8j+7 give the rows r0..r0+7 of matrix j, chunk even + (j & 1), stored at
  // (even + (j & 1)) ^ (row % 8) = even ^ key with key = (j & 1) ^ (row % 8)
  for (int r0 = 0; r0 < K::kTileM; r0 += 8) {
    for (int even = 0; even < kXChunksPerRow; even += 2) {
      for (int half = 0; half < 2; ++half) {
        std::set<int> bank_groups;
        for (int r = r0; r < r0 + 8; ++r) {
          const int key = half ^ (r & 7);
          const int at = L::x_even_chunk(r, even, key);
          ASSERT_EQ(at, L::x_offset(r, even + half)) << what << " row " << r << " chunk " << even + half;
          // the main loop's split: a lane base per (even / 2) % 4, the rest immediates; 8-row blocks further on
          const int t = even / 2, block = r / 8;
          ASSERT_EQ(L::x_slice_lane(r % 8, key, t % 4) + (t / 4) * L::kXQuadStep + block * L::kXBlockStep, at)
              << what << " row " << r << " slice " << t;
          bank_groups.insert(((L::x_base(0) + at) / 16) % 8);
        }
        EXPECT_EQ(bank_groups.size(), 8u) << what << " rows " << r0 << ".. chunk " << even + half;
      }
    }
  }
  // scales: where the kernel adds a lane's base and a compile-time offset, the sum is the value's place, for
  // every warp, lane row, group row and fragment row of the tile
  constexpr int kWarpRows = K::kTileN / K::kWarpsN;
  if constexpr (L::template kScaleValuesAdd<kWarpRows>) {
    for (int warp = 0; warp < K::kWarpsN; ++warp)
      for (int g = 0; g < 8; ++g)
        for (int grow = 0; grow < K::kScaleRows; ++grow)
          for (int f = 0; f < kWarpRows; f += 8)
            ASSERT_EQ(L::scale_value(warp * kWarpRows + g + grow * K::kTileN + f),
                      L::scale_value(warp * kWarpRows + g) + L::scale_value(grow * K::kTileN + f))
                << what << " warp " << warp << " lane row " << g << " group row " << grow << " row " << f;
    // the decode warps' transposed ldmatrix of a group row's scales (one, two or four strips a warp): lane
    // (g, t) receives element (row 2t, column g) and (row 2t + 1, column g) of matrix f, whose row r is
    // at the address lane 8f + r gives: rows 16 f + g and 16 f + g + 8 of the warp, for every t
    constexpr int kStrips = kWarpRows / 16;
    if constexpr (kStrips == 1 || kStrips == 2 || kStrips == 4) {
      for (int warp = 0; warp < K::kWarpsN; ++warp)
        for (int grow = 0; grow < K::kScaleRows; ++grow)
          for (int f = 0; f < kStrips; ++f)
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4, base = L::scale_value(grow * K::kTileN);
              const int lo = L::scale_run_lane(warp * kWarpRows, 8 * f + 2 * t) + base + 2 * g;
              const int hi = L::scale_run_lane(warp * kWarpRows, 8 * f + 2 * t + 1) + base + 2 * g;
              const int row = warp * kWarpRows + 16 * f + g + grow * K::kTileN;
              ASSERT_EQ(lo, L::scale_value(row)) << what << " warp " << warp << " strip " << f << " lane " << lane;
              ASSERT_EQ(hi, L::scale_value(row + 8)) << what << " warp " << warp << " strip " << f << " lane " << lane;
            }
    }
  }
}

// (bits, group, bf16, tile N, M, K, stages, warps N, M, table row bytes)
TEST(StageLayout, EveryChunkHasItsOwnPlaceAndLdmatrixRowsHitDistinctBanks) {
  // x and scales in the holes: the decode tiles with three and two 256-deep stages, the 80-column tiles
  check_layout<Sm80Kernel<4, 128, true, 128, 8, 256, 3, 4, 1, 256>>("n128_m8_k256_s3 lutsmem256");
  check_layout<Sm80Kernel<4, 128, true, 128, 8, 256, 2, 4, 1, 256>>("n128_m8_k256_s2 lutsmem256");
  check_layout<Sm80Kernel<4, 32, true, 256, 8, 128, 4, 8, 1, 256>>("n256_m8_k128_s4 g32 lutsmem256");
  check_layout<Sm80Kernel<4, 128, true, 128, 80, 64, 3, 4, 1, 256>>("n128_m80_k64_s3 lutsmem256");
  check_layout<Sm80Kernel<4, 0, true, 64, 80, 128, 3, 4, 1, 256>>("n64_m80_k128_s3 g=K lutsmem256");
  check_layout<Sm80Kernel<4, 128, true, 128, 16, 256, 3, 4, 1, 256>>("n128_m16_k256_s3 lutsmem256");
  check_layout<Sm80Kernel<4, 128, true, 256, 8, 128, 3, 4, 1, 256>>("n256_m8_k128_s3 lutsmem256");
  check_layout<Sm80Kernel<4, 128, true, 256, 16, 128, 3, 4, 1, 256, false, 1, true>>("n256_m16_k128_s3 Stream-K lutsmem256");
  check_layout<Sm80Kernel<4, 128, true, 64, 8, 256, 3, 4, 1, 256, false, 2>>("n64_m8_k256_s3_w4x1x2 lutsmem256");
  // seven-warp tiles: 224 rows, so the holes' 64-value scale runs do not start every group row (not additive)
  check_layout<Sm80Kernel<4, 128, true, 224, 8, 128, 4, 7, 1, 256>>("n224_m8_k128_s4 lutsmem256");
  static_assert(!pipeline::StageLayout<Sm80Kernel<4, 128, true, 224, 8, 128, 4, 7, 1, 256>>::kScaleValuesAdd<32>);
  static_assert(Sm80Kernel<4, 128, true, 128, 8, 256, 3, 4, 1, 256>::kIoInHoles);
  static_assert(Sm80Kernel<4, 128, true, 128, 16, 256, 3, 4, 1, 256>::kIoInHoles);
  static_assert(Sm80Kernel<4, 128, true, 128, 80, 64, 3, 4, 1, 256>::kIoInHoles);
  // too many holes needed: everything in the stages, after the 64 KB table
  static_assert(!Sm80Kernel<4, 128, true, 128, 128, 64, 4, 2, 4, 256>::kIoInHoles);
  check_layout<Sm80Kernel<4, 128, true, 128, 128, 64, 4, 2, 4, 256>>("n128_m128_k64_s4 lutsmem256");
  // the 128-byte-row table (static shared memory) and the register table: stages from byte 0
  check_layout<Sm80Kernel<4, 128, true, 128, 8, 256, 3, 4, 1, 128>>("n128_m8_k256_s3 lutsmem");
  check_layout<Sm80Kernel<3, 64, false, 64, 16, 64, 6, 4, 1, 0>>("n64_m16_k64_s6 b3 lutreg");
}

// The sm90 family: a stage is [x][W][scales], whole 1024-byte multiples. x is the wgmma B operand in the
// canonical 128-byte-swizzle layout: for x row r and 16-byte chunk c of k block b (64 k values), the byte
// the tensor cores read is the row's 128-byte line (b * tile_m + r) with the hardware swizzle applied to the
// address (bits 4..6 XOR bits 7..9), which needs every stage's x to start on a 1024-byte boundary.
template <class K>
void check_wgmma_layout(const std::string& what) {
  using L = pipeline::StageLayout<K>;
  constexpr int kXChunksPerRow = K::kTileK / 8;
  constexpr int kScaleChunks = (K::kScaleRows * K::kTileN * 2 + 15) / 16;
  static_assert(K::kWgmmaLayout && !K::kIoInHoles && K::kStageBytes % 1024 == 0);
  std::vector<uint8_t> smem(K::kDynamicSharedBytes);
  std::set<int> taken;
  auto place = [&](int offset, const char* kind, int s, int i) {
    SCOPED_TRACE(what + " " + kind + " stage " + std::to_string(s) + " chunk " + std::to_string(i));
    EXPECT_EQ(offset % 16, 0);
    EXPECT_TRUE(taken.insert(offset).second) << "two chunks at byte " << offset;
    EXPECT_GE(offset, L::stage_offset(s)) << "before its stage";
    EXPECT_LE(offset + 16, L::stage_offset(s) + K::kStageBytes) << "past its stage";
  };
  for (int s = 0; s < K::kStages; ++s) {
    EXPECT_EQ(L::x_base(s) % 1024, 0) << what << " stage " << s;
    EXPECT_GE(L::stage_offset(s), K::kDynamicLutBytes) << what << " stage " << s << " inside the table";
    for (int r = 0; r < K::kTileM; ++r)
      for (int c = 0; c < kXChunksPerRow; ++c) {
        const int line = L::x_base(s) + ((c / 8) * K::kTileM + r) * 128;  // unswizzled address of the row's 128 bytes
        const int logical = line + (c % 8) * 16;
        const int swizzled = logical ^ (((logical >> 7) & 7) << 4);
        ASSERT_EQ(L::x_base(s) + L::x_offset(r, c), swizzled) << what << " row " << r << " chunk " << c;
        place(swizzled, "x", s, r * kXChunksPerRow + c);
      }
    const int w_offset = static_cast<int>(L::w(smem.data(), s) - smem.data());
    for (int b = 0; b < K::kWBytes; b += 16) place(w_offset + b, "W", s, b / 16);
    for (int i = 0; i < kScaleChunks; ++i) place(L::scale_base(s) + L::scale_chunk(i), "scales", s, i);
  }
  EXPECT_LE(K::kDynamicLutBytes + K::kStages * K::kStageBytes + 1024, K::kDynamicSharedBytes) << what;
}

// (bits, group, bf16, tile N, M, K, stages, warps N, table row bytes)
TEST(StageLayout, Sm90StagesHoldXInTheWgmmaSwizzleOnAlignedAtoms) {
  check_wgmma_layout<Sm90Kernel<4, 128, true, 128, 64, 64, 6, 8, 128>>("sm90 n128_m64_k64_s6 lutsmem");
  check_wgmma_layout<Sm90Kernel<4, 128, true, 256, 64, 64, 4, 16, 256>>("sm90 n256_m64_k64_s4 lutsmem256");
  check_wgmma_layout<Sm90Kernel<3, 32, false, 128, 8, 128, 4, 8, 0>>("sm90 n128_m8_k128_s4 b3 g32 lutreg");
  check_wgmma_layout<Sm90Kernel<2, 0, true, 128, 256, 64, 4, 8, 128>>("sm90 n128_m256_k64_s4 b2 g=K");
  check_wgmma_layout<Sm90Kernel<4, 64, true, 64, 80, 128, 4, 4, 256>>("sm90 n64_m80_k128_s4 g64 lutsmem256");
  // the 128-deep tiles at M = 64 (session 6): two swizzle blocks of x per stage, 1024-byte aligned
  check_wgmma_layout<Sm90Kernel<4, 128, true, 256, 64, 128, 3, 16, 256>>("sm90 n256_m64_k128_s3 lutsmem256");
  check_wgmma_layout<Sm90Kernel<3, 64, false, 128, 64, 128, 4, 8, 128>>("sm90 n128_m64_k128_s4 b3 g64 fp16");
}

}  // namespace
}  // namespace lutmm
