// float <-> fp16 / bf16 bit conversions (src/util/dtype.cpp): known patterns, round-to-nearest-even,
// subnormals, overflow, inf/NaN, and a brute-force nearest-value oracle.
#include "lutmm/dtype.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "lutmm/error.hpp"

namespace lutmm {
namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

struct Case {
  float value;
  uint16_t bits;
};

TEST(Dtype, Names) {
  EXPECT_EQ(to_string(DType::f16), "fp16");
  EXPECT_EQ(to_string(DType::bf16), "bf16");
  for (const char* s : {"fp16", "f16", "half", "float16"}) EXPECT_EQ(parse_dtype(s), DType::f16) << s;
  for (const char* s : {"bf16", "bfloat16"}) EXPECT_EQ(parse_dtype(s), DType::bf16) << s;
  try {
    parse_dtype("fp8");
    FAIL() << "parse_dtype accepted fp8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'dtype'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();
  }
}

TEST(Dtype, Bf16KnownPatterns) {
  const Case cases[] = {
      {1.0f, 0x3f80},
      {-2.0f, 0xc000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {3.14159265f, 0x4049},                        // 0x40490fdb: low half below the midpoint
      {from_bits(0x3f808000), 0x3f80},              // exact tie, 0x3f80 even: stays
      {from_bits(0x3f818000), 0x3f82},              // exact tie, 0x3f81 odd: up to even
      {from_bits(0x3f808001), 0x3f81},              // just above the tie
      {from_bits(0x3f807fff), 0x3f80},              // just below the tie
      {from_bits(0x00018000), 0x0002},              // subnormal tie to even
      {from_bits(0x00010000), 0x0001},              // smallest bf16 subnormal
      {from_bits(0x00008000), 0x0000},              // half of it: tie to even (0)
      {from_bits(0x7f7f7fff), 0x7f7f},              // largest finite bf16, not rounded up
      {std::numeric_limits<float>::max(), 0x7f80},  // rounds past the largest bf16: inf
      {std::numeric_limits<float>::infinity(), 0x7f80},
      {-std::numeric_limits<float>::infinity(), 0xff80},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(float_to_bits(c.value, DType::bf16), c.bits) << std::hex << std::bit_cast<uint32_t>(c.value);
  }
  EXPECT_EQ(bits_to_float(0x3f80, DType::bf16), 1.0f);
  EXPECT_EQ(bits_to_float(0x0001, DType::bf16), from_bits(0x00010000));
}

TEST(Dtype, F16KnownPatterns) {
  const float two_m24 = std::ldexp(1.0f, -24);
  const Case cases[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {0.1f, 0x2e66},
      {65504.0f, 0x7bff},   // largest finite
      {65519.99f, 0x7bff},  // below the midpoint to 65536
      {65520.0f, 0x7c00},   // the midpoint: ties to even, which is inf
      {1e6f, 0x7c00},
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},      // tie, 0x3c00 even: stays
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02},  // tie, 0x3c01 odd: up
      {std::ldexp(1.0f, -14), 0x0400},             // smallest normal
      {two_m24, 0x0001},                           // smallest subnormal
      {0.5f * two_m24, 0x0000},                    // tie between 0 and it: even (0)
      {0.75f * two_m24, 0x0001},
      {1.5f * two_m24, 0x0002},     // tie between 1 and 2: even
      {2.5f * two_m24, 0x0002},     // tie between 2 and 3: even
      {1023.5f * two_m24, 0x0400},  // largest subnormal's tie rounds into the normals
      {1e-10f, 0x0000},
      {-1e-10f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(float_to_bits(c.value, DType::f16), c.bits) << c.value;
  }
  EXPECT_EQ(bits_to_float(0x7bff, DType::f16), 65504.0f);
  EXPECT_EQ(bits_to_float(0x0001, DType::f16), two_m24);
  EXPECT_EQ(bits_to_float(0x03ff, DType::f16), 1023.0f * two_m24);
  EXPECT_EQ(bits_to_float(0xfc00, DType::f16), -std::numeric_limits<float>::infinity());
}

TEST(Dtype, NaNStaysNaN) {
  for (DType dt : {DType::f16, DType::bf16}) {
    for (float nan : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                      from_bits(0x7f800001), from_bits(0x7fc00000 | 0x1234)}) {
      const uint16_t b = float_to_bits(nan, dt);
      EXPECT_TRUE(std::isnan(bits_to_float(b, dt))) << to_string(dt) << " " << std::hex << b;
    }
  }
}

// Every 16-bit pattern that is not NaN survives bits -> float -> bits; NaN patterns decode to NaN.
TEST(Dtype, EveryPatternRoundTrips) {
  for (DType dt : {DType::f16, DType::bf16}) {
    int nans = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      const float f = bits_to_float(static_cast<uint16_t>(b), dt);
      if (std::isnan(f)) {
        ++nans;
        continue;
      }
      ASSERT_EQ(float_to_bits(f, dt), b) << to_string(dt) << " pattern " << std::hex << b;
    }
    // 2 signs x (2^mantissa_bits - 1) NaN payloads.
    EXPECT_EQ(nans, dt == DType::f16 ? 2 * 1023 : 2 * 127) << to_string(dt);
  }
}

// An independent decoder: the value of a non-negative pattern from its fields. For the first pattern
// past the largest finite one (the inf pattern) it gives the next power of two, the value that the
// largest finite number's round-up would reach: exactly what the nearest-value oracle needs.
double decode(uint32_t bits, DType dt) {
  const int mant_bits = dt == DType::f16 ? 10 : 7;
  const int bias = dt == DType::f16 ? 15 : 127;
  const uint32_t exp = bits >> mant_bits;
  const uint32_t mant = bits & ((1u << mant_bits) - 1);
  if (exp == 0) return std::ldexp(static_cast<double>(mant), 1 - bias - mant_bits);
  return std::ldexp(static_cast<double>(mant | (1u << mant_bits)), static_cast<int>(exp) - bias - mant_bits);
}

// Nearest pattern by search over all non-negative finite patterns, ties to the even pattern.
uint16_t oracle(float x, DType dt) {
  const uint32_t inf = dt == DType::f16 ? 0x7c00 : 0x7f80;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  uint32_t lo = 0, hi = inf;  // invariant: decode(lo) <= a, find the last such below inf
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    (decode(mid, dt) <= a ? lo : hi) = mid;
  }
  const double dlo = a - decode(lo, dt), dhi = decode(lo + 1, dt) - a;
  uint32_t r = lo;
  if (dhi < dlo || (dhi == dlo && (lo & 1))) r = lo + 1;
  return static_cast<uint16_t>(sign | r);
}

TEST(Dtype, MatchesNearestOracleOnRandomFloats) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (DType dt : {DType::f16, DType::bf16}) {
    for (int i = 0; i < 300000; ++i) {
      float x;
      if (i % 2 == 0) {
        x = from_bits(any_bits(rng));  // the whole float range
      } else {
        // Concentrated on the dtype's own range, subnormals and overflow included.
        const int lo = dt == DType::f16 ? -27 : -136, hi = dt == DType::f16 ? 17 : 129;
        const int e = lo + static_cast<int>(any_bits(rng) % static_cast<uint32_t>(hi - lo));
        x = std::ldexp(1.0f + static_cast<float>(any_bits(rng) >> 8) * 0x1p-24f, e);
        if (any_bits(rng) & 1) x = -x;
      }
      if (std::isnan(x)) continue;
      ASSERT_EQ(float_to_bits(x, dt), oracle(x, dt))
          << to_string(dt) << " x=" << x << " bits " << std::hex << std::bit_cast<uint32_t>(x);
    }
  }
}

}  // namespace
}  // namespace lutmm
