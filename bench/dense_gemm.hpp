#pragma once
// The dense cuBLAS GEMMs lutmm is compared with, in lutmm's orientation: row-major x [m][k], W [n][k]
// and out [m][n], out = x . W^T. cuBLAS is column-major, so the call computes out^T = W . x^T:
// W row-major [n][k] is a column-major k x n matrix (ld k) used transposed (op T), x row-major [m][k] is a
// column-major k x m matrix (ld k) used as is, and out^T is column-major n x m (ld n): the "TN" GEMM that
// frameworks run for a linear layer.
#include <cstdint>

#include <cublas_v2.h>

#include "lutmm/dtype.hpp"

namespace lutmm::bench {

// dtype inputs and output, float32 accumulation (CUBLAS_COMPUTE_32F), tensor cores as cuBLAS picks.
void dense_gemm(cublasHandle_t handle, DType dtype, const void* x, const void* w, void* out, int64_t m, int64_t n,
                int64_t k);
// float64 throughout: the GPU reference for problems too large for the CPU oracle.
void dense_gemm_f64(cublasHandle_t handle, const double* x, const double* w, double* out, int64_t m, int64_t n,
                    int64_t k);

}  // namespace lutmm::bench
