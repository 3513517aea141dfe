// reference_gemm_f64 against a naive triple loop, cpu_gemm against reference_gemm_f64, argument checks.
// Weights come from random codes, tables and scales of either sign (bench/random_inputs.hpp), so nothing
// here depends on the quantizer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lutmm/error.hpp"
#include "lutmm/format.hpp"
#include "lutmm/reference.hpp"
#include "random_inputs.hpp"

namespace lutmm {
namespace {

// The definition, as plainly as possible: out[i][j] = sum_c x[i][c] * table[code[j][c]] * scale[j][c/G] + bias[j].
std::vector<double> naive_gemm(const std::vector<uint16_t>& x, int64_t m, const QuantizedWeight& w,
                               const uint16_t* bias) {
  std::vector<double> out(static_cast<size_t>(m * w.n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < w.n; ++j) {
      double sum = 0;
      for (int64_t c = 0; c < w.k; ++c) {
        const double xv = bits_to_float(x[i * w.k + c], w.dtype);
        const double wv = static_cast<double>(bits_to_float(w.table[w.codes[j * w.k + c]], w.dtype)) *
                          static_cast<double>(bits_to_float(w.scales[j * (w.k / w.group_size) + c / w.group_size],
                                                            w.dtype));
        sum += xv * wv;
      }
      out[i * w.n + j] = sum + (bias ? bits_to_float(bias[j], w.dtype) : 0.0);
    }
  }
  return out;
}

// sum_c |x[i][c] * w[j][c]| + |bias[j]|: the scale of the rounding error of any summation order.
std::vector<double> magnitude(const std::vector<uint16_t>& x, int64_t m, const QuantizedWeight& w,
                              const uint16_t* bias) {
  std::vector<double> out(static_cast<size_t>(m * w.n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < w.n; ++j) {
      double sum = bias ? std::fabs(bits_to_float(bias[j], w.dtype)) : 0.0;
      for (int64_t c = 0; c < w.k; ++c) sum += std::fabs(bits_to_float(x[i * w.k + c], w.dtype) * w.dequant(j, c));
      out[i * w.n + j] = sum;
    }
  }
  return out;
}

struct Case {
  int64_t m, n, k;
  int bits, group_size;
  DType dtype;
  bool bias;
  std::string str() const {
    return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + " b" +
           std::to_string(bits) + " g" + std::to_string(group_size) + " " + std::string(to_string(dtype)) +
           (bias ? " bias" : "");
  }
};

// Every bits x group size x dtype x bias, on shapes with M = 1, odd M (3, 77), N = 8 and N off every
// block size, plus one-scale-per-row weights with K = 16 and 48.
std::vector<Case> oracle_cases() {
  struct Dims { int64_t m, n, k; int g; };
  const Dims dims[] = {
      {1, 8, 256, 32},  {3, 8, 256, 32},  {77, 33, 64, 32},  {1, 40, 128, 64},  {3, 17, 192, 64},
      {77, 8, 128, 64}, {1, 8, 256, 128}, {3, 33, 384, 128}, {77, 12, 128, 128}, {1, 20, 512, 256},
      {3, 8, 256, 256}, {77, 9, 256, 256}, {1, 8, 16, 16},    {3, 8, 48, 48},    {77, 33, 48, 48},
      {77, 8, 16, 16},
  };
  std::vector<Case> cases;
  for (const Dims& d : dims) {
    for (int bits : {2, 3, 4}) {
      for (DType dtype : {DType::f16, DType::bf16}) {
        for (bool bias : {false, true}) cases.push_back({d.m, d.n, d.k, bits, d.g, dtype, bias});
      }
    }
  }
  return cases;
}

// A case's random weight, x and bias, drawn from `seed` onwards (three draws).
struct CaseInputs {
  QuantizedWeight w;
  std::vector<uint16_t> x, bias;
  const uint16_t* bias_or_null(const Case& c) const { return c.bias ? bias.data() : nullptr; }
};
CaseInputs case_inputs(const Case& c, uint64_t& seed) {
  CaseInputs in;
  in.w = bench::random_quantized_weight(c.n, c.k, c.bits, c.group_size, c.dtype, seed++);
  in.x = bench::random_values(c.m * c.k, c.dtype, seed++);
  in.bias = bench::random_values(c.n, c.dtype, seed++, 2.0);
  return in;
}

TEST(ReferenceGemmF64, MatchesNaiveTripleLoop) {
  uint64_t seed = 1234;
  for (const Case& c : oracle_cases()) {
    SCOPED_TRACE(c.str());
    const CaseInputs in = case_inputs(c, seed);
    const QuantizedWeight& w = in.w;
    const uint16_t* b = in.bias_or_null(c);
    const auto want = naive_gemm(in.x, c.m, w, b);
    const auto mag = magnitude(in.x, c.m, w, b);
    // NaN everywhere shows a missed element; the 64 past m*n must stay NaN.
    std::vector<double> got(want.size() + 64, std::nan(""));
    reference_gemm_f64(in.x.data(), c.m, w, b, got.data());
    for (size_t i = want.size(); i < got.size(); ++i) ASSERT_TRUE(std::isnan(got[i])) << "written past the end";
    for (size_t i = 0; i < want.size(); ++i) {
      // Products are exact in double; only the order of the sums differs: K ulps of the magnitude.
      ASSERT_NEAR(got[i], want[i], 4.0 * static_cast<double>(c.k + 1) * 0x1p-53 * mag[i]) << "element " << i;
    }
  }
}

TEST(ReferenceGemmF64, BiasIsAddedPerColumn) {
  uint64_t seed = 7;
  const QuantizedWeight w = bench::random_quantized_weight(24, 64, 4, 32, DType::bf16, seed++);
  const auto x = bench::random_values(5 * 64, DType::bf16, seed++);
  const auto bias = bench::random_values(24, DType::bf16, seed++, 3.0);
  std::vector<double> without(5 * 24), with(5 * 24);
  reference_gemm_f64(x.data(), 5, w, nullptr, without.data());
  reference_gemm_f64(x.data(), 5, w, bias.data(), with.data());
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 24; ++j) {
      EXPECT_DOUBLE_EQ(with[i * 24 + j] - without[i * 24 + j], bits_to_float(bias[j], DType::bf16));
    }
  }
}

double relative_frobenius(const std::vector<uint16_t>& got, const std::vector<double>& want, DType dtype) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = bits_to_float(got[i], dtype) - want[i];
    err += d * d;
    ref += want[i] * want[i];
  }
  return std::sqrt(err / ref);
}

constexpr size_t kGuard = 1024;
constexpr uint16_t kSentinel = 0x7e00;  // NaN in both dtypes: an element cpu_gemm missed shows

// cpu_gemm = float32 sums of exact products, then one rounding to dtype. Per element:
//   |out - exact| <= (K + 2) u32 * sum|x w| + u_dtype * |value| + (fp16 only) half the subnormal step.
void expect_cpu_gemm_close(const std::vector<uint16_t>& got, const std::vector<double>& want,
                           const std::vector<double>& mag, int64_t k, DType dtype) {
  const double u_dtype = dtype == DType::f16 ? 0x1p-11 : 0x1p-8;
  const double tiny = dtype == DType::f16 ? 0x1p-25 : 0.0;
  // got carries kGuard extra elements past m*n that cpu_gemm must not touch.
  ASSERT_EQ(got.size(), want.size() + kGuard);
  for (size_t i = want.size(); i < got.size(); ++i) ASSERT_EQ(got[i], kSentinel) << "written past the end: " << i;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = bits_to_float(got[i], dtype);
    const double bound = static_cast<double>(k + 2) * 0x1p-24 * mag[i] +
                         u_dtype * std::max(std::fabs(g), std::fabs(want[i])) + tiny;
    if (!(std::fabs(g - want[i]) <= bound)) {
      if (++bad <= 5) ADD_FAILURE() << "element " << i << ": got " << g << ", want " << want[i] << " +- " << bound;
    }
  }
  EXPECT_EQ(bad, 0);
  // The brief's summary measure: the output rounding dominates it.
  EXPECT_LT(relative_frobenius(got, want, dtype), dtype == DType::bf16 ? 1e-2 : 2e-3);
}

// cpu_gemm on `threads` threads (0: all) against the float64 reference, on a case's random inputs.
void expect_cpu_gemm_matches_reference(const Case& c, uint64_t& seed, int threads) {
  const CaseInputs in = case_inputs(c, seed);
  const uint16_t* b = in.bias_or_null(c);
  std::vector<double> want(static_cast<size_t>(c.m * c.n));
  reference_gemm_f64(in.x.data(), c.m, in.w, b, want.data());
  std::vector<uint16_t> got(want.size() + kGuard, kSentinel);
  cpu_gemm(in.x.data(), c.m, in.w, b, got.data(), threads);
  expect_cpu_gemm_close(got, want, magnitude(in.x, c.m, in.w, b), c.k, c.dtype);
}

TEST(CpuGemm, MatchesReferenceOnSmallShapes) {
  uint64_t seed = 99;
  for (const Case& c : oracle_cases()) {
    SCOPED_TRACE(c.str());
    expect_cpu_gemm_matches_reference(c, seed, 2);
  }
}

// Shapes that cross every block boundary of cpu_gemm: several W blocks (128 rows), K blocks (256) and
// x chunks (384 rows), with ragged edges everywhere.
TEST(CpuGemm, MatchesReferenceAcrossBlocks) {
  uint64_t seed = 5;
  const Case cases[] = {
      {400, 136, 512, 4, 128, DType::bf16, true}, {401, 300, 1280, 3, 64, DType::f16, false},
      {1, 520, 1024, 2, 256, DType::f16, true},   {77, 8, 784, 4, 784, DType::bf16, true},
      {130, 8, 96, 4, 32, DType::f16, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.str());
    expect_cpu_gemm_matches_reference(c, seed, 0);
  }
}

// Each output element is summed in the same order whatever the work split, so the thread count does not
// change a single bit.
TEST(CpuGemm, ThreadCountDoesNotChangeTheResult) {
  uint64_t seed = 11;
  const QuantizedWeight w = bench::random_quantized_weight(200, 512, 4, 64, DType::bf16, seed++);
  const auto x = bench::random_values(50 * 512, DType::bf16, seed++);
  std::vector<uint16_t> one(50 * 200), many(50 * 200);
  cpu_gemm(x.data(), 50, w, nullptr, one.data(), 1);
  for (int threads : {0, 2, 3, 7}) {
    cpu_gemm(x.data(), 50, w, nullptr, many.data(), threads);
    EXPECT_EQ(one, many) << "threads " << threads;
  }
}

// Runs f, expects lutmm::Error whose message names `argument`, and that out was not touched.
template <typename F>
void expect_error_naming(F f, const std::string& argument) {
  try {
    f();
    ADD_FAILURE() << "no error for " << argument;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(argument), std::string::npos) << e.what();
  }
}

TEST(CpuGemms, RejectBadArguments) {
  uint64_t seed = 3;
  const QuantizedWeight w = bench::random_quantized_weight(8, 64, 4, 32, DType::f16, seed++);
  const auto x = bench::random_values(2 * 64, DType::f16, seed++);
  std::vector<double> outd(16, -1.0);
  std::vector<uint16_t> out(16, 0x1234);

  expect_error_naming([&] { reference_gemm_f64(nullptr, 2, w, nullptr, outd.data()); }, "'x'");
  expect_error_naming([&] { reference_gemm_f64(x.data(), 2, w, nullptr, nullptr); }, "'out'");
  expect_error_naming([&] { reference_gemm_f64(x.data(), 0, w, nullptr, outd.data()); }, "'m'");
  expect_error_naming([&] { reference_gemm_f64(x.data(), -5, w, nullptr, outd.data()); }, "got -5");
  expect_error_naming([&] { cpu_gemm(nullptr, 2, w, nullptr, out.data()); }, "'x'");
  expect_error_naming([&] { cpu_gemm(x.data(), 2, w, nullptr, nullptr); }, "'out'");
  expect_error_naming([&] { cpu_gemm(x.data(), 0, w, nullptr, out.data()); }, "'m'");
  expect_error_naming([&] { cpu_gemm(x.data(), 2, w, nullptr, out.data(), -1); }, "'threads'");

  QuantizedWeight bad_code = w;
  bad_code.codes[70] = 16;
  expect_error_naming([&] { reference_gemm_f64(x.data(), 2, bad_code, nullptr, outd.data()); },
                      "QuantizedWeight.codes");
  expect_error_naming([&] { cpu_gemm(x.data(), 2, bad_code, nullptr, out.data()); }, "QuantizedWeight.codes");

  QuantizedWeight short_scales = w;
  short_scales.scales.pop_back();
  expect_error_naming([&] { cpu_gemm(x.data(), 2, short_scales, nullptr, out.data()); }, "QuantizedWeight.scales");

  QuantizedWeight bad_group = w;
  bad_group.group_size = 48;
  expect_error_naming([&] { reference_gemm_f64(x.data(), 2, bad_group, nullptr, outd.data()); },
                      "QuantizedWeight.group_size");

  // Nothing is written when an argument is rejected.
  EXPECT_EQ(outd, std::vector<double>(16, -1.0));
  EXPECT_EQ(out, std::vector<uint16_t>(16, 0x1234));
}

TEST(CpuGemms, ErrorMessageSaysWhatWasExpected) {
  uint64_t seed = 3;
  const QuantizedWeight w = bench::random_quantized_weight(8, 64, 4, 32, DType::f16, seed++);
  const auto x = bench::random_values(2 * 64, DType::f16, seed++);
  std::vector<uint16_t> out(16);
  try {
    cpu_gemm(x.data(), 0, w, nullptr, out.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "lutmm: argument 'm': expected at least 1, got 0");
  }
}

}  // namespace
}  // namespace lutmm
