#pragma once
// An instantiated CUDA graph captured from the calls `record(stream)` makes on `stream`: how the tuner
// (tune/timing.cpp) and the benchmark (bench/bench.cpp) time chains of short kernels, the same way. Capture
// runs in thread-local mode, so a forbidden call inside it (cudaMalloc, a synchronization) fails loudly
// instead of being recorded wrongly; when `record` throws, the capture is ended and the stream usable again.
#include <utility>

#include <cuda_runtime_api.h>

namespace lutmm {

class CudaGraph {
 public:
  template <typename Record>
  static CudaGraph capture(cudaStream_t stream, Record&& record) {
    CudaGraph g;
    g.begin(stream);
    try {
      record(stream);
    } catch (...) {
      g.abort(stream);
      throw;
    }
    g.end(stream);
    return g;
  }
  CudaGraph(CudaGraph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph();
  void launch(cudaStream_t stream) const;

 private:
  CudaGraph() = default;
  void begin(cudaStream_t stream);
  void end(cudaStream_t stream);
  void abort(cudaStream_t stream) noexcept;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace lutmm
