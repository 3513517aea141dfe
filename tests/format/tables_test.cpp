// The built-in tables, the NF construction, custom tables and table_by_name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "format/normal_float.hpp"
#include "format/test_util.hpp"
#include "lutmm/error.hpp"
#include "lutmm/format.hpp"

namespace lutmm {
namespace {

// QLoRA / bitsandbytes NF4 levels, as published.
const std::vector<float> kNf4 = {-1.0f,
                                 -0.6961928009986877f,
                                 -0.5250730514526367f,
                                 -0.39491748809814453f,
                                 -0.28444138169288635f,
                                 -0.18477343022823334f,
                                 -0.09105003625154495f,
                                 0.0f,
                                 0.07958029955625534f,
                                 0.16093020141124725f,
                                 0.24611230194568634f,
                                 0.33791524171829224f,
                                 0.44070982933044434f,
                                 0.5626170039176941f,
                                 0.7229568362236023f,
                                 1.0f};

TEST(Tables, Nf4IsThePublishedLevels) {
  const Table t = nf_table(4);
  EXPECT_EQ(t.name, "nf4");
  EXPECT_EQ(t.bits, 4);
  EXPECT_EQ(t.values, kNf4);  // bit-exact
}

TEST(Tables, NormalQuantile) {
  EXPECT_NEAR(detail::normal_quantile(0.975), 1.959963984540054, 1e-13);
  EXPECT_NEAR(detail::normal_quantile(0.025), -1.959963984540054, 1e-13);
  EXPECT_EQ(detail::normal_quantile(0.5), 0.0);
  EXPECT_NEAR(detail::normal_quantile(0.8413447460685429), 1.0, 1e-12);
  // Phi(quantile(p)) == p across the body and both tails (all three branches of the start).
  for (double p : {1e-10, 1e-6, 0.001, 0.02, 0.0243, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 0.98, 0.999, 1 - 1e-7}) {
    const double x = detail::normal_quantile(p);
    const double phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
    EXPECT_NEAR(phi / p, 1.0, 1e-12) << "p=" << p;
  }
  for (double bad : {0.0, 1.0, -0.5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(detail::normal_quantile(bad), Error) << bad;
  }
}

// The construction reproduces the published NF4 (bitsandbytes computes its linspace in float32, hence
// not bit-exact), with bitsandbytes' offset constant.
TEST(Tables, NfConstructionReproducesNf4) {
  EXPECT_NEAR(detail::normal_float_offset(4), 0.9677083, 1e-7);
  const std::vector<double> built = detail::normal_float_levels(4);
  ASSERT_EQ(built.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(built[i], kNf4[i], 1e-6) << "level " << i;
}

TEST(Tables, Nf3AndNf2) {
  // Values of the same construction, computed independently (Python statistics.NormalDist).
  const std::vector<double> nf3 = {-1.0,
                                   -0.535022708485538,
                                   -0.24693143181157523,
                                   0.0,
                                   0.18333748033548755,
                                   0.3819939543209139,
                                   0.6229857417143424,
                                   1.0};
  const std::vector<double> nf2 = {-1.0, 0.0, 0.43581816458311545, 1.0};
  for (int bits : {2, 3}) {
    const Table t = nf_table(bits);
    const std::vector<double>& want = bits == 3 ? nf3 : nf2;
    EXPECT_EQ(t.name, "nf" + std::to_string(bits));
    ASSERT_EQ(t.values.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.values[i], want[i], 1e-6) << bits << " " << i;
    // Asymmetric: 2^(b-1) positive levels, 2^(b-1) - 1 negative ones, one exact zero.
    const auto pos = std::count_if(t.values.begin(), t.values.end(), [](float v) { return v > 0; });
    const auto neg = std::count_if(t.values.begin(), t.values.end(), [](float v) { return v < 0; });
    EXPECT_EQ(pos, 1 << (bits - 1));
    EXPECT_EQ(neg, (1 << (bits - 1)) - 1);
    EXPECT_EQ(std::count(t.values.begin(), t.values.end(), 0.0f), 1);
  }
}

TEST(Tables, IntTables) {
  EXPECT_EQ(int_table(4, true).values,
            (std::vector<float>{-7, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(int_table(4, false).values,
            (std::vector<float>{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(int_table(3, true).values, (std::vector<float>{-3, -3, -2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(int_table(3, false).values, (std::vector<float>{-4, -3, -2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(int_table(2, true).values, (std::vector<float>{-1, -1, 0, 1}));
  EXPECT_EQ(int_table(2, false).values, (std::vector<float>{-2, -1, 0, 1}));
  EXPECT_EQ(int_table(4, true).name, "int4");
  EXPECT_EQ(int_table(3, false).name, "uint3");
}

TEST(Tables, Fp4E2m1) {
  const Table t = fp4_e2m1_table();
  EXPECT_EQ(t.name, "fp4_e2m1");
  EXPECT_EQ(t.bits, 4);
  EXPECT_EQ(t.values,
            (std::vector<float>{-6, -4, -3, -2, -1.5f, -1, -0.5f, -0.0f, 0, 0.5f, 1, 1.5f, 2, 3, 4, 6}));
  EXPECT_TRUE(std::signbit(t.values[7]));
  EXPECT_FALSE(std::signbit(t.values[8]));
}

TEST(Tables, EveryBuiltinIsSizedAscendingAndFinite) {
  for (const std::string& name : builtin_table_names()) {
    for (int bits : {2, 3, 4}) {
      Table t;
      try {
        t = table_by_name(name, bits);
      } catch (const Error&) {
        continue;  // a name that fixes another bit width (nf4 with bits 3): checked below
      }
      ASSERT_EQ(t.bits, bits) << name;
      ASSERT_EQ(t.values.size(), size_t{1} << bits) << name;
      EXPECT_TRUE(std::is_sorted(t.values.begin(), t.values.end())) << name;
      for (float v : t.values) EXPECT_TRUE(std::isfinite(v)) << name;
      float max_abs = 0.0f;
      for (float v : t.values) max_abs = std::max(max_abs, std::fabs(v));
      EXPECT_GT(max_abs, 0.0f) << name;
    }
    // Every listed name resolves with bits = 4 or with the bits it names.
    EXPECT_NO_THROW(table_by_name(name, name.back() >= '2' && name.back() <= '3' ? name.back() - '0' : 4))
        << name;
  }
}

TEST(Tables, ByName) {
  EXPECT_EQ(table_by_name("nf", 3).values, nf_table(3).values);
  EXPECT_EQ(table_by_name("nf4", 4).values, kNf4);
  EXPECT_EQ(table_by_name("nf2", 0).values, nf_table(2).values);  // 0: bits from the name
  EXPECT_EQ(table_by_name("NF4", 0).name, "nf4");                 // case-insensitive
  EXPECT_EQ(table_by_name("int", 2).values, int_table(2, true).values);
  EXPECT_EQ(table_by_name("int3", 3).values, int_table(3, true).values);
  EXPECT_EQ(table_by_name("int_asym", 4).values, int_table(4, false).values);
  EXPECT_EQ(table_by_name("uint", 3).values, int_table(3, false).values);
  EXPECT_EQ(table_by_name("uint4", 0).values, int_table(4, false).values);
  EXPECT_EQ(table_by_name("fp4", 4).values, fp4_e2m1_table().values);
  EXPECT_EQ(table_by_name("fp4_e2m1", 0).values, fp4_e2m1_table().values);
}

TEST(Tables, ByNameErrors) {
  expect_error([] { table_by_name("nf4", 3); }, "bits", "got 3");
  expect_error([] { table_by_name("fp4", 3); }, "bits", "got 3");
  expect_error([] { table_by_name("fp4_e2m1", 2); }, "bits", "got 2");
  expect_error([] { table_by_name("nf", 5); }, "bits", "got 5");
  expect_error([] { table_by_name("nf", 0); }, "bits", "got 0");
  expect_error([] { table_by_name("foo", 4); }, "table", "'foo'");
  expect_error([] { table_by_name("", 4); }, "table", "''");
  expect_error([] { table_by_name("nf5", 0); }, "table", "'nf5'");
  expect_error([] { table_by_name("int1", 0); }, "table", "'int1'");
  expect_error([] { table_by_name("custom", 4); }, "table", "'custom'");
}

TEST(Tables, BuiltinsRejectBadBits) {
  for (int bits : {0, 1, 5, 8, -4}) {
    expect_error([&] { nf_table(bits); }, "bits", "got " + std::to_string(bits));
    expect_error([&] { int_table(bits, true); }, "bits", "got " + std::to_string(bits));
  }
}

TEST(Tables, Custom) {
  const Table t = custom_table({3, -1, 2, 0.5f}, "mine");
  EXPECT_EQ(t.bits, 2);
  EXPECT_EQ(t.name, "mine");
  EXPECT_EQ(t.values, (std::vector<float>{3, -1, 2, 0.5f}));  // kept as given, order included
  EXPECT_EQ(custom_table(std::vector<float>(8, 1.0f)).bits, 3);
  EXPECT_EQ(custom_table(std::vector<float>(16, -1.0f)).name, "custom");

  expect_error([] { custom_table(std::vector<float>(5, 1.0f)); }, "values", "5 values");
  expect_error([] { custom_table({}); }, "values", "0 values");
  expect_error([] { custom_table(std::vector<float>(32, 1.0f)); }, "values", "32 values");
  expect_error([] { custom_table({1, 2, std::numeric_limits<float>::quiet_NaN(), 4}); }, "values", "index 2");
  expect_error([] { custom_table({1, std::numeric_limits<float>::infinity(), 3, 4}); }, "values", "index 1");
  expect_error([] { custom_table({0, 0, -0.0f, 0}); }, "values", "all zeros");
  expect_error([] { custom_table({1, 2, 3, 4}, ""); }, "name", "''");
}

}  // namespace
}  // namespace lutmm
