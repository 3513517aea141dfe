#pragma once
// Argument checks shared by the two CPU GEMMs, run before any output is touched.
#include <cstdint>
#include <string>

#include "lutmm/error.hpp"
#include "lutmm/format.hpp"

namespace lutmm::detail {

inline void check_cpu_gemm_args(const void* x, int64_t m, const QuantizedWeight& w, const void* out) {
  if (x == nullptr) {
    throw_argument_error("x", "a pointer to m*k = " + std::to_string(m) + "*" + std::to_string(w.k) + " values",
                         "null");
  }
  if (m < 1) throw_argument_error("m", "at least 1", std::to_string(m));
  w.validate();
  if (out == nullptr) {
    throw_argument_error("out", "a pointer to m*n = " + std::to_string(m) + "*" + std::to_string(w.n) + " values",
                         "null");
  }
}

// The 2^bits table entries as floats (exact: every fp16/bf16 value is a float).
inline void table_as_float(const QuantizedWeight& w, float* values) {
  for (int c = 0; c < (1 << w.bits); ++c) values[c] = w.table_value(c);
}

}  // namespace lutmm::detail
