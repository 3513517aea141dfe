// Quantize a weight to 4-bit NF with one bf16 scale per 128 weights, multiply with it (on the GPU when
// there is one, else on the CPU) and check the result against the float64 reference.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "lutmm/lutmm.hpp"

int main() {
  const int64_t m = 16, n = 1024, k = 2048;  // out[m,n] = x[m,k] . W[n,k]^T
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(n * k);
  for (float& v : w) v = 0.02f * normal(rng);
  std::vector<uint16_t> x(m * k);  // bf16 bit patterns
  for (uint16_t& v : x) v = lutmm::float_to_bits(normal(rng), lutmm::DType::bf16);

  lutmm::QuantizeOptions options;  // bits 4, group 128, bf16, table "nf"
  const lutmm::QuantizedWeight q = lutmm::quantize(w.data(), n, k, options);

  std::vector<uint16_t> out(m * n);
  if (lutmm::device_count() > 0) {
    const lutmm::DeviceWeight weight = lutmm::DeviceWeight::upload(q);
    void *dx = nullptr, *dout = nullptr;
    if (cudaMalloc(&dx, x.size() * 2) != cudaSuccess || cudaMalloc(&dout, out.size() * 2) != cudaSuccess) return 2;
    cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
    lutmm::gemm(dx, m, weight.view(), /*bias=*/nullptr, dout);
    if (cudaMemcpy(out.data(), dout, out.size() * 2, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
    cudaFree(dx);
    cudaFree(dout);
  } else {
    lutmm::cpu_gemm(x.data(), m, q, /*bias=*/nullptr, out.data());
  }

  std::vector<double> ref(m * n);
  lutmm::reference_gemm_f64(x.data(), m, q, /*bias=*/nullptr, ref.data());
  double err = 0, norm = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = lutmm::bits_to_float(out[i], lutmm::DType::bf16) - ref[i];
    err += d * d;
    norm += ref[i] * ref[i];
  }
  const double rel = std::sqrt(err / norm);
  std::printf("%s: relative error %.2e\n", lutmm::device_count() > 0 ? "lutmm::gemm" : "lutmm::cpu_gemm", rel);
  return rel < 1e-2 ? 0 : 1;  // bf16 rounding of weights and outputs gives about 3e-3
}
