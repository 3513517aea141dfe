#include "cuda_util.hpp"

#include <string>

#include "lutmm/device.hpp"
#include "lutmm/error.hpp"

namespace lutmm::bench {

void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  // Clear a non-sticky error so the next check does not report it again.
  (void)cudaGetLastError();
  throw_error(std::string(call) + " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw_error(std::string(call) + " failed: " + cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) LUTMM_CUDA(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) (void)cudaFree(ptr_);
}

Stream::Stream() { LUTMM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::~Stream() { (void)cudaStreamDestroy(stream_); }
void Stream::synchronize() const { LUTMM_CUDA(cudaStreamSynchronize(stream_)); }

Event::Event() { LUTMM_CUDA(cudaEventCreate(&event_)); }
Event::~Event() { (void)cudaEventDestroy(event_); }

float elapsed_ms(const Event& start, const Event& stop) {
  LUTMM_CUDA(cudaEventSynchronize(stop.get()));
  float ms = 0;
  LUTMM_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

// 32 MiB: what NVIDIA recommends for Hopper and newer; older GPUs use less of it.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

CublasHandle::CublasHandle(cudaStream_t stream) : workspace_(kCublasWorkspaceBytes) {
  LUTMM_CUBLAS(cublasCreate(&handle_));
  try {
    LUTMM_CUBLAS(cublasSetStream(handle_, stream));
    LUTMM_CUBLAS(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
  } catch (...) {
    (void)cublasDestroy(handle_);
    throw;
  }
}

CublasHandle::~CublasHandle() { (void)cublasDestroy(handle_); }

void copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  LUTMM_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  LUTMM_CUDA(cudaStreamSynchronize(stream));
}

void copy_to_host(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  LUTMM_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  LUTMM_CUDA(cudaStreamSynchronize(stream));
}

void require_device(const char* what) {
  if (device_count() == 0) {
    throw_error(std::string("no CUDA device: ") + what + " needs a GPU (cudaGetDeviceCount found none)");
  }
}

}  // namespace lutmm::bench
