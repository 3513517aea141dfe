// The test oracle: out[i][j] = sum_k x[i][k] * W[j][k] (+ bias[j]), in float64 throughout.
//
// Every product is exact: x has at most 11 significant bits, a dequantized weight (table * scale, both
// 16-bit types) at most 22, so x*w fits the 53-bit double mantissa; only the sums round, and at float64
// that error is far below anything a float32 or fp16/bf16 result can resolve.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "lutmm/reference.hpp"
#include "reference/cpu_features.hpp"
#include "reference/gemm_args.hpp"
#include "util/parallel.hpp"

namespace lutmm {
namespace {

// A block of kRows W rows is dequantized once into doubles and dotted with every x row, so each x row
// is read once per kRows W rows. Each dot keeps kLanes independent partial sums: that lets the compiler
// vectorise without reassociating a single sum (which it may not do without -ffast-math).
constexpr int kRows = 8;
constexpr int kLanes = 8;

// wd: [kRows][k] doubles (rows past `rows` are zero); writes out[i][n0 .. n0+rows) for every i.
LUTMM_CPU_CLONES
void dot_rows(const float* x, int64_t m, int64_t k, const double* wd, int rows, int64_t n, int64_t n0,
              const double* bias, double* out) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * k;
    double acc[kRows][kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= k; c += kLanes) {
      for (int r = 0; r < kRows; ++r) {
        for (int l = 0; l < kLanes; ++l) acc[r][l] += static_cast<double>(xr[c + l]) * wd[r * k + c + l];
      }
    }
    for (; c < k; ++c) {
      for (int r = 0; r < kRows; ++r) acc[r][0] += static_cast<double>(xr[c]) * wd[r * k + c];
    }
    for (int r = 0; r < rows; ++r) {
      double sum = 0;
      for (int l = 0; l < kLanes; ++l) sum += acc[r][l];
      out[i * n + n0 + r] = sum + bias[r];
    }
  }
}

}  // namespace

void reference_gemm_f64(const uint16_t* x, int64_t m, const QuantizedWeight& w, const uint16_t* bias,
                        double* out) {
  detail::check_cpu_gemm_args(x, m, w, out);
  const int64_t n = w.n, k = w.k;

  // x as float: exact, and half the memory of double for the large shapes the tests use.
  std::vector<float> xf(static_cast<size_t>(m * k));
  detail::parallel_for(m, 0, [&](int, int64_t i) {
    for (int64_t c = 0; c < k; ++c) xf[i * k + c] = bits_to_float(x[i * k + c], w.dtype);
  });

  float table[16];
  detail::table_as_float(w, table);
  const int64_t blocks = (n + kRows - 1) / kRows;
  // Scratch is allocated up front: once out is being written nothing may fail.
  const int workers = static_cast<int>(std::min<int64_t>(detail::resolve_threads(0), blocks));
  std::vector<std::vector<double>> scratch(workers, std::vector<double>(static_cast<size_t>(kRows * k)));
  detail::parallel_for(blocks, workers, [&](int worker, int64_t block) {
    double* wd = scratch[worker].data();
    const int64_t n0 = block * kRows;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, n - n0));
    double b[kRows] = {};
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) {
        std::fill(wd + r * k, wd + (r + 1) * k, 0.0);
        continue;
      }
      const int64_t row = n0 + r;
      // Same values as w.dequant(row, c), with table and scale converted once per group.
      for (int64_t c0 = 0; c0 < k; c0 += w.group_size) {
        const double scale = w.scale(row, c0);
        for (int64_t c = c0; c < std::min<int64_t>(c0 + w.group_size, k); ++c) {
          wd[r * k + c] = static_cast<double>(table[w.codes[row * k + c]]) * scale;
        }
      }
      if (bias != nullptr) b[r] = static_cast<double>(bits_to_float(bias[row], w.dtype));
    }
    dot_rows(xf.data(), m, k, wd, rows, n, n0, b, out);
  });
}

}  // namespace lutmm
