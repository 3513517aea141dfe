// scripts/tuning-merge.py: a retune's entries go into the shipped database only for the keys its A/B run found
// faster (new / base under the ratio), keys matched by the rows' bits, group, dtype and M bucket, the shipped
// order kept.
// Skips where python3 is missing.
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

nlohmann::json entry(int64_t n, int64_t k, int group, int m_bucket, const std::string& config, double us,
                     int bits = 4, const char* dtype = "bf16") {
  return {{"gpu", "NVIDIA H200"}, {"compute_capability", "9.0"}, {"sm_count", 132}, {"lutmm_version", "0.1.0"},
          {"bits", bits},        {"group_size", group},          {"dtype", dtype},  {"n", n},
          {"k", k},              {"m_bucket", m_bucket},          {"m", m_bucket},   {"config", config},
          {"us", us}};
}

nlohmann::json database(std::vector<nlohmann::json> entries) {
  return {{"format_version", 1}, {"gpu", "NVIDIA H200"}, {"note", "shipped"}, {"entries", std::move(entries)}};
}

class TuningMergeScript : public PythonScriptTest {
 protected:
  // Writes the three inputs, runs the script; its JSON on stdout goes to `merged`, its report to `report`.
  int run(const nlohmann::json& shipped, const nlohmann::json& retuned, const std::string& ab_csv) {
    std::ofstream(dir / "shipped.json") << shipped.dump(2);
    std::ofstream(dir / "retuned.json") << retuned.dump(2);
    std::ofstream(dir / "ab.csv") << ab_csv;
    const ToolRun r = run_project_script("tuning-merge.py",
                                         {(dir / "shipped.json").string(), (dir / "retuned.json").string(),
                                          (dir / "ab.csv").string(), "--note", "merged"},
                                         dir);
    report = r.err;
    merged = r.out.empty() ? nlohmann::json() : nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    return r.exit_code;
  }
  nlohmann::json merged;
  std::string report;
};

constexpr const char* kAbHeader = "m,n,k,bits,group,dtype,base_config,base_us,new_config,new_us,new_over_base\n";

TEST_F(TuningMergeScript, TakesOnlyTheKeysTheAbFoundFaster) {
  const nlohmann::json shipped =
      database({entry(4096, 4096, 128, 1, "old_a", 5.7), entry(320, 320, 64, 2, "old_b", 1.9),
                entry(1280, 5120, 128, 128, "old_c", 9.0), entry(4096, 4096, 128, 1, "old_d3", 5.2, 3, "fp16")});
  const nlohmann::json retuned =
      database({entry(4096, 4096, 128, 1, "new_a", 5.5), entry(320, 320, 64, 2, "new_b", 1.8),
                entry(1280, 5120, 128, 128, "new_c", 8.0), entry(4096, 4096, 128, 1, "new_d3", 5.0, 3, "fp16")});
  // a: 3% faster (taken); b: K = 320, group 64, 0.5% faster (kept: under the 1% default); c: M = 77 -> bucket
  // 128; d: the 3-bit fp16 key of a's shape, not faster (kept, and a's row does not touch it)
  const int rc = run(shipped, retuned,
                     std::string(kAbHeader) + "1,4096,4096,4,128,bf16,old_a,5.70,new_a,5.53,0.9702\n"
                                              "2,320,320,4,64,bf16,old_b,1.90,new_b,1.89,0.9950\n"
                                              "77,1280,5120,4,128,bf16,old_c,9.00,new_c,8.10,0.9000\n"
                                              "1,4096,4096,3,128,fp16,old_d3,5.20,new_d3,5.30,1.0192\n");
  ASSERT_EQ(rc, 0) << report;
  ASSERT_TRUE(merged.is_object()) << report;
  ASSERT_EQ(merged["entries"].size(), 4u);
  EXPECT_EQ(merged["entries"][0]["config"], "new_a");
  EXPECT_EQ(merged["entries"][1]["config"], "old_b");
  EXPECT_EQ(merged["entries"][2]["config"], "new_c");
  EXPECT_EQ(merged["entries"][3]["config"], "old_d3");
  EXPECT_EQ(merged["note"], "merged");
  EXPECT_NE(report.find("2 keys taken"), std::string::npos) << report;
}

TEST_F(TuningMergeScript, AFasterKeyTheRetuneLacksIsAnError) {
  const nlohmann::json shipped = database({entry(4096, 4096, 128, 1, "old_a", 5.7)});
  const nlohmann::json retuned = database({entry(4096, 4096, 128, 2, "new_a2", 5.5)});  // another M bucket
  const int rc = run(shipped, retuned, std::string(kAbHeader) + "1,4096,4096,4,128,bf16,old_a,5.70,new_a,5.53,0.9702\n");
  EXPECT_NE(rc, 0);
  EXPECT_NE(report.find("1x4096x4096"), std::string::npos) << report;
  EXPECT_NE(report.find("no entry for its key"), std::string::npos) << report;
}

}  // namespace
}  // namespace lutmm::test
