// The packed layout on the CPU: round trips, the fragment mapping, the index helpers the GPU
// dequantizers use, scale packing and argument errors.
#include <gtest/gtest.h>

#include <random>

#include "lutmm/error.hpp"
#include "lutmm/layout/packed_layout.cuh"
#include "lutmm/lut/code_index.cuh"
#include "lutmm/pack.hpp"

namespace lutmm {
namespace {

std::vector<uint8_t> random_codes(int64_t n, int64_t k, int bits, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> c(static_cast<size_t>(n * k));
  for (auto& v : c) v = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
  return c;
}

struct Dims {
  int64_t n, k;
};

class PackRoundTrip : public ::testing::TestWithParam<std::tuple<int, Dims>> {};

TEST_P(PackRoundTrip, UnpackGivesBackEveryCode) {
  const auto [bits, d] = GetParam();
  const auto codes = random_codes(d.n, d.k, bits, static_cast<uint32_t>(bits * 1000 + d.n + d.k));
  const auto packed = pack_codes(codes.data(), d.n, d.k, bits);
  const PackedShape s = packed_shape(d.n, d.k, bits, static_cast<int>(d.k));
  ASSERT_EQ(static_cast<int64_t>(packed.size()), s.words());
  EXPECT_EQ(s.n_padded % 16, 0);
  EXPECT_EQ(s.k_padded % 64, 0);
  EXPECT_EQ(unpack_codes(packed.data(), d.n, d.k, bits), codes);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PackRoundTrip,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(Dims{8, 16}, Dims{16, 64}, Dims{24, 48}, Dims{32, 320},
                                                              Dims{40, 1152}, Dims{128, 256}, Dims{8, 80})));

// Element (row, col) of the atom must land in the lane and register the mma.m16n8k16 A-fragment puts it.
TEST(PackLayout, CodesSitWhereTheFragmentExpectsThem) {
  for (int bits : {2, 3, 4}) {
    const int64_t n = 16, k = 64;
    const auto codes = random_codes(n, k, bits, 7u + bits);
    const auto packed = pack_codes(codes.data(), n, k, bits);
    for (int lane = 0; lane < 32; ++lane) {
      const uint32_t* w = packed.data() + lane * bits;
      const int g = lane / 4, t4 = lane % 4;
      for (int s = 0; s < 4; ++s) {
        // a0,a1: (g, 2t4..+1)  a2,a3: (g+8, 2t4..)  a4,a5: (g, 2t4+8..)  a6,a7: (g+8, 2t4+8..)
        const int rows[4] = {g, g + 8, g, g + 8};
        const int cols[4] = {2 * t4, 2 * t4, 2 * t4 + 8, 2 * t4 + 8};
        for (int p = 0; p < 4; ++p)
          for (int e = 0; e < 2; ++e)
            ASSERT_EQ(layout::unpack_code(bits, w, s, p, e), codes[rows[p] * k + 16 * s + cols[p] + e])
                << "bits " << bits << " lane " << lane << " slice " << s << " pair " << p;
      }
    }
  }
}

template <int kBits>
void check_index_helpers() {
  const auto codes = random_codes(16, 64, kBits, 99u + kBits);
  const auto packed = pack_codes(codes.data(), 16, 64, kBits);
  for (int lane = 0; lane < 32; ++lane) {
    const uint32_t* w = packed.data() + lane * kBits;
    for (int s = 0; s < 4; ++s) {
      const uint32_t nib = lut::slice_nibbles<kBits>(w, s);
      for (int p = 0; p < 4; ++p) {
        // The table offset decodes (through the table's own index -> codes map) to the pair's two codes,
        // and lands in this lane's copy.
        const uint32_t lane4 = static_cast<uint32_t>(lane) * 4;
        const uint32_t offset = lut::pair_offset<kBits>(w, s, p, lane4);
        EXPECT_EQ(offset % 128, lane4);
        EXPECT_LT(offset / 128, 1u << (2 * kBits));
        uint32_t c0, c1;
        layout::pair_codes(kBits, offset / 128, c0, c1);
        EXPECT_EQ(c0, layout::unpack_code(kBits, w, s, p, 0));
        EXPECT_EQ(c1, layout::unpack_code(kBits, w, s, p, 1));
        EXPECT_EQ((nib >> (8 * p)) & 15u, layout::unpack_code(kBits, w, s, p, 0));
        EXPECT_EQ((nib >> (8 * p + 4)) & 15u, layout::unpack_code(kBits, w, s, p, 1));
      }
    }
  }
}

TEST(PackLayout, PairOffsetsAndNibblesDecodeToTheCodes) {
  check_index_helpers<2>();
  check_index_helpers<3>();
  check_index_helpers<4>();
}

// The 3-bit bits as docs/FORMAT.md draws them (version 2): pair f = 4 s + p is the six bits from bit 6 f of the
// lane's 96, first | second << 3; pair 5 straddles w[0] and w[1].
TEST(PackLayout, ThreeBitPairsAreSixBitFieldsAcrossTheLanesWords) {
  std::vector<uint8_t> codes(16 * 64, 0);
  codes[0 * 64 + 0] = 5;   // lane 0, slice 0, pair 0, first
  codes[0 * 64 + 1] = 3;   //                          second: field 5 | 3 << 3 = 29 at bits 0..5
  codes[8 * 64 + 16] = 7;  // lane 0, slice 1, pair 1 (row 8), first
  codes[8 * 64 + 17] = 6;  //                                  second: field 55 at bits 30..35
  const auto packed = pack_codes(codes.data(), 16, 64, 3);
  EXPECT_EQ(packed[0], 29u | (55u << 30));
  EXPECT_EQ(packed[1], 55u >> 2);
  EXPECT_EQ(packed[2], 0u);
  for (size_t i = 3; i < packed.size(); ++i) ASSERT_EQ(packed[i], 0u) << i;
  EXPECT_EQ(lut::pair_offset<3>(packed.data(), 1, 1, 4) , 55u * 128 + 4);
  EXPECT_EQ(lut::slice_nibbles<3>(packed.data(), 1), 0x6700u);
  EXPECT_EQ(kPackedLayoutVersion, 2);
}

TEST(PackLayout, PaddingPacksAsCodeZero) {
  const int64_t n = 8, k = 16;
  std::vector<uint8_t> codes(n * k, 3);
  const auto packed = pack_codes(codes.data(), n, k, 2);
  const auto all = unpack_codes(packed.data(), 16, 64, 2);  // the whole atom, padding included
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 64; ++c) EXPECT_EQ(all[r * 64 + c], (r < n && c < k) ? 3 : 0) << r << "," << c;
}

TEST(PackScales, GroupRowsThenPaddedN) {
  const int64_t n = 24, k = 256;
  const int g = 64;
  std::vector<uint16_t> scales(n * (k / g));
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<uint16_t>(i + 1);
  const auto out = pack_scales(scales.data(), n, k, g);
  const PackedShape s = packed_shape(n, k, 4, g);
  ASSERT_EQ(s.n_padded, 32);
  ASSERT_EQ(static_cast<int64_t>(out.size()), s.scale_rows() * s.n_padded);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t gi = 0; gi < k / g; ++gi) EXPECT_EQ(out[gi * s.n_padded + r], scales[r * (k / g) + gi]);
  for (int64_t r = n; r < s.n_padded; ++r) EXPECT_EQ(out[r], 0);
}

TEST(PackScales, OneScalePerRowIsOneRow) {
  const PackedShape s = packed_shape(16, 48, 4, 48);
  EXPECT_EQ(s.k_padded, 64);
  EXPECT_EQ(s.scale_rows(), 1);
}

void expect_error_naming(const std::function<void()>& fn, const std::string& argument) {
  try {
    fn();
    FAIL() << "no error for " << argument;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + argument + "'"), std::string::npos) << e.what();
  }
}

TEST(PackErrors, BadArgumentsNameTheArgument) {
  std::vector<uint8_t> codes(16 * 64, 1);
  expect_error_naming([&] { pack_codes(nullptr, 16, 64, 4); }, "codes");
  expect_error_naming([&] { pack_codes(codes.data(), 12, 64, 4); }, "n");
  expect_error_naming([&] { pack_codes(codes.data(), 16, 64, 5); }, "bits");
  expect_error_naming([&] { pack_codes(codes.data(), 16, 40, 4); }, "k");
  codes[5] = 4;
  expect_error_naming([&] { pack_codes(codes.data(), 16, 64, 2); }, "codes");
  expect_error_naming([&] { unpack_codes(nullptr, 16, 64, 4); }, "packed");
  expect_error_naming([&] { pack_scales(nullptr, 16, 64, 32); }, "scales");
}

}  // namespace
}  // namespace lutmm
