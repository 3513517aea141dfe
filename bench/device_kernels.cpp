#include "device_kernels.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "cuda_util.hpp"
#include "jit/jit.hpp"
#include "lutmm/device.hpp"
#include "lutmm/error.hpp"

namespace lutmm::bench {
namespace {

constexpr int kThreads = 256;

// Value bits: SplitMix64 of (seed + (i+1) * golden), so the fill is a pure function of (seed, index) and any
// grid gives the same data. 16-bit layouts:
//   bf16: s eeeeeeee mmmmmmm    exponent 119..126 (bias 127): 2^-8 .. 2^-1 binades
//   fp16: s eeeee mmmmmmmmmm    exponent   7.. 14 (bias 15):  the same binades
constexpr const char* kFillSource = R"cuda(
extern "C" __global__ void __launch_bounds__(256)
lutmm_bench_fill16(unsigned short* out, long long count, unsigned long long seed, int is_bf16) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    unsigned long long z = seed + (unsigned long long)(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const unsigned sign = (unsigned)(z >> 63) << 15;
    const unsigned binade = (unsigned)(z >> 32) & 7u;
    const unsigned mant = (unsigned)z;
    out[i] = (unsigned short)(is_bf16 ? (sign | ((119u + binade) << 7) | (mant & 0x7fu))
                                      : (sign | ((7u + binade) << 10) | (mant & 0x3ffu)));
  }
}
)cuda";

// Each thread keeps four independent 16-byte loads in flight per iteration (ld.global.nc: read-only path,
// the data is never written during the kernel); a warp xor-reduces and one lane folds it into the sink word
// of its block (blockIdx.x mod 1024: a thousand blocks folding into one word serialised at the end of a
// short read), so the result depends on every byte and the compiler cannot drop a load.
constexpr const char* kReadSource = R"cuda(
__device__ __forceinline__ unsigned lutmm_load_xor(const void* p) {
  unsigned a, b, c, d;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p));
  return a ^ b ^ c ^ d;
}

extern "C" __global__ void __launch_bounds__(256)
lutmm_bench_read(const char* data, long long count16, unsigned* sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < count16; i += 4 * stride) {
    const unsigned a = lutmm_load_xor(data + 16 * i);
    const unsigned b = lutmm_load_xor(data + 16 * (i + stride));
    const unsigned c = lutmm_load_xor(data + 16 * (i + 2 * stride));
    const unsigned d = lutmm_load_xor(data + 16 * (i + 3 * stride));
    acc ^= a ^ b ^ c ^ d;
  }
  for (; i < count16; i += stride) acc ^= lutmm_load_xor(data + 16 * i);
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(sink + (blockIdx.x & 1023u), acc);
}
)cuda";

std::shared_ptr<jit::LoadedKernel> kernel(const KernelSource& k) {
  jit::CompileRequest request;
  request.source = k.source;
  request.kernel_name = k.kernel_name;
  request.arch = current_device_info().arch();
  return jit::get_kernel(request);
}

// Enough resident blocks to fill every SM, capped by the work.
unsigned grid_for(int64_t items) {
  const DeviceInfo& dev = current_device_info();
  const int64_t resident = static_cast<int64_t>(dev.sm_count) * std::max(1, dev.max_threads_per_sm / kThreads);
  return static_cast<unsigned>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, resident));
}

}  // namespace

KernelSource fill_kernel_source() { return {"lutmm_bench_fill16", kFillSource}; }
KernelSource read_kernel_source() { return {"lutmm_bench_read", kReadSource}; }
KernelSource empty_kernel_source() {
  return {"lutmm_bench_empty", "extern \"C\" __global__ void lutmm_bench_empty(unsigned long long) {}\n"};
}

double empty_launch_host_us(cudaStream_t stream, int calls, int rounds) {
  if (calls < 1) throw_argument_error("calls", ">= 1", std::to_string(calls));
  if (rounds < 1) throw_argument_error("rounds", ">= 1", std::to_string(rounds));
  const auto empty = kernel(empty_kernel_source());
  unsigned long long arg = 0;
  void* args[] = {&arg};
  empty->launch(dim3(1), dim3(32), 0, stream, args);  // warm: module loaded, context bound
  LUTMM_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) empty->launch(dim3(1), dim3(32), 0, stream, args);
    const auto t1 = std::chrono::steady_clock::now();
    LUTMM_CUDA(cudaStreamSynchronize(stream));
    per_call.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

void fill_random(void* data, int64_t count, DType dtype, uint64_t seed, cudaStream_t stream) {
  if (count < 0) throw_argument_error("count", "a non-negative value count", std::to_string(count));
  if (count == 0) return;
  if (data == nullptr) throw_argument_error("data", "a device pointer to count 16-bit values", "null");
  const auto fill = kernel(fill_kernel_source());
  auto* out = static_cast<unsigned short*>(data);
  long long n = count;
  unsigned long long s = seed;
  int is_bf16 = dtype == DType::bf16 ? 1 : 0;
  void* args[] = {&out, &n, &s, &is_bf16};
  fill->launch(dim3(grid_for(count)), dim3(kThreads), 0, stream, args);
  LUTMM_CUDA(cudaGetLastError());
}

void read_reduce(const void* data, int64_t bytes, uint32_t* sink, cudaStream_t stream) {
  if (bytes <= 0 || bytes % 16 != 0) {
    throw_argument_error("bytes", "a positive multiple of 16", std::to_string(bytes));
  }
  if (data == nullptr || reinterpret_cast<uintptr_t>(data) % 16 != 0) {
    throw_argument_error("data", "a 16-byte aligned device pointer", data == nullptr ? "null" : "a misaligned one");
  }
  if (sink == nullptr) throw_argument_error("sink", "a device pointer to kReadSinkWords 32-bit words", "null");
  const auto read = kernel(read_kernel_source());
  const char* in = static_cast<const char*>(data);
  long long count16 = bytes / 16;
  unsigned* out = sink;
  void* args[] = {&in, &count16, &out};
  read->launch(dim3(grid_for(count16)), dim3(kThreads), 0, stream, args);
  LUTMM_CUDA(cudaGetLastError());
}

}  // namespace lutmm::bench
