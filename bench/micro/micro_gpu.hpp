#pragma once
// What the standalone micro-benchmarks of bench/micro share: the SM count of GPU 0, or a clear message and
// exit status 1 where there is none (gpu-check runs them on whatever machine it is given).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

inline int micro_sm_count_or_exit() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: this micro-benchmark needs an NVIDIA GPU\n");
    std::exit(1);
  }
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  return sms;
}
