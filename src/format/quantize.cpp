// The CPU quantizer: dense fp32 W[n,k] -> QuantizedWeight (docs/FORMAT.md, "Quantizer").
//
// Order of decisions, so that every stored value is the one the codes were chosen against:
//   1. the table is rounded to the dtype;
//   2. per group, the scale is chosen (absmax, or the best of a grid for ScaleSearch::mse) and rounded
//      to the dtype; every candidate is judged with the rounded scale and the rounded table;
//   3. with learn_table, Lloyd iterations move the table with the scales fixed; the learned table is
//      rounded to the dtype and kept only if it beats the initial one;
//   4. codes are the nearest rounded table value times the rounded scale.
//
// Work is cut into chunks of whole rows whose size depends only on K, so results (including the Lloyd
// sums, reduced in chunk order) are bit-identical for any thread count.
#include "lutmm/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "format/internal.hpp"
#include "lutmm/error.hpp"

namespace lutmm {

namespace {

constexpr int kBlock = 256;                  // elements classified at a time (stack arrays)
constexpr int64_t kChunkElements = 1 << 16;  // about this many weights per parallel chunk
constexpr int kMaxLevels = 16;

// The mse scale grid: factor f = 0.50, 0.52, ..., 1.20 of the absmax scale (36 points, 1.00 included,
// so the search can never end worse than absmax).
constexpr int kGridPoints = 36;
constexpr int kGridAbsmax = 25;  // index of f = 1.00
double grid_factor(int i) { return (50.0 + 2.0 * i) / 100.0; }

// A table as the quantizer classifies against it: distinct values ascending, the code each one is
// stored as (the lowest code holding that value, so duplicates and -0/+0 resolve deterministically),
// and the midpoints between neighbours.
struct Levels {
  int count = 0;
  float level[kMaxLevels] = {};
  uint8_t code[kMaxLevels] = {};
  double mid[kMaxLevels] = {};  // mid[j] = (level[j] + level[j+1]) / 2, exact in double
  uint8_t zero_code = 0;        // used where the scale is 0: the code of the smallest |value|
};

Levels make_levels(const std::vector<float>& values) {
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return values[a] < values[b]; });
  Levels L;
  for (int c : order) {
    if (L.count > 0 && values[c] == L.level[L.count - 1]) continue;  // -0 == +0: one level
    L.level[L.count] = values[c];
    L.code[L.count] = static_cast<uint8_t>(c);
    ++L.count;
  }
  for (int j = 0; j + 1 < L.count; ++j) {
    L.mid[j] = (static_cast<double>(L.level[j]) + static_cast<double>(L.level[j + 1])) * 0.5;
  }
  int nearest_zero = 0;
  for (int j = 1; j < L.count; ++j) {
    if (std::fabs(L.level[j]) < std::fabs(L.level[nearest_zero])) nearest_zero = j;
  }
  L.zero_code = L.code[nearest_zero];
  return L;
}

// The per-group kernels below are compiled twice where GCC can dispatch at load time (x86-64 ELF): for
// the baseline ISA and for AVX2, picked by the running CPU. The AVX2 clone does not enable FMA, and
// every floating-point sum keeps its source order, so both clones give bit-identical results.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define LUTMM_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LUTMM_KERNEL_CLONES
#endif

// A group's view of the table for one scale s > 0, for T = 2^bits - 1 thresholds (a fixed count, so
// the classification loops unroll and vectorize; a table with duplicate values has fewer distinct
// levels, and the missing thresholds are +inf, which no finite weight exceeds).
//
// thr[j] is the largest float <= mid[j] * s, so for a float w
//   w > thr[j]  <=>  w > mid[j] * s  <=>  w is strictly nearer level[j+1] * s than level[j] * s,
// and the number of thresholds below w is the index of its nearest level (a tie goes to the smaller
// level). mid[j] * s carries at most 25 + 24 significant bits, so the double product is exact.
template <int T>
struct ScaledLevels {
  float thr[T];
  double dq[T + 1];  // level[j] * s, exact: what the reference dequantizes to
  float base;        // for ranking only: level[0] * s and the steps between neighbours, in float
  float step[T];

  ScaledLevels(const Levels& L, float s) {
    const double sd = static_cast<double>(s);
    for (int j = 0; j < T; ++j) {
      thr[j] = std::numeric_limits<float>::infinity();
      step[j] = 0.0f;
    }
    for (int j = 0; j + 1 < L.count; ++j) {
      const double t = L.mid[j] * sd;
      float f = static_cast<float>(t);
      if (static_cast<double>(f) > t) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
      thr[j] = f;
    }
    for (int j = 0; j < L.count; ++j) dq[j] = static_cast<double>(L.level[j]) * sd;
    for (int j = L.count; j <= T; ++j) dq[j] = dq[L.count - 1];
    base = static_cast<float>(dq[0]);
    for (int j = 0; j + 1 < L.count; ++j) step[j] = static_cast<float>(dq[j + 1] - dq[j]);
  }
};

// pos[e] = index of the nearest level to w[e]: count of thresholds below it. Element-outer with the
// threshold loop unrolled, so the compiler vectorizes across elements (compare, subtract the mask).
template <int T>
void classify(const float* w, int len, const ScaledLevels<T>& S, int32_t* pos) {
  float thr[T];
  for (int j = 0; j < T; ++j) thr[j] = S.thr[j];
  for (int e = 0; e < len; ++e) {
    int32_t p = 0;
#pragma GCC unroll 16
    for (int j = 0; j < T; ++j) p += w[e] > thr[j] ? 1 : 0;
    pos[e] = p;
  }
}

// Quantizes one group of `len` weights with scale s: writes codes (kCodes) and returns the squared
// error sum (w - level * s)^2 in double, as the reference dequantizes (kError; else 0).
template <int T, bool kCodes, bool kError>
LUTMM_KERNEL_CLONES double quantize_group(const float* w, int64_t len, float s, const Levels& L,
                                          uint8_t* codes) {
  double err = 0.0;
  if (s == 0.0f) {
    if constexpr (kError) {
      for (int64_t e = 0; e < len; ++e) err += static_cast<double>(w[e]) * static_cast<double>(w[e]);
    }
    if constexpr (kCodes) std::memset(codes, L.zero_code, static_cast<size_t>(len));
    return err;
  }
  const ScaledLevels<T> S(L, s);
  int32_t pos[kBlock];
  for (int64_t b = 0; b < len; b += kBlock) {
    const int bl = static_cast<int>(std::min<int64_t>(kBlock, len - b));
    classify<T>(w + b, bl, S, pos);
    if constexpr (kError) {
      for (int e = 0; e < bl; ++e) {
        const double d = static_cast<double>(w[b + e]) - S.dq[pos[e]];
        err += d * d;
      }
    }
    if constexpr (kCodes) {
      for (int e = 0; e < bl; ++e) codes[b + e] = L.code[pos[e]];
    }
  }
  return err;
}

template <int T>
double group_error(const float* w, int64_t len, float s, const Levels& L) {
  return quantize_group<T, false, true>(w, len, s, L, nullptr);
}

// The squared error of a group for scale s > 0, in float, to rank the mse search's candidates: the
// dequantized value is built as base + the steps of the thresholds below w, with no table lookup, so
// the whole loop vectorizes (16 independent lanes hide the add latency). Blocks of 256 are summed in
// double. The winner is checked against absmax in double (choose_scales).
template <int T>
LUTMM_KERNEL_CLONES double rank_error(const float* w, int64_t len, const ScaledLevels<T>& S) {
  float thr[T], step[T];
  for (int j = 0; j < T; ++j) {
    thr[j] = S.thr[j];
    step[j] = S.step[j];
  }
  const float base = S.base;
  constexpr int kLanes = 16;
  double total = 0.0;
  for (int64_t b = 0; b < len; b += kBlock) {
    const int bl = static_cast<int>(std::min<int64_t>(kBlock, len - b));
    float acc[kLanes] = {};
    int e0 = 0;
    for (; e0 + kLanes <= bl; e0 += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float x = w[b + e0 + l];
        float v = base;
#pragma GCC unroll 16
        for (int j = 0; j < T; ++j) v += x > thr[j] ? step[j] : 0.0f;
        const float d = x - v;
        acc[l] += d * d;
      }
    }
    for (; e0 < bl; ++e0) {  // group sizes are multiples of 16: not reached by the quantizer itself
      const float x = w[b + e0];
      float v = base;
      for (int j = 0; j < T; ++j) v += x > thr[j] ? step[j] : 0.0f;
      acc[0] += (x - v) * (x - v);
    }
    float sum = 0.0f;
    for (int l = 0; l < kLanes; ++l) sum += acc[l];
    total += static_cast<double>(sum);
  }
  return total;
}

// One Lloyd assignment over a group: adds, per level j, sum(s * w) and sum(s^2) of the weights nearest
// to it (the weighted-mean update of the normalised values u = w / s with weights s^2), and returns the
// squared error.
template <int T>
LUTMM_KERNEL_CLONES double accumulate_group(const float* w, int64_t len, float s, const Levels& L,
                                            double* sum_sw, double* sum_ss) {
  if (s == 0.0f) return group_error<T>(w, len, s, L);  // weight 0: moves nothing
  const ScaledLevels<T> S(L, s);
  double sum_w[T + 1] = {};
  int64_t count[T + 1] = {};
  double err = 0.0;
  int32_t pos[kBlock];
  for (int64_t b = 0; b < len; b += kBlock) {
    const int bl = static_cast<int>(std::min<int64_t>(kBlock, len - b));
    classify<T>(w + b, bl, S, pos);
    for (int e = 0; e < bl; ++e) {
      const double x = static_cast<double>(w[b + e]);
      const double d = x - S.dq[pos[e]];
      err += d * d;
      sum_w[pos[e]] += x;
      ++count[pos[e]];
    }
  }
  const double sd = static_cast<double>(s);
  for (int j = 0; j < L.count; ++j) {
    sum_sw[j] += sd * sum_w[j];
    sum_ss[j] += sd * sd * static_cast<double>(count[j]);
  }
  return err;
}

// max |w| over a group and whether every w is finite. Per-lane maxima (kept in source order) let the
// compiler vectorize the reduction without reassociating anything.
LUTMM_KERNEL_CLONES std::pair<float, bool> group_absmax(const float* w, int len) {
  constexpr int kLanes = 16;
  float m[kLanes] = {};
  int bad[kLanes] = {};
  int e0 = 0;
  for (; e0 + kLanes <= len; e0 += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float a = std::fabs(w[e0 + l]);
      bad[l] |= a <= std::numeric_limits<float>::max() ? 0 : 1;  // NaN and inf
      m[l] = a > m[l] ? a : m[l];
    }
  }
  for (; e0 < len; ++e0) {
    const float a = std::fabs(w[e0]);
    bad[0] |= a <= std::numeric_limits<float>::max() ? 0 : 1;
    m[0] = a > m[0] ? a : m[0];
  }
  float absmax = 0.0f;
  int any_bad = 0;
  for (int l = 0; l < kLanes; ++l) {
    absmax = m[l] > absmax ? m[l] : absmax;
    any_bad |= bad[l];
  }
  return {absmax, any_bad == 0};
}

std::string dtype_range(DType dtype) {
  return dtype == DType::f16 ? "fp16 (|scale| <= 65504)" : "bf16 (|scale| <= 3.39e38)";
}

// The first problem found in a chunk's rows; the smallest index over all chunks is reported.
struct ChunkIssue {
  int64_t index = -1;  // flat element index of a non-finite weight, or of a group's first element
  bool overflow = false;
  float value = 0.0f;  // the non-finite weight, or the group's absmax
};

struct Plan {
  const float* w;
  int64_t n, k;
  int group_size;
  int64_t groups;
  int64_t chunk_rows, chunks;
  int threads;
  DType dtype;
};

// Pass 1: every group's rounded scale, into scales[n * groups].
template <int T>
void choose_scales(const Plan& p, const Levels& L, float table_max, ScaleSearch search, float* scales) {
  std::vector<ChunkIssue> issues(static_cast<size_t>(p.chunks));
  detail::parallel_for(p.chunks, p.threads, [&](int, int64_t chunk) {
    const int64_t r0 = chunk * p.chunk_rows;
    const int64_t r1 = std::min(p.n, r0 + p.chunk_rows);
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t g = 0; g < p.groups; ++g) {
        const int64_t first = r * p.k + g * p.group_size;
        const float* w = p.w + first;
        const auto [absmax, finite] = group_absmax(w, p.group_size);
        if (!finite) {
          for (int e = 0; e < p.group_size; ++e) {
            if (!std::isfinite(w[e])) {
              issues[chunk] = {first + e, false, w[e]};
              return;
            }
          }
        }
        const double ratio = static_cast<double>(absmax) / static_cast<double>(table_max);
        const float s_abs = round_to(static_cast<float>(ratio), p.dtype);
        if (!std::isfinite(s_abs)) {
          issues[chunk] = {first, true, absmax};
          return;
        }
        float best = s_abs;
        if (search == ScaleSearch::mse && s_abs > 0.0f) {
          double best_rank = rank_error<T>(w, p.group_size, ScaledLevels<T>(L, s_abs));
          float last = s_abs;
          for (int i = 0; i < kGridPoints; ++i) {
            if (i == kGridAbsmax) continue;
            const float s = round_to(static_cast<float>(grid_factor(i) * ratio), p.dtype);
            // Neighbouring factors often round to the same dtype value: evaluate each scale once.
            if (!std::isfinite(s) || s == 0.0f || s == last || s == s_abs) continue;
            last = s;
            const double rank = rank_error<T>(w, p.group_size, ScaledLevels<T>(L, s));
            if (rank < best_rank) {  // strict: ties keep the earlier (absmax first, then smaller) scale
              best_rank = rank;
              best = s;
            }
          }
          // The ranking is in float; the promise (never worse than absmax) is in the reference's double.
          if (best != s_abs &&
              !(group_error<T>(w, p.group_size, best, L) < group_error<T>(w, p.group_size, s_abs, L))) {
            best = s_abs;
          }
        }
        scales[r * p.groups + g] = best;
      }
    }
  });
  for (const ChunkIssue& issue : issues) {
    if (issue.index < 0) continue;
    const std::string where =
        "row " + std::to_string(issue.index / p.k) + ", column " + std::to_string(issue.index % p.k);
    if (!issue.overflow) {
      throw_argument_error("w", "finite values", std::to_string(issue.value) + " at " + where);
    }
    throw_argument_error("w",
                         "group absmax / max|table| (max|table| = " + std::to_string(table_max) +
                             ") to fit a scale in " + dtype_range(p.dtype),
                         "absmax " + std::to_string(issue.value) + " in the group starting at " + where);
  }
}

// Over the whole tensor: writes the codes (codes != nullptr) or returns the sum of squared errors
// (codes == nullptr, used to compare tables).
template <int T>
double quantize_codes(const Plan& p, const Levels& L, const float* scales, uint8_t* codes) {
  std::vector<double> err(static_cast<size_t>(p.chunks), 0.0);
  detail::parallel_for(p.chunks, p.threads, [&](int, int64_t chunk) {
    const int64_t r0 = chunk * p.chunk_rows;
    const int64_t r1 = std::min(p.n, r0 + p.chunk_rows);
    double e = 0.0;
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t g = 0; g < p.groups; ++g) {
        const int64_t first = r * p.k + g * p.group_size;
        const float s = scales[r * p.groups + g];
        if (codes) {
          quantize_group<T, true, false>(p.w + first, p.group_size, s, L, codes + first);
        } else {
          e += group_error<T>(p.w + first, p.group_size, s, L);
        }
      }
    }
    err[chunk] = e;
  });
  return std::accumulate(err.begin(), err.end(), 0.0);
}

// Weighted Lloyd (k-means in the normalised domain u = w / s, weights s^2, so the objective is the
// squared error in the original units) with the scales fixed, started from `table`. An empty level
// keeps its value. Returns the learned values ascending (not yet rounded to the dtype) and, through
// initial_err, the error of `table` itself (the first assignment's).
template <int T>
std::vector<float> learn_table(const Plan& p, std::vector<float> table, int iterations, const float* scales,
                               double* initial_err) {
  const size_t per_chunk = kMaxLevels * 2 + 1;
  std::vector<double> sums(static_cast<size_t>(p.chunks) * per_chunk);
  for (int it = 0; it < iterations; ++it) {
    const Levels L = make_levels(table);
    std::fill(sums.begin(), sums.end(), 0.0);
    detail::parallel_for(p.chunks, p.threads, [&](int, int64_t chunk) {
      double* sw = sums.data() + chunk * per_chunk;
      double* ss = sw + kMaxLevels;
      double& err = ss[kMaxLevels];
      const int64_t r0 = chunk * p.chunk_rows;
      const int64_t r1 = std::min(p.n, r0 + p.chunk_rows);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t g = 0; g < p.groups; ++g) {
          err += accumulate_group<T>(p.w + r * p.k + g * p.group_size, p.group_size, scales[r * p.groups + g],
                                     L, sw, ss);
        }
      }
    });
    double sw[kMaxLevels] = {}, ss[kMaxLevels] = {}, err = 0.0;
    for (int64_t c = 0; c < p.chunks; ++c) {
      const double* s = sums.data() + c * per_chunk;
      for (int j = 0; j < kMaxLevels; ++j) {
        sw[j] += s[j];
        ss[j] += s[kMaxLevels + j];
      }
      err += s[2 * kMaxLevels];
    }
    if (it == 0) *initial_err = err;
    float change = 0.0f, top = 0.0f;
    for (int j = 0; j < L.count; ++j) {
      if (ss[j] <= 0.0) continue;
      const float v = static_cast<float>(sw[j] / ss[j]);
      if (!std::isfinite(v)) continue;
      float& slot = table[L.code[j]];
      change = std::max(change, std::fabs(v - slot));
      slot = v;
    }
    for (float v : table) top = std::max(top, std::fabs(v));
    if (change <= 1e-7f * top) break;  // converged: another pass would move nothing representable
  }
  std::sort(table.begin(), table.end());
  return table;
}

// Steps 2-4 for T = 2^bits - 1 thresholds; fills q's table_name (when learned), codes, table, scales.
template <int T>
void run(const Plan& p, const QuantizeOptions& options, std::vector<float> table, float table_max,
         QuantizedWeight& q) {
  Levels levels = make_levels(table);
  std::vector<float> scales(static_cast<size_t>(p.n * p.groups));
  choose_scales<T>(p, levels, table_max, options.scale_search, scales.data());

  if (options.learn_table) {
    double initial_err = 0.0;
    std::vector<float> learned =
        learn_table<T>(p, table, options.learn_iterations, scales.data(), &initial_err);
    bool usable = true;
    float learned_max = 0.0f;
    for (float& v : learned) {
      v = round_to(v, options.dtype);
      usable &= std::isfinite(v);
      learned_max = std::max(learned_max, std::fabs(v));
    }
    usable &= learned_max > 0.0f;
    if (usable) {
      const Levels learned_levels = make_levels(learned);
      // Lloyd never increases the error in exact arithmetic, but rounding the table to the dtype can;
      // keep the initial table unless the stored learned one is strictly better.
      if (quantize_codes<T>(p, learned_levels, scales.data(), nullptr) < initial_err) {
        table = learned;
        levels = learned_levels;
        q.table_name = "learned";
      }
    }
  }

  q.codes.resize(static_cast<size_t>(p.n * p.k));
  quantize_codes<T>(p, levels, scales.data(), q.codes.data());
  q.table.resize(table.size());
  for (size_t i = 0; i < table.size(); ++i) q.table[i] = float_to_bits(table[i], p.dtype);
  q.scales.resize(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) q.scales[i] = float_to_bits(scales[i], p.dtype);
}

}  // namespace

QuantizedWeight quantize(const float* w, int64_t n, int64_t k, const QuantizeOptions& options) {
  // --- arguments, all checked before any work ---
  check_bits(options.bits);
  if (w == nullptr) throw_argument_error("w", "a pointer to n * k floats", "null");
  if (n <= 0) throw_argument_error("n", "a positive row count", std::to_string(n));
  if (k <= 0) throw_argument_error("k", "a positive column count", std::to_string(k));
  if (n > std::numeric_limits<int64_t>::max() / k) {
    throw_argument_error("n", "n * k to fit in int64", std::to_string(n) + " x " + std::to_string(k));
  }
  if (options.group_size < 0) {
    throw_argument_error("group_size", "0 (one group per row) or one of 32, 64, 128, 256 or K",
                         std::to_string(options.group_size));
  }
  if (options.group_size == 0 && k > std::numeric_limits<int>::max()) {
    throw_argument_error("k", "at most 2^31 - 1 with one group per row", std::to_string(k));
  }
  const int group_size = options.group_size == 0 ? static_cast<int>(k) : options.group_size;
  check_group_size(group_size, k);
  if (options.dtype != DType::f16 && options.dtype != DType::bf16) {
    throw_argument_error("dtype", "fp16 or bf16",
                         "enum value " + std::to_string(static_cast<int>(options.dtype)));
  }
  if (options.scale_search != ScaleSearch::absmax && options.scale_search != ScaleSearch::mse) {
    throw_argument_error("scale_search", "absmax or mse",
                         "enum value " + std::to_string(static_cast<int>(options.scale_search)));
  }
  if (options.learn_iterations < 0 || (options.learn_table && options.learn_iterations == 0)) {
    throw_argument_error("learn_iterations",
                         options.learn_table ? "a positive count when learn_table is set" : "a count >= 0",
                         std::to_string(options.learn_iterations));
  }
  if (options.threads < 0) {
    throw_argument_error("threads", "0 (every hardware thread) or a positive count",
                         std::to_string(options.threads));
  }
  const std::string table_argument = options.custom_table ? "custom_table" : "table";
  Table table;
  if (options.custom_table) {
    const int bits = detail::check_table_values(*options.custom_table, "custom_table");
    if (bits != options.bits) {
      throw_argument_error(
          "custom_table",
          std::to_string(1 << options.bits) + " values (2^bits, bits = " + std::to_string(options.bits) + ")",
          std::to_string(options.custom_table->size()) + " values");
    }
    table = Table{"custom", bits, *options.custom_table};
  } else {
    table = table_by_name(options.table, options.bits);
  }
  std::vector<float> rounded(table.values.size());
  float table_max = 0.0f;
  for (size_t i = 0; i < rounded.size(); ++i) {
    rounded[i] = round_to(table.values[i], options.dtype);
    if (!std::isfinite(rounded[i])) {
      throw_argument_error(table_argument, "values representable in " + std::string(to_string(options.dtype)),
                           std::to_string(table.values[i]) + " at index " + std::to_string(i));
    }
    table_max = std::max(table_max, std::fabs(rounded[i]));
  }
  if (table_max == 0.0f) {
    throw_argument_error(table_argument,
                         "a value that stays nonzero in " + std::string(to_string(options.dtype)),
                         "all values round to 0");
  }

  // --- the work ---
  Plan p;
  p.w = w;
  p.n = n;
  p.k = k;
  p.group_size = group_size;
  p.groups = k / group_size;
  p.chunk_rows = std::max<int64_t>(1, kChunkElements / k);
  p.chunks = (n + p.chunk_rows - 1) / p.chunk_rows;
  p.threads = detail::resolve_threads(options.threads);
  p.dtype = options.dtype;

  QuantizedWeight q;
  q.n = n;
  q.k = k;
  q.bits = options.bits;
  q.group_size = group_size;
  q.dtype = options.dtype;
  q.table_name = table.name;
  switch (options.bits) {
    case 2:
      run<3>(p, options, rounded, table_max, q);
      break;
    case 3:
      run<7>(p, options, rounded, table_max, q);
      break;
    default:
      run<15>(p, options, rounded, table_max, q);
      break;
  }
  return q;
}

QuantizationError reconstruction_error(const float* w, const QuantizedWeight& q) {
  q.validate();
  if (w == nullptr) throw_argument_error("w", "a pointer to n * k floats", "null");
  const int64_t chunk_rows = std::max<int64_t>(1, kChunkElements / q.k);
  const int64_t chunks = (q.n + chunk_rows - 1) / chunk_rows;
  double table[kMaxLevels];
  for (int c = 0; c < (1 << q.bits); ++c) table[c] = static_cast<double>(q.table_value(c));
  struct Partial {
    double ref = 0, err = 0, max_abs = 0;
    int64_t bad = -1;
  };
  std::vector<Partial> parts(static_cast<size_t>(chunks));
  detail::parallel_for(chunks, detail::resolve_threads(0), [&](int, int64_t chunk) {
    // Four interleaved partial sums per quantity break the add-latency chain; the order is fixed, so the
    // result does not depend on the thread count.
    constexpr int kLanes = 4;
    double ref[kLanes] = {}, err[kLanes] = {}, max_abs[kLanes] = {};
    int64_t bad = -1;
    const int64_t r1 = std::min(q.n, (chunk + 1) * chunk_rows);
    for (int64_t r = chunk * chunk_rows; r < r1; ++r) {
      for (int64_t col = 0; col < q.k; col += q.group_size) {
        // q.dequant(r, c) with the group's scale hoisted: table[code] * scale, exact in double.
        const double s = static_cast<double>(q.scale(r, col));
        const int64_t first = r * q.k + col;
        const float* x = w + first;
        const uint8_t* code = q.codes.data() + first;
        for (int c = 0; c < q.group_size; c += kLanes) {  // group sizes are multiples of 16
          for (int l = 0; l < kLanes; ++l) {
            const double v = static_cast<double>(x[c + l]);
            const double d = v - table[code[c + l]] * s;
            ref[l] += v * v;
            err[l] += d * d;
            max_abs[l] = std::max(max_abs[l], std::fabs(d));
          }
        }
        if (bad < 0 && !std::isfinite(ref[0] + ref[1] + ref[2] + ref[3])) {
          for (int c = 0; c < q.group_size; ++c) {
            if (!std::isfinite(x[c])) {
              bad = first + c;
              break;
            }
          }
        }
      }
    }
    Partial part;
    part.bad = bad;
    for (int l = 0; l < kLanes; ++l) {
      part.ref += ref[l];
      part.err += err[l];
      part.max_abs = std::max(part.max_abs, max_abs[l]);
    }
    parts[chunk] = part;
  });
  Partial total;
  for (const Partial& part : parts) {
    if (part.bad >= 0) {
      throw_argument_error("w", "finite values",
                           std::to_string(w[part.bad]) + " at row " + std::to_string(part.bad / q.k) +
                               ", column " + std::to_string(part.bad % q.k));
    }
    total.ref += part.ref;
    total.err += part.err;
    total.max_abs = std::max(total.max_abs, part.max_abs);
  }
  const double inf = std::numeric_limits<double>::infinity();
  QuantizationError r;
  // 0 / 0 (an all-zero W reproduced exactly) counts as no error.
  r.relative_frobenius = total.err == 0.0 ? 0.0 : (total.ref == 0.0 ? inf : std::sqrt(total.err / total.ref));
  r.max_abs = total.max_abs;
  r.rmse = std::sqrt(total.err / static_cast<double>(q.n * q.k));
  r.sqnr_db = total.err == 0.0 ? inf : (total.ref == 0.0 ? -inf : 10.0 * std::log10(total.ref / total.err));
  return r;
}

}  // namespace lutmm
