// Device properties: never throws for "no GPU", names the argument for a bad index, caches per device.
#include "lutmm/device.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <regex>

#include "lutmm/error.hpp"

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
