#pragma once
// CPU GEMMs on the lutmm format: out[m,n] = sum_k x[m,k] * W[n,k] (+ bias[n]).
// x, bias and out are dtype bits (uint16_t) in row-major order; x is [m][k], out [m][n].
#include <cstdint>

#include "lutmm/format.hpp"

namespace lutmm {

// The test oracle: dequantizes exactly and accumulates in float64. bias may be null.
void reference_gemm_f64(const uint16_t* x, int64_t m, const QuantizedWeight& w, const uint16_t* bias,
                        double* out);

// The CPU fallback: float32 accumulation, multi-threaded and blocked; rounds the result to dtype.
// threads = 0 uses every hardware thread.
void cpu_gemm(const uint16_t* x, int64_t m, const QuantizedWeight& w, const uint16_t* bias, uint16_t* out,
              int threads = 0);

}  // namespace lutmm
