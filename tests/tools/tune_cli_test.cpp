// `lutmm tune` as a user runs it: export/import of tuning databases without a GPU, argument errors, and
// tuning a small shape file on a GPU (skipped without one).
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lutmm/lutmm.hpp"
#include "run_tool.hpp"

namespace lutmm::test {
namespace {

class TuneCli : public ::testing::Test {
 protected:
  ToolRun run(const std::vector<std::string>& args) { return run_lutmm(args, dir_, dir_ / "cache"); }
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  static void write(const std::filesystem::path& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary);
    f << text;
  }

  TempDir dir_;
};

// A database file holding one valid entry of this lutmm version, for a GPU model no shipped database
// covers (the shipped H200 entries would otherwise be exported too).
std::string one_entry_database() {
  nlohmann::ordered_json e;
  e["gpu"] = "Test GPU X";
  e["compute_capability"] = "9.0";
  e["sm_count"] = 132;
  e["lutmm_version"] = version();
  e["bits"] = 4;
  e["group_size"] = 128;
  e["dtype"] = "bf16";
  e["n"] = 4096;
  e["k"] = 4096;
  e["m_bucket"] = 16;
  e["m"] = 16;
  e["config"] = "sm80_n128_m16_k128_s4_w4x1_sk1_lutreg";
  e["us"] = 9.5;
  e["heuristic_config"] = "sm80_n64_m16_k128_s4_w4x1_sk5_lutsmem";
  e["heuristic_us"] = 10.5;
  e["tuned_at"] = "2026-11-30T00:00:00Z";
  nlohmann::ordered_json j;
  j["format_version"] = 1;
  j["gpu"] = "Test GPU X";
  j["note"] = "test";
  j["entries"] = nlohmann::ordered_json::array({e});
  return j.dump(2);
}

TEST_F(TuneCli, ImportThenExportCarriesTheEntries) {
  write(path("in.json"), one_entry_database());
  ToolRun r = run({"tune", "--import", path("in.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 entry"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "cache" / "tuning" / "test_gpu_x.json"));

  r = run({"tune", "--export", path("out.json").string(), "--gpu", "Test GPU X"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exported 1 entry"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data/tuning/test_gpu_x.json"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(path("out.json")));
  EXPECT_EQ(j["format_version"], 1);
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["config"], "sm80_n128_m16_k128_s4_w4x1_sk1_lutreg");
}

TEST_F(TuneCli, BadArgumentsAreRefusedBeforeAnyWork) {
  ToolRun r = run({"tune"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nothing to do"), std::string::npos) << r.err;

  write(path("broken.json"), "{\"format_version\": 1, \"entries\": [{}]}");
  r = run({"tune", "--import", path("broken.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(path("broken.json").string()), std::string::npos) << r.err;

  r = run({"tune", "--shapes", "no_such_set_or_file"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no_such_set_or_file"), std::string::npos) << r.err;

  r = run({"tune", "--shapes", "llm", "--bits", "5"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"tune", "--shapes", "llm", "--budget-ms", "0"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"tune", "--shapes", "llm", "--small-key-budget-ms", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--small-key-budget-ms"), std::string::npos) << r.err;

  if (device_count() == 0) {
    r = run({"tune", "--export", path("x.json").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;
    r = run({"tune", "--shapes", "llm"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
  }
}

TEST_F(TuneCli, TunesAShapeFileOnTheGpuAndStoresEveryKey) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  write(path("shapes.txt"), "# two decode shapes and one the first shares a key with\n1 1024 1024\n20 1024 1024\n"
                            "30 1024 1024\n");
  ToolRun r = run({"tune", "--shapes", path("shapes.txt").string(), "--quiet", "--export", path("out.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("same key as an earlier shape"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tuned 2 keys"), std::string::npos) << r.out;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, m, std::regex("sm80_\\w+\\s+[0-9.]+\\s+sm80_\\w+\\s+[0-9.]+\\s+[0-9.]+x"))) << r.out;
  const auto j = nlohmann::json::parse(slurp(path("out.json")));
  EXPECT_GE(j["entries"].size(), 2u);  // and whatever lutmm ships for this GPU

  // A second run with --missing-only measures nothing.
  r = run({"tune", "--shapes", path("shapes.txt").string(), "--quiet", "--missing-only"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tuned 0 keys"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in the database"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lutmm::test
