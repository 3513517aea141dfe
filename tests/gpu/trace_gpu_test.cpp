// The developers' per-block trace (runtime/trace.hpp, ptx/timeline.cuh with -DLUTMM_TIMELINE=3) on the GPU: a GEMM
// whose kernel is built to record still computes the right answer, and every block of every launch leaves one
// record whose times and marks are in order. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "jit/jit_test_util.hpp"
#include "lutmm/lutmm.hpp"
#include "runtime/trace.hpp"
#include "verify.hpp"
#include "leftover_cuda_error.hpp"  // fails the test that leaves a CUDA error behind

namespace lutmm {
namespace {

TEST(TraceGpu, EveryBlockOfEveryLaunchLeavesOneOrderedRecord) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  trace::start();
  const auto csv = std::filesystem::temp_directory_path() / "lutmm_trace_gpu_test.csv";
  trace::write_csv(csv.string());  // (clears whatever earlier launches recorded)
  // 1 x 2048 x 2048 (a shape no other test plans, so its plan is made here, with the option) in 64-row tiles and
  // four splits: 32 x 4 blocks a launch.
  bench::VerifyCase c;
  c.problem = Problem::of(1, 2048, 2048, 4, 128, DType::bf16);
  c.config = KernelConfig::parse("sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256");
  c.seed = 0x7ace;
  {
    const char* set = std::getenv("LUTMM_NVRTC_OPTIONS");  // (the kernels planned in this scope record)
    jit::testing::ScopedEnv timeline("LUTMM_NVRTC_OPTIONS",
                                     std::string(set != nullptr ? set : "") + " -DLUTMM_TIMELINE=3");
    const bench::VerifyResult r = bench::verify_gemm(c);
    EXPECT_TRUE(r.passed) << r.str();
  }
  size_t dropped = 1;
  const size_t records = trace::write_csv(csv.string(), &dropped);
  EXPECT_EQ(dropped, 0u);
  ASSERT_GE(records, 128u);
  EXPECT_EQ(records % 128, 0u) << records << " records: not whole launches of 128 blocks";

  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("tag,sm,block_x,block_y,block_z,entry_ns,dependency_ns,exit_ns,", 0), 0u) << line;
  std::map<std::pair<long long, long long>, int> per_block;
  size_t rows = 0;
  while (std::getline(in, line)) {
    std::vector<long long> v;
    std::stringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stoll(f));
    ASSERT_EQ(v.size(), 16u) << line;
    ++rows;
    EXPECT_EQ(v[0], 80) << line;  // the sm80 family's tag
    EXPECT_EQ(v[13], 128) << line;
    EXPECT_TRUE(v[2] >= 0 && v[2] < 32 && v[3] == 0 && v[4] >= 0 && v[4] < 4) << line;
    EXPECT_TRUE(v[5] > 0 && v[5] <= v[6] && v[6] <= v[7]) << line;  // entry <= dependency met <= exit (ns)
    // cycles from entry: W copies issued <= table built <= dependency met <= first tile <= main loop end <= staged
    // <= exit
    const long long marks[] = {v[14], v[15], v[8], v[9], v[10], v[11], v[12]};
    for (int i = 0; i < 7; ++i) EXPECT_GE(marks[i], 0) << line;
    for (int i = 0; i + 1 < 7; ++i) EXPECT_LE(marks[i], marks[i + 1]) << line;
    ++per_block[{v[2], v[4]}];
  }
  EXPECT_EQ(rows, records);
  EXPECT_EQ(per_block.size(), 128u);  // every block, each as often as there were launches
  for (const auto& [block, n] : per_block) EXPECT_EQ(static_cast<size_t>(n), records / 128) << block.first << "," << block.second;
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace lutmm
