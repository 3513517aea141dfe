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

// A CUDA call's status: on an error, a message naming what failed and exit status 1 (a micro-benchmark that went on
// would print the times of launches that never ran).
inline void micro_check_or_exit(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("%s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// The fastest of `runs` launches (milliseconds, CUDA events around each): launch() enqueues one.
template <typename Launch>
float best_of_runs_ms(Launch launch, int runs = 5) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best = 1e9f;
  for (int r = 0; r < runs; ++r) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}
