// scripts/gpu-abn (on a GPU machine: `lutmm bench` of several sides, alternating, and their medians against the
// first side's): what it refuses before writing anything, and its summary, here with stand-in binaries that write
// the benchmark's CSV (times set by the binary and by the side's NVRTC options) instead of running a GPU.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

class GpuAbnScript : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
    std::ofstream(dir / "shapes.txt") << "1 4096 4096\n2 8192 8192\n";
    // A stand-in `lutmm bench`: two rows, lutmm times from BASE_US (scaled by 0.8 where the side's NVRTC options
    // hold -DFAST), cuBLAS 20 us, the config named by CONFIG.
    write_bench("base", 10.0, "cfg_a");
    write_bench("new", 9.0, "cfg_a");
    write_bench("other", 10.0, "cfg_b");
  }
  void write_bench(const std::string& name, double us, const std::string& config) {
    const std::filesystem::path path = dir / name;
    {
      std::ofstream f(path);
      f << "#!/bin/sh\n"
           "csv=''\n"
           "while [ $# -gt 0 ]; do [ \"$1\" = --csv ] && csv=$2; shift; done\n"
           "us=" << us << "\n"
           "case \"$LUTMM_NVRTC_OPTIONS\" in *-DFAST*) us=$(awk \"BEGIN { print $us * 0.8 }\") ;; esac\n"
           "printf 'm,n,k,status,lutmm_us,cublas_us,config\\n1,4096,4096,ok,%s,20,"
        << config << "\\n2,8192,8192,ok,%s,20," << config << "\\n' \"$us\" \"$us\" >\"$csv\"\n";
    }
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }
  ToolRun run(const std::vector<std::string>& args) {
    return run_project_script("gpu-abn", args, dir, /*merge_stderr=*/true,
                              "OUT=" + shell_quote((dir / "out").string()) + " LUTMM_AB_CACHES=" +
                                  shell_quote((dir / "caches").string()));
  }
  std::string side(const std::string& name, const std::string& binary, const std::string& options = "") {
    return name + "=" + (dir / binary).string() + (options.empty() ? "" : "@" + options);
  }
  TempDir dir;
};

TEST_F(GpuAbnScript, NamesWhatIsWrongBeforeWritingAnything) {
  const std::string shapes = (dir / "shapes.txt").string();
  ToolRun r = run({shapes, "2", side("base", "base")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("two sides at least"), std::string::npos) << r.out;
  r = run({(dir / "none.txt").string(), "2", side("a", "base"), side("b", "new")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("SHAPES must be llm, diffusion or a file"), std::string::npos) << r.out;
  r = run({shapes, "zero", side("a", "base"), side("b", "new")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ROUNDS must be a positive count, not 'zero'"), std::string::npos) << r.out;
  r = run({shapes, "2", side("a", "base"), "b:" + (dir / "new").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("a side must be NAME=BINARY[@NVRTC_OPTIONS]"), std::string::npos) << r.out;
  r = run({shapes, "2", side("a", "base"), side("a", "new")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("the side name 'a' is given twice"), std::string::npos) << r.out;
  r = run({shapes, "2", side("a", "base"), side("b", "missing")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("side 'b':"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is not an executable"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "out")) << "nothing is written before the checks pass";
}

TEST_F(GpuAbnScript, AlternatesTheSidesAndComparesEachWithTheFirst) {
  const ToolRun r = run({(dir / "shapes.txt").string(), "2", side("base", "base"), side("new", "new"),
                         side("fast", "base", "-DFAST=1"), side("other", "other")});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // the rounds alternate the sides: base, new, fast, other, then again
  const size_t b1 = r.out.find("== round 1: base"), n1 = r.out.find("== round 1: new"),
               f1 = r.out.find("== round 1: fast"), b2 = r.out.find("== round 2: base");
  ASSERT_NE(b2, std::string::npos) << r.out;
  EXPECT_LT(b1, n1);
  EXPECT_LT(n1, f1);
  EXPECT_LT(f1, b2);
  EXPECT_NE(r.out.find(", -DFAST=1)"), std::string::npos) << "the side's options are shown: " << r.out;
  // per shape: cuBLAS 20, the medians 10 / 9 / 8 / 10, the ratios 0.900 / 0.800 / 1.000, the other side's config
  EXPECT_NE(r.out.find("1x4096x4096    20.00     10.00      9.00      8.00     10.00         0.900        0.800"
                       "        1.000  cfg_a (other: cfg_b)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("new / base: 0.9000 in geometric mean over 2 shapes, 2 rounds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fast / base: 0.8000 in geometric mean"), std::string::npos) << r.out;
  const std::string table = slurp(dir / "out" / "abn.csv");
  EXPECT_NE(table.find("m,n,k,cublas_us,base_us,new_us,fast_us,other_us,new_over_base,fast_over_base,other_over_base"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("2,8192,8192,20.000,10.000,9.000,8.000,10.000,0.9000,0.8000,1.0000,cfg_a,cfg_a,cfg_a,cfg_b"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace lutmm::test
