// The benchmark's arithmetic (bench/metrics.hpp): group choice, bytes, floor, copy counts, CSV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "lutmm/error.hpp"
#include "compare.hpp"
#include "metrics.hpp"

namespace lutmm::bench {
namespace {

TEST(ChooseGroup, RequestedWhenItDividesK) {
  EXPECT_EQ(choose_group(4096, 128), 128);
  EXPECT_EQ(choose_group(1152, 128), 128);  // 9 x 128
  EXPECT_EQ(choose_group(768, 256), 256);
  EXPECT_EQ(choose_group(320, 32), 32);
}

TEST(ChooseGroup, SixtyFourWhenTheRequestedGroupDoesNotDivideK) {
  EXPECT_EQ(choose_group(320, 128), 64);   // SD1.5's K = 320
  EXPECT_EQ(choose_group(2816, 256), 256);  // 11 x 256
  EXPECT_EQ(choose_group(2880, 256), 64);   // 45 x 64
  EXPECT_EQ(choose_group(640, 256), 64);
}

TEST(ChooseGroup, KWhenNeitherDivides) {
  EXPECT_EQ(choose_group(96, 128), 96);
  EXPECT_EQ(choose_group(48, 64), 48);
  EXPECT_EQ(choose_group(4096, 0), 4096);  // 0: one scale per row
}

TEST(ChooseGroup, RejectsBadArguments) {
  EXPECT_THROW(choose_group(4096, 48), Error);
  EXPECT_THROW(choose_group(0, 128), Error);
  try {
    choose_group(4096, 100);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'group'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
  }
}

TEST(Traffic, CountsCodesScalesXAndOut) {
  const Traffic t = traffic(300, 1152, 4096, 4, 128);
  EXPECT_EQ(t.weight, 1152 * 4096 / 2);
  EXPECT_EQ(t.scales, 1152 * 32 * 2);
  EXPECT_EQ(t.x, 300 * 4096 * 2);
  EXPECT_EQ(t.out, 300 * 1152 * 2);
  EXPECT_EQ(t.total(), t.weight + t.scales + t.x + t.out);
}

TEST(Traffic, ThreeBitCodesRoundUpToWholeBytes) {
  EXPECT_EQ(traffic(1, 3, 16, 3, 16).weight, (3 * 16 * 3 + 7) / 8);
  EXPECT_EQ(traffic(1, 1, 16, 3, 16).weight, 6);
  EXPECT_EQ(traffic(1, 16, 64, 2, 64).scales, 16 * 2);  // one scale per row
}

TEST(Traffic, RejectsBadArguments) {
  EXPECT_THROW(traffic(0, 1, 64, 4, 64), Error);
  EXPECT_THROW(traffic(1, 1, 64, 5, 64), Error);
  EXPECT_THROW(traffic(1, 1, 96, 4, 64), Error);  // 64 does not divide 96
}

// The anchors' floors (../shared/anchors/h200.csv: 4.26 TB/s, 751 TFLOP/s) follow from the same formula,
// up to the rounding of the published figures (floors to 0.01 us, rates to 3 digits: 0.15%).
TEST(Floor, ReproducesTheAnchorFloors) {
  const double bw = 4.26e12, rate = 751e12;
  struct Case { int64_t m, n, k; double floor_us; };
  for (const Case& c : {Case{8, 1152, 256, 0.04}, Case{300, 1152, 4096, 3.77}, Case{1024, 3456, 1152, 10.85},
                        Case{2, 1280, 1280, 0.20}, Case{4096, 2560, 320, 8.93}}) {
    const double bytes = static_cast<double>(traffic(c.m, c.n, c.k, 4, choose_group(c.k, 128)).total());
    EXPECT_NEAR(floor_us(bytes, gemm_flops(c.m, c.n, c.k), bw, rate), c.floor_us, 0.005 + 0.0015 * c.floor_us)
        << c.m << " " << c.n << " " << c.k;
  }
}

TEST(Floor, IsTheLargerOfTheMemoryAndComputeTimes) {
  EXPECT_DOUBLE_EQ(floor_us(1e6, 1e6, 1e12, 1e15), 1.0);   // memory bound: 1e6 B / 1e12 B/s = 1 us
  EXPECT_DOUBLE_EQ(floor_us(1e3, 2e9, 1e12, 1e15), 2.0);   // compute bound: 2e9 / 1e15 = 2 us
  EXPECT_THROW(floor_us(1, 1, 0, 1), Error);
  EXPECT_THROW(floor_us(1, 1, 1, -1), Error);
}

TEST(RotationCopies, SmallestCountAboveFourTimesL2) {
  const int64_t l2 = 60 << 20;
  const CopyCount c = rotation_copies(1 << 20, l2);
  EXPECT_EQ(c.copies, 241);  // 240 copies of 1 MiB equal 4x L2; one more exceeds it
  EXPECT_FALSE(c.capped);
  EXPECT_GT(static_cast<int64_t>(c.copies) * (1 << 20), 4 * l2);
  EXPECT_LE(static_cast<int64_t>(c.copies - 1) * (1 << 20), 4 * l2);
  EXPECT_EQ(rotation_copies(100, 1000).copies, 41);
  EXPECT_EQ(rotation_copies(99, 1000).copies, 41);   // 40 * 99 = 3960 <= 4000
  EXPECT_EQ(rotation_copies(101, 1000).copies, 40);  // 40 * 101 = 4040 > 4000
}

TEST(RotationCopies, AtLeastTwoAndCappedForTinyWeights) {
  EXPECT_EQ(rotation_copies(int64_t{1} << 30, 60 << 20).copies, 2);
  EXPECT_EQ(rotation_copies(1000, 0).copies, 2);
  const CopyCount tiny = rotation_copies(64, 60 << 20);
  EXPECT_EQ(tiny.copies, kMaxCopies);
  EXPECT_TRUE(tiny.capped);
  EXPECT_THROW(rotation_copies(0, 1000), Error);
  EXPECT_THROW(rotation_copies(10, -1), Error);
}

TEST(CallsPerGraph, WholeRoundsOverTheCopiesCoveringTheTargetDuration) {
  EXPECT_EQ(calls_per_graph(3, 1000.0), 3);      // 3 copies of a 1 ms call: one round
  EXPECT_EQ(calls_per_graph(3, 10.0), 201);      // 2000 us / 10 us = 200, rounded up to 67 rounds of 3
  EXPECT_EQ(calls_per_graph(4, 10.0), 200);
  EXPECT_EQ(calls_per_graph(500, 10.0), 500);    // every copy once
  EXPECT_EQ(calls_per_graph(1, 0.001), 4096);    // bounded
  EXPECT_EQ(calls_per_graph(5000, 0.001), 5000);
  for (int copies : {1, 2, 7, 241, 1650, 8192}) {
    for (double us : {0.5, 3.0, 40.0, 5000.0}) {
      const int calls = calls_per_graph(copies, us);
      EXPECT_EQ(calls % copies, 0) << copies << " " << us;
      EXPECT_GE(calls, copies);
      EXPECT_LE(calls, std::max(copies, 4096 + copies));
    }
  }
  EXPECT_THROW(calls_per_graph(0, 1.0), Error);
  EXPECT_THROW(calls_per_graph(1, 0.0), Error);
}

TEST(Statistics, MedianAndGeometricMean) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(median({}), Error);
  EXPECT_NEAR(geometric_mean({1, 4}), 2.0, 1e-12);
  EXPECT_NEAR(geometric_mean({0.5, 2, 8}), std::cbrt(8.0), 1e-12);
  EXPECT_THROW(geometric_mean({}), Error);
  EXPECT_THROW(geometric_mean({1, 0}), Error);
  EXPECT_THROW(geometric_mean({1, -2}), Error);
}

TEST(Csv, FieldsAreQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("SD1.5"), "SD1.5");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

// Splits one CSV line (RFC 4180 quoting): the reader `lutmm compare` uses (bench/compare.hpp).
std::vector<std::string> split_csv(const std::string& line) { return split_csv_line(line); }

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("lutmm_bench_test_" + std::to_string(getpid()) + "_" + name);
}

TEST(Csv, WritesEveryColumnForTimedAndSkippedRows) {
  BenchRow timed;
  timed.shape = Shape{300, 1152, 4096, "PixArt, sigma"};
  timed.config = "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem";
  timed.lutmm_us = 10.0;
  timed.cublas_us = 12.0;
  timed.read_us = 8.0;
  timed.launch = "cluster+early";
  timed.bytes = traffic(300, 1152, 4096, 4, 128).total();
  timed.flops = gemm_flops(300, 1152, 4096);
  timed.floor_us = 3.77;
  timed.host_us = 2.5;
  timed.compile_ms = 1234.5;
  timed.lutmm_copies = 40;
  timed.dense_copies = 12;
  timed.lutmm_calls = 200;
  timed.dense_calls = 180;
  BenchRow skipped;
  skipped.shape = Shape{1, 24, 40, ""};
  skipped.group = 40;
  skipped.status = "skipped: lutmm: argument 'k': expected a multiple of 16, got 40";
  const Ceilings ceilings{4.26e12, 751e12};

  const std::filesystem::path path = temp_path("rows.csv");
  write_bench_csv(path.string(), {timed, skipped}, ceilings, "NVIDIA H200");
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  std::filesystem::remove(path);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));

  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], bench_csv_header());
  const std::vector<std::string> header = split_csv(lines[0]);
  const std::vector<std::string> a = split_csv(lines[1]), b = split_csv(lines[2]);
  ASSERT_EQ(a.size(), header.size());
  ASSERT_EQ(b.size(), header.size());
  auto col = [&](const std::vector<std::string>& row, const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return row[i];
    }
    ADD_FAILURE() << "no column " << name;
    return std::string();
  };
  EXPECT_EQ(col(a, "device"), "NVIDIA H200");
  EXPECT_EQ(col(a, "m"), "300");
  EXPECT_EQ(col(a, "label"), "PixArt, sigma");
  EXPECT_EQ(col(a, "config"), timed.config);
  EXPECT_EQ(col(a, "status"), "ok");
  EXPECT_EQ(col(a, "lutmm_us"), "10.00");
  EXPECT_EQ(col(a, "speedup"), "1.2");
  EXPECT_NEAR(std::stod(col(a, "pct_floor")), 37.7, 1e-9);
  EXPECT_NEAR(std::stod(col(a, "tbps")), static_cast<double>(timed.bytes) / 10e-6 / 1e12, 1e-3);
  EXPECT_EQ(col(a, "bytes"), std::to_string(timed.bytes));
  EXPECT_EQ(col(a, "lutmm_copies"), "40");
  EXPECT_EQ(col(a, "compile_ms"), "1234.5");
  EXPECT_EQ(col(a, "hbm_read_tbps"), "4.26");
  EXPECT_EQ(col(a, "dense_bf16_tflops"), "751");
  EXPECT_EQ(col(a, "read_us"), "8.00");
  EXPECT_EQ(col(a, "pct_read"), "80");
  EXPECT_EQ(col(b, "read_us"), "");
  EXPECT_EQ(col(b, "pct_read"), "");
  EXPECT_EQ(col(a, "launch"), "cluster+early");
  EXPECT_EQ(col(b, "launch"), "");
  EXPECT_EQ(col(b, "status"), skipped.status);
  EXPECT_EQ(col(b, "group"), "40");
  EXPECT_EQ(col(b, "lutmm_us"), "");
  EXPECT_EQ(col(b, "speedup"), "");
  EXPECT_EQ(col(b, "host_us"), "");
}

TEST(Csv, UnwritablePathThrowsNamingIt) {
  const std::string path = "/nonexistent-lutmm-folder/bench.csv";
  try {
    write_bench_csv(path, {}, Ceilings{1, 1}, "gpu");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-lutmm-folder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_bench_csv("", {}, Ceilings{1, 1}, "gpu"), Error);
}

}  // namespace
}  // namespace lutmm::bench
