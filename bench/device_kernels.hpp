#pragma once
// The benchmark's own small GPU kernels, compiled through lutmm's JIT (jit::get_kernel) from sources kept
// in device_kernels.cpp: a random fill and the HBM read-bandwidth probe.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "lutmm/dtype.hpp"

namespace lutmm::bench {

// Fills `count` 16-bit values with random, never-zero numbers of the dtype: random sign, magnitude
// log-uniform in [2^-8, 1) (a random exponent of 8 binades and random mantissa bits). Enqueued on stream.
void fill_random(void* data, int64_t count, DType dtype, uint64_t seed, cudaStream_t stream);

// Reads `bytes` (a multiple of 16, 16-byte aligned) with 16-byte loads in a grid-stride loop and
// xor-reduces them into sink[0 .. kReadSinkWords) (the xor of those words is the xor of every word read), so
// no load can be dropped. Enqueued on stream.
constexpr int kReadSinkWords = 1024;
void read_reduce(const void* data, int64_t bytes, uint32_t* sink, cudaStream_t stream);

// Host time of one launch of an empty kernel through the same JIT launch path lutmm::gemm uses
// (cuLaunchKernel), median of `rounds` rounds of `calls` launches, enqueue only: the driver's share of
// lutmm::gemm's host overhead.
double empty_launch_host_us(cudaStream_t stream, int calls = 100, int rounds = 7);

// The CUDA source and entry point of each kernel (what the two functions above hand the JIT), so tests
// can compile them with NVRTC on a machine without a GPU.
struct KernelSource {
  const char* kernel_name;
  const char* source;
};
KernelSource fill_kernel_source();
KernelSource read_kernel_source();
KernelSource empty_kernel_source();

}  // namespace lutmm::bench
