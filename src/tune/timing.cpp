// Timing configs on the GPU: random inputs uploaded once as a small host pattern and doubled on the
// device (a 200 MB weight fills in well under a millisecond instead of seconds of host random numbers),
// rotating weight copies so that every timed run reads its weight from DRAM, CUDA events around the
// kernel alone.
#include "tune/timing.hpp"

#include <algorithm>
#include <cstdint>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "lutmm/pack.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/cuda_graph.hpp"
#include "runtime/launch_choices.hpp"

namespace lutmm::tuning_detail {

namespace {

constexpr size_t kPatternBytes = 64 * 1024;
constexpr int64_t kMinRotationBytes = 16ll << 20;  // when the L2 size is unknown or tiny
constexpr size_t kFreeMemoryMargin = 64ull << 20;   // left to the rest of the process
constexpr float kBatchBelowUs = 100.0f;  // "short": the probe call took less (see time())
constexpr float kGraphUs = 300.0f;       // a short kernel's timed run: a CUDA graph of calls about this long
constexpr int kMinGraphCalls = 4, kMaxGraphCalls = 64;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// kPatternBytes of dtype values with magnitude in [lo, hi), random sign when `signed_values`; never zero.
std::vector<uint8_t> value_pattern(DType dtype, uint64_t seed, float lo, float hi, bool signed_values) {
  std::vector<uint8_t> bytes(kPatternBytes);
  uint64_t state = seed;
  for (size_t i = 0; i < kPatternBytes; i += 2) {
    const uint64_t r = splitmix64(state);
    const float unit = static_cast<float>(r >> 40) / static_cast<float>(1 << 24);  // [0, 1)
    float v = lo + (hi - lo) * unit;
    if (signed_values && (r & 1) != 0) v = -v;
    const uint16_t bits = float_to_bits(v, dtype);
    bytes[i] = static_cast<uint8_t>(bits & 0xff);
    bytes[i + 1] = static_cast<uint8_t>(bits >> 8);
  }
  return bytes;
}

std::vector<uint8_t> bit_pattern(uint64_t seed) {
  std::vector<uint8_t> bytes(kPatternBytes);
  uint64_t state = seed;
  for (size_t i = 0; i < kPatternBytes; i += 8) {
    const uint64_t r = splitmix64(state);
    for (int b = 0; b < 8; ++b) bytes[i + b] = static_cast<uint8_t>(r >> (8 * b));
  }
  return bytes;
}

std::string mib(size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

KernelConfig kernel_of(KernelConfig c) {
  c.split_k = c.split_k == kStreamK ? kStreamK : 0;  // (0: any split count may launch it)
  return c;
}

RelaxedCaptureMode::RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&previous_); }
RelaxedCaptureMode::~RelaxedCaptureMode() { cudaThreadExchangeStreamCaptureMode(&previous_); }

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(stream, &status);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

cudaStream_t private_stream(int device) {
  static std::mutex mutex;
  static std::map<int, cudaStream_t> streams;
  std::lock_guard lock(mutex);
  auto it = streams.find(device);
  if (it != streams.end()) return it->second;
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (tuning stream)");
  streams.emplace(device, s);
  return s;
}

TimingSession::TimingSession(const Problem& p, const DeviceInfo& dev, cudaStream_t after) : p_(p), dev_(dev) {
  check_problem(p);
  stream_ = private_stream(dev.index);
  int pools = 0;
  async_alloc_ = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev.index) == cudaSuccess && pools;
  cudaGetLastError();

  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  const size_t x_bytes = static_cast<size_t>(p.m * p.k) * 2;
  const size_t out_bytes = static_cast<size_t>(p.m * p.n) * 2;
  // 256-byte strides keep every copy on its own cache lines (and gemm()'s 16-byte alignment).
  packed_stride_ = (static_cast<size_t>(ps.words()) * 4 + 255) / 256 * 256;
  scale_stride_ = (static_cast<size_t>(ps.scale_count()) * 2 + 255) / 256 * 256;
  const size_t rotation_bytes = static_cast<size_t>(std::max<int64_t>(2 * dev.l2_bytes, kMinRotationBytes));
  copies_ = static_cast<int>((rotation_bytes + packed_stride_ + scale_stride_ - 1) / (packed_stride_ + scale_stride_));
  const size_t table_bytes = (size_t{2} << p.bits);
  const size_t cover_bytes = rotation_bytes;
  const size_t total = x_bytes + out_bytes + copies_ * (packed_stride_ + scale_stride_) + table_bytes + cover_bytes;
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (total + kFreeMemoryMargin > free_bytes)
    throw_error(fmt::format("not enough free GPU memory to tune {}: the inputs and {} weight copies need {}, {} is free",
                            p.str(), copies_, mib(total + kFreeMemoryMargin), mib(free_bytes)));

  if (after != stream_) {
    cudaEvent_t ready = nullptr;
    check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cudaError_t e = cudaEventRecord(ready, after);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(stream_, ready, 0);
    cudaEventDestroy(ready);
    check_cuda(e, "ordering the tuning stream after the caller's stream");
  }

  try {
    x_ = allocate(x_bytes);
    out_ = allocate(out_bytes);
    packed_ = allocate(copies_ * packed_stride_);
    scales_ = allocate(copies_ * scale_stride_);
    table_ = allocate(table_bytes);
    cover_ = allocate(cover_bytes);
    const uint64_t seed = 0x74756e65ull;  // "tune"
    static std::mutex pattern_mutex;
    static std::map<std::pair<int, int>, std::vector<uint8_t>> patterns;  // (dtype, kind) -> bytes
    std::vector<uint8_t> values, scales, words;
    {
      std::lock_guard lock(pattern_mutex);
      const int dt = static_cast<int>(p.dtype);
      auto& v = patterns[{dt, 0}];
      if (v.empty()) v = value_pattern(p.dtype, seed, 1.0f / 16, 1.0f, true);
      auto& s = patterns[{dt, 1}];
      if (s.empty()) s = value_pattern(p.dtype, seed + 1, 1.0f / 256, 1.0f / 64, false);
      auto& w = patterns[{0, 2}];
      if (w.empty()) w = bit_pattern(seed + 2);
      values = v;
      scales = s;
      words = w;
    }
    fill(x_, values);
    fill(table_, values);
    fill(scales_, scales);
    fill(packed_, words);
    check_cuda(cudaMemsetAsync(out_.ptr, 0xff, out_.bytes, stream_), "cudaMemsetAsync(out)");

    view_.n = p.n;
    view_.k = p.k;
    view_.bits = p.bits;
    view_.group_size = p.group_size;
    view_.dtype = p.dtype;
    view_.packed = static_cast<const uint32_t*>(packed_.ptr);
    view_.scales = static_cast<const uint16_t*>(scales_.ptr);
    view_.table = static_cast<const uint16_t*>(table_.ptr);

    check_cuda(cudaStreamSynchronize(stream_), "preparing the tuning inputs");
  } catch (...) {
    release();
    throw;
  }
}

TimingSession::~TimingSession() { release(); }

TimingSession::Buffer TimingSession::allocate(size_t bytes) {
  // 256 bytes extra and the pointer rounded up: gemm() wants 16-byte alignment, and 256 keeps every
  // buffer on its own cache lines whatever the allocator's granularity.
  Buffer raw;
  raw.bytes = bytes + 256;
  if (async_alloc_) {
    check_cuda(cudaMallocAsync(&raw.ptr, raw.bytes, stream_), "cudaMallocAsync (tuning inputs)");
  } else {
    check_cuda(cudaMalloc(&raw.ptr, raw.bytes), "cudaMalloc (tuning inputs)");
  }
  buffers_.push_back(raw);
  Buffer b;
  b.ptr = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw.ptr) + 255) / 256 * 256);
  b.bytes = bytes;
  return b;
}

void TimingSession::release() {
  // Stream-ordered frees need no device-wide synchronisation (cudaFree would wait for every stream).
  cudaStreamSynchronize(stream_);
  for (const Buffer& b : buffers_) {
    if (async_alloc_) {
      cudaFreeAsync(b.ptr, stream_);
    } else {
      cudaFree(b.ptr);
    }
  }
  buffers_.clear();
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  events_.clear();
  cudaStreamSynchronize(stream_);
  cudaGetLastError();  // the destructor reports nothing; a real fault surfaced in the timed runs already
}

void TimingSession::fill(const Buffer& b, const std::vector<uint8_t>& pattern) {
  // Upload one pattern, then double the filled prefix until the buffer is full: log2(bytes / 64 KiB) copies.
  char* dst = static_cast<char*>(b.ptr);
  const size_t first = std::min(b.bytes, pattern.size());
  check_cuda(cudaMemcpyAsync(dst, pattern.data(), first, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  for (size_t done = first; done < b.bytes;) {
    const size_t n = std::min(done, b.bytes - done);
    check_cuda(cudaMemcpyAsync(dst + done, dst, n, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    done += n;
  }
  // Pageable uploads return once the source is staged, so the pattern may go when this returns.
}

std::vector<std::string> TimingSession::prepare(const std::vector<KernelConfig>& configs) {
  // One kernel per (tile shape, LUT placement, Stream-K or not): the split-K count is a launch parameter. Each
  // is compiled as `lutmm precompile` does on this GPU (with the variants where a run could launch them), and
  // then every config's launch is planned as gemm() will plan it, which loads exactly the kernels its runs use
  // (the Stream-K instantiation, the spread and pre-wait variants): no timed run compiles or loads.
  std::map<std::string, size_t> request_of;  // the kernel's name -> index into kernels
  std::vector<size_t> kernel_index(configs.size());
  std::vector<KernelConfig> kernels;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto [it, inserted] = request_of.try_emplace(kernel_name(configs[i]), kernels.size());
    if (inserted) kernels.push_back(kernel_of(configs[i]));
    kernel_index[i] = it->second;
  }
  std::vector<std::string> kernel_errors(kernels.size());
  // NVRTC runs on the CPU: compile what the cache lacks on several threads.
  std::atomic<size_t> next{0};
  const unsigned hw = std::max(1u, std::min(kCompileThreads, std::thread::hardware_concurrency()));
  const size_t workers = std::min<size_t>(kernels.size(), hw);
  auto work = [&] {
    for (size_t i = next++; i < kernels.size(); i = next++) {
      try {
        precompile(p_, kernels[i], dev_);
      } catch (const Error& e) {
        kernel_errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  // Loading touches the CUDA context: on this thread.
  std::vector<std::string> errors(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    errors[i] = kernel_errors[kernel_index[i]];
    if (!errors[i].empty()) continue;
    try {
      launch_choices(p_, configs[i]);
    } catch (const Error& e) {
      errors[i] = e.what();
    }
  }
  return errors;
}

void TimingSession::grow_workspace(const std::vector<KernelConfig>& configs) {
  const KernelConfig* most_floats = nullptr;
  const KernelConfig* most_counters = nullptr;
  SplitKWorkspace floats_need, counters_need;
  for (const KernelConfig& c : configs) {
    const SplitKWorkspace need = split_k_workspace(c, p_, dev_);
    if (need.float_bytes > floats_need.float_bytes) {
      floats_need = need;
      most_floats = &c;
    }
    if (need.counters > counters_need.counters) {
      counters_need = need;
      most_counters = &c;
    }
  }
  GemmOptions o;
  o.stream = stream_;
  for (const KernelConfig* c : {most_floats, most_counters}) {
    if (c == nullptr) continue;
    if (c == most_counters && most_floats != nullptr && floats_need.counters >= counters_need.counters) continue;
    o.config = *c;
    try {
      gemm(x_.ptr, p_.m, view_, nullptr, out_.ptr, o);
    } catch (const Error&) {
      // That config cannot run; its own timing reports why. The others may still need the workspace.
    }
  }
  check_cuda(cudaStreamSynchronize(stream_), "growing the split-K workspace for tuning");
}

std::vector<double> TimingSession::time(const KernelConfig& c, int runs) {
  if (runs < 1) throw_argument_error("runs", ">= 1", std::to_string(runs));
  while (events_.size() < 2 * static_cast<size_t>(runs) + 2) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  GemmOptions o;
  o.config = c;
  o.stream = stream_;
  auto next_weight = [&] {
    WeightView w = view_;
    w.packed = reinterpret_cast<const uint32_t*>(static_cast<const char*>(packed_.ptr) + next_copy_ * packed_stride_);
    w.scales = reinterpret_cast<const uint16_t*>(static_cast<const char*>(scales_.ptr) + next_copy_ * scale_stride_);
    next_copy_ = (next_copy_ + 1) % copies_;
    return w;
  };
  // The cover: while the GPU writes a scratch buffer of twice the L2 (~50 us on an H200), the host queues
  // what follows, so the timed calls follow each other with no launch gap and the events time the kernels
  // alone. An untimed call after the cover absorbs the write-back of its dirty lines.
  auto cover = [&] {
    check_cuda(cudaMemsetAsync(cover_.ptr, 0, cover_.bytes, stream_), "cudaMemsetAsync(cover)");
    gemm(x_.ptr, p_.m, next_weight(), nullptr, out_.ptr, o);
  };
  const size_t first = 2 * static_cast<size_t>(runs);  // the probe's two events
  try {
    // A probe call sizes the runs: a run of a short kernel is one replay of a CUDA graph of ~300 us of
    // calls back to back, as a model's layers run and as `lutmm bench` times them (on sm_90+ each call
    // overlaps the previous one's tail through programmatic dependent launch, which an event between the
    // calls would prevent). Timed one at a time, some decode configs ranked first that ran 1.3x slower in
    // a chain (1 x 8192 x 8192: 19.8 us against 15.3, docs/NOTES.md v1.7); timed as four stream launches
    // between events, k-split decode configs ranked first that the benchmark's graphs ran 1.25x slower
    // (1 x 14336 x 4096: 15.1 us against 15.5 in the tuner, 18.0 against 14.2 in the benchmark, v1.8).
    cover();
    check_cuda(cudaEventRecord(events_[first], stream_), "cudaEventRecord");
    gemm(x_.ptr, p_.m, next_weight(), nullptr, out_.ptr, o);
    check_cuda(cudaEventRecord(events_[first + 1], stream_), "cudaEventRecord");
    check_cuda(cudaStreamSynchronize(stream_), ("the probe run of " + c.name()).c_str());
    float probe_ms = 0;
    check_cuda(cudaEventElapsedTime(&probe_ms, events_[first], events_[first + 1]), "cudaEventElapsedTime");
    const float probe_us = std::max(probe_ms * 1000.0f, 1.0f);
    const int batch = probe_us < kBatchBelowUs
                          ? std::clamp(static_cast<int>(kGraphUs / probe_us + 0.5f), kMinGraphCalls, kMaxGraphCalls)
                          : 1;
    std::optional<CudaGraph> graph;
    if (batch > 1) {
      graph.emplace(CudaGraph::capture(stream_, [&](cudaStream_t) {
        for (int b = 0; b < batch; ++b) gemm(x_.ptr, p_.m, next_weight(), nullptr, out_.ptr, o);
      }));
    }
    cover();
    for (int r = 0; r < runs; ++r) {
      check_cuda(cudaEventRecord(events_[2 * r], stream_), "cudaEventRecord");
      if (graph) {
        graph->launch(stream_);
      } else {
        gemm(x_.ptr, p_.m, next_weight(), nullptr, out_.ptr, o);
      }
      check_cuda(cudaEventRecord(events_[2 * r + 1], stream_), "cudaEventRecord");
    }
    check_cuda(cudaStreamSynchronize(stream_), ("the tuning runs of " + c.name()).c_str());
    std::vector<double> us;
    for (int r = 0; r < runs; ++r) {
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, events_[2 * r], events_[2 * r + 1]), "cudaEventElapsedTime");
      us.push_back(static_cast<double>(ms) * 1000.0 / batch);
    }
    return us;
  } catch (...) {
    cudaStreamSynchronize(stream_);
    throw;
  }
}

}  // namespace lutmm::tuning_detail
