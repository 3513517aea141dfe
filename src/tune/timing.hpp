#pragma once
// The tuner's measuring machinery: random inputs on the GPU, rotating weight copies, event-timed runs.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "lutmm/gemm.hpp"
#include "runtime/workspace.hpp"

namespace lutmm::tuning_detail {

// Lets this thread make allocation and synchronisation calls while another thread captures a stream in
// global mode (they would otherwise invalidate that capture); restores the thread's mode on exit.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode();
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

// Whether `stream` is being captured; a failing query (e.g. the legacy stream while another stream
// captures in global mode) counts as capturing, the error cleared.
bool stream_is_capturing(cudaStream_t stream);

// The kernel a config runs: configs that differ in the split-K count alone share it (one compile; Stream-K is an
// instantiation of its own). kernel_of gives it as a config whose split count is open (any may launch it).
KernelConfig kernel_of(KernelConfig c);
inline std::string kernel_name(const KernelConfig& c) { return kernel_of(c).name(); }

// lutmm's own stream on `device` (the current one), created once, never destroyed; tuning runs on it so
// that it neither waits for nor delays the caller's stream beyond one event.
cudaStream_t private_stream(int device);


// Inputs for one problem on the current device: x, out and packed weights, random and never zero (dtype
// values of magnitude 1/16..1, scales 1/256..1/64, code words of random bits). The weight and its scales
// come in as many copies as fill twice the L2, and the runs take them in turn, so every run reads its
// weight from DRAM as a model's layers do (x stays in L2, as activations do). An earlier version wrote a
// scratch buffer before every run instead: the dirty lines it left were written back while the timed
// kernel read, which slowed memory-bound configs unevenly and misranked them (docs/NOTES.md, v1.7). A
// scratch buffer is still written once per batch of runs, untimed, to keep the GPU busy while the host
// queues the batch (see time()).
// Memory is stream-ordered on the private stream and released when the session ends.
class TimingSession {
 public:
  static constexpr unsigned kCompileThreads = 8;  // prepare()'s NVRTC threads at most (fewer on fewer cores)

  // Queues behind the work already on `after`; throws Error when the GPU lacks the memory.
  TimingSession(const Problem& p, const DeviceInfo& dev, cudaStream_t after);
  ~TimingSession();
  TimingSession(const TimingSession&) = delete;
  TimingSession& operator=(const TimingSession&) = delete;

  // Compiles (in parallel, through the JIT cache) and loads the kernel of every config; returns, per
  // config, an empty string or why it cannot run.
  std::vector<std::string> prepare(const std::vector<KernelConfig>& configs);
  // Grows gemm()'s split-K workspace of the private stream to what `configs` need, with untimed runs, so
  // no timed run allocates.
  void grow_workspace(const std::vector<KernelConfig>& configs);
  // `runs` runs of c (CUDA events around the kernels only), microseconds per call each: a run is one call,
  // or for a kernel under 100 us four calls back to back, each on the next weight copy. Throws Error when
  // gemm() refuses c or a run fails.
  std::vector<double> time(const KernelConfig& c, int runs);
  const Problem& problem() const { return p_; }

 private:
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  Buffer allocate(size_t bytes);
  void release();
  void fill(const Buffer& b, const std::vector<uint8_t>& pattern);

  Problem p_;
  DeviceInfo dev_;
  cudaStream_t stream_ = nullptr;
  bool async_alloc_ = false;
  std::vector<Buffer> buffers_;  // the raw allocations, freed by release()
  Buffer x_, out_, packed_, table_, scales_, cover_;  // packed_ and scales_ hold copies_ copies each
  size_t packed_stride_ = 0, scale_stride_ = 0;
  int copies_ = 1, next_copy_ = 0;
  WeightView view_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace lutmm::tuning_detail
