#pragma once
#include <string>

#include <cuda_runtime_api.h>

#include "lutmm/error.hpp"

namespace lutmm {

// Throws Error("lutmm: <what> failed: <CUDA error name>: <description>") unless e is cudaSuccess.
inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear a sticky-free error so the next call starts clean
    throw_error(std::string(what) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

}  // namespace lutmm
