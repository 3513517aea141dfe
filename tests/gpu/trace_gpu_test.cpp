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

// Runs `config` on `problem` with kernels built to record and returns the trace's rows (the CSV's fields as
// numbers), after checking that the GEMM is right and that the records are whole launches of their grid's blocks.
std::vector<std::vector<long long>> traced_rows(const Problem& problem, const char* config) {
  trace::start();
  const auto csv = std::filesystem::temp_directory_path() / "lutmm_trace_gpu_test.csv";
  trace::write_csv(csv.string());  // (clears whatever earlier launches recorded)
  bench::VerifyCase c;
  c.problem = problem;
  c.config = KernelConfig::parse(config);
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

  std::ifstream in(csv);
  std::string line;
  std::vector<std::vector<long long>> rows;
  EXPECT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("tag,sm,block_x,block_y,block_z,entry_ns,dependency_ns,exit_ns,", 0), 0u) << line;
  while (std::getline(in, line)) {
    std::vector<long long> v;
    std::stringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stoll(f));
    EXPECT_EQ(v.size(), 20u) << line;
    if (v.size() == 20u) rows.push_back(std::move(v));
  }
  EXPECT_EQ(rows.size(), records);
  std::filesystem::remove(csv);
  if (!rows.empty()) {
    const size_t grid_blocks = static_cast<size_t>(rows[0][13]);
    EXPECT_GE(rows.size(), grid_blocks);
    EXPECT_EQ(rows.size() % grid_blocks, 0u)
        << rows.size() << " records: not whole launches of " << grid_blocks << " blocks";
  }
  return rows;
}

// The fields every record has in order: entry <= dependency met <= exit (ns); cycles from entry: W copies issued <=
// table built <= dependency met <= (last item's) first tile <= main loop end <= staged <= exit.
void expect_ordered(const std::vector<long long>& v) {
  EXPECT_EQ(v[0], 80);  // the sm80 family's tag
  EXPECT_TRUE(v[5] > 0 && v[5] <= v[6] && v[6] <= v[7]);
  const long long marks[] = {v[14], v[15], v[8], v[9], v[10], v[11], v[12]};
  for (int i = 0; i < 7; ++i) EXPECT_GE(marks[i], 0) << "mark " << i;
  for (int i = 0; i + 1 < 7; ++i) EXPECT_LE(marks[i], marks[i + 1]) << "marks " << i << ", " << i + 1;
}

TEST(TraceGpu, EveryBlockOfEveryLaunchLeavesOneOrderedRecord) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // 1 x 2048 x 2048 (a shape no other test plans, so its plan is made here, with the option) in 64-row tiles and
  // four splits: 32 x 4 blocks a launch, one item each.
  const auto rows = traced_rows(Problem::of(1, 2048, 2048, 4, 128, DType::bf16),
                                "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256");
  ASSERT_FALSE(rows.empty());
  std::map<std::pair<long long, long long>, int> per_block;
  for (const auto& v : rows) {
    SCOPED_TRACE(testing::Message() << "block " << v[2] << "," << v[4]);
    expect_ordered(v);
    EXPECT_EQ(v[13], 128);
    EXPECT_TRUE(v[2] >= 0 && v[2] < 32 && v[3] == 0 && v[4] >= 0 && v[4] < 4);
    EXPECT_EQ(v[16], 1);  // one item
    for (int i = 17; i < 20; ++i) EXPECT_EQ(v[i], -1) << "field " << i;  // (no first item of several)
    ++per_block[{v[2], v[4]}];
  }
  EXPECT_EQ(per_block.size(), 128u);  // every block, each as often as there were launches
  for (const auto& [block, n] : per_block)
    EXPECT_EQ(static_cast<size_t>(n), rows.size() / 128) << block.first << "," << block.second;
}

// Stream-K: a block's run may cover parts of several tiles (items); its record holds its last item's marks and its
// first item's main loop end, tile staged and epilogue done, which come before the last item's first tile.
TEST(TraceGpu, AStreamKBlockRecordsItsFirstAndLastItems) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // 1 x 4096 x 8192 in 64-row tiles: 64 tiles of 32 k tiles over one wave of blocks, 2048 / blocks units each.
  const auto rows =
      traced_rows(Problem::of(1, 4096, 8192, 4, 128, DType::bf16), "sm80_n64_m8_k256_s3_w4x1_skstream_lutsmem256");
  ASSERT_FALSE(rows.empty());
  const size_t blocks = static_cast<size_t>(rows[0][13]);
  ASSERT_GT(blocks, 64u);  // (more blocks than tiles: some runs cross a tile boundary)
  int several = 0;
  for (const auto& v : rows) {
    SCOPED_TRACE(testing::Message() << "block " << v[2]);
    expect_ordered(v);
    EXPECT_EQ(static_cast<size_t>(v[13]), blocks);
    EXPECT_TRUE(v[16] == 1 || v[16] == 2) << v[16] << " items";  // (runs of fewer than 32 units: at most two)
    if (v[16] == 1) {
      for (int i = 17; i < 20; ++i) EXPECT_EQ(v[i], -1) << "field " << i;
      continue;
    }
    ++several;
    // dependency met <= first item's main loop end <= staged <= done <= last item's first tile
    const long long marks[] = {v[8], v[17], v[18], v[19], v[9]};
    for (int i = 0; i + 1 < 5; ++i) EXPECT_LE(marks[i], marks[i + 1]) << "marks " << i << ", " << i + 1;
  }
  EXPECT_GT(several, 0);
}

}  // namespace
}  // namespace lutmm
