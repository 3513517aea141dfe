#include "runtime/cuda_graph.hpp"

#include "runtime/cuda_check.hpp"

namespace lutmm {

void CudaGraph::begin(cudaStream_t stream) {
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}

void CudaGraph::end(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  const cudaError_t status = cudaGraphInstantiate(&exec_, graph, 0);
  (void)cudaGraphDestroy(graph);
  check_cuda(status, "cudaGraphInstantiate");
}

void CudaGraph::abort(cudaStream_t stream) noexcept {
  // Ending the capture is the only way to leave capture mode; the (invalid) graph is dropped.
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

CudaGraph::~CudaGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
}

void CudaGraph::launch(cudaStream_t stream) const { check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch"); }

}  // namespace lutmm
