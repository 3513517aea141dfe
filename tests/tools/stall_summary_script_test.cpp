// scripts/stall-summary.py, the per-opcode summary of ncu's source page (`ncu --import R --page source --csv
// --print-source sass`), on a small page in that format: the kernel-name line ncu prints first, the header, one row
// per SASS instruction. Skips where python3 is missing.
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

ToolRun run_stall_summary(const std::string& page, const TempDir& dir) {
  std::ofstream(dir / "page.csv") << page;
  return run_project_script("stall-summary.py", {(dir / "page.csv").string()}, dir, /*merge_stderr=*/true);
}

using StallSummaryScript = PythonScriptTest;

TEST_F(StallSummaryScript, SumsTheSamplesOfEachOpcodeAndReason) {
  // 100 samples: two LDS rows (one predicated, with modifiers) hold 60 (wait 30, mio 20, selected 10), PRMT 30
  // (selected 30), HMMA 10 (short_sb 10); the Not Issued columns are left out of the shares
  const ToolRun r = run_stall_summary(
      "\"Kernel Name\",\"lutmm_gemm_sm80\",\n"
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"Instructions Executed\",\"stall_wait\","
      "\"stall_mio\",\"stall_selected\",\"stall_short_sb\",\"stall_wait (Not Issued)\"\n"
      "\"0010\",\"LDS R4, [R2+0x80]\",\"40\",\"1,000\",\"20\",\"15\",\"5\",\"0\",\"99\"\n"
      "\"0020\",\"@!P0 LDS.U16 R5, [R3]\",\"20\",\"500\",\"10\",\"5\",\"5\",\"0\",\"99\"\n"
      "\"0030\",\"PRMT R2, R7, 0x5504, R9\",\"30\",\"1000\",\"0\",\"0\",\"30\",\"0\",\"99\"\n"
      "\"0040\",\"HMMA.16816.F32.BF16 R8, R4, R6, R8\",\"10\",\"250\",\"0\",\"0\",\"0\",\"10\",\"99\"\n",
      dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("100 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("selected            40.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wait                30.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LDS       60.0%          1500  wait 50%, mio 33%, selected 17%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PRMT      30.0%          1000  selected 100%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HMMA      10.0%           250  short_sb 100%"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("LDS.U16"), std::string::npos) << r.out;  // modifiers and predicates folded into the opcode
}

TEST_F(StallSummaryScript, SaysWhatIsMissing) {
  const ToolRun no_header = run_stall_summary("\"Kernel Name\",\"k\",\n\"Address\",\"Source\"\n", dir);
  EXPECT_NE(no_header.exit_code, 0);
  EXPECT_NE(no_header.out.find("no source-page header"), std::string::npos) << no_header.out;
  const ToolRun no_samples = run_stall_summary(
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"stall_wait\"\n"
      "\"0010\",\"NOP\",\"0\",\"0\"\n",
      dir);
  EXPECT_NE(no_samples.exit_code, 0);
  EXPECT_NE(no_samples.out.find("no warp-state samples"), std::string::npos) << no_samples.out;
}

}  // namespace
}  // namespace lutmm::test
