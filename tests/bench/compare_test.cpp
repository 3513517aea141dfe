// Reading benchmark CSVs and anchor tables back, and the standing against both (bench/compare.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compare.hpp"
#include "lutmm/error.hpp"
#include "metrics.hpp"

namespace lutmm::bench {
namespace {

TEST(CsvLine, SplitsOnCommasOutsideQuotes) {
  EXPECT_EQ(split_csv_line("a,b,,c"), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(split_csv_line("\"x, y\",\"say \"\"hi\"\"\",z\r"), (std::vector<std::string>{"x, y", "say \"hi\"", "z"}));
  EXPECT_EQ(split_csv_line("last,"), (std::vector<std::string>{"last", ""}));
}

BenchRow timed_row(int64_t m, int64_t n, int64_t k, double lutmm_us, double cublas_us, const std::string& config) {
  BenchRow r;
  r.shape = Shape{m, n, k, "SD, 1.5"};  // a label with a comma: quoted in the CSV
  r.config = config;
  r.lutmm_us = lutmm_us;
  r.cublas_us = cublas_us;
  r.floor_us = 1.5;
  return r;
}

// What write_bench_csv writes, read_results reads: the two formats cannot drift apart.
TEST(ReadResults, ReadsWhatTheBenchmarkWrites) {
  BenchRow untimed = timed_row(3, 24, 48, 0, 0, "");
  untimed.status = "skipped: no config fits";
  const std::vector<BenchRow> rows = {timed_row(1, 4096, 4096, 7.5, 12.4, "sm80_n256_m8_k128_s4_w8x1_sk8_lutsmem256"),
                                      untimed};
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lutmm_compare_" + std::to_string(getpid()) + ".csv")).string();
  write_bench_csv(path, rows, Ceilings{4.5e12, 7.9e14}, "NVIDIA H200");
  const std::vector<ResultRow> back = read_results_file(path);
  std::filesystem::remove(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].shape.m, 1);
  EXPECT_EQ(back[0].shape.n, 4096);
  EXPECT_EQ(back[0].shape.label, "SD, 1.5");
  EXPECT_EQ(back[0].config, "sm80_n256_m8_k128_s4_w8x1_sk8_lutsmem256");
  EXPECT_DOUBLE_EQ(back[0].lutmm_us, 7.5);
  EXPECT_DOUBLE_EQ(back[0].cublas_us, 12.4);
  EXPECT_DOUBLE_EQ(back[0].floor_us, 1.5);
  EXPECT_TRUE(back[0].timed());
  EXPECT_FALSE(back[1].timed());
  EXPECT_EQ(back[1].status, "skipped: no config fits");
}

const char* kAnchors =
    "M,N,K,cublas_bf16_us,tinygemm_bf16_int4_g128_us,marlin_fp16_int4_g128_us,floor_4bit_g128_us\n"
    "1,4096,4096,12.4,7.06,8.0,1.9\n"
    "16,8192,8192,33.0,,17.16,4.4\n"
    "77,640,768,3.7,2.5,,0.2\n"
    "4096,8192,8192,680,,,700\n";

TEST(ReadAnchors, TakesEveryKernelColumnButTheDenseBaselinesAndTheFloor) {
  std::istringstream in(kAnchors);
  const std::vector<AnchorRow> a = read_anchors(in, "h200.csv");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].us.size(), 2u);
  EXPECT_DOUBLE_EQ(a[0].us.at("tinygemm"), 7.06);
  EXPECT_DOUBLE_EQ(a[0].us.at("marlin"), 8.0);
  EXPECT_EQ(a[1].us.count("tinygemm"), 0u);  // an empty cell: the kernel does not run the shape
  EXPECT_TRUE(a[3].us.empty());
}

TEST(CompareResults, CountsStrictWinsListsLossesAndSlowerThanCublasAtSmallM) {
  std::istringstream in(kAnchors);
  const std::vector<AnchorRow> anchors = read_anchors(in, "h200.csv");
  std::vector<ResultRow> results(4);
  results[0].shape = Shape{1, 4096, 4096, {}};
  results[0].lutmm_us = 7.5;  // loses to tinygemm (7.06), beats marlin (8.0)
  results[0].cublas_us = 12.4;
  results[1].shape = Shape{16, 8192, 8192, {}};
  results[1].lutmm_us = 17.16;  // a tie with marlin: not faster
  results[1].cublas_us = 33.0;
  results[2].shape = Shape{77, 640, 768, {}};
  results[2].lutmm_us = 3.75;  // loses to tinygemm and to cuBLAS (3.7)
  results[2].cublas_us = 3.7;
  results[2].config = "cfg77";
  results[3].shape = Shape{77, 640, 768, {}};  // the same shape again: the first timed row counts
  results[3].lutmm_us = 1.0;
  results[3].cublas_us = 3.7;
  const Standing s = compare_results(results, anchors);
  ASSERT_EQ(s.per_kernel.size(), 2u);
  EXPECT_EQ(s.per_kernel.at("marlin").won, 1);
  EXPECT_EQ(s.per_kernel.at("marlin").lost, 1);
  EXPECT_EQ(s.per_kernel.at("tinygemm").won, 0);
  EXPECT_EQ(s.per_kernel.at("tinygemm").lost, 2);
  EXPECT_EQ(s.total_won(), 1);
  EXPECT_EQ(s.total_lost(), 3);
  ASSERT_EQ(s.losses.size(), 3u);
  EXPECT_EQ(s.losses.back().config, "cfg77");
  ASSERT_EQ(s.not_benchmarked.size(), 1u);  // 4096 x 8192 x 8192 is not in the results
  EXPECT_EQ(s.not_benchmarked[0].m, 4096);
  EXPECT_EQ(s.small_m_shapes, 3);
  ASSERT_EQ(s.slower.size(), 1u);
  EXPECT_EQ(s.slower[0].shape.m, 77);
  EXPECT_DOUBLE_EQ(s.slower[0].cublas_us, 3.7);
}

TEST(CompareInputs, BadFilesAreErrorsNamingTheFileAndWhatIsWrong) {
  auto error_of = [](const std::string& text, bool anchors) {
    std::istringstream in(text);
    try {
      if (anchors) {
        read_anchors(in, "x.csv");
      } else {
        read_results(in, "x.csv");
      }
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("", true).find("x.csv: empty"), std::string::npos);
  EXPECT_NE(error_of("M,N,cublas_bf16_us\n1,2,3\n", true).find("no column 'K'"), std::string::npos);
  EXPECT_NE(error_of("M,N,K,floor_us\n1,2,3,4\n", true).find("no anchor columns"), std::string::npos);
  EXPECT_NE(error_of("M,N,K,a_us\n1,2\n", true).find("x.csv:2: 2 fields where the header has 4"), std::string::npos);
  EXPECT_NE(error_of("M,N,K,a_us\n1,two,3,4\n", true).find("x.csv:2: column 'N' should be a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of("M,N,K,a_us\n1,2,3,fast\n", true).find("column 'a_us' should be a non-negative number"),
            std::string::npos);
  EXPECT_NE(error_of("m,n,k\n1,2,3\n", false).find("no column 'label'"), std::string::npos);
  EXPECT_THROW(read_results_file("/nonexistent/results.csv"), Error);
}

}  // namespace
}  // namespace lutmm::bench
