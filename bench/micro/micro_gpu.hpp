#pragma once
// What the standalone micro-benchmarks of bench/micro share: the SM count of GPU 0, or a clear message and
// exit status 1 where there is none (gpu-check runs them on whatever machine it is given).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

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

// `copies` device copies of one weight-like buffer of `bytes` (a fixed byte pattern, never zeros): rotated by the copy
// skeletons so that their bytes come from DRAM (more than 4x the L2 in all).
inline std::vector<uint8_t*> micro_weight_copies(int64_t bytes, int copies) {
  std::vector<uint8_t> host(bytes);
  for (int64_t i = 0; i < bytes; ++i) host[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  std::vector<uint8_t*> w(copies);
  for (auto& p : w) {
    micro_check_or_exit(cudaMalloc(&p, bytes), "cudaMalloc of a weight copy");
    micro_check_or_exit(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy of a weight copy");
  }
  return w;
}

// A launch of `blocks` x `threads` with `smem` bytes of dynamic shared memory, as a programmatic dependent (pdl) or
// plainly: the attribute lives in `attribute`, which must outlive the launches.
inline cudaLaunchConfig_t micro_launch_config(int blocks, int threads, int smem, bool pdl, cudaLaunchAttribute& attribute) {
  attribute = cudaLaunchAttribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.attrs = &attribute;
  config.numAttrs = pdl ? 1 : 0;
  return config;
}
