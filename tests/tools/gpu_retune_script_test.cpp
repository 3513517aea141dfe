// scripts/gpu-retune (on a GPU machine: retune, export, A/B against the shipped database): what it refuses before
// touching a cache or the GPU, and that it stops where the tuning cannot run. The run itself needs a GPU (the
// device tool); docs/NOTES.md v1.24 runs 5, 6 and 9 are its procedure.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

class GpuRetuneScript : public ::testing::Test {
 protected:
  ToolRun run(const std::vector<std::string>& args, const std::string& environment = "") {
    return run_project_script("gpu-retune", args, dir, /*merge_stderr=*/true,
                              "OUT=" + shell_quote((dir / "out").string()) + " LUTMM_AB_CACHES=" +
                                  shell_quote((dir / "ab").string()) + " " + environment);
  }
  TempDir dir;
};

TEST_F(GpuRetuneScript, NamesWhatItNeedsWhenAnArgumentIsMissingOrWrong) {
  ToolRun r = run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("usage: scripts/gpu-retune SHAPES [ROUNDS]"), std::string::npos) << r.out;

  r = run({(dir / "no_such_file.txt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("SHAPES must be llm, diffusion or a file"), std::string::npos) << r.out;

  r = run({"llm", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ROUNDS must be a positive count, not '0'"), std::string::npos) << r.out;

  r = run({"llm"}, "LUTMM_PREBUILT=" + shell_quote((dir / "no_binaries").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no_binaries/lutmm is missing"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "out")) << "nothing is written before the checks pass";
}

// Where the tuning fails (here: no GPU, or a binary that cannot tune), the script stops before the A/B.
TEST_F(GpuRetuneScript, StopsWhenTheTuningFails) {
  const std::filesystem::path bin = dir / "bin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream fake(bin / "lutmm");
    fake << "#!/bin/sh\necho \"lutmm: no CUDA device\" >&2\nexit 1\n";
  }
  std::filesystem::permissions(bin / "lutmm", std::filesystem::perms::owner_all);
  std::ofstream(dir / "shapes.txt") << "1 4096 4096\n";
  const ToolRun r = run({(dir / "shapes.txt").string()}, "LUTMM_PREBUILT=" + shell_quote(bin.string()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("tune rc=1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("round 1"), std::string::npos) << "no A/B after a failed tuning: " << r.out;
  EXPECT_NE(slurp(dir / "out" / "tune.txt").find("no CUDA device"), std::string::npos);
}

// A run that goes through: the tuning, the export and the A/B, with a stand-in `lutmm` (tune writes its line,
// export its file, bench a CSV row, precompile nothing). $OUT holds five files (the device tool returns at most
// eight): the A/B's per-round CSVs and logs are in one archive, ab.csv beside it for scripts/tuning-merge.py.
TEST_F(GpuRetuneScript, LeavesItsResultsInFiveFilesWithTheRoundsArchived) {
  if (std::system("command -v python3 >/dev/null 2>&1 && command -v tar >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no python3 or tar";
  const std::filesystem::path bin = dir / "bin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream fake(bin / "lutmm");
    fake << "#!/bin/sh\n"
            "if [ \"$1\" = tune ] && [ \"$2\" = --export ]; then echo '{}' >\"$3\"; echo exported; exit 0; fi\n"
            "if [ \"$1\" = tune ]; then echo 'tuned 1 keys in 0.1 s'; exit 0; fi\n"
            "[ \"$1\" = precompile ] && exit 0\n"
            "csv=''\n"
            "while [ $# -gt 0 ]; do [ \"$1\" = --csv ] && csv=$2; shift; done\n"
            "printf 'm,n,k,bits,group,dtype,status,lutmm_us,cublas_us,config\\n1,4096,4096,4,128,bf16,ok,5,12,cfg\\n' "
            ">\"$csv\"\n";
  }
  std::filesystem::permissions(bin / "lutmm", std::filesystem::perms::owner_all);
  std::ofstream(dir / "shapes.txt") << "1 4096 4096\n";
  const ToolRun r = run({(dir / "shapes.txt").string(), "1"}, "LUTMM_PREBUILT=" + shell_quote(bin.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir / "out")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"ab-rounds.tgz", "ab.csv", "export.txt", "retuned.json", "tune.txt"}));
  EXPECT_NE(slurp(dir / "out" / "ab.csv").find("new_over_base"), std::string::npos);
  const std::filesystem::path listing = dir / "listing.txt";
  ASSERT_EQ(std::system(("tar -tzf " + shell_quote((dir / "out" / "ab-rounds.tgz").string()) + " >" +
                         shell_quote(listing.string()))
                            .c_str()),
            0);
  EXPECT_NE(slurp(listing).find("base.1.csv"), std::string::npos) << slurp(listing);
  EXPECT_NE(slurp(listing).find("new.1.log"), std::string::npos) << slurp(listing);
}

}  // namespace
}  // namespace lutmm::test
