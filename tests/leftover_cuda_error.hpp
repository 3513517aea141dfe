#pragma once
// Included by every test program that runs GPU tests: after each test, the CUDA runtime's last error of the
// test's thread must be clear. A runtime call that fails without its error being taken (cudaGetLastError)
// leaves it for the next cudaGetLastError of the thread, which then reports it against a later test that
// did nothing wrong (v1.32: the green-context test failed with "invalid argument" only in one-process runs,
// never in gpu-check's shards). This listener names the test that left it, and clears it so that the next
// test starts clean.
//
// gtest fires OnTestEnd while the test is still the current one and in reverse order of the listeners, so
// the failure added here belongs to the test that just ran and shows in its result line.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "lutmm/device.hpp"

namespace lutmm::testing_support {

class LeftoverCudaErrorCheck : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo&) override {
    if (device_count() == 0) return;  // (no driver: the runtime's error of every call is "no device")
    const cudaError_t left = cudaGetLastError();
    if (left != cudaSuccess)
      ADD_FAILURE() << "the test left a CUDA error that no one took, for its thread's next cudaGetLastError: "
                    << cudaGetErrorName(left) << ": " << cudaGetErrorString(left);
  }
};

// One listener per program (an inline variable: one instance across the program's files).
inline const bool kLeftoverCudaErrorCheckInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new LeftoverCudaErrorCheck);
  return true;
}();

}  // namespace lutmm::testing_support
