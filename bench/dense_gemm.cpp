#include "dense_gemm.hpp"

#include <climits>
#include <string>

#include "cuda_util.hpp"
#include "lutmm/error.hpp"

namespace lutmm::bench {
namespace {

// cuBLAS' classic API takes int sizes and leading dimensions.
int as_cublas_int(int64_t value, const char* name) {
  if (value < 1 || value > INT_MAX) {
    throw_argument_error(name, "a size in [1, 2^31-1] (a cuBLAS int)", std::to_string(value));
  }
  return static_cast<int>(value);
}

void check_pointers(const void* x, const void* w, const void* out) {
  if (x == nullptr) throw_argument_error("x", "a device pointer", "null");
  if (w == nullptr) throw_argument_error("w", "a device pointer", "null");
  if (out == nullptr) throw_argument_error("out", "a device pointer", "null");
}

}  // namespace

void dense_gemm(cublasHandle_t handle, DType dtype, const void* x, const void* w, void* out, int64_t m, int64_t n,
                int64_t k) {
  check_pointers(x, w, out);
  const int mi = as_cublas_int(m, "m"), ni = as_cublas_int(n, "n"), ki = as_cublas_int(k, "k");
  const cudaDataType_t type = dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  const float alpha = 1.0f, beta = 0.0f;
  LUTMM_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, ni, mi, ki, &alpha, w, type, ki, x, type, ki, &beta,
                            out, type, ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void dense_gemm_f64(cublasHandle_t handle, const double* x, const double* w, double* out, int64_t m, int64_t n,
                    int64_t k) {
  check_pointers(x, w, out);
  const int mi = as_cublas_int(m, "m"), ni = as_cublas_int(n, "n"), ki = as_cublas_int(k, "k");
  const double alpha = 1.0, beta = 0.0;
  LUTMM_CUBLAS(cublasDgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, ni, mi, ki, &alpha, w, ki, x, ki, &beta, out, ni));
}

}  // namespace lutmm::bench
