// scripts/gpu-ab (on a GPU machine: `lutmm bench` of two or more sides, alternating, and their medians against the
// first side's): what it refuses before writing anything, and its summary, here with stand-in binaries that write
// the benchmark's CSV (times set by the binary, by the side's NVRTC options and by its environment) instead of
// running a GPU. Both forms: base / new from $LUTMM_PREBUILT (with a switch's options or environment on the new
// side), and any number of NAME=BINARY[@OPTIONS] sides.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

class GpuAbScript : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
    std::ofstream(dir / "shapes.txt") << "1 4096 4096\n2 8192 8192\n";
    std::filesystem::create_directories(dir / "bin");
    write_bench("bin/lutmm_base", 10.0, "cfg_a");
    write_bench("bin/lutmm", 9.0, "cfg_a");
    write_bench("other", 10.0, "cfg_b");
  }
  // A stand-in `lutmm bench`: two rows, lutmm times `us` (x 0.8 where the side's NVRTC options hold -DFAST, x 0.5
  // where its environment has HALF=1; status "wrong: ..." and rc 1 where the options hold -DWRONG), cuBLAS 20 us, the
  // config given; it also notes its cache folder. As
  // `lutmm precompile` it writes its NVRTC options and arguments into the cache folder's file `precompiled` (or
  // fails with rc 3 where FAIL_PRECOMPILE=1).
  void write_bench(const std::string& name, double us, const std::string& config) {
    const std::filesystem::path path = dir / name;
    {
      std::ofstream f(path);
      f << "#!/bin/sh\n"
           "if [ \"$1\" = precompile ]; then [ \"${FAIL_PRECOMPILE:-}\" = 1 ] && exit 3; mkdir -p \"$LUTMM_CACHE_DIR\" &&"
           " echo \"options '$LUTMM_NVRTC_OPTIONS' args $*\" >\"$LUTMM_CACHE_DIR/precompiled\"; exit 0; fi\n"
           "csv=''\n"
           "while [ $# -gt 0 ]; do [ \"$1\" = --csv ] && csv=$2; shift; done\n"
           "us=" << us << "\n"
           "case \"$LUTMM_NVRTC_OPTIONS\" in *-DFAST*) us=$(awk \"BEGIN { print $us * 0.8 }\") ;; esac\n"
           "[ \"${HALF:-}\" = 1 ] && us=$(awk \"BEGIN { print $us * 0.5 }\")\n"
           "status=ok rc=0\n"
           "case \"$LUTMM_NVRTC_OPTIONS\" in *-DWRONG*) status='wrong: differs from cuBLAS' rc=1 ;; esac\n"
           "echo \"cache $LUTMM_CACHE_DIR\"\n"
           "printf 'm,n,k,bits,group,dtype,status,lutmm_us,cublas_us,config\\n1,4096,4096,4,128,bf16,%s,%s,20,"
        << config << "\\n2,8192,8192,4,128,bf16,%s,%s,20," << config
      << "\\n' \"$status\" \"$us\" \"$status\" \"$us\" >\"$csv\"\n"
         "exit $rc\n";
    }
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }
  ToolRun run(const std::vector<std::string>& args, const std::string& environment = "") {
    return run_project_script("gpu-ab", args, dir, /*merge_stderr=*/true,
                              "OUT=" + shell_quote((dir / "out").string()) + " LUTMM_AB_CACHES=" +
                                  shell_quote((dir / "caches").string()) + " LUTMM_PREBUILT=" +
                                  shell_quote((dir / "bin").string()) + " " + environment);
  }
  std::string side(const std::string& name, const std::string& binary, const std::string& options = "") {
    return name + "=" + (dir / binary).string() + (options.empty() ? "" : "@" + options);
  }
  TempDir dir;
};

TEST_F(GpuAbScript, NamesWhatIsWrongBeforeWritingAnything) {
  const std::string shapes = (dir / "shapes.txt").string();
  ToolRun r = run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("usage: scripts/gpu-ab SHAPES [ROUNDS]"), std::string::npos) << r.out;
  r = run({shapes, "2", side("base", "bin/lutmm_base")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("two sides at least"), std::string::npos) << r.out;
  r = run({(dir / "none.txt").string(), "2", side("a", "bin/lutmm_base"), side("b", "bin/lutmm")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("SHAPES must be llm, diffusion or a file"), std::string::npos) << r.out;
  r = run({shapes, "zero"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ROUNDS must be a positive count, not 'zero'"), std::string::npos) << r.out;
  r = run({shapes, "2", side("a", "bin/lutmm_base"), "b:" + (dir / "bin/lutmm").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("a side must be NAME=BINARY[@NVRTC_OPTIONS]"), std::string::npos) << r.out;
  r = run({shapes, "2", side("a", "bin/lutmm_base"), side("a", "bin/lutmm")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("the side name 'a' is given twice"), std::string::npos) << r.out;
  r = run({shapes, "2", side("a", "bin/lutmm_base"), side("b", "missing")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("side 'b':"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is not an executable"), std::string::npos) << r.out;
  r = run({shapes}, "LUTMM_PREBUILT=" + shell_quote((dir / "no_binaries").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no_binaries/lutmm_base is missing"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "out")) << "nothing is written before the checks pass";
}

TEST_F(GpuAbScript, AlternatesAnyNumberOfSidesAndComparesEachWithTheFirst) {
  const ToolRun r = run({(dir / "shapes.txt").string(), "2", side("base", "bin/lutmm_base"), side("new", "bin/lutmm"),
                         side("fast", "bin/lutmm_base", "-DFAST=1"), side("other", "other")});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // the rounds alternate the sides: base, new, fast, other, then the other way round
  const size_t b1 = r.out.find("== round 1: base"), n1 = r.out.find("== round 1: new"),
               f1 = r.out.find("== round 1: fast"), o1 = r.out.find("== round 1: other"),
               o2 = r.out.find("== round 2: other"), f2 = r.out.find("== round 2: fast"),
               n2 = r.out.find("== round 2: new"), b2 = r.out.find("== round 2: base");
  ASSERT_NE(b2, std::string::npos) << r.out;
  EXPECT_LT(b1, n1);
  EXPECT_LT(n1, f1);
  EXPECT_LT(f1, o1);
  EXPECT_LT(o1, o2);
  EXPECT_LT(o2, f2);
  EXPECT_LT(f2, n2);
  EXPECT_LT(n2, b2);
  EXPECT_NE(r.out.find(", -DFAST=1)"), std::string::npos) << "the side's options are shown: " << r.out;
  // every side's kernels compiled before the first round, in its own cache folder with its own options
  const size_t precompiled = r.out.find("== precompiled every side's kernels");
  ASSERT_NE(precompiled, std::string::npos) << r.out;
  EXPECT_LT(precompiled, b1);
  for (const char* name : {"base", "new", "fast", "other"}) {
    const std::string note = slurp(dir / (std::string("caches-") + name) / "precompiled");
    EXPECT_NE(note.find("args precompile --shapes " + (dir / "shapes.txt").string()), std::string::npos)
        << name << ": " << note;
    EXPECT_EQ(note.find("-DFAST=1") != std::string::npos, std::string(name) == "fast") << name << ": " << note;
  }
  // per shape: cuBLAS 20, the medians 10 / 9 / 8 / 10, the ratios 0.900 / 0.800 / 1.000, the other side's config
  EXPECT_NE(r.out.find("1x4096x4096    20.00     10.00      9.00      8.00     10.00         0.900        0.800"
                       "        1.000  cfg_a (other: cfg_b)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("new / base: 0.9000 in geometric mean over 2 shapes, 2 rounds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fast / base: 0.8000 in geometric mean"), std::string::npos) << r.out;
  const std::string table = slurp(dir / "out" / "ab.csv");
  EXPECT_NE(table.find("m,n,k,bits,group,dtype,cublas_us,base_config,base_us,new_config,new_us,fast_config,fast_us,"
                       "other_config,other_us,new_over_base,fast_over_base,other_over_base"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("2,8192,8192,4,128,bf16,20.000,cfg_a,10.000,cfg_a,9.000,cfg_a,8.000,cfg_b,10.000,0.9000,0.8000,"
                       "1.0000"),
            std::string::npos)
      << table;
  // each side compiles into a cache folder of its own
  EXPECT_NE(slurp(dir / "out" / "fast.1.log").find("cache " + (dir / "caches").string() + "-fast"), std::string::npos);
}

// A diagnostic side (wrong results by design, rc 1) is left out of the summary unless $LUTMM_AB_TIMING_ONLY names it;
// a name there that is no side is refused.
TEST_F(GpuAbScript, CountsADiagnosticSidesWrongResultsOnlyWhereToldTo) {
  const std::vector<std::string> args{(dir / "shapes.txt").string(), "1", side("base", "bin/lutmm_base"),
                                      side("probe", "bin/lutmm_base", "-DFAST=1 -DWRONG=1")};
  ToolRun r = run(args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no shape ran with every side"), std::string::npos) << r.out;
  r = run(args, "LUTMM_AB_TIMING_ONLY=prob");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("LUTMM_AB_TIMING_ONLY names 'prob', which is not a side (base probe)"), std::string::npos) << r.out;
  r = run(args, "LUTMM_AB_TIMING_ONLY=probe");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("probe / base: 0.8000 in geometric mean over 2 shapes"), std::string::npos) << r.out;
}

// The two-sided form: lutmm_base against lutmm; or the one binary lutmm with a switch's NVRTC options or
// environment on the new side only; the cache folders -lutmm_base and -lutmm (scripts/gpu-retune tunes into the
// second), and ab.csv's new_over_base (what scripts/tuning-merge.py reads).
TEST_F(GpuAbScript, ComparesTheBaselineBuildOrASwitchOnTheNewSide) {
  const std::string shapes = (dir / "shapes.txt").string();
  ToolRun r = run({shapes, "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("new / base: 0.9000 in geometric mean over 2 shapes, 1 rounds"), std::string::npos) << r.out;
  const std::string table = slurp(dir / "out" / "ab.csv");
  EXPECT_NE(table.find(",new_over_base"), std::string::npos) << table;
  EXPECT_NE(table.find("1,4096,4096,4,128,bf16,20.000,cfg_a,10.000,cfg_a,9.000,0.9000"), std::string::npos) << table;
  EXPECT_NE(slurp(dir / "out" / "base.1.log").find("caches-lutmm_base"), std::string::npos);
  EXPECT_NE(slurp(dir / "out" / "new.1.log").find("caches-lutmm\n"), std::string::npos);

  r = run({shapes, "1"}, "LUTMM_AB_NEW_OPTIONS=-DFAST=1");  // both sides run bin/lutmm (9 us), new x 0.8
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("new / base: 0.8000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("      9.00      7.20"), std::string::npos) << r.out;

  r = run({shapes, "1"}, "LUTMM_AB_NEW_ENV=HALF=1");  // the environment on the new side only
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("new / base: 0.5000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(" + (dir / "bin/lutmm").string() + ", HALF=1)"), std::string::npos) << r.out;

  // a side whose precompile fails is named and still benchmarked
  r = run({shapes, "1"}, "FAIL_PRECOMPILE=1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("base: precompile rc=3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("new: precompile rc=3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("new / base: 0.9000"), std::string::npos) << r.out;

  // precompile gets the problem's options of $LUTMM_AB_ARGS, not the benchmark's own
  r = run({shapes, "1"}, "LUTMM_AB_ARGS='--config cfg_x --bits 3 --dtype fp16'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string note = slurp(dir / "caches-lutmm_base" / "precompiled");
  EXPECT_NE(note.find("args precompile --shapes " + shapes + " --bits 3 --dtype fp16\n"), std::string::npos) << note;
}

}  // namespace
}  // namespace lutmm::test
