// The built-in lookup tables and table lookup by name (docs/FORMAT.md, "Tables").
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <numbers>
#include <string>

#include "format/internal.hpp"
#include "format/normal_float.hpp"
#include "lutmm/error.hpp"
#include "lutmm/format.hpp"

namespace lutmm {

namespace detail {

double normal_quantile(double p) {
  // Acklam's rational approximation (relative error ~1e-9) as a start, then two Halley steps on
  // Phi(x) - p with Phi from erfc, which brings it to double precision.
  static constexpr std::array<double, 6> a = {-3.969683028665376e+01, 2.209460984245205e+02,
                                              -2.759285104469687e+02, 1.383577518672690e+02,
                                              -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr std::array<double, 5> b = {-5.447609879822406e+01, 1.615858368580409e+02,
                                              -1.556989798598866e+02, 6.680131188771972e+01,
                                              -1.328068155288572e+01};
  static constexpr std::array<double, 6> c = {-7.784894002430293e-03, -3.223964580411365e-01,
                                              -2.400758277161838e+00, -2.549732539343734e+00,
                                              4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr std::array<double, 4> d = {7.784695709041462e-03, 3.224671290700398e-01,
                                              2.445134137142996e+00, 3.754408661907416e+00};
  if (!(p > 0.0 && p < 1.0)) throw_argument_error("p", "a probability in (0, 1)", std::to_string(p));
  constexpr double p_low = 0.02425;
  double x;
  if (p < p_low) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - p_low) {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    const double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double sqrt_2pi = std::sqrt(2.0 * std::numbers::pi);
  for (int step = 0; step < 2; ++step) {
    const double e = 0.5 * std::erfc(-x / std::numbers::sqrt2) - p;
    const double u = e * sqrt_2pi * std::exp(0.5 * x * x);
    x -= u / (1.0 + 0.5 * x * u);
  }
  return x;
}

double normal_float_offset(int bits) {
  const double levels = std::ldexp(1.0, bits);
  return 1.0 - 0.5 * (1.0 / (2.0 * (levels - 1.0)) + 1.0 / (2.0 * levels));
}

std::vector<double> normal_float_levels(int bits) {
  const double offset = normal_float_offset(bits);
  const int positive = 1 << (bits - 1);  // including the top level, which becomes 1.0
  const int negative = positive - 1;     // including the bottom level, which becomes -1.0
  // linspace(offset, 0.5, count + 1) without its last point (0.5 would be the level 0, added once).
  auto quantiles = [offset](int count) {
    std::vector<double> q(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) q[i] = normal_quantile(offset + (0.5 - offset) * i / count);
    return q;
  };
  std::vector<double> levels;
  for (double v : quantiles(positive)) levels.push_back(v);
  for (double v : quantiles(negative)) levels.push_back(-v);
  levels.push_back(0.0);
  std::sort(levels.begin(), levels.end());
  // Both halves start at the same quantile, so the largest magnitude on each side is the same and the
  // table spans exactly [-1, 1].
  const double top = levels.back();
  for (double& v : levels) v /= top;
  levels.front() = -1.0;
  levels.back() = 1.0;
  return levels;
}

}  // namespace detail

namespace {

// The NF4 levels as published by QLoRA / bitsandbytes (float32). detail::normal_float_levels(4) rebuilds
// them to ~1e-7 (bitsandbytes evaluates its linspace in float32); the published constants are what
// every NF4 checkpoint is quantized against, so nf_table(4) returns them bit for bit.
constexpr std::array<float, 16> kPublishedNf4 = {
    -1.0f,
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
    1.0f,
};

std::string lower(std::string_view text) {
  std::string s(text);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string quoted(std::string_view text) { return std::string("'").append(text).append("'"); }

}  // namespace

int detail::check_table_values(const std::vector<float>& values, std::string_view argument) {
  int bits = 0;
  if (values.size() == 4) bits = 2;
  if (values.size() == 8) bits = 3;
  if (values.size() == 16) bits = 4;
  if (bits == 0) {
    throw_argument_error(argument, "4, 8 or 16 values (2^bits for bits 2, 3, 4)",
                         std::to_string(values.size()) + " values");
  }
  float max_abs = 0.0f;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw_argument_error(argument, "finite values",
                           std::to_string(values[i]) + " at index " + std::to_string(i));
    }
    max_abs = std::max(max_abs, std::fabs(values[i]));
  }
  // Scales are absmax / max|table|: a table of zeros cannot represent anything.
  if (max_abs == 0.0f) throw_argument_error(argument, "at least one nonzero value", "all zeros");
  return bits;
}

Table nf_table(int bits) {
  check_bits(bits);
  Table t;
  t.name = "nf" + std::to_string(bits);
  t.bits = bits;
  if (bits == 4) {
    t.values.assign(kPublishedNf4.begin(), kPublishedNf4.end());
  } else {
    for (double v : detail::normal_float_levels(bits)) t.values.push_back(static_cast<float>(v));
  }
  return t;
}

Table int_table(int bits, bool symmetric) {
  check_bits(bits);
  const int half = 1 << (bits - 1);
  Table t;
  t.bits = bits;
  t.values.resize(static_cast<size_t>(1) << bits);
  // Both tables are value(c) = c - 2^(b-1): the familiar unsigned code with zero point 2^(b-1). The
  // symmetric one clamps code 0 to -(2^(b-1) - 1), a duplicate of code 1, so max|table| = 2^(b-1) - 1
  // and absmax scaling reaches both +absmax and -absmax.
  for (int c = 0; c < (1 << bits); ++c) t.values[c] = static_cast<float>(c - half);
  if (symmetric) {
    t.values[0] = static_cast<float>(1 - half);
    t.name = "int" + std::to_string(bits);
  } else {
    t.name = "uint" + std::to_string(bits);
  }
  return t;
}

Table fp4_e2m1_table() {
  // Ascending, so the index is NOT the e2m1 bit pattern: index i holds e2m1 code
  // (i < 8 ? 0b1000 | (7 - i) : i - 8), i.e. -6 ... -0.5, -0, +0, 0.5 ... 6.
  return Table{"fp4_e2m1",
               4,
               {-6.0f, -4.0f, -3.0f, -2.0f, -1.5f, -1.0f, -0.5f, -0.0f, 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f,
                4.0f, 6.0f}};
}

Table custom_table(std::vector<float> values, std::string name) {
  if (name.empty()) throw_argument_error("name", "a non-empty table name", "''");
  const int bits = detail::check_table_values(values, "values");
  return Table{std::move(name), bits, std::move(values)};
}

Table table_by_name(std::string_view name, int bits) {
  const std::string key = lower(name);
  const bool fp4 = key == "fp4" || key == "fp4_e2m1";
  // Split "<family><digit>" (nf4, int3, uint2); a name without its digit takes `bits`.
  std::string family = key;
  int named_bits = fp4 ? 4 : 0;
  if (!fp4 && key.size() >= 2 && std::isdigit(static_cast<unsigned char>(key.back())) &&
      !std::isdigit(static_cast<unsigned char>(key[key.size() - 2]))) {
    family = key.substr(0, key.size() - 1);
    named_bits = key.back() - '0';
  }
  const bool known = fp4 || family == "nf" || family == "int" || family == "uint" || key == "int_asym";
  if (!known) {
    std::string expected = "one of";
    for (const std::string& n : builtin_table_names()) expected += " " + n;
    throw_argument_error("table", expected, quoted(name));
  }
  if (named_bits != 0) {
    if (named_bits < 2 || named_bits > 4) {
      throw_argument_error("table", "a table of 2, 3 or 4 bits", quoted(name));
    }
    if (bits != 0 && bits != named_bits) {
      throw_argument_error("bits", std::to_string(named_bits) + " (or 0) for table " + quoted(name),
                           std::to_string(bits));
    }
    bits = named_bits;
  } else {
    check_bits(bits);
  }
  if (family == "nf") return nf_table(bits);
  if (family == "int") return int_table(bits, true);
  if (family == "uint" || key == "int_asym") return int_table(bits, false);
  return fp4_e2m1_table();
}

std::vector<std::string> builtin_table_names() {
  return {"nf",   "nf2",   "nf3",   "nf4",   "int",      "int2", "int3",    "int4",
          "uint", "uint2", "uint3", "uint4", "int_asym", "fp4",  "fp4_e2m1"};
}

}  // namespace lutmm
