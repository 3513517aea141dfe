// The CPU half of the GPU checks (bench/random_inputs.hpp, bench/verify.hpp): the inputs are random,
// never zero, reproducible and well-formed; the comparison counts unwritten outputs and measures errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "lutmm/error.hpp"
#include "lutmm/format.hpp"
#include "lutmm/reference.hpp"
#include "random_inputs.hpp"
#include "verify.hpp"

namespace lutmm::bench {
namespace {

Problem problem(int64_t m, int64_t n, int64_t k, int bits, int group, DType dtype) {
  return Problem::of(m, n, k, bits, group, dtype);
}

TEST(Rng, NormalHasUnitMomentsAndStreamsDiffer) {
  Rng rng(7, 1, 0);
  double sum = 0, sum2 = 0;
  constexpr int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    const double v = rng.normal();
    sum += v;
    sum2 += v * v;
  }
  EXPECT_NEAR(sum / kDraws, 0.0, 0.01);
  EXPECT_NEAR(sum2 / kDraws, 1.0, 0.02);
  Rng a(7, 1, 0), b(7, 1, 1), c(7, 2, 0), d(7, 1, 0);
  const uint64_t va = a.next_u64();
  EXPECT_NE(va, b.next_u64());
  EXPECT_NE(va, c.next_u64());
  EXPECT_EQ(va, d.next_u64());
}

TEST(RandomWeight, IsValidNeverZeroAndUsesEveryCode) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (int bits : {2, 3, 4}) {
      const QuantizedWeight w = random_quantized_weight(64, 256, bits, 64, dtype, 11);
      EXPECT_NO_THROW(w.validate());
      // Table: 2^bits distinct finite values, ascending.
      std::vector<float> t;
      for (int c = 0; c < (1 << bits); ++c) t.push_back(w.table_value(c));
      EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
      EXPECT_EQ(std::set<float>(t.begin(), t.end()).size(), t.size());
      // Scales: nonzero, both signs, spread like N(0, 0.05).
      int negative = 0;
      double sum2 = 0;
      for (uint16_t s : w.scales) {
        const float v = bits_to_float(s, dtype);
        EXPECT_NE(v, 0.0f);
        negative += v < 0;
        sum2 += static_cast<double>(v) * v;
      }
      const double n = static_cast<double>(w.scales.size());
      EXPECT_GT(negative, n * 0.3);
      EXPECT_LT(negative, n * 0.7);
      EXPECT_NEAR(std::sqrt(sum2 / n), 0.05, 0.01);
      // Codes: every value appears, roughly uniformly.
      std::vector<int> histogram(1 << bits, 0);
      for (uint8_t c : w.codes) ++histogram[c];
      for (int count : histogram) EXPECT_GT(count, static_cast<int>(w.codes.size() >> bits) / 2);
    }
  }
}

TEST(RandomWeight, ReproducibleFromTheSeedOnly) {
  const QuantizedWeight a = random_quantized_weight(300, 128, 4, 128, DType::bf16, 5);
  const QuantizedWeight b = random_quantized_weight(300, 128, 4, 128, DType::bf16, 5);
  const QuantizedWeight c = random_quantized_weight(300, 128, 4, 128, DType::bf16, 6);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
  EXPECT_EQ(a.table, b.table);
  EXPECT_NE(a.codes, c.codes);
  EXPECT_NE(a.scales, c.scales);
  EXPECT_NE(a.table, c.table);
}

TEST(RandomWeight, NfTableIsTheBuiltInOne) {
  const QuantizedWeight w = random_quantized_weight(16, 64, 4, 64, DType::f16, 3, TableKind::nf);
  const Table nf = nf_table(4);
  for (int c = 0; c < 16; ++c) EXPECT_EQ(w.table[c], float_to_bits(nf.values[c], DType::f16));
}

TEST(RandomWeight, RejectsBadShapesBeforeAllocating) {
  EXPECT_THROW(random_quantized_weight(0, 64, 4, 64, DType::bf16, 1), Error);
  EXPECT_THROW(random_quantized_weight(16, 64, 5, 64, DType::bf16, 1), Error);
  EXPECT_THROW(random_quantized_weight(16, 96, 4, 64, DType::bf16, 1), Error);
  EXPECT_THROW(random_quantized_weight(16, 64, 4, 64, DType::bf16, 1, TableKind::random, 0.0), Error);
  EXPECT_THROW(random_quantized_weight(int64_t{1} << 40, int64_t{1} << 30, 4, 128, DType::bf16, 1), Error);
}

TEST(RandomValues, NeverZeroAndStandardNormal) {
  const std::vector<uint16_t> v = random_values(100000, DType::bf16, 9);
  double sum2 = 0;
  for (uint16_t b : v) {
    const float f = bits_to_float(b, DType::bf16);
    ASSERT_NE(f, 0.0f);
    ASSERT_TRUE(std::isfinite(f));
    sum2 += static_cast<double>(f) * f;
  }
  EXPECT_NEAR(std::sqrt(sum2 / v.size()), 1.0, 0.02);
  EXPECT_EQ(v, random_values(100000, DType::bf16, 9));
  EXPECT_NE(v, random_values(100000, DType::bf16, 10));
  EXPECT_THROW(random_values(-1, DType::bf16, 1), Error);
  EXPECT_THROW(random_values(4, DType::bf16, 1, -1.0), Error);
}

TEST(Dequantize, MatchesTheFormatDefinition) {
  const QuantizedWeight w = random_quantized_weight(33, 192, 3, 64, DType::f16, 4);
  const std::vector<double> d = dequantize_f64(w);
  const std::vector<uint16_t> r = dequantize_to_dtype(w);
  for (int64_t row = 0; row < w.n; ++row) {
    for (int64_t col = 0; col < w.k; ++col) {
      ASSERT_EQ(d[row * w.k + col], w.dequant(row, col));
      ASSERT_EQ(r[row * w.k + col], float_to_bits(static_cast<float>(w.dequant(row, col)), DType::f16));
    }
  }
}

TEST(VerifyInputs, FromTheCaseSeedWithOptionalBias) {
  VerifyCase c;
  c.problem = problem(5, 48, 128, 4, 64, DType::f16);
  c.seed = 21;
  const VerifyInputs plain = make_verify_inputs(c);
  EXPECT_EQ(plain.x.size(), 5u * 128u);
  EXPECT_TRUE(plain.bias.empty());
  EXPECT_EQ(plain.weight.n, 48);
  EXPECT_EQ(plain.weight.group_size, 64);
  for (uint16_t b : plain.x) ASSERT_NE(bits_to_float(b, DType::f16), 0.0f);
  c.with_bias = true;
  const VerifyInputs biased = make_verify_inputs(c);
  EXPECT_EQ(biased.bias.size(), 48u);
  EXPECT_EQ(biased.x, plain.x);
  EXPECT_NE(biased.bias, std::vector<uint16_t>(48, biased.bias[0]));
  // x and the bias come from different streams than W.
  EXPECT_NE(std::vector<uint16_t>(biased.x.begin(), biased.x.begin() + 48), biased.bias);
}

TEST(VerifyInputs, RejectsBadProblemsNamingTheField) {
  VerifyCase c;
  c.problem = problem(0, 16, 64, 4, 64, DType::bf16);
  try {
    make_verify_inputs(c);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'problem.m'"), std::string::npos) << e.what();
  }
  c.problem = problem(1, 16, 64, 4, 48, DType::bf16);
  EXPECT_THROW(make_verify_inputs(c), Error);
  c.problem = problem(1, 16, 64, 1, 64, DType::bf16);
  EXPECT_THROW(make_verify_inputs(c), Error);
}

TEST(Tolerance, StatedPerDtype) {
  EXPECT_DOUBLE_EQ(verify_tolerance(DType::bf16), 1e-2);
  EXPECT_DOUBLE_EQ(verify_tolerance(DType::f16), 2e-3);
}

// The stated tolerance is above what rounding each weight and each output to the dtype costs, and below
// what one wrong tile costs. Simulated on the CPU: the same GEMM with rounded weights and rounded outputs.
TEST(Tolerance, SeparatesRoundingFromAWrongTile) {
  for (DType dtype : {DType::bf16, DType::f16}) {
    VerifyCase c;
    c.problem = problem(16, 256, 1024, 4, 128, dtype);
    c.seed = 3;
    const VerifyInputs in = make_verify_inputs(c);
    std::vector<double> ref(16 * 256);
    reference_gemm_f64(in.x.data(), 16, in.weight, nullptr, ref.data());
    const std::vector<uint16_t> wr = dequantize_to_dtype(in.weight);
    std::vector<uint16_t> out(ref.size());
    for (int64_t i = 0; i < 16; ++i) {
      for (int64_t j = 0; j < 256; ++j) {
        float acc = 0;
        for (int64_t k = 0; k < 1024; ++k) {
          acc += bits_to_float(in.x[i * 1024 + k], dtype) * bits_to_float(wr[j * 1024 + k], dtype);
        }
        out[i * 256 + j] = float_to_bits(acc, dtype);
      }
    }
    const OutputComparison good = compare_output(out.data(), ref.data(), 16 * 256, dtype);
    EXPECT_LT(good.rel_fro_error, verify_tolerance(dtype) / 2) << to_string(dtype);
    EXPECT_GT(good.rel_fro_error, 0.0);
    // One 16 x 64 tile of 16 x 256 outputs scaled by 1.1: a 10% error on a quarter of the outputs.
    for (int64_t i = 0; i < 16; ++i) {
      for (int64_t j = 64; j < 128; ++j) {
        out[i * 256 + j] = float_to_bits(bits_to_float(out[i * 256 + j], dtype) * 1.1f, dtype);
      }
    }
    const OutputComparison bad = compare_output(out.data(), ref.data(), 16 * 256, dtype);
    EXPECT_GT(bad.rel_fro_error, verify_tolerance(dtype)) << to_string(dtype);
  }
}

TEST(CompareOutput, CountsNanAsUnwrittenAndMeasuresTheRest) {
  const DType dtype = DType::bf16;
  const std::vector<double> ref = {1.0, -2.0, 4.0, 8.0};
  std::vector<uint16_t> out = {float_to_bits(1.0f, dtype), float_to_bits(-2.0f, dtype), float_to_bits(4.5f, dtype),
                               0xffff};
  const OutputComparison r = compare_output(out.data(), ref.data(), 4, dtype);
  EXPECT_EQ(r.unwritten, 1);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 0.5);
  EXPECT_NEAR(r.rel_fro_error, 0.5 / std::sqrt(1.0 + 4.0 + 16.0), 1e-12);
  EXPECT_EQ(count_unwritten(out.data(), 4, dtype), 1);
  EXPECT_EQ(count_unwritten(out.data(), 4, DType::f16), 1);  // 0xffff is NaN in fp16 too

  out[3] = float_to_bits(std::numeric_limits<float>::infinity(), dtype);
  const OutputComparison inf = compare_output(out.data(), ref.data(), 4, dtype);
  EXPECT_EQ(inf.unwritten, 0);
  EXPECT_TRUE(std::isinf(inf.rel_fro_error));
  EXPECT_FALSE(inf.rel_fro_error <= verify_tolerance(dtype));

  const std::vector<double> zeros(2, 0.0);
  const std::vector<uint16_t> zero_out(2, 0);
  EXPECT_EQ(compare_output(zero_out.data(), zeros.data(), 2, dtype).rel_fro_error, 0.0);
  EXPECT_THROW(compare_output(nullptr, ref.data(), 4, dtype), Error);
  EXPECT_THROW(compare_output(out.data(), nullptr, 4, dtype), Error);
  EXPECT_THROW(count_unwritten(out.data(), -1, dtype), Error);
}

}  // namespace
}  // namespace lutmm::bench
