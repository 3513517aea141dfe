// scripts/sass-shape.py, the shape of a kernel's SASS (registers, instructions before the first copy, the main loop's
// length and mix), on a small listing in cuobjdump --dump-sass's format; and its errors on what is not a kernel
// cache. (Its cubin path needs cuobjdump and nvdisasm, which CI's toolkit may lack: the listing path is the parser.)
// Skips where python3 is missing.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

using SassShapeScript = PythonScriptTest;

// A kernel of 12 instructions: two before the first LDGSTS; the main loop from the BAR.SYNC before the first HMMA to
// the branch after the last (BAR, HMMA, LDS, predicated LDS with modifiers, HMMA, BRA: 6); then the epilogue.
constexpr const char* kListing =
    "\tcode for sm_90a\n"
    "\t\tFunction : lutmm_gemm_sm80\n"
    "\t.headerflags\t@\"EF_CUDA_SM90\"\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */\n"
    "        /*0010*/                   S2R R2, SR_TID.X ;                      /* 0x0000000000027919 */\n"
    "        /*0020*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ;\n"
    "        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
    "        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
    "        /*0050*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;\n"
    "        /*0060*/                   LDS R4, [R2+0x80] ;\n"
    "        /*0070*/               @!P0 LDS.U16 R5, [R3] ;\n"
    "        /*0080*/                   HMMA.16816.F32.BF16 R12, R4, R6, R12 ;\n"
    "        /*0090*/               @P1 BRA 0x40 ;\n"
    "        /*00a0*/                   STG.E desc[UR4][R6.64], R8 ;\n"
    "        /*00b0*/                   EXIT ;\n";

TEST_F(SassShapeScript, CountsThePrologueAndTheMainLoop) {
  std::ofstream(dir / "k.sass") << kListing;
  const ToolRun r = run_project_script("sass-shape.py", {"--sass", (dir / "k.sass").string()}, dir, /*merge_stderr=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  // regs (none in a listing), prologue 2, loop 6 with 2 MMAs, 12 in all; the loop's opcodes, predicates and
  // modifiers folded
  EXPECT_NE(lines[1].find("lutmm_gemm_sm80"), std::string::npos) << r.out;
  EXPECT_NE(lines[1].find("-        2      6    2     12  HMMA:2 LDS:2 BAR:1 BRA:1"), std::string::npos) << r.out;
}

TEST_F(SassShapeScript, SaysWhatIsWrongWithItsInput) {
  std::ofstream(dir / "empty.sass") << "no listing here\n";
  const ToolRun no_listing = run_project_script("sass-shape.py", {"--sass", (dir / "empty.sass").string()}, dir, true);
  EXPECT_NE(no_listing.exit_code, 0);
  EXPECT_NE(no_listing.out.find("holds no 'Function :' listing"), std::string::npos) << no_listing.out;
  std::ofstream(dir / "bogus.cubin") << "not a cache file";
  const ToolRun bogus = run_project_script("sass-shape.py", {(dir / "bogus.cubin").string()}, dir, true);
  EXPECT_NE(bogus.exit_code, 0);
  EXPECT_NE(bogus.out.find("not a lutmm kernel cache file (expected the magic 'LUTMMJIT')"), std::string::npos)
      << bogus.out;
  std::filesystem::create_directories(dir / "cache" / "kernels");
  const ToolRun empty = run_project_script("sass-shape.py", {(dir / "cache").string()}, dir, true);
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_NE(empty.out.find("no kernels/*.cubin"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace lutmm::test
