#pragma once
// CUDA runtime and cuBLAS plumbing for the benchmark and the GPU checks: every call's status is checked
// (LUTMM_CUDA / LUTMM_CUBLAS throw lutmm::Error naming the call and the error string), and every resource
// is owned by a small RAII type so an exception half-way through a benchmark leaks nothing.
#include <cstddef>
#include <cstdint>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace lutmm::bench {

// Throw lutmm::Error("lutmm: <call> failed: <name>: <description>") when status is not success.
void check_cuda(cudaError_t status, const char* call);
void check_cublas(cublasStatus_t status, const char* call);

#define LUTMM_CUDA(call) ::lutmm::bench::check_cuda((call), #call)
#define LUTMM_CUBLAS(call) ::lutmm::bench::check_cublas((call), #call)

// Device memory, freed on destruction. Allocation size 0 is allowed and holds no pointer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A non-blocking stream (graph capture needs a stream other than the legacy default stream).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds between two events already recorded on a stream (waits for `stop`).
float elapsed_ms(const Event& start, const Event& stop);

// A cuBLAS handle bound to one stream, with its own workspace: cuBLAS must not allocate while a graph is
// being captured, and with a workspace set it never does.
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
};

// Host <-> device copies, complete on return. They are ordered on `stream` (a non-blocking stream does
// not wait for the legacy default stream, so a copy meant for work on it must be enqueued on it).
void copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream = nullptr);
void copy_to_host(void* dst, const void* src, size_t bytes, cudaStream_t stream = nullptr);

// Throws lutmm::Error("lutmm: no CUDA device ...") when device_count() == 0.
void require_device(const char* what);

}  // namespace lutmm::bench
