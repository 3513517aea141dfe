// LoadedKernel and get_kernel. Without a GPU only the failure paths run (they must throw Error, not crash);
// the rest skips.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cmath>
#include <thread>

#include "jit/jit_test_util.hpp"
#include "lutmm/device.hpp"
#include "lutmm/error.hpp"
#include "leftover_cuda_error.hpp"  // fails the test that leaves a CUDA error behind

namespace lutmm::jit {
namespace {

using testing::CacheTest;
using testing::scale_request;

#define SKIP_WITHOUT_GPU() \
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device"

// Device buffers freed at scope end.
struct DeviceFloats {
  float* ptr = nullptr;
  explicit DeviceFloats(size_t n) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(float)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc");
  }
  ~DeviceFloats() { cudaFree(ptr); }
};

// Runs the scale kernel on n values and returns out.
std::vector<float> run_scale(const LoadedKernel& kernel, unsigned int n, float s) {
  std::vector<float> in(n), out(n, -1.f);
  for (unsigned int i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.5f - 3.f;
  DeviceFloats d_in(n), d_out(n);
  EXPECT_EQ(cudaMemcpy(d_in.ptr, in.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  void* args[] = {&d_out.ptr, &d_in.ptr, &n, &s};
  kernel.launch(dim3((n + 127) / 128), dim3(128), 0, nullptr, args);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), d_out.ptr, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

void expect_scaled(const std::vector<float>& out, float s) {
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], (static_cast<float>(i) * 0.5f - 3.f) * s) << i;
}

TEST(LoadedKernel, EmptyKernelRefusesToLaunch) {
  LoadedKernel empty;
  EXPECT_THROW(empty.launch(dim3(1), dim3(1), 0, nullptr, nullptr), Error);
  EXPECT_THROW(empty.set_max_dynamic_shared_memory(1024), Error);
  EXPECT_THROW(LoadedKernel::load({}, "k"), Error);
}

// The TMA tensor map of x (x multicast): arguments outside what the kernels read are refused, naming the
// argument, before the driver is asked (so also without a GPU); with a GPU a valid one encodes.
TEST(TensorMap, BadArgumentsNameTheArgument) {
  alignas(64) unsigned char map[192] = {};
  const void* base = reinterpret_cast<const void*>(uintptr_t{1} << 20);  // (never dereferenced)
  auto refused = [&](void* m, const void* b, uint64_t cols, uint64_t rows, uint32_t box_cols, uint32_t box_rows,
                     const char* argument) {
    try {
      encode_tensor_map_2d_u16(m, b, cols, rows, box_cols, box_rows);
      ADD_FAILURE() << "accepted (" << argument << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + argument + "'"), std::string::npos) << e.what();
    }
  };
  refused(map + 8, base, 4096, 64, 64, 32, "map");
  refused(map, static_cast<const char*>(base) + 2, 4096, 64, 64, 32, "base");
  refused(map, base, 4092, 64, 64, 32, "cols");  // rows of 8184 bytes: not a 16-byte pitch
  refused(map, base, 0, 64, 64, 32, "cols");
  refused(map, base, 4096, 64, 32, 32, "box");    // 64 bytes: not the 128-byte swizzle span
  refused(map, base, 4096, 64, 64, 512, "box");
  if (device_count() == 0) return;
  DeviceFloats x(64 * 4096 / 2);
  EXPECT_NO_THROW(encode_tensor_map_2d_u16(map, x.ptr, 4096, 64, 64, 32));
}

TEST(LoadedKernel, WithoutGpuThrowsError) {
  if (device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const CompiledKernel k = compile(scale_request(80));
  try {
    LoadedKernel::load(k.cubin, "lutmm_test_scale");
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
  EXPECT_THROW(get_kernel(scale_request(80)), Error);
}

TEST_F(CacheTest, GetKernelRunsAndIsMemoised) {
  SKIP_WITHOUT_GPU();
  const CompileRequest r = scale_request(current_device_info().arch(), "gpu");
  const auto kernel = get_kernel(r);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->name(), "lutmm_test_scale");
  EXPECT_EQ(get_kernel(r).get(), kernel.get());
  expect_scaled(run_scale(*kernel, 1000, 2.5f), 2.5f);
  // From several threads at once: the same module, and launches from threads that never used CUDA work.
  std::vector<std::thread> threads;
  std::vector<const LoadedKernel*> seen(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const auto k = get_kernel(r);
      seen[t] = k.get();
      expect_scaled(run_scale(*k, 333, static_cast<float>(t)), static_cast<float>(t));
    });
  for (auto& t : threads) t.join();
  for (const LoadedKernel* k : seen) EXPECT_EQ(k, kernel.get());
}

TEST(LoadedKernel, ArchSpecificCubinRuns) {
  SKIP_WITHOUT_GPU();
  const int arch = current_device_info().arch();
  if (arch < 90) GTEST_SKIP() << "no arch-specific target below sm_90";
  CompileRequest r = scale_request(arch, "arch specific");
  r.arch_specific = true;
  const CompiledKernel k = compile(r);
  const auto kernel = LoadedKernel::load(k.cubin, r.kernel_name);
  expect_scaled(run_scale(*kernel, 257, -1.5f), -1.5f);
}

// PTX (what compile() gives for a GPU newer than NVRTC) is JIT-compiled by the driver on load, with or
// without the trailing NUL.
TEST(LoadedKernel, PtxLoads) {
  SKIP_WITHOUT_GPU();
  const int arch = current_device_info().arch();
  const CompileRequest r = scale_request(arch);
  nvrtcProgram program = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&program, r.source.c_str(), "ptx.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const std::string target = "--gpu-architecture=compute_" + std::to_string(arch);
  const char* options[] = {target.c_str()};
  ASSERT_EQ(nvrtcCompileProgram(program, 1, options), NVRTC_SUCCESS);
  size_t size = 0;
  ASSERT_EQ(nvrtcGetPTXSize(program, &size), NVRTC_SUCCESS);
  std::vector<char> ptx(size);
  ASSERT_EQ(nvrtcGetPTX(program, ptx.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&program);
  expect_scaled(run_scale(*LoadedKernel::load(ptx, r.kernel_name), 100, 3.f), 3.f);
  ptx.pop_back();  // no NUL
  expect_scaled(run_scale(*LoadedKernel::load(ptx, r.kernel_name), 100, 4.f), 4.f);
}

TEST(LoadedKernel, LoadErrorsNameTheKernel) {
  SKIP_WITHOUT_GPU();
  const CompiledKernel k = compile(scale_request(current_device_info().arch()));
  try {
    LoadedKernel::load(k.cubin, "no_such_kernel");
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
  const std::vector<char> garbage(64, 'x');
  EXPECT_THROW(LoadedKernel::load(garbage, "lutmm_test_scale"), Error);
}

// A kernel using all of the opt-in shared memory: refused before the limit is raised, runs after.
TEST(LoadedKernel, DynamicSharedMemoryLimit) {
  SKIP_WITHOUT_GPU();
  const DeviceInfo& device = current_device_info();
  CompileRequest r = scale_request(device.arch());
  r.source =
      "extern \"C\" __global__ void lutmm_test_scale(float* out, unsigned int n) {\n"
      "  extern __shared__ float buffer[];\n"
      "  for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = float(i);\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) out[0] = buffer[n - 1];\n"
      "}\n";
  const auto kernel = LoadedKernel::load(compile(r).cubin, r.kernel_name);
  const int bytes = device.smem_per_block_optin;
  ASSERT_GT(bytes, 48 * 1024);
  unsigned int n = static_cast<unsigned int>(bytes / sizeof(float));
  DeviceFloats out(1);
  void* args[] = {&out.ptr, &n};
  EXPECT_THROW(kernel->launch(dim3(1), dim3(256), bytes, nullptr, args), Error);
  EXPECT_THROW(kernel->set_max_dynamic_shared_memory(-1), Error);
  kernel->set_max_dynamic_shared_memory(bytes);
  kernel->set_max_dynamic_shared_memory(1024);  // lower: no effect, the limit only grows
  kernel->launch(dim3(1), dim3(256), bytes, nullptr, args);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  float last = 0;
  ASSERT_EQ(cudaMemcpy(&last, out.ptr, sizeof last, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(last, static_cast<float>(n - 1));
  EXPECT_THROW(kernel->launch(dim3(0), dim3(256), bytes, nullptr, args), Error);
  EXPECT_THROW(kernel->launch(dim3(1), dim3(0), bytes, nullptr, args), Error);
  EXPECT_THROW(kernel->launch(dim3(1), dim3(256), -4, nullptr, args), Error);
}

}  // namespace
}  // namespace lutmm::jit
