#pragma once
// Basics every device header uses. Device code is compiled by NVRTC with no toolkit include path, so it
// includes no CUDA or C++ library header: fixed-width types come from here, arithmetic goes through PTX.
// The same headers also compile as plain C++ on the host (layout helpers, configs), hence the guards.

#if defined(__CUDACC_RTC__)
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef long long int64_t;
#else
#include <cstdint>
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define LUTMM_HOST_DEVICE __host__ __device__ __forceinline__
#define LUTMM_DEVICE __device__ __forceinline__
#else
#define LUTMM_HOST_DEVICE inline
#endif

namespace lutmm::dev {

template <typename T>
LUTMM_HOST_DEVICE constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

struct uint4_t {  // 16 bytes, as cp.async moves them
  uint32_t x, y, z, w;
};

}  // namespace lutmm::dev
