// The CPU fallback GEMM: float32 accumulation, blocked for the cache, multi-threaded.
//
// Data flow (the classic packed-panel scheme, sized for a 32-64 KiB L1 and 0.5-2 MiB L2 per core):
//
//   x [m][k] dtype --convert once--> xp: panels of kMr rows, [m_panels][k][kMr] float (rows past m are 0)
//   W codes       --per block-----> wp: a block of kNb W rows x kKb columns, dequantized to float as
//                                       [kNb/kNr][kKb][kNr] (rows past n are 0)
//   micro-kernel: a kMr x kNr tile of out, kept in vector registers across the kKb loop:
//       for kk: acc[i][0..kNr) += xp[kk][i] * wp[kk][0..kNr)      (one broadcast, one vector FMA per row)
//   The tile lives in cbuf (float, [rows of the chunk][kNb]) between K blocks; after the last one it gets
//   the bias and is rounded to dtype into out.
//
// Work items are (block of kNb W rows, chunk of x rows); workers pull them from a shared counter. Each
// W element is dequantized once per chunk of x rows; chunks are only split finer than the cache limit
// when there are too few W blocks to keep every thread busy (small N).
//
// Dequantization to float is exact: table and scale are 16-bit types (at most 11 significant bits
// each), so their product has at most 22 and fits float's 24. The only roundings are the float32 sums
// and the final conversion to dtype.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "lutmm/error.hpp"
#include "lutmm/reference.hpp"
#include "reference/cpu_features.hpp"
#include "reference/gemm_args.hpp"
#include "util/parallel.hpp"

namespace lutmm {
namespace {

constexpr int kMr = 6;    // x rows per micro-tile
constexpr int kNr = 16;   // W rows per micro-tile: one 64-byte vector (1 zmm, 2 ymm or 4 xmm)
constexpr int kNb = 128;  // W rows per block (multiple of kNr)
constexpr int kKb = 256;  // k per block: a W panel (kKb x kNr floats = 16 KiB) stays in L1
constexpr int kMaxChunkPanels = 64;  // x rows per chunk = 64 * kMr = 384: cbuf is 192 KiB, fits L2

static_assert(kNb % kNr == 0);

using Vec = float __attribute__((vector_size(kNr * sizeof(float))));

// 64-byte aligned float scratch.
struct AlignedFloats {
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<float[], Free> data;
  explicit AlignedFloats(size_t count)
      : data(static_cast<float*>(::operator new[](count * sizeof(float), std::align_val_t(64)))) {}
};

// One chunk of x panels [p0, p1) times one packed W block of `panels` kNr-row panels over kc columns.
// xp points at panel p0, column k0; panel stride is xp_stride floats. cbuf: [(p1-p0)*kMr][kNb].
LUTMM_CPU_CLONES
void macro_kernel(const float* xp, int64_t xp_stride, int x_panels, const float* wp, int panels, int kc,
                  float* cbuf, bool accumulate) {
  for (int p = 0; p < x_panels; ++p) {
    const float* a0 = xp + p * xp_stride;
    for (int q = 0; q < panels; ++q) {
      const float* b = wp + static_cast<int64_t>(q) * kKb * kNr;
      float* c = cbuf + static_cast<int64_t>(p) * kMr * kNb + q * kNr;
      Vec acc[kMr];
      for (int i = 0; i < kMr; ++i) {
        if (accumulate) {
          __builtin_memcpy(&acc[i], c + i * kNb, sizeof(Vec));
        } else {
          acc[i] = Vec{};
        }
      }
      const float* a = a0;
      for (int kk = 0; kk < kc; ++kk, a += kMr, b += kNr) {
        Vec bv;
        __builtin_memcpy(&bv, b, sizeof(Vec));
        for (int i = 0; i < kMr; ++i) acc[i] += a[i] * bv;
      }
      for (int i = 0; i < kMr; ++i) __builtin_memcpy(c + i * kNb, &acc[i], sizeof(Vec));
    }
  }
}

}  // namespace

void cpu_gemm(const uint16_t* x, int64_t m, const QuantizedWeight& w, const uint16_t* bias, uint16_t* out,
              int threads) {
  detail::check_cpu_gemm_args(x, m, w, out);
  if (threads < 0) {
    throw_argument_error("threads", "0 (every hardware thread) or a positive count", std::to_string(threads));
  }
  const int64_t n = w.n, k = w.k;
  const int nthreads = detail::resolve_threads(threads);

  // --- x -> float panels ---
  const int64_t m_panels = (m + kMr - 1) / kMr;
  const int64_t xp_stride = k * kMr;
  AlignedFloats xp(static_cast<size_t>(m_panels * xp_stride));
  detail::parallel_for(m_panels, nthreads, [&](int, int64_t p) {
    float* dst = xp.data.get() + p * xp_stride;
    for (int i = 0; i < kMr; ++i) {
      const int64_t row = p * kMr + i;
      if (row < m) {
        const uint16_t* src = x + row * k;
        for (int64_t c = 0; c < k; ++c) dst[c * kMr + i] = bits_to_float(src[c], w.dtype);
      } else {
        for (int64_t c = 0; c < k; ++c) dst[c * kMr + i] = 0.0f;
      }
    }
  });

  std::vector<float> bias_f(static_cast<size_t>(n), 0.0f);
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) bias_f[j] = bits_to_float(bias[j], w.dtype);
  }
  float table[16];
  detail::table_as_float(w, table);

  // --- work items: (W block, x chunk) ---
  const int64_t n_blocks = (n + kNb - 1) / kNb;
  int64_t chunk_panels = std::min<int64_t>(kMaxChunkPanels, m_panels);
  const int64_t wanted_items = 2 * static_cast<int64_t>(nthreads);  // some slack for load balance
  if (n_blocks * ((m_panels + chunk_panels - 1) / chunk_panels) < wanted_items) {
    const int64_t chunks = std::min<int64_t>(m_panels, (wanted_items + n_blocks - 1) / n_blocks);
    chunk_panels = std::max<int64_t>(1, (m_panels + chunks - 1) / chunks);
  }
  const int64_t m_chunks = (m_panels + chunk_panels - 1) / chunk_panels;
  const int64_t items = n_blocks * m_chunks;

  // Scratch is allocated before any output is written, so a failed allocation leaves out untouched.
  const int workers = static_cast<int>(std::min<int64_t>(nthreads, items));
  std::vector<AlignedFloats> wp_scratch, c_scratch;
  for (int i = 0; i < workers; ++i) {
    wp_scratch.emplace_back(static_cast<size_t>(kNb) * kKb);
    c_scratch.emplace_back(static_cast<size_t>(chunk_panels * kMr * kNb));
  }

  detail::parallel_for(items, workers, [&](int worker, int64_t item) {
    const int64_t block = item / m_chunks, chunk = item % m_chunks;
    const int64_t n0 = block * kNb;
    const int rows = static_cast<int>(std::min<int64_t>(kNb, n - n0));
    const int panels = (rows + kNr - 1) / kNr;
    const int64_t p0 = chunk * chunk_panels;
    const int x_panels = static_cast<int>(std::min<int64_t>(chunk_panels, m_panels - p0));
    float* wp = wp_scratch[worker].data.get();
    float* cbuf = c_scratch[worker].data.get();

    for (int64_t k0 = 0; k0 < k; k0 += kKb) {
      const int kc = static_cast<int>(std::min<int64_t>(kKb, k - k0));
      // Dequantize W[n0 .. n0+panels*kNr)[k0 .. k0+kc) into panel layout; rows past n are zero.
      for (int r = 0; r < panels * kNr; ++r) {
        float* dst = wp + static_cast<int64_t>(r / kNr) * kKb * kNr + r % kNr;
        if (r >= rows) {
          for (int kk = 0; kk < kc; ++kk) dst[kk * kNr] = 0.0f;
          continue;
        }
        const int64_t row = n0 + r;
        const uint8_t* codes = w.codes.data() + row * k;
        for (int64_t g0 = k0; g0 < k0 + kc;) {
          // the part of [k0, k0+kc) inside the group that holds g0
          const int64_t g1 = std::min<int64_t>((g0 / w.group_size + 1) * w.group_size, k0 + kc);
          const float scale = w.scale(row, g0);
          float lut[16];
          for (int c = 0; c < (1 << w.bits); ++c) lut[c] = table[c] * scale;
          for (int64_t c = g0; c < g1; ++c) dst[(c - k0) * kNr] = lut[codes[c]];
          g0 = g1;
        }
      }
      macro_kernel(xp.data.get() + p0 * xp_stride + k0 * kMr, xp_stride, x_panels, wp, panels, kc, cbuf,
                   k0 > 0);
    }

    for (int64_t i = 0; i < static_cast<int64_t>(x_panels) * kMr; ++i) {
      const int64_t row = p0 * kMr + i;
      if (row >= m) break;
      const float* c = cbuf + i * kNb;
      uint16_t* o = out + row * n + n0;
      for (int j = 0; j < rows; ++j) o[j] = float_to_bits(c[j] + bias_f[n0 + j], w.dtype);
    }
  });
}

}  // namespace lutmm
