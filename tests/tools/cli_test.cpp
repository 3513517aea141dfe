// The `lutmm` command, run as a user runs it: exit codes (0 ok, 1 lutmm::Error, 2 usage) and what it prints.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "jit/jit_test_util.hpp"  // (count_cubins)
#include "lutmm/lutmm.hpp"
#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

namespace fs = std::filesystem;

// EXPECT that `text` contains `part`, printing both when it does not.
#define EXPECT_CONTAINS(text, part)                                                               \
  do {                                                                                            \
    const std::string text_ = (text), part_ = (part);                                             \
    EXPECT_NE(text_.find(part_), std::string::npos) << "'" << part_ << "' not in:\n" << text_; \
  } while (0)

class LutmmTool : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(lutmm_binary())) << "the lutmm command is not built: " << lutmm_binary();
  }
  ToolRun run(const std::vector<std::string>& args) { return run_lutmm(args, dir_, cache_dir()); }
  fs::path cache_dir() const { return dir_ / "cache"; }
  fs::path write_file(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  TempDir dir_;
};

std::string describe(const ToolRun& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

std::vector<std::string> tokens_of(const std::string& line) {
  std::vector<std::string> t;
  std::istringstream in(line);
  for (std::string w; in >> w;) t.push_back(w);
  return t;
}

// The first line whose leading tokens are `prefix`, split into tokens (empty when there is none).
std::vector<std::string> row_starting(const std::string& text, const std::vector<std::string>& prefix) {
  for (const std::string& line : lines_of(text)) {
    const std::vector<std::string> t = tokens_of(line);
    if (t.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), t.begin())) return t;
  }
  return {};
}

using jit::testing::count_cubins;

// --- usage ----------------------------------------------------------------------------------------------

TEST_F(LutmmTool, NoSubcommandIsAUsageError) {
  const ToolRun r = run({});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "usage error");
}

TEST_F(LutmmTool, UnknownSubcommandIsAUsageError) {
  const ToolRun r = run({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "frobnicate");
}

TEST_F(LutmmTool, HelpListsEverySubcommand) {
  const ToolRun r = run({"--help"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const char* sub : {"info", "quantize", "shapes", "configs", "precompile", "bench", "verify", "demo", "compare"}) {
    EXPECT_CONTAINS(r.out, sub);
  }
}

TEST_F(LutmmTool, CompareReportsAnchorsAndSmallMAgainstCublas) {
  const fs::path results = write_file(
      "bench.csv",
      "device,m,n,k,label,bits,group,dtype,config,status,lutmm_us,cublas_us,speedup,tbps,tflops,floor_us,pct_floor,"
      "bytes,flops,host_us,compile_ms,rel_err_vs_cublas,lutmm_copies,dense_copies,lutmm_calls,dense_calls,l2_cold,"
      "hbm_read_tbps,dense_bf16_tflops\n"
      "H200,1,4096,4096,,4,128,bf16,cfg_a,ok,7.50,12.40,1.65,1,1,1.9,25,1,1,4,0,0,3,3,3,3,1,4.5,780\n"
      "H200,77,640,768,,4,128,bf16,cfg_b,ok,3.75,3.70,0.99,1,1,0.2,5,1,1,4,0,0,3,3,3,3,1,4.5,780\n");
  const fs::path anchors = write_file("anchors.csv",
                                      "M,N,K,cublas_bf16_us,tinygemm_bf16_int4_g128_us,marlin_fp16_int4_g128_us\n"
                                      "1,4096,4096,12.4,7.06,8.0\n77,640,768,3.7,,\n2,2,2,1,1,1\n");
  const ToolRun r = run({"compare", "--results", results.string(), "--anchors", anchors.string()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "lutmm faster in 1 of 2 comparisons");
  EXPECT_CONTAINS(r.out, "cfg_a");
  EXPECT_CONTAINS(r.out, "M <= 77: 1 of 2 timed shapes slower than cuBLAS");
  EXPECT_CONTAINS(r.out, "1 anchor shape not in the results");
  const ToolRun missing = run({"compare", "--results", (dir_ / "none.csv").string(), "--anchors", anchors.string()});
  EXPECT_EQ(missing.exit_code, 2) << describe(missing);
  EXPECT_CONTAINS(missing.err, "none.csv");
}

TEST_F(LutmmTool, VersionFlagPrintsTheLibraryVersion) {
  const ToolRun r = run({"--version"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, lutmm::version());
}

// --- info -----------------------------------------------------------------------------------------------

TEST_F(LutmmTool, InfoReportsVersionsDevicesAndTheCache) {
  const ToolRun r = run({"info"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, std::string("lutmm ") + lutmm::version());
  EXPECT_CONTAINS(r.out, "CUDA runtime " + cuda_runtime_version());
  EXPECT_CONTAINS(r.out, "NVRTC ");
  EXPECT_CONTAINS(r.out, "sm_80");  // every supported toolkit targets sm_80
  EXPECT_CONTAINS(r.out, device_count() == 0 ? "no CUDA device" : "GPU 0: ");
  EXPECT_CONTAINS(r.out, "kernel cache: " + cache_dir().string() + " (0 cubins");
}

// --- shapes ---------------------------------------------------------------------------------------------

TEST_F(LutmmTool, ShapesListsEveryShapeOfAnEmbeddedSet) {
  const ToolRun r = run({"shapes", "diffusion"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::vector<Shape> shapes = load_shapes("diffusion");
  ASSERT_FALSE(shapes.empty());
  EXPECT_CONTAINS(r.out, std::to_string(shapes.size()) + " shapes");
  std::vector<std::string> lines = lines_of(r.out);
  for (const Shape& s : shapes) {
    const std::string dims = std::to_string(s.m) + " " + std::to_string(s.n) + " " + std::to_string(s.k);
    const bool found = std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
      const std::vector<std::string> t = tokens_of(line);
      if (t.size() < 4) return false;
      const std::string tail = t[t.size() - 3] + " " + t[t.size() - 2] + " " + t[t.size() - 1];
      return tail == dims && line.rfind(s.label.empty() ? "-" : s.label, 0) == 0;
    });
    EXPECT_TRUE(found) << "no line '" << s.label << " " << dims << "'";
  }
}

TEST_F(LutmmTool, ShapesWithoutArgumentListsEverySet) {
  const ToolRun r = run({"shapes"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const std::string& name : builtin_shape_set_names()) EXPECT_CONTAINS(r.out, "# " + name + ":");
}

TEST_F(LutmmTool, ShapesReadsAFile) {
  const fs::path file = write_file("tiny.txt", "# Tiny model\n16 256 512\n1 128 64\n");
  const ToolRun r = run({"shapes", file.string()});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "2 shapes");
  EXPECT_EQ(row_starting(r.out, {"Tiny", "model", "16", "256", "512"}).size(), 5u) << r.out;
  EXPECT_EQ(row_starting(r.out, {"Tiny", "model", "1", "128", "64"}).size(), 5u) << r.out;
}

TEST_F(LutmmTool, ShapesOfAMissingFileFailsNamingIt) {
  const ToolRun r = run({"shapes", (dir_ / "missing.txt").string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "missing.txt");
}

TEST_F(LutmmTool, ShapesOfABadFileFailsWithTheLine) {
  const fs::path file = write_file("bad.txt", "1 2 3\n4 five 6\n");
  const ToolRun r = run({"shapes", file.string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, ":2:");
}

// --- quantize -------------------------------------------------------------------------------------------

double column(const std::vector<std::string>& row, size_t index) {
  if (row.size() <= index) return -1;
  return std::stod(row[index]);
}

TEST_F(LutmmTool, QuantizeComparesTablesAtEachWidth) {
  const ToolRun r = run({"quantize", "--rows", "64", "--cols", "256", "--bits", "2,4", "--tables", "nf,fp4"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  // Rows: bits, table, rel. Frobenius, SQNR dB, max |err|, bits/weight, time.
  const std::vector<std::string> nf4 = row_starting(r.out, {"4", "nf4"});
  const std::vector<std::string> nf2 = row_starting(r.out, {"2", "nf2"});
  const std::vector<std::string> fp4 = row_starting(r.out, {"4", "fp4_e2m1"});
  ASSERT_EQ(nf4.size(), 7u) << r.out;
  ASSERT_EQ(nf2.size(), 7u) << r.out;
  ASSERT_EQ(fp4.size(), 7u) << r.out;
  EXPECT_GT(column(nf4, 2), 0.0);
  EXPECT_LT(column(nf4, 2), column(nf2, 2));  // more bits, less error
  EXPECT_LT(column(nf2, 2), 1.0);
  EXPECT_GT(column(nf4, 3), column(nf2, 3));  // and more SQNR
  // 4 code bits + a 16-bit scale per 128 weights + a 16-entry 16-bit table over 64 x 256 weights.
  EXPECT_NEAR(column(nf4, 5), 4.0 + 16.0 / 128 + 256.0 / (64 * 256), 1e-3);
  EXPECT_FALSE(row_starting(r.out, {"2", "fp4", "(no", "such", "table"}).empty()) << r.out;
}

TEST_F(LutmmTool, QuantizeMseSearchIsNoWorseThanAbsmax) {
  const std::vector<std::string> common = {"quantize", "--rows", "32", "--cols", "512", "--bits", "3", "--tables", "nf"};
  std::vector<std::string> mse = common;
  mse.insert(mse.end(), {"--search", "mse"});
  const ToolRun a = run(common);
  const ToolRun b = run(mse);
  ASSERT_EQ(a.exit_code, 0) << describe(a);
  ASSERT_EQ(b.exit_code, 0) << describe(b);
  EXPECT_CONTAINS(b.out, "mse scale search");
  EXPECT_LE(column(row_starting(b.out, {"3", "nf3"}), 2), column(row_starting(a.out, {"3", "nf3"}), 2));
}

TEST_F(LutmmTool, QuantizeLearnAddsALearnedRow) {
  const ToolRun r = run({"quantize", "--rows", "32", "--cols", "256", "--bits", "4", "--tables", "nf", "--learn"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(row_starting(r.out, {"4", "nf4", "learned"}).size(), 8u) << r.out;
}

// A .npy v1.0 file: header padded so the data starts at a multiple of 64 bytes, as numpy writes it.
std::string npy_bytes(const std::string& descr, bool fortran, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string shape_text(int64_t rows, int64_t cols) {
  return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

std::string float_bytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// The rows of the table (everything after the header line that starts with "bits").
std::string table_part(const std::string& out) { return out.substr(out.find("bits  table")); }

TEST_F(LutmmTool, QuantizeReadsNpyInEitherOrder) {
  const int64_t rows = 16, cols = 256;
  std::vector<float> w(rows * cols), w_fortran(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float v = 0.01f * static_cast<float>(((r * 37 + c * 11) % 23) - 11) + 0.001f * static_cast<float>(r);
      w[r * cols + c] = v;
      w_fortran[c * rows + r] = v;
    }
  }
  const fs::path c_file = write_file("c.npy", npy_bytes("<f4", false, shape_text(rows, cols), float_bytes(w)));
  const fs::path f_file = write_file("f.npy", npy_bytes("<f4", true, shape_text(rows, cols), float_bytes(w_fortran)));
  const std::vector<std::string> opts = {"--bits", "2,3,4", "--tables", "nf,int", "--group", "64"};
  std::vector<std::string> a = {"quantize", "--input", c_file.string()}, b = {"quantize", "--input", f_file.string()};
  a.insert(a.end(), opts.begin(), opts.end());
  b.insert(b.end(), opts.begin(), opts.end());
  const ToolRun ra = run(a), rb = run(b);
  ASSERT_EQ(ra.exit_code, 0) << describe(ra);
  ASSERT_EQ(rb.exit_code, 0) << describe(rb);
  EXPECT_CONTAINS(ra.out, "<f4, 16 x 256");
  // Same matrix, same errors (the time column differs, so compare all other columns).
  for (const char* table : {"nf2", "nf3", "nf4", "int2", "int3", "int4"}) {
    const std::string bits(1, table[std::strlen(table) - 1]);
    std::vector<std::string> x = row_starting(table_part(ra.out), {bits, table});
    std::vector<std::string> y = row_starting(table_part(rb.out), {bits, table});
    ASSERT_EQ(x.size(), 7u) << ra.out;
    ASSERT_EQ(y.size(), 7u) << rb.out;
    x.pop_back();
    y.pop_back();
    EXPECT_EQ(x, y) << table;
  }
}

TEST_F(LutmmTool, QuantizeReadsFloat16Npy) {
  std::string data;
  for (int i = 0; i < 8 * 128; ++i) {
    const uint16_t h = float_to_bits(0.05f * static_cast<float>((i % 13) - 6), DType::f16);
    data += static_cast<char>(h & 0xff);
    data += static_cast<char>(h >> 8);
  }
  const fs::path file = write_file("h.npy", npy_bytes("<f2", false, shape_text(8, 128), data));
  const ToolRun r = run({"quantize", "--input", file.string(), "--bits", "4", "--tables", "nf"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "<f2, 8 x 128");
  EXPECT_EQ(row_starting(r.out, {"4", "nf4"}).size(), 7u) << r.out;
}

TEST_F(LutmmTool, QuantizeRejectsBadNpyNamingTheInput) {
  const fs::path ints = write_file("i.npy", npy_bytes("<i4", false, shape_text(2, 2), std::string(16, '\0')));
  ToolRun r = run({"quantize", "--input", ints.string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "argument 'input'");
  EXPECT_CONTAINS(r.err, "<i4");

  const fs::path short_file = write_file("s.npy", npy_bytes("<f4", false, shape_text(4, 4), std::string(60, '\0')));
  r = run({"quantize", "--input", short_file.string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "64 bytes of data");

  const fs::path one_d = write_file("v.npy", npy_bytes("<f4", false, "(16,)", std::string(64, '\0')));
  r = run({"quantize", "--input", one_d.string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "a 2-D array, got 1 dimension");

  const fs::path garbage = write_file("g.npy", "not a numpy file at all");
  r = run({"quantize", "--input", garbage.string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "\\x93NUMPY");
}

TEST_F(LutmmTool, QuantizeBadArguments) {
  ToolRun r = run({"quantize", "--bits", "5"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--bits");

  r = run({"quantize", "--group", "48"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--group");

  r = run({"quantize", "--rows", "8", "--cols", "128", "--tables", "bogus"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "argument 'table'");

  r = run({"quantize", "--input", (dir_ / "absent.npy").string()});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--input");

  r = run({"quantize", "--search", "best"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--search");
}

// --- configs --------------------------------------------------------------------------------------------

TEST_F(LutmmTool, ConfigsForAWhatIfH200MarksOneChoice) {
  const ToolRun r = run({"configs", "--shape", "77,1280,768", "--arch", "90"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "M=77 N=1280 K=768");
  EXPECT_CONTAINS(r.out, "what-if");
  EXPECT_CONTAINS(r.out, "132 SMs");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, std::regex("(\\d+) valid configs?"))) << r.out;
  const int listed_count = std::stoi(match[1]);
  int listed = 0, marked = 0;
  for (const std::string& line : lines_of(r.out)) {
    const std::vector<std::string> t = tokens_of(line);
    const bool is_marked = !t.empty() && t[0] == "*";
    const std::string name = is_marked ? (t.size() > 1 ? t[1] : "") : (t.empty() ? "" : t[0]);
    if (name.rfind("sm80_", 0) != 0 && name.rfind("sm90_", 0) != 0) continue;
    // A heuristic choice with a split-K outside the listed ones gets its own, annotated line.
    listed += line.find("(the heuristic's choice") == std::string::npos;
    marked += is_marked;
    EXPECT_EQ(KernelConfig::parse(name).name(), name);  // every listed name round-trips
  }
  EXPECT_GT(listed, 0);
  EXPECT_EQ(listed, listed_count);
  EXPECT_EQ(marked, 1) << r.out;
}

// --compile: ptxas' report of each listed config, compiled by NVRTC without a GPU (--only keeps it to one kernel).
TEST_F(LutmmTool, ConfigsCompileShowsRegistersAndSpillsOfTheListedOnes) {
  const std::string name = "sm80_n256_m8_k128_s3_w4x1_skstream_lutsmem256";
  ToolRun r = run({"configs", "--shape", "1,28672,8192", "--arch", "90", "--only", name, "--compile"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "1 valid config named *" + name + "*");
  EXPECT_CONTAINS(r.out, "registers");
  std::smatch row;
  ASSERT_TRUE(std::regex_search(r.out, row, std::regex(name + " +128 +stream +(\\d+) +(\\d+) +(\\d+) +(\\d+|cached)")))
      << r.out;
  EXPECT_GT(std::stoi(row[1]), 64);   // registers a thread
  EXPECT_EQ(std::stoi(row[2]), 0);    // no spills (the compile-all test's rule)
  EXPECT_EQ(std::stoi(row[3]), 2);    // two blocks an SM: 112 KB of shared memory each
  // a text no valid config's name contains
  r = run({"configs", "--shape", "1,28672,8192", "--arch", "90", "--only", "no_such_tile"});
  EXPECT_NE(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.err, "'only'");
  EXPECT_CONTAINS(r.err, "'no_such_tile'");
}

TEST_F(LutmmTool, ConfigsTakeTheGroupBenchRunsForK) {
  // K = 320 (a diffusion layer): the default --group 128 does not divide it, so the problem is G = 64, as in bench.
  ToolRun r = run({"configs", "--shape", "2,1280,320", "--arch", "90"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "problem: M=2 N=1280 K=320 b4 g64 bf16");
  r = run({"configs", "--shape", "2,1280,320", "--arch", "90", "--group", "0"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "K=320 b4 g320 bf16");
}

TEST_F(LutmmTool, ConfigsBadArguments) {
  ToolRun r = run({"configs", "--shape", "77,1280", "--arch", "90"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--shape");

  r = run({"configs", "--shape", "77,-3,768", "--arch", "90"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "not positive");

  r = run({"configs", "--shape", "77,1280,768", "--arch", "75"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--arch");

  r = run({"configs", "--arch", "90"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--shape");

  r = run({"configs", "--shape", "77,1280,768", "--arch", "90", "--group", "48"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--group");

  r = run({"configs", "--shape", "77,1280,768", "--arch", "90", "--dtype", "fp8"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--dtype");
}

TEST_F(LutmmTool, ConfigsWithoutGpuNeedsArch) {
  if (device_count() > 0) GTEST_SKIP() << "a GPU is present: configs plans for it";
  const ToolRun r = run({"configs", "--shape", "77,1280,768"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--arch");
}

// --- precompile -----------------------------------------------------------------------------------------

TEST_F(LutmmTool, PrecompileFillsTheCacheWithoutAGpu) {
  const fs::path file = write_file("one.txt", "# Tiny\n16 256 512\n");
  ToolRun r = run({"precompile", "--shapes", file.string(), "--arch", "80"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "1 kernel for 1 shape");
  EXPECT_CONTAINS(r.out, "compiled 1, from cache 0, skipped 0, failed 0");
  EXPECT_EQ(count_cubins(cache_dir()), 1);

  r = run({"precompile", "--shapes", file.string(), "--arch", "80"});  // a new process: from the disk cache
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "compiled 0, from cache 1");
  EXPECT_EQ(count_cubins(cache_dir()), 1);

  r = run({"info"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "kernel cache: " + cache_dir().string() + " (1 cubin,");
}

TEST_F(LutmmTool, PrecompileSkipsShapesTheKernelCannotRun) {
  // N = 60 is not a multiple of 8 (16-byte output rows): reported as skipped, naming the argument.
  const fs::path file = write_file("odd.txt", "4 60 128\n");
  const ToolRun r = run({"precompile", "--shapes", file.string(), "--arch", "80"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "skipped M=4 N=60 K=128");
  EXPECT_CONTAINS(r.out, "'n'");
  EXPECT_CONTAINS(r.out, "compiled 0, from cache 0, skipped 1, failed 0");
  EXPECT_EQ(count_cubins(cache_dir()), 0);
}

TEST_F(LutmmTool, PrecompileFallsBackToTheBenchmarkGroup) {
  // K = 96: group 128 does not divide it, nor does 64, so one scale per row (g96), as lutmm bench runs it.
  const fs::path file = write_file("k96.txt", "4 64 96\n");
  const ToolRun r = run({"precompile", "--shapes", file.string(), "--arch", "80", "--group", "128"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.err + r.out, "M=4 N=64 K=96 b4 g96 bf16");
  EXPECT_CONTAINS(r.out, "compiled 1, from cache 0, skipped 0, failed 0");
}

TEST_F(LutmmTool, PrecompileCompilesWhatGemmWouldRunForANamedGpu) {
  // 3-bit 1 x 8192 x 8192: the shipped H200 database's choice (two stages, eight splits, docs/NOTES.md v1.22) is not
  // the heuristic's. A what-if device is no GPU the database knows: the heuristic's kernel only; named as the H200,
  // the database's kernel too. The heuristic's (128-wide k tiles, four splits of 16) comes with its pre-wait variant
  // (a dependent launch of every split 8+ k tiles long may take it); the database's (256-wide k tiles) has none.
  const fs::path file = write_file("decode.txt", "1 8192 8192\n");
  ToolRun r = run({"precompile", "--shapes", file.string(), "--arch", "90", "--bits", "3"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "1 kernel for 1 shape");
  EXPECT_CONTAINS(r.out, "compiled 1, from cache 0");
  EXPECT_EQ(count_cubins(cache_dir()), 2);
  r = run({"precompile", "--shapes", file.string(), "--arch", "90", "--bits", "3", "--gpu", "NVIDIA H200", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "2 kernels for 1 shape");
  EXPECT_CONTAINS(r.out, "compiled 1, from cache 1, skipped 0, failed 0");
  EXPECT_CONTAINS(r.out, "on 2 threads");
  EXPECT_EQ(count_cubins(cache_dir()), 3);
  // --gpu names the GPU of one architecture
  r = run({"precompile", "--shapes", file.string(), "--arch", "80,90", "--gpu", "NVIDIA H200"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--gpu");
}

TEST_F(LutmmTool, PrecompileBadArguments) {
  ToolRun r = run({"precompile", "--arch", "80"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--shapes");

  r = run({"precompile", "--shapes", "diffusion", "--arch", "80", "--bits", "9"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--bits");

  r = run({"precompile", "--shapes", "nonsense_set", "--arch", "80"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "nonsense_set");
  EXPECT_EQ(count_cubins(cache_dir()), 0);
}

// --- GPU commands on a machine without one ---------------------------------------------------------------

TEST_F(LutmmTool, GpuCommandsWithoutAGpuFailCleanly) {
  if (device_count() > 0) GTEST_SKIP() << "a GPU is present";
  ToolRun r = run({"verify", "--shape", "16,256,512"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "no CUDA device");

  r = run({"bench", "--shapes", "llm", "--csv", (dir_ / "b.csv").string()});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "no CUDA device");
  EXPECT_FALSE(fs::exists(dir_ / "b.csv"));
}

TEST_F(LutmmTool, VerifyChecksEveryProblemBeforeAnyGpuWork) {
  // The second problem's K is no multiple of 16: its argument's error, on any machine (no GPU message, and the
  // valid first problem is not run).
  ToolRun r = run({"verify", "--shape", "2,1280,1280", "--shape", "2,1280,328"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "'k'");
  EXPECT_CONTAINS(r.err, "328");
  EXPECT_EQ(r.err.find("no CUDA device"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
  // A group lutmm has no kernels for: a usage error naming the option.
  r = run({"verify", "--shapes", "diffusion", "--group", "48"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--group");
}

TEST_F(LutmmTool, VerifyRunsTheGroupBenchRunsForEachK) {
  // The shape sets' K = 320 layers: --group 128 (the default) does not divide K, so the problem runs at G = 64,
  // as in `lutmm bench` (session 22 found `verify --shapes diffusion` stopping there with a group error).
  if (device_count() == 0) GTEST_SKIP() << "no GPU";
  const ToolRun r = run({"verify", "--shape", "2,1280,320", "--shape", "3,256,512"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "M=2 N=1280 K=320 b4 g64 bf16");
  EXPECT_CONTAINS(r.out, "M=3 N=256 K=512 b4 g128 bf16");
  EXPECT_CONTAINS(r.out, "all 2 passed");
}

TEST_F(LutmmTool, VerifyNeedsAShape) {
  const ToolRun r = run({"verify"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_CONTAINS(r.err, "--shape");
}

TEST_F(LutmmTool, DemoRejectsAnUnknownShapeSetBeforeAnyWork) {
  const ToolRun r = run({"demo", "--sets", "diffusion,no_such_set"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_CONTAINS(r.err, "no_such_set");
  EXPECT_EQ(r.out, "");  // not even the environment report
}

TEST_F(LutmmTool, DemoRunsTheCpuPathWithoutAGpu) {
  if (device_count() > 0) GTEST_SKIP() << "a GPU is present: the GPU demo benchmarks every shape (scripts/main)";
  const ToolRun r = run({"demo"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_CONTAINS(r.out, "No CUDA GPU");
  EXPECT_CONTAINS(r.out, "cpu_gemm");
  EXPECT_CONTAINS(r.out, "rounding bound");
  EXPECT_FALSE(row_starting(r.out, {"4", "nf4"}).empty()) << r.out;
  EXPECT_EQ(count_cubins(cache_dir()), 1);
  EXPECT_CONTAINS(r.out, "demo done");
}

}  // namespace
}  // namespace lutmm::test
