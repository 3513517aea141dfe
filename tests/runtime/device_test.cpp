// Device properties: never throws for "no GPU", names the argument for a bad index, caches per device.
#include "lutmm/device.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <regex>

#include "lutmm/error.hpp"
#include "leftover_cuda_error.hpp"  // fails the test that leaves a CUDA error behind

namespace lutmm {
namespace {

std::string error_of(int device) {
  try {
    device_info(device);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no Error thrown)";
}

TEST(Device, CountNeverThrows) {
  int count = -1;
  EXPECT_NO_THROW(count = device_count());
  EXPECT_GE(count, 0);
  EXPECT_EQ(device_count(), count);
}

TEST(Device, BadIndexNamesTheArgument) {
  const int count = device_count();
  for (int bad : {-1, count, count + 7}) {
    const std::string message = error_of(bad);
    EXPECT_NE(message.find("argument 'device'"), std::string::npos) << message;
    EXPECT_NE(message.find("got " + std::to_string(bad)), std::string::npos) << message;
  }
}

TEST(Device, Versions) {
  const std::string expected_runtime =
      std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
  EXPECT_EQ(cuda_runtime_version(), expected_runtime);
  const std::string driver = cuda_driver_version();
  EXPECT_TRUE(driver == "none" || std::regex_match(driver, std::regex(R"(\d+\.\d+)"))) << driver;
  if (device_count() > 0) EXPECT_NE(driver, "none");
}

// The context's SMs: 0 without a GPU (never throws); on a GPU the primary context's are the device's, and a view for
// fewer SMs (a green context) is the device's info with that count, cached; more or none gives the device's own.
TEST(Device, ContextSmCountAndTheInfoAContextSees) {
  int sms = -1;
  EXPECT_NO_THROW(sms = context_sm_count());
  if (device_count() == 0) {
    EXPECT_EQ(sms, 0);
    return;
  }
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // (the primary context, current from here)
  const DeviceInfo& whole = device_info(0);
  EXPECT_EQ(context_sm_count(), whole.sm_count);
  EXPECT_EQ(&current_device_info(), &whole);
  const DeviceInfo& part = device_info(0, 16);
  EXPECT_EQ(part.sm_count, 16);
  EXPECT_EQ(part.name, whole.name);
  EXPECT_EQ(part.smem_per_sm, whole.smem_per_sm);
  EXPECT_EQ(&device_info(0, 16), &part);
  EXPECT_EQ(&device_info(0, 0), &whole);
  EXPECT_EQ(&device_info(0, whole.sm_count + 8), &whole);
}

TEST(Device, InfoOfEveryDevice) {
  const int count = device_count();
  if (count == 0) GTEST_SKIP() << "no CUDA device";
  for (int d = 0; d < count; ++d) {
    const DeviceInfo& info = device_info(d);
    EXPECT_EQ(&device_info(d), &info);  // cached: the same object every time
    EXPECT_EQ(info.index, d);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.arch(), 70);
    EXPECT_EQ(info.arch(), info.cc_major * 10 + info.cc_minor);
    EXPECT_GT(info.sm_count, 0);
    EXPECT_GT(info.l2_bytes, 0);
    EXPECT_GT(info.memory_bytes, int64_t{1} << 30);
    EXPECT_GE(info.smem_per_block_optin, 48 * 1024);
    EXPECT_GE(info.smem_per_sm, info.smem_per_block_optin);
    EXPECT_GE(info.max_threads_per_sm, 1024);
    EXPECT_GE(info.regs_per_sm, 32 * 1024);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, d), cudaSuccess);
    EXPECT_EQ(info.sm_count, prop.multiProcessorCount);
    EXPECT_EQ(info.cc_major, prop.major);
    EXPECT_EQ(info.cc_minor, prop.minor);
  }
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current_device_info().index, current);
}

}  // namespace
}  // namespace lutmm
