// bench/bench.hpp without a GPU where possible: option checks, the no-device exit, the progress line, the
// plot script, and the benchmark's own kernels through NVRTC (which needs no GPU).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench.hpp"
#include "device_kernels.hpp"
#include "jit/jit.hpp"
#include "jit/jit_test_util.hpp"
#include "lutmm/device.hpp"
#include "lutmm/error.hpp"
#include "progress.hpp"

namespace lutmm::bench {
namespace {

BenchOptions small_options() {
  BenchOptions o;
  o.shapes = {Shape{1, 4096, 4096, ""}, Shape{77, 320, 768, "SD1.5"}};
  return o;
}

std::string error_of(const BenchOptions& o) {
  try {
    check_bench_options(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BenchOptions, DefaultsAreValid) { EXPECT_EQ(error_of(small_options()), ""); }

TEST(BenchOptions, EachBadFieldIsNamed) {
  BenchOptions o = small_options();
  o.shapes.clear();
  EXPECT_NE(error_of(o).find("'shapes'"), std::string::npos);
  o = small_options();
  o.shapes.push_back(Shape{4, 0, 64, ""});
  EXPECT_NE(error_of(o).find("'shapes'"), std::string::npos);
  EXPECT_NE(error_of(o).find("shape 3"), std::string::npos) << error_of(o);
  o = small_options();
  o.bits = 5;
  EXPECT_NE(error_of(o).find("'bits'"), std::string::npos);
  o = small_options();
  o.group = 96;
  EXPECT_NE(error_of(o).find("'group'"), std::string::npos);
  o = small_options();
  o.replays = 0;
  EXPECT_NE(error_of(o).find("'replays'"), std::string::npos);
  o = small_options();
  o.csv_path = "/nonexistent-lutmm-folder/out.csv";
  EXPECT_NE(error_of(o).find("'csv_path'"), std::string::npos);
  o = small_options();
  o.png_path = std::filesystem::temp_directory_path().string();
  EXPECT_NE(error_of(o).find("'png_path'"), std::string::npos);
  o = small_options();
  o.trace_path = "/nonexistent-lutmm-folder/trace.csv";
  EXPECT_NE(error_of(o).find("'trace_path'"), std::string::npos);
  o = small_options();
  o.group = 0;  // one scale per row
  EXPECT_EQ(error_of(o), "");
}

// A trace needs kernels that record it: without -DLUTMM_TIMELINE=3 in LUTMM_NVRTC_OPTIONS the options are refused
// (before any GPU work) instead of a benchmark that ends with an empty trace.
TEST(BenchOptions, ATraceNeedsTheRecordingKernels) {
  using jit::testing::ScopedEnv;
  BenchOptions o = small_options();
  o.trace_path = (std::filesystem::temp_directory_path() / "lutmm_bench_test_trace.csv").string();
  {
    ScopedEnv unset("LUTMM_NVRTC_OPTIONS", std::nullopt);
    EXPECT_NE(error_of(o).find("'trace_path'"), std::string::npos);
    EXPECT_NE(error_of(o).find("LUTMM_NVRTC_OPTIONS unset"), std::string::npos) << error_of(o);
  }
  {
    ScopedEnv other("LUTMM_NVRTC_OPTIONS", "-DLUTMM_TIMELINE=1");
    EXPECT_NE(error_of(o).find("LUTMM_NVRTC_OPTIONS='-DLUTMM_TIMELINE=1'"), std::string::npos) << error_of(o);
  }
  {
    ScopedEnv longer("LUTMM_NVRTC_OPTIONS", "-DLUTMM_TIMELINE=30");  // (a whole option, not a prefix of one)
    EXPECT_NE(error_of(o).find("'trace_path'"), std::string::npos) << error_of(o);
  }
  {
    ScopedEnv traced("LUTMM_NVRTC_OPTIONS", "-DLUTMM_L2_AHEAD=0  -DLUTMM_TIMELINE=3");
    EXPECT_EQ(error_of(o), "");
  }
}

TEST(RunBench, BadOptionsThrowBeforeAnyGpuWork) {
  BenchOptions o = small_options();
  o.replays = -3;
  EXPECT_THROW(run_bench(o), Error);
}

TEST(RunBench, WithoutADeviceSaysSoAndFails) {
  if (device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  BenchOptions o = small_options();
  o.progress = false;
  ::testing::internal::CaptureStderr();
  const int rc = run_bench(o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("no CUDA device"), std::string::npos) << err;
  EXPECT_THROW(measure_ceilings(), Error);
}

TEST(Progress, RendersBarCountAndLabel) {
  EXPECT_EQ(Progress::render(0, 4, "", 8), "[........] 0/4");
  EXPECT_EQ(Progress::render(2, 4, "M=1 N=2 K=3", 8), "[####....] 2/4  M=1 N=2 K=3");
  EXPECT_EQ(Progress::render(4, 4, "x", 8), "[########] 4/4  x");
  EXPECT_EQ(Progress::render(3, 12, "", 4), "[#...]  3/12");  // count padded to the width of "12/12"
}

TEST(Progress, WritesOneLinePerStepToALog) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(2, true, f);
    p.step("first");
    p.step("second");
    p.step("past the end stays at 2/2");
  }
  std::rewind(f);
  char buffer[512] = {};
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
  std::fclose(f);
  const std::string text(buffer, n);
  EXPECT_NE(text.find("1/2  first\n"), std::string::npos) << text;
  EXPECT_NE(text.find("2/2  second\n"), std::string::npos) << text;
  EXPECT_NE(text.find("2/2  past the end"), std::string::npos) << text;
  std::FILE* g = std::tmpfile();
  {
    Progress quiet(2, false, g);
    quiet.step("x");
  }
  EXPECT_EQ(std::ftell(g), 0);
  std::fclose(g);
}

// The bench kernels must compile for every architecture lutmm targets, without spills: a spilling
// read kernel would measure local memory, not HBM.
TEST(BenchKernels, CompileWithNvrtcForEveryTarget) {
  for (const KernelSource& k : {fill_kernel_source(), read_kernel_source(), empty_kernel_source()}) {
    for (int arch : {80, 86, 89, 90, 100, 120}) {
      jit::CompileRequest r;
      r.source = k.source;
      r.kernel_name = k.kernel_name;
      r.arch = arch;
      jit::CompiledKernel c;
      ASSERT_NO_THROW(c = jit::compile(r)) << k.kernel_name << " sm_" << arch;
      EXPECT_FALSE(c.cubin.empty());
      if (!c.is_ptx) {
        EXPECT_EQ(c.resources.spill_store_bytes, 0) << k.kernel_name << " sm_" << arch << "\n" << c.log;
        EXPECT_EQ(c.resources.spill_load_bytes, 0) << k.kernel_name << " sm_" << arch;
      }
    }
  }
}

TEST(BenchKernels, RejectBadArguments) {
  EXPECT_THROW(fill_random(nullptr, 10, DType::bf16, 1, nullptr), Error);
  EXPECT_THROW(fill_random(reinterpret_cast<void*>(16), -1, DType::bf16, 1, nullptr), Error);
  EXPECT_THROW(read_reduce(reinterpret_cast<void*>(16), 24, reinterpret_cast<uint32_t*>(16), nullptr), Error);
  EXPECT_THROW(read_reduce(reinterpret_cast<void*>(8), 32, reinterpret_cast<uint32_t*>(16), nullptr), Error);
  EXPECT_THROW(read_reduce(reinterpret_cast<void*>(16), 32, nullptr, nullptr), Error);
}

TEST(PlotScript, IsFoundInTheSourceTree) {
  if (std::getenv("LUTMM_PLOT_SCRIPT") != nullptr) GTEST_SKIP() << "LUTMM_PLOT_SCRIPT overrides the source tree";
  const std::string path = plot_script_path();
  ASSERT_FALSE(path.empty());
  EXPECT_TRUE(std::filesystem::equivalent(path, std::filesystem::path(LUTMM_SOURCE_DIR) / "scripts" / "plot_bench.py"));
}

int run_shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Draws a CSV written by write_bench_csv: a PNG when matplotlib is there, else exit code 3 with a reason.
TEST(PlotScript, PlotsABenchCsvOrSaysMatplotlibIsMissing) {
  if (run_shell("python3 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const auto dir = std::filesystem::temp_directory_path() / ("lutmm_plot_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  BenchRow a;
  a.shape = Shape{1, 4096, 4096, ""};
  a.config = "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem";
  a.lutmm_us = 5;
  a.cublas_us = 10;
  a.floor_us = 2;
  a.bytes = 8 << 20;
  a.flops = 3.3e7;
  BenchRow b = a;
  b.shape = Shape{4096, 4096, 4096, ""};
  b.lutmm_us = 300;
  b.cublas_us = 200;
  b.floor_us = 180;
  BenchRow skipped;
  skipped.shape = Shape{1, 24, 40, ""};
  skipped.status = "skipped: k";
  const std::string csv = (dir / "bench.csv").string(), png = (dir / "bench.png").string();
  write_bench_csv(csv, {a, b, skipped}, Ceilings{4e12, 700e12}, "test gpu");
  const std::string script = plot_script_path();
  const int have_matplotlib = run_shell("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
  const int rc = run_shell("python3 '" + script + "' '" + csv + "' '" + png + "' 'test' 2>/dev/null");
  if (have_matplotlib) {
    EXPECT_EQ(rc, 0);
    EXPECT_GT(std::filesystem::file_size(png), 1000u);
  } else {
    EXPECT_EQ(rc, 3);
    EXPECT_FALSE(std::filesystem::exists(png));
  }
  // Usage errors and unreadable input are exit code 2 either way.
  EXPECT_EQ(run_shell("python3 '" + script + "' 2>/dev/null"), 2);
  EXPECT_EQ(run_shell("python3 '" + script + "' '" + (dir / "missing.csv").string() + "' '" + png + "' 2>/dev/null"), 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lutmm::bench
