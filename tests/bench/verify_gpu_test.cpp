// The GPU half of bench/: verify_gemm and check_determinism on lutmm::gemm, the benchmark's own kernels
// against host arithmetic, and one small benchmark run end to end. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "bench.hpp"
#include "cuda_util.hpp"
#include "device_kernels.hpp"
#include "lutmm/lutmm.hpp"
#include "verify.hpp"
#include "leftover_cuda_error.hpp"  // fails the test that leaves a CUDA error behind

namespace lutmm::bench {
namespace {

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";         \
  } while (0)

Problem problem(int64_t m, int64_t n, int64_t k, int bits, int group, DType dtype) {
  return Problem::of(m, n, k, bits, group, dtype);
}

TEST(VerifyGemmGpu, SmallProblemsPassAgainstTheCpuReference) {
  REQUIRE_GPU();
  uint64_t seed = 100;
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (bool bias : {false, true}) {
      for (TableKind table : {TableKind::random, TableKind::nf}) {
        VerifyCase c{problem(77, 320, 768, 4, 128, dtype), std::nullopt, ++seed, bias, table};
        const VerifyResult r = verify_gemm(c);
        EXPECT_TRUE(r.passed) << c.problem.str() << " bias=" << bias << ": " << r.str();
        EXPECT_EQ(r.reference, "reference_gemm_f64");
        EXPECT_EQ(r.unwritten, 0);
        EXPECT_EQ(r.guard_overwritten, 0);
        EXPECT_DOUBLE_EQ(r.tolerance, verify_tolerance(dtype));
        EXPECT_FALSE(r.config_name.empty());
        EXPECT_GT(r.rel_fro_error, 0.0);  // rounding to the dtype is never free on random data
      }
    }
  }
}

TEST(VerifyGemmGpu, ForcedConfigIsTheOneReported) {
  REQUIRE_GPU();
  const Problem p = problem(16, 1024, 1024, 3, 64, DType::bf16);
  const std::vector<KernelConfig> configs = valid_configs(p, current_device_info());
  ASSERT_FALSE(configs.empty());
  const VerifyResult r = verify_gemm(VerifyCase{p, configs.back(), 7, false});
  EXPECT_EQ(r.config_name, configs.back().name());
  EXPECT_TRUE(r.passed) << r.str();
}

TEST(VerifyGemmGpu, LargeProblemsUseTheCublasReference) {
  REQUIRE_GPU();
  const Problem p = problem(1024, 2048, 1024, 4, 128, DType::bf16);  // 2.1e9 multiply-adds
  const VerifyResult r = verify_gemm(VerifyCase{p, std::nullopt, 8, true});
  EXPECT_EQ(r.reference, "cublasDgemm");
  EXPECT_TRUE(r.passed) << r.str();
}

TEST(VerifyGemmGpu, DeterministicRuns) {
  REQUIRE_GPU();
  const DeterminismResult r = check_determinism(VerifyCase{problem(8, 4096, 4096, 4, 128, DType::f16),
                                                           std::nullopt, 9, false},
                                                3);
  EXPECT_EQ(r.runs, 3);
  EXPECT_EQ(r.unwritten, 0);
  EXPECT_TRUE(r.identical) << r.differing << " outputs differ with " << r.config_name;
  EXPECT_THROW(check_determinism(VerifyCase{problem(8, 64, 64, 4, 64, DType::f16), std::nullopt, 9, false}, 1),
               Error);
}

TEST(BenchKernelsGpu, FillIsRandomNonZeroAndInRange) {
  REQUIRE_GPU();
  constexpr int64_t kCount = 1 << 20;
  for (DType dtype : {DType::bf16, DType::f16}) {
    DeviceBuffer buffer(kCount * sizeof(uint16_t));
    fill_random(buffer.get(), kCount, dtype, 42, nullptr);
    std::vector<uint16_t> host(kCount);
    copy_to_host(host.data(), buffer.get(), buffer.bytes());
    int64_t negative = 0;
    for (uint16_t bits : host) {
      const float v = bits_to_float(bits, dtype);
      ASSERT_TRUE(std::fabs(v) >= 1.0f / 256 && std::fabs(v) < 1.0f) << v;
      negative += v < 0;
    }
    EXPECT_NEAR(static_cast<double>(negative) / kCount, 0.5, 0.01);
    std::vector<uint16_t> again(kCount);
    fill_random(buffer.get(), kCount, dtype, 42, nullptr);
    copy_to_host(again.data(), buffer.get(), buffer.bytes());
    EXPECT_EQ(host, again);
  }
}

TEST(BenchKernelsGpu, ReadReduceXorsEveryWord) {
  REQUIRE_GPU();
  constexpr int64_t kBytes = (int64_t{64} << 20) + 48;  // not a multiple of the grid: the tail loop runs
  std::vector<uint32_t> host(kBytes / 4);
  uint32_t expected = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0x5bd1e995u;
    expected ^= host[i];
  }
  DeviceBuffer data(kBytes), sink(kReadSinkWords * sizeof(uint32_t));
  copy_to_device(data.get(), host.data(), kBytes);
  check_cuda(cudaMemset(sink.get(), 0, sink.bytes()), "cudaMemset");
  read_reduce(data.get(), kBytes, sink.as<uint32_t>(), nullptr);
  std::vector<uint32_t> words(kReadSinkWords);
  copy_to_host(words.data(), sink.get(), sink.bytes());
  uint32_t got = 0;
  for (uint32_t w : words) got ^= w;
  EXPECT_EQ(got, expected);
}

TEST(RunBenchGpu, SmallSetWritesEveryShapeToTheCsv) {
  REQUIRE_GPU();
  const auto csv = std::filesystem::temp_directory_path() / ("lutmm_bench_gpu_" + std::to_string(getpid()) + ".csv");
  BenchOptions o;
  o.shapes = {Shape{1, 4096, 4096, ""}, Shape{77, 320, 768, ""}, Shape{2, 1280, 320, ""}};
  o.csv_path = csv.string();
  o.replays = 3;
  o.progress = false;
  EXPECT_EQ(run_bench(o), 0);
  std::ifstream f(csv);
  int lines = 0;
  std::string line, shape_320;
  auto fields_of = [](const std::string& text) {  // (no field of these rows is quoted)
    std::vector<std::string> fields;
    std::stringstream in(text);
    for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
    if (!text.empty() && text.back() == ',') fields.emplace_back();
    return fields;
  };
  std::vector<std::string> header;
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? std::string::npos : static_cast<size_t>(it - header.begin());
  };
  while (std::getline(f, line)) {
    ++lines;
    if (line.find(",2,1280,320,") != std::string::npos) shape_320 = line;
    if (lines == 1) {
      header = fields_of(line);
      continue;
    }
    const std::vector<std::string> fields = fields_of(line);
    ASSERT_EQ(fields.size(), header.size()) << line;
    // the plain read of the same bytes (read_us) and lutmm's speed as a share of it; how it was launched
    for (const char* name : {"read_us", "pct_read"}) {
      ASSERT_NE(column(name), std::string::npos) << name;
      EXPECT_GT(std::stod(fields[column(name)]), 0.0) << name << ": " << line;
    }
    ASSERT_NE(column("launch"), std::string::npos);
    const std::string launch = fields[column("launch")];
    std::string rest = launch;
    for (const char* part : {"cluster", "spread", "flagged", "early", "prewait", "+"})
      for (size_t at; (at = rest.find(part)) != std::string::npos;) rest.erase(at, std::string_view(part).size());
    EXPECT_EQ(rest, "") << "launch column: " << launch;
  }
  EXPECT_EQ(lines, 4);
  EXPECT_NE(shape_320.find(",4,64,bf16,"), std::string::npos) << shape_320;  // K=320: G falls back to 64
  EXPECT_NE(shape_320.find(",ok,"), std::string::npos) << shape_320;
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace lutmm::bench
