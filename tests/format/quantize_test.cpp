// The CPU quantizer and reconstruction_error.
#include "lutmm/quantize.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "format/test_util.hpp"
#include "lutmm/format.hpp"

namespace lutmm {
namespace {

QuantizeOptions opts(int bits, int group_size, const std::string& table = "nf", DType dtype = DType::bf16) {
  QuantizeOptions o;
  o.bits = bits;
  o.group_size = group_size;
  o.table = table;
  o.dtype = dtype;
  return o;
}

double rel_error(const std::vector<float>& w, const QuantizedWeight& q) {
  return reconstruction_error(w.data(), q).relative_frobenius;
}

// Squared error of one group, from the stored values.
double group_error(const std::vector<float>& w, const QuantizedWeight& q, int64_t row, int64_t group) {
  double e = 0;
  for (int64_t c = group * q.group_size; c < (group + 1) * q.group_size; ++c) {
    const double d = w[row * q.k + c] - q.dequant(row, c);
    e += d * d;
  }
  return e;
}

struct Variant {
  int bits;
  std::string table;
  DType dtype;
  int group_size;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (int bits : {2, 3, 4}) {
    for (const char* table : {"nf", "int", "uint"}) {
      for (DType dt : {DType::bf16, DType::f16}) v.push_back({bits, table, dt, bits == 3 ? 0 : 64});
    }
  }
  v.push_back({4, "fp4", DType::bf16, 32});
  v.push_back({4, "fp4", DType::f16, 256});
  return v;
}

std::string describe(const Variant& v) {
  return v.table + std::to_string(v.bits) + " g" + std::to_string(v.group_size) + " " +
         std::string(to_string(v.dtype));
}

TEST(Quantize, ShapeTableAndCodeRange) {
  const std::vector<float> w = gaussian(12, 256, 1);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    const QuantizedWeight q = quantize(w.data(), 12, 256, opts(v.bits, v.group_size, v.table, v.dtype));
    EXPECT_NO_THROW(q.validate());
    EXPECT_EQ(q.n, 12);
    EXPECT_EQ(q.k, 256);
    EXPECT_EQ(q.bits, v.bits);
    EXPECT_EQ(q.group_size, v.group_size == 0 ? 256 : v.group_size);
    EXPECT_EQ(q.dtype, v.dtype);
    const Table t = table_by_name(v.table, v.bits);
    EXPECT_EQ(q.table_name, t.name);
    ASSERT_EQ(q.table.size(), t.values.size());
    for (size_t i = 0; i < t.values.size(); ++i) EXPECT_EQ(q.table[i], float_to_bits(t.values[i], v.dtype));
    for (uint8_t c : q.codes) ASSERT_LT(c, 1 << v.bits);
  }
}

// max |table value| as stored, and max |w| over group g of row r of a row-major weight with `cols` columns.
float table_absmax(const QuantizedWeight& q) {
  float m = 0;
  for (int c = 0; c < (1 << q.bits); ++c) m = std::max(m, std::fabs(q.table_value(c)));
  return m;
}
float group_absmax(const std::vector<float>& w, int64_t cols, int64_t r, int64_t g, int group_size) {
  float m = 0;
  for (int c = 0; c < group_size; ++c) m = std::max(m, std::fabs(w[r * cols + g * group_size + c]));
  return m;
}

// Absmax: scale = absmax / max|table| rounded to the dtype, with the table as stored.
TEST(Quantize, AbsmaxScale) {
  const std::vector<float> w = gaussian(6, 256, 2, 0.02f);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    const QuantizedWeight q = quantize(w.data(), 6, 256, opts(v.bits, v.group_size, v.table, v.dtype));
    const float tmax = table_absmax(q);
    for (int64_t r = 0; r < q.n; ++r) {
      for (int64_t g = 0; g < q.groups(); ++g) {
        const float absmax = group_absmax(w, 256, r, g, q.group_size);
        EXPECT_EQ(q.scales[r * q.groups() + g],
                  float_to_bits(static_cast<float>(double(absmax) / tmax), v.dtype));
      }
    }
  }
}

// Every code is the nearest stored table value times the stored scale; a tie goes to the smaller value
// and, among equal values, to the lowest code.
void expect_nearest_codes(const std::vector<float>& w, const QuantizedWeight& q) {
  for (int64_t r = 0; r < q.n; ++r) {
    for (int64_t c = 0; c < q.k; ++c) {
      const double x = w[r * q.k + c];
      const double s = q.scale(r, c);
      int best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (int code = 0; code < (1 << q.bits); ++code) {
        const double v = q.table_value(code);
        const double d = std::fabs(x - v * s);
        const double bv = q.table_value(best);
        if (d < best_d || (d == best_d && (v < bv))) {
          best = code;
          best_d = d;
        }
      }
      const int got = q.codes[r * q.k + c];
      if (s == 0) continue;  // every code dequantizes to 0 there
      ASSERT_EQ(got, best) << "row " << r << " col " << c << " w=" << x << " s=" << s;
    }
  }
}

TEST(Quantize, CodesAreNearest) {
  const std::vector<float> w = gaussian(8, 256, 3);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    QuantizeOptions o = opts(v.bits, v.group_size, v.table, v.dtype);
    expect_nearest_codes(w, quantize(w.data(), 8, 256, o));
    o.scale_search = ScaleSearch::mse;
    expect_nearest_codes(w, quantize(w.data(), 8, 256, o));
  }
}

// Values that sit exactly on the midpoints and on the table values, an unsorted custom table with
// a duplicate: the tie rule is deterministic and the codes still nearest.
TEST(Quantize, TiesAndUnsortedCustomTable) {
  QuantizeOptions o = opts(2, 32);
  o.custom_table = std::vector<float>{1.0f, -2.0f, 1.0f, 0.0f};  // code 2 duplicates code 0
  std::vector<float> w(32);
  // absmax 2 -> scale 1; 0.5 is the midpoint of 0 and 1, -1 of -2 and 0.
  const float pattern[] = {2.0f, 0.5f, -1.0f, 1.0f, 0.0f, -2.0f, 0.75f, -0.25f};
  for (int i = 0; i < 32; ++i) w[i] = pattern[i % 8];
  const QuantizedWeight q = quantize(w.data(), 1, 32, o);
  EXPECT_EQ(q.table_name, "custom");
  EXPECT_EQ(bits_to_float(q.scales[0], DType::bf16), 1.0f);
  const uint8_t want[] = {0, 3, 1, 0, 3, 1, 0, 3};  // 2 -> 1.0 (code 0, not its duplicate 2)
  for (int i = 0; i < 32; ++i) EXPECT_EQ(q.codes[i], want[i % 8]) << i;
  expect_nearest_codes(w, q);
}

TEST(Quantize, ErrorBoundedByHalfGap) {
  const std::vector<float> w = gaussian(16, 512, 4);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    const QuantizedWeight q = quantize(w.data(), 16, 512, opts(v.bits, v.group_size, v.table, v.dtype));
    std::vector<float> t;
    for (int c = 0; c < (1 << v.bits); ++c) t.push_back(q.table_value(c));
    std::sort(t.begin(), t.end());
    double gap = 0;
    for (size_t i = 1; i < t.size(); ++i) gap = std::max(gap, double(t[i]) - t[i - 1]);
    for (int64_t r = 0; r < q.n; ++r) {
      for (int64_t c = 0; c < q.k; ++c) {
        const double s = q.scale(r, c);
        // Half the widest gap, plus what rounding the scale down to the dtype cuts off the range.
        const double bound = 0.5 * gap * s + 0.01 * std::fabs(t.back()) * s + 1e-12;
        const double x = w[r * q.k + c];
        if (x > t.back() * s || x < t.front() * s) continue;  // outside an asymmetric table's reach
        ASSERT_LE(std::fabs(x - q.dequant(r, c)), bound) << "row " << r << " col " << c;
      }
    }
  }
}

TEST(Quantize, TypicalErrorLevels) {
  const std::vector<float> w = gaussian(64, 1024, 5);
  // Relative Frobenius error of NF with group 64 on N(0,1); the well-known ~10% of NF4.
  const double nf4 = rel_error(w, quantize(w.data(), 64, 1024, opts(4, 64)));
  EXPECT_GT(nf4, 0.05);
  EXPECT_LT(nf4, 0.12);
}

TEST(Quantize, ErrorDecreasesWithBits) {
  const std::vector<float> w = gaussian(64, 1024, 6);
  for (const char* table : {"nf", "int", "uint"}) {
    for (DType dt : {DType::bf16, DType::f16}) {
      for (ScaleSearch search : {ScaleSearch::absmax, ScaleSearch::mse}) {
        double previous = std::numeric_limits<double>::infinity();
        for (int bits : {2, 3, 4}) {
          QuantizeOptions o = opts(bits, 128, table, dt);
          o.scale_search = search;
          const double e = rel_error(w, quantize(w.data(), 64, 1024, o));
          EXPECT_LT(e, previous) << table << bits << " " << to_string(dt);
          EXPECT_LT(e, bits == 2 ? 0.8 : 0.4) << table << bits;  // int2 absmax is {-s, 0, s}
          previous = e;
        }
      }
    }
  }
}

TEST(Quantize, SmallerGroupsAreBetter) {
  const std::vector<float> w = gaussian(32, 1024, 7);
  for (int bits : {2, 3, 4}) {
    const double g32 = rel_error(w, quantize(w.data(), 32, 1024, opts(bits, 32)));
    const double g128 = rel_error(w, quantize(w.data(), 32, 1024, opts(bits, 128)));
    const double row = rel_error(w, quantize(w.data(), 32, 1024, opts(bits, 0)));
    EXPECT_LT(g32, g128) << bits;
    EXPECT_LT(g128, row) << bits;
  }
}

// The mse search includes the absmax scale, so it can never be worse: per group, and in total.
TEST(Quantize, MseSearchNeverWorseThanAbsmax) {
  const std::vector<float> w = gaussian(16, 512, 8);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    QuantizeOptions o = opts(v.bits, v.group_size, v.table, v.dtype);
    const QuantizedWeight a = quantize(w.data(), 16, 512, o);
    o.scale_search = ScaleSearch::mse;
    const QuantizedWeight m = quantize(w.data(), 16, 512, o);
    int improved = 0;
    for (int64_t r = 0; r < a.n; ++r) {
      for (int64_t g = 0; g < a.groups(); ++g) {
        const double ea = group_error(w, a, r, g), em = group_error(w, m, r, g);
        EXPECT_LE(em, ea) << "row " << r << " group " << g;
        improved += em < ea;
      }
    }
    EXPECT_GT(improved, 0);  // on Gaussian data clipping the tails pays off somewhere
    EXPECT_LT(rel_error(w, m), rel_error(w, a));
  }
}

// The mse search picks a point of its grid (0.50, 0.52, ..., 1.20 times the absmax scale, rounded to
// the dtype), and the best one up to the float ranking's precision.
TEST(Quantize, MseSearchPicksTheGridMinimum) {
  const std::vector<float> w = gaussian(8, 256, 19);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    QuantizeOptions o = opts(v.bits, v.group_size, v.table, v.dtype);
    o.scale_search = ScaleSearch::mse;
    QuantizedWeight q = quantize(w.data(), 8, 256, o);
    const float tmax = table_absmax(q);
    for (int64_t r = 0; r < q.n; ++r) {
      for (int64_t g = 0; g < q.groups(); ++g) {
        const float absmax = group_absmax(w, 256, r, g, q.group_size);
        const double ratio = double(absmax) / tmax;
        const uint16_t chosen = q.scales[r * q.groups() + g];
        bool on_grid = false;
        double best = std::numeric_limits<double>::infinity();
        for (int i = 0; i < 36; ++i) {
          const uint16_t s = float_to_bits(static_cast<float>((50.0 + 2.0 * i) / 100.0 * ratio), v.dtype);
          on_grid |= s == chosen;
          q.scales[r * q.groups() + g] = s;  // requantize the group with this scale: nearest codes
          for (int64_t c = g * q.group_size; c < (g + 1) * q.group_size; ++c) {
            const double x = w[r * 256 + c], sc = q.scale(r, c);
            int bc = 0;
            for (int code = 1; code < (1 << v.bits); ++code) {
              if (std::fabs(x - q.table_value(code) * sc) < std::fabs(x - q.table_value(bc) * sc)) bc = code;
            }
            q.codes[r * 256 + c] = static_cast<uint8_t>(bc);
          }
          best = std::min(best, group_error(w, q, r, g));
        }
        EXPECT_TRUE(on_grid) << "row " << r << " group " << g;
        q = quantize(w.data(), 8, 256, o);  // restore codes and scales
        EXPECT_LE(group_error(w, q, r, g), best * (1 + 1e-5) + 1e-12) << "row " << r << " group " << g;
      }
    }
  }
}

// Candidates past the fp16 range are skipped, not an error.
TEST(Quantize, MseSearchStaysInFp16Range) {
  std::vector<float> w = gaussian(1, 64, 20, 20000.0f);
  w[5] = 60000.0f;  // absmax scale 60000 for nf4: factors above 1.09 overflow fp16
  QuantizeOptions o = opts(4, 64, "nf", DType::f16);
  o.scale_search = ScaleSearch::mse;
  const QuantizedWeight q = quantize(w.data(), 1, 64, o);
  EXPECT_TRUE(std::isfinite(q.scale(0, 0)));
  EXPECT_NO_THROW(q.validate());
}

TEST(Quantize, SmallestPerRowGroup) {
  const std::vector<float> w = gaussian(3, 16, 21);
  const QuantizedWeight q = quantize(w.data(), 3, 16, opts(2, 0));
  EXPECT_EQ(q.group_size, 16);
  EXPECT_EQ(q.scales.size(), 3u);
  expect_nearest_codes(w, q);
}

TEST(Quantize, LearnedTableNeverWorse) {
  const std::vector<float> w = gaussian(32, 512, 9);
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    QuantizeOptions o = opts(v.bits, v.group_size, v.table, v.dtype);
    for (ScaleSearch search : {ScaleSearch::absmax, ScaleSearch::mse}) {
      o.scale_search = search;
      o.learn_table = false;
      const QuantizedWeight base = quantize(w.data(), 32, 512, o);
      o.learn_table = true;
      const QuantizedWeight learned = quantize(w.data(), 32, 512, o);
      EXPECT_EQ(learned.scales, base.scales);  // learning moves the table only
      EXPECT_LE(rel_error(w, learned), rel_error(w, base));
      if (learned.table_name == "learned") {
        EXPECT_LT(rel_error(w, learned), rel_error(w, base));
        std::vector<float> t;
        for (int c = 0; c < (1 << v.bits); ++c) t.push_back(learned.table_value(c));
        EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
      } else {
        EXPECT_EQ(learned.codes, base.codes);
        EXPECT_EQ(learned.table, base.table);
      }
    }
  }
}

// A uniform table on Gaussian data is far from optimal: learning must find a clearly better one.
TEST(Quantize, LearningImprovesAPoorTable) {
  const std::vector<float> w = gaussian(32, 512, 10);
  QuantizeOptions o = opts(3, 0, "uint");
  const double before = rel_error(w, quantize(w.data(), 32, 512, o));
  o.learn_table = true;
  const QuantizedWeight q = quantize(w.data(), 32, 512, o);
  EXPECT_EQ(q.table_name, "learned");
  EXPECT_LT(rel_error(w, q), 0.9 * before);
  // More iterations never hurt on this data (Lloyd is monotone up to the final rounding).
  o.learn_iterations = 2;
  const double two = rel_error(w, quantize(w.data(), 32, 512, o));
  EXPECT_LE(rel_error(w, q), two * (1 + 1e-6));
}

// Data that the initial table reproduces exactly: nothing to learn, the initial table is kept.
TEST(Quantize, LearningKeepsAnExactTable) {
  const Table nf4 = nf_table(4);
  std::vector<float> w(4 * 64);
  for (size_t i = 0; i < w.size(); ++i) w[i] = round_to(nf4.values[(i * 7) % 16], DType::bf16) * 0.5f;
  QuantizeOptions o = opts(4, 64);
  o.learn_table = true;
  const QuantizedWeight q = quantize(w.data(), 4, 64, o);
  EXPECT_EQ(q.table_name, "nf4");
  EXPECT_EQ(reconstruction_error(w.data(), q).max_abs, 0.0);
}

TEST(Quantize, SameResultForAnyThreadCount) {
  const std::vector<float> w = gaussian(301, 768, 11);  // several parallel chunks, the last one short
  for (bool learn : {false, true}) {
    QuantizeOptions o = opts(3, 64);
    o.scale_search = ScaleSearch::mse;
    o.learn_table = learn;
    o.learn_iterations = 5;
    o.threads = 1;
    const QuantizedWeight one = quantize(w.data(), 301, 768, o);
    for (int threads : {2, 3, 0}) {
      o.threads = threads;
      const QuantizedWeight many = quantize(w.data(), 301, 768, o);
      EXPECT_EQ(many.codes, one.codes) << threads;
      EXPECT_EQ(many.scales, one.scales) << threads;
      EXPECT_EQ(many.table, one.table) << threads;
      EXPECT_EQ(many.table_name, one.table_name) << threads;
    }
  }
}

TEST(Quantize, ZeroGroupsAndZeroMatrix) {
  std::vector<float> w = gaussian(4, 64, 12);
  std::fill(w.begin() + 64, w.begin() + 96, 0.0f);  // row 1, group 0
  const QuantizedWeight q = quantize(w.data(), 4, 64, opts(4, 32));
  EXPECT_EQ(q.scales[2], 0);
  for (int c = 64; c < 96; ++c) EXPECT_EQ(q.codes[c], 7) << c;  // nf4's exact 0
  for (int c = 64; c < 96; ++c) EXPECT_EQ(q.dequant(1, c - 64), 0.0);

  const std::vector<float> zeros(2 * 32, 0.0f);
  for (bool learn : {false, true}) {
    QuantizeOptions o = opts(2, 0, "int");
    o.learn_table = learn;
    o.scale_search = learn ? ScaleSearch::mse : ScaleSearch::absmax;
    const QuantizedWeight z = quantize(zeros.data(), 2, 32, o);
    for (uint8_t c : z.codes) EXPECT_EQ(c, 2);  // int2 {-1, -1, 0, 1}: the 0
    const QuantizationError e = reconstruction_error(zeros.data(), z);
    EXPECT_EQ(e.relative_frobenius, 0.0);
    EXPECT_EQ(e.max_abs, 0.0);
    EXPECT_EQ(e.rmse, 0.0);
    EXPECT_TRUE(std::isinf(e.sqnr_db) && e.sqnr_db > 0);
  }
}

TEST(Quantize, GroupSizeZeroMeansK) {
  const std::vector<float> w = gaussian(3, 320, 13);
  const QuantizedWeight a = quantize(w.data(), 3, 320, opts(4, 0));
  const QuantizedWeight b = quantize(w.data(), 3, 320, opts(4, 320));
  EXPECT_EQ(a.group_size, 320);
  EXPECT_EQ(a.scales.size(), 3u);
  EXPECT_EQ(a.codes, b.codes);
  EXPECT_EQ(a.scales, b.scales);
}

TEST(Quantize, CustomTable) {
  const std::vector<float> w = gaussian(4, 128, 14);
  QuantizeOptions o = opts(3, 64);
  o.table = "this name is ignored";
  o.custom_table = std::vector<float>{-1.0f, -0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f, 1.0f};
  const QuantizedWeight q = quantize(w.data(), 4, 128, o);
  EXPECT_EQ(q.table_name, "custom");
  for (int c = 0; c < 8; ++c) EXPECT_EQ(q.table_value(c), (*o.custom_table)[c]);
  expect_nearest_codes(w, q);
}

// In fp16 the scale must stay below 65504; bf16 has float's range.
TEST(Quantize, ScaleOverflow) {
  std::vector<float> w(2 * 64, 1.0f);
  w[64 + 40] = 1e6f;
  expect_error([&] { quantize(w.data(), 2, 64, opts(4, 32, "nf", DType::f16)); }, "w",
               "absmax 1000000.000000 in the group starting at row 1, column 32");
  EXPECT_NO_THROW(quantize(w.data(), 2, 64, opts(4, 32, "nf", DType::bf16)));
  // int4's max|table| is 7: 1e5 / 7 fits fp16.
  w[64 + 40] = 1e5f;
  EXPECT_NO_THROW(quantize(w.data(), 2, 64, opts(4, 32, "int", DType::f16)));
}

TEST(Quantize, NonFiniteWeights) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> w = gaussian(2100, 64, 15);  // several parallel chunks
    w[1500 * 64 + 17] = bad;
    w[1600 * 64 + 0] = bad;  // later ones, in the same chunk and in another, are not reported
    w[2050 * 64 + 3] = bad;
    QuantizeOptions o = opts(4, 64);
    o.threads = 3;
    expect_error([&] { quantize(w.data(), 2100, 64, o); }, "w", "at row 1500, column 17");
  }
}

TEST(Quantize, BadArguments) {
  const std::vector<float> w = gaussian(4, 128, 16);
  const float* p = w.data();
  auto with = [](auto change) {
    QuantizeOptions o = opts(4, 64);
    change(o);
    return o;
  };
  expect_error([&] { quantize(nullptr, 4, 128, opts(4, 64)); }, "w", "null");
  expect_error([&] { quantize(p, 0, 128, opts(4, 64)); }, "n", "got 0");
  expect_error([&] { quantize(p, -1, 128, opts(4, 64)); }, "n", "got -1");
  expect_error([&] { quantize(p, 4, 0, opts(4, 64)); }, "k", "got 0");
  expect_error([&] { quantize(p, std::numeric_limits<int64_t>::max() / 64, 128, opts(4, 64)); }, "n",
               "x 128");
  expect_error([&] { quantize(p, 4, 128, opts(5, 64)); }, "bits", "got 5");
  expect_error([&] { quantize(p, 4, 128, opts(1, 64)); }, "bits", "got 1");
  expect_error([&] { quantize(p, 4, 128, opts(4, 48)); }, "group_size", "got 48");
  expect_error([&] { quantize(p, 4, 128, opts(4, 256)); }, "group_size", "got 256");
  expect_error([&] { quantize(p, 4, 128, opts(4, -1)); }, "group_size", "got -1");
  expect_error([&] { quantize(p, 4, 120, opts(4, 0)); }, "k", "got 120");  // per row: K % 16
  expect_error([&] { quantize(p, 4, 128, opts(4, 64, "nf", static_cast<DType>(5))); }, "dtype",
               "enum value 5");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) { o.scale_search = static_cast<ScaleSearch>(9); }));
      },
      "scale_search", "enum value 9");
  expect_error([&] { quantize(p, 4, 128, with([](QuantizeOptions& o) { o.learn_iterations = -1; })); },
               "learn_iterations", "got -1");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) {
                   o.learn_table = true;
                   o.learn_iterations = 0;
                 }));
      },
      "learn_iterations", "got 0");
  expect_error([&] { quantize(p, 4, 128, with([](QuantizeOptions& o) { o.threads = -2; })); }, "threads",
               "got -2");
  expect_error([&] { quantize(p, 4, 128, opts(4, 64, "nf7")); }, "table", "'nf7'");
  expect_error([&] { quantize(p, 4, 128, opts(4, 64, "gauss")); }, "table", "'gauss'");
  expect_error([&] { quantize(p, 4, 128, opts(3, 64, "nf4")); }, "bits", "got 3");
  expect_error([&] { quantize(p, 4, 128, opts(3, 64, "fp4")); }, "bits", "got 3");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) { o.custom_table = std::vector<float>(8, 1.0f); }));
      },
      "custom_table", "8 values");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) { o.custom_table = std::vector<float>(3, 1.0f); }));
      },
      "custom_table", "3 values");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) {
                   o.custom_table = std::vector<float>(16, 1.0f);
                   (*o.custom_table)[4] = std::numeric_limits<float>::quiet_NaN();
                 }));
      },
      "custom_table", "index 4");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) {
                   o.dtype = DType::f16;
                   o.custom_table = std::vector<float>(16, 1.0f);
                   (*o.custom_table)[9] = 1e5f;  // finite in float, inf in fp16
                 }));
      },
      "custom_table", "index 9");
  expect_error(
      [&] {
        quantize(p, 4, 128, with([](QuantizeOptions& o) {
                   o.dtype = DType::f16;
                   o.custom_table = std::vector<float>(16, 1e-9f);  // all round to 0 in fp16
                 }));
      },
      "custom_table", "round to 0");
}

TEST(ReconstructionError, MatchesDefinition) {
  const std::vector<float> w = gaussian(5, 64, 17);
  const QuantizedWeight q = quantize(w.data(), 5, 64, opts(2, 32));
  double ref = 0, err = 0, max_abs = 0;
  for (int64_t r = 0; r < 5; ++r) {
    for (int64_t c = 0; c < 64; ++c) {
      const double x = w[r * 64 + c], d = x - q.dequant(r, c);
      ref += x * x;
      err += d * d;
      max_abs = std::max(max_abs, std::fabs(d));
    }
  }
  const QuantizationError e = reconstruction_error(w.data(), q);
  EXPECT_NEAR(e.relative_frobenius, std::sqrt(err / ref), 1e-12);
  EXPECT_EQ(e.max_abs, max_abs);
  EXPECT_NEAR(e.rmse, std::sqrt(err / (5 * 64)), 1e-12);
  EXPECT_NEAR(e.sqnr_db, 10 * std::log10(ref / err), 1e-9);
  EXPECT_NEAR(e.sqnr_db, -20 * std::log10(e.relative_frobenius), 1e-9);
}

TEST(ReconstructionError, BadArguments) {
  const std::vector<float> w = gaussian(2, 64, 18);
  QuantizedWeight q = quantize(w.data(), 2, 64, opts(4, 32));
  expect_error([&] { reconstruction_error(nullptr, q); }, "w", "null");
  std::vector<float> bad = w;
  bad[70] = std::numeric_limits<float>::infinity();
  expect_error([&] { reconstruction_error(bad.data(), q); }, "w", "at row 1, column 6");
  q.codes.resize(3);
  expect_error([&] { reconstruction_error(w.data(), q); }, "QuantizedWeight.codes", "got 3");
}

}  // namespace
}  // namespace lutmm
