// How long a store takes to become visible to a poll on another SM: the wait of the flagged split-K summer
// (epilogue/epilogue.cuh finish_flagged), which v1.31's trace of 1 x 4096 x 4096 puts at ~0.75 us from the other
// splits' exit to the summer's, even on an idle GPU (docs/NOTES.md v1.31, runs 5-6). Two blocks on two SMs play
// ping-pong through two words in global memory: block 0 stores round r into `ping` and polls `pong` until it reads r,
// block 1 the other way round; N rounds take 2N one-way trips, timed by the global timer over the whole run. The
// words as the kernel writes them (a 16-byte st.relaxed.gpu of two marked 64-bit words, polled by ld.relaxed.gpu of
// the same 16 bytes), as 4-byte relaxed words, and as a release store polled by acquire loads; then the first again
// while every other SM streams reads from a 1 GiB buffer (the next launch's weight copies that overlap the summer's
// wait under programmatic dependent launch). Also a dependent chain of L2 loads of one word: the round trip a poll
// costs when nothing is in its way. On the H200 (v1.31 run 7): 248 ns one way for the 16-byte words, 231 for 4-byte
// ones, 427 with release and acquire, 246 beside the streaming; 151 ns a dependent L2 load.
// Not part of the CMake build; scripts/build-micro builds it (-I device) and `scripts/gpu-check micro` runs it.
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

#include "lutmm/ptx/memory.cuh"
#include "micro_gpu.hpp"

using namespace lutmm;

enum class Words { relaxed_pair, relaxed_word, release_acquire };

struct Result {
  unsigned long long ns;         // block 0's time for the rounds
  unsigned int sm[2];            // where the two players ran
  unsigned long long chain_ns;   // the dependent load chain (block 1, after the rounds)
  unsigned long long sink;       // (the background readers' sum, so their loads are kept)
};

constexpr int kChainLoads = 4096;

template <Words kWords>
__device__ void put(unsigned long long* at, unsigned long long v) {
  if constexpr (kWords == Words::relaxed_pair) {
    ptx::store_relaxed_gpu(at, v, v);
  } else if constexpr (kWords == Words::relaxed_word) {  // (the 4-byte words carry the round: v's high half)
    asm volatile("st.relaxed.gpu.global.b32 [%0], %1;\n" ::"l"(at), "r"(static_cast<uint32_t>(v >> 32)) : "memory");
  } else {  // (the kernels' counter store, ptx/memory.cuh)
    ptx::store_release_gpu(reinterpret_cast<uint32_t*>(at), static_cast<uint32_t>(v >> 32));
  }
}
template <Words kWords>
__device__ bool holds(const unsigned long long* at, unsigned long long v) {
  if constexpr (kWords == Words::relaxed_pair) {
    unsigned long long a, b;
    ptx::load_relaxed_gpu(at, a, b);
    return a == v && b == v;
  } else {
    uint32_t w;
    if constexpr (kWords == Words::relaxed_word) {
      asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];\n" : "=r"(w) : "l"(at) : "memory");
    } else {  // (the kernels' counter poll, ptx/memory.cuh)
      w = ptx::load_acquire_gpu(reinterpret_cast<const uint32_t*>(at));
    }
    return w == static_cast<uint32_t>(v >> 32);
  }
}

// Blocks 0 and 1 play (thread 0 of each); blocks 2.. (if any) stream `background` until block 0 is done.
template <Words kWords>
__global__ void ping_pong(unsigned long long* words, int rounds, const uint4* background, size_t background_quads,
                          volatile int* done, Result* result) {
  unsigned long long* const ping = words;       // (two 128-byte lines apart: no shared line)
  unsigned long long* const pong = words + 32;
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (blockIdx.x >= 2) {
    unsigned long long sum = 0;
    const size_t step = static_cast<size_t>(gridDim.x - 2) * blockDim.x;
    for (size_t i = (blockIdx.x - 2) * blockDim.x + threadIdx.x; *done == 0; i += step) {
      if (i >= background_quads) i -= background_quads;
      const uint4 q = __ldcg(background + i);
      sum += q.x ^ q.w;
    }
    if (sum == 42) result->sink = sum;  // (practically never: keeps the loads)
    return;
  }
  if (threadIdx.x != 0) return;
  result->sm[blockIdx.x] = sm;
  auto mark = [](int r) { return (static_cast<unsigned long long>(r) << 32) | 1ull; };
  if (blockIdx.x == 0) {
    uint64_t start = 0;
    for (int r = 1; r <= rounds; ++r) {
      if (r == rounds / 8 + 1) start = ptx::global_timer_ns();  // (the first eighth warms up)
      put<kWords>(ping, mark(r));
      while (!holds<kWords>(pong, mark(r))) {
      }
    }
    result->ns = ptx::global_timer_ns() - start;
    *done = 1;
  } else {
    for (int r = 1; r <= rounds; ++r) {
      while (!holds<kWords>(ping, mark(r))) {
      }
      put<kWords>(pong, mark(r));
    }
    // a dependent chain of L2 loads: each address from the previous value (ping itself, or the 16 bytes after it
    // where the 4-byte variants left ping's two words unequal; both hold what the rounds left)
    const uint64_t start = ptx::global_timer_ns();
    const unsigned long long* at = ping;
    for (int i = 0; i < kChainLoads; ++i) {
      unsigned long long a, b;
      ptx::load_relaxed_gpu(at, a, b);
      at = ping + 2 * ((a ^ b) & 1ull);
    }
    result->chain_ns = ptx::global_timer_ns() - start + (at == nullptr ? 1 : 0);
  }
}

template <Words kWords>
void run(const char* what, int sms, bool busy, unsigned long long* words, const uint4* background, size_t quads,
         int* done, Result* result) {
  constexpr int kRounds = 20000;
  cudaMemset(words, 0, 64 * sizeof(unsigned long long));
  cudaMemset(done, 0, sizeof(int));
  cudaMemset(result, 0, sizeof(Result));
  // one block an SM (the dynamic shared memory takes most of it), so the two players sit on two SMs
  const int smem = 160 * 1024;
  cudaFuncSetAttribute(ping_pong<kWords>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  ping_pong<kWords><<<busy ? sms : 2, 256, smem>>>(words, kRounds, background, quads, done, result);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
  Result r;
  cudaMemcpy(&r, result, sizeof(r), cudaMemcpyDeviceToHost);
  const int timed = kRounds - kRounds / 8;
  std::printf("  %-52s %7.0f ns one way   (SMs %u and %u; a dependent L2 load after it: %4.0f ns)\n", what,
              static_cast<double>(r.ns) / (2.0 * timed), r.sm[0], r.sm[1],
              static_cast<double>(r.chain_ns) / kChainLoads);
}

int main() {
  const int sms = micro_sm_count_or_exit();
  unsigned long long* words = nullptr;
  uint4* background = nullptr;
  int* done = nullptr;
  Result* result = nullptr;
  const size_t bytes = size_t{1} << 30, quads = bytes / sizeof(uint4);
  if (cudaMalloc(&words, 64 * sizeof(unsigned long long)) != cudaSuccess || cudaMalloc(&background, bytes) != cudaSuccess ||
      cudaMalloc(&done, sizeof(int)) != cudaSuccess || cudaMalloc(&result, sizeof(Result)) != cudaSuccess) {
    std::printf("cudaMalloc failed (1 GiB and a few words)\n");
    return 1;
  }
  cudaMemset(background, 0x5a, bytes);  // (never zeros)
  std::printf("store -> poll visibility between two SMs (ping-pong, 20000 rounds; %d SMs)\n", sms);
  run<Words::relaxed_pair>("16-byte relaxed stores and polls (the flagged sums)", sms, false, words, background, quads, done, result);
  run<Words::relaxed_word>("4-byte relaxed stores and polls", sms, false, words, background, quads, done, result);
  run<Words::release_acquire>("4-byte release stores, acquire polls", sms, false, words, background, quads, done, result);
  run<Words::relaxed_pair>("16-byte relaxed, every other SM streaming HBM", sms, true, words, background, quads, done, result);
  return 0;
}
