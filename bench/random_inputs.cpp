#include "random_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "lutmm/error.hpp"
#include "util/parallel.hpp"

namespace lutmm::bench {
namespace {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Stream purposes: each array of one seed draws from its own family of streams.
enum Purpose : uint64_t { kCodes = 1, kTable = 2, kScales = 3, kValues = 4 };

// Rows per parallel work item: large enough to amortise the scheduling, small enough to balance.
constexpr int64_t kRowsPerItem = 64;

// One N(0, sigma) draw rounded to the dtype, redrawn until it is not zero (nor inf: sigma is small).
uint16_t nonzero_normal_bits(Rng& rng, DType dtype, double sigma) {
  for (;;) {
    const uint16_t bits = float_to_bits(static_cast<float>(rng.normal() * sigma), dtype);
    const float v = bits_to_float(bits, dtype);
    if (v != 0.0f && std::isfinite(v)) return bits;
  }
}

std::vector<uint16_t> random_table(int bits, DType dtype, uint64_t seed, TableKind kind) {
  const int entries = 1 << bits;
  std::vector<uint16_t> table(entries);
  if (kind == TableKind::nf) {
    const Table t = nf_table(bits);
    for (int i = 0; i < entries; ++i) table[i] = float_to_bits(t.values[i], dtype);
    return table;
  }
  // Sorted N(0,1) samples; a draw that collides with an earlier one after rounding is replaced, so the
  // 2^bits entries are distinct values (a table with repeats would hide code mix-ups in the kernel).
  Rng rng(seed, kTable, 0);
  std::vector<float> values;
  while (static_cast<int>(values.size()) < entries) {
    const float v = round_to(static_cast<float>(rng.normal()), dtype);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  for (int i = 0; i < entries; ++i) table[i] = float_to_bits(values[i], dtype);
  return table;
}

}  // namespace

Rng::Rng(uint64_t seed, uint64_t purpose, uint64_t index)
    : state_(mix64(seed ^ mix64(purpose * 0x9e3779b97f4a7c15ull + mix64(index + 0x632be59bd9b4e019ull)))) {}

uint64_t Rng::next_u64() {
  state_ += 0x9e3779b97f4a7c15ull;
  return mix64(state_);
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  for (;;) {
    const double u = 2.0 * uniform() - 1.0;
    const double v = 2.0 * uniform() - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

QuantizedWeight random_quantized_weight(int64_t n, int64_t k, int bits, int group_size, DType dtype, uint64_t seed,
                                        TableKind table, double scale_sigma) {
  if (!(scale_sigma > 0.0) || !std::isfinite(scale_sigma)) {
    throw_argument_error("scale_sigma", "a positive finite standard deviation", std::to_string(scale_sigma));
  }
  // Shape checks first, before anything large is allocated.
  check_bits(bits);
  check_group_size(group_size, k);
  if (n <= 0) throw_argument_error("n", "a positive row count", std::to_string(n));
  if (n > std::numeric_limits<int64_t>::max() / k) {
    throw_argument_error("n", "n * k to fit in int64", std::to_string(n) + " x " + std::to_string(k));
  }

  QuantizedWeight w;
  w.n = n;
  w.k = k;
  w.bits = bits;
  w.group_size = group_size;
  w.dtype = dtype;
  w.table_name = table == TableKind::nf ? "nf" + std::to_string(bits) : "random";
  w.table = random_table(bits, dtype, seed, table);
  w.codes.resize(static_cast<size_t>(n * k));
  w.scales.resize(static_cast<size_t>(n * w.groups()));
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  const int64_t groups = w.groups();
  const int64_t items = (n + kRowsPerItem - 1) / kRowsPerItem;
  detail::parallel_for(items, 0, [&](int, int64_t item) {
    const int64_t row_end = std::min(n, (item + 1) * kRowsPerItem);
    for (int64_t row = item * kRowsPerItem; row < row_end; ++row) {
      Rng code_rng(seed, kCodes, static_cast<uint64_t>(row));
      uint8_t* codes = w.codes.data() + row * k;
      // Eight codes per 64-bit draw, one per byte.
      for (int64_t c = 0; c < k; c += 8) {
        const uint64_t r = code_rng.next_u64();
        const int64_t end = std::min<int64_t>(8, k - c);
        for (int64_t j = 0; j < end; ++j) codes[c + j] = static_cast<uint8_t>((r >> (8 * j)) & mask);
      }
      Rng scale_rng(seed, kScales, static_cast<uint64_t>(row));
      for (int64_t g = 0; g < groups; ++g) w.scales[row * groups + g] = nonzero_normal_bits(scale_rng, dtype, scale_sigma);
    }
  });
  w.validate();
  return w;
}

std::vector<uint16_t> random_values(int64_t count, DType dtype, uint64_t seed, double sigma) {
  if (count < 0) throw_argument_error("count", "a non-negative value count", std::to_string(count));
  if (!(sigma > 0.0) || !std::isfinite(sigma)) {
    throw_argument_error("sigma", "a positive finite standard deviation", std::to_string(sigma));
  }
  std::vector<uint16_t> values(static_cast<size_t>(count));
  // Streams of 4096 values, so the result does not depend on the thread count.
  constexpr int64_t kChunk = 4096;
  const int64_t items = (count + kChunk - 1) / kChunk;
  detail::parallel_for(items, 0, [&](int, int64_t item) {
    Rng rng(seed, kValues, static_cast<uint64_t>(item));
    const int64_t end = std::min(count, (item + 1) * kChunk);
    for (int64_t i = item * kChunk; i < end; ++i) values[i] = nonzero_normal_bits(rng, dtype, sigma);
  });
  return values;
}

namespace {

// Calls store(row, col, table_value * scale as double) for every element, rows in parallel; w is valid.
template <typename Store>
void for_each_dequantized(const QuantizedWeight& w, Store&& store) {
  const int entries = 1 << w.bits;
  double table[16];
  for (int c = 0; c < entries; ++c) table[c] = w.table_value(c);
  const int64_t items = (w.n + kRowsPerItem - 1) / kRowsPerItem;
  detail::parallel_for(items, 0, [&](int, int64_t item) {
    const int64_t row_end = std::min(w.n, (item + 1) * kRowsPerItem);
    for (int64_t row = item * kRowsPerItem; row < row_end; ++row) {
      const uint8_t* codes = w.codes.data() + row * w.k;
      for (int64_t c0 = 0; c0 < w.k; c0 += w.group_size) {
        const double scale = w.scale(row, c0);
        for (int64_t c = c0; c < c0 + w.group_size; ++c) store(row, c, table[codes[c]] * scale);
      }
    }
  });
}

}  // namespace

std::vector<double> dequantize_f64(const QuantizedWeight& w) {
  w.validate();
  std::vector<double> out(static_cast<size_t>(w.n * w.k));
  for_each_dequantized(w, [&](int64_t row, int64_t col, double v) { out[row * w.k + col] = v; });
  return out;
}

std::vector<uint16_t> dequantize_to_dtype(const QuantizedWeight& w) {
  w.validate();
  std::vector<uint16_t> out(static_cast<size_t>(w.n * w.k));
  // table * scale is exact in float (8-11 significant bits each), so one rounding to the dtype remains.
  for_each_dequantized(w, [&](int64_t row, int64_t col, double v) {
    out[row * w.k + col] = float_to_bits(static_cast<float>(v), w.dtype);
  });
  return out;
}

}  // namespace lutmm::bench
