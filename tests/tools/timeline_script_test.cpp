// scripts/timeline.py, the summary of kernels compiled with -DLUTMM_TIMELINE=1 (device/lutmm/ptx/timeline.cuh),
// on lines in the kernel's print format mixed with other output, and of -DLUTMM_TIMELINE=3's trace CSV. Skips where python3 is missing.
#include <cstdlib>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

ToolRun run_timeline_script(const std::string& log_text, const TempDir& dir, const std::string& option = "",
                            bool given_clock = true) {
  std::ofstream(dir / "run.txt") << log_text;
  std::vector<std::string> args;
  if (given_clock) args = {"--ghz", "2.0"};
  if (!option.empty()) args.push_back(option);
  args.push_back((dir / "run.txt").string());
  return run_project_script("timeline.py", args, dir, /*merge_stderr=*/true);
}

using TimelineScript = PythonScriptTest;

// The columns of `lutmm bench --trace` (-DLUTMM_TIMELINE=3) before the prologue and Stream-K ones.
constexpr const char* kTraceHeader =
      "tag,sm,block_x,block_y,block_z,entry_ns,dependency_ns,exit_ns,cyc_dependency,cyc_first_tile,cyc_main_loop,"
      "cyc_staged,cyc_exit,grid_blocks\n";

TEST_F(TimelineScript, SummarisesTheFirstAndLastBlocksOfEachLaunch) {
  // two launches of one kernel: the first block's marks at 100 ... 4000 cycles, the last block's later;
  // globaltimer entries 2500 ns apart; a benchmark's own lines in between are ignored
  const ToolRun r = run_timeline_script(
      "bench: 1 x 4096 x 4096\n"
      "TL 80 blk 0 0 0 sm 3 gt 1000 4000 cyc 100 900 3000 3200 4000\n"
      "TL 80 blk 4 0 4 sm 9 gt 1100 4600 cyc 120 950 3400 3600 5000\n"
      "TL 80 blk 0 0 0 sm 3 gt 3500 6500 cyc 100 900 3000 3200 4000\n"
      "TL 80 blk 4 0 4 sm 9 gt 3600 7100 cyc 120 950 3400 3600 5000\n"
      "median 7.0 us\n",
      dir);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("sm80 kernel, last block (4, 0, 4): 2 launches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main loop    3000 cyc   1.50 us"), std::string::npos) << r.out;  // 2 GHz
  EXPECT_NE(r.out.find("exit    5000 cyc   2.50 us"), std::string::npos) << r.out;       // the last block
  EXPECT_NE(r.out.find("lifetime   3.50 us"), std::string::npos) << r.out;               // 4600 - 1100 ns
  EXPECT_NE(r.out.find("launch period (first blocks' entries): median 2.50 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first entry to last exit: median 3.60 us"), std::string::npos) << r.out;
}

TEST_F(TimelineScript, BlocksModeSpreadsEveryBlockOfOneLaunch) {
  // one launch (-DLUTMM_TIMELINE=2): three blocks, two of them on SM 4; main loops 2000, 3000, 4000 cycles
  const ToolRun r = run_timeline_script(
      "TL 80 blk 0 0 0 sm 3 gt 1000 5000 cyc 100 1000 3000 3100 3500\n"
      "TL 80 blk 1 0 0 sm 4 gt 1200 6000 cyc 100 1000 4000 4100 4600\n"
      "TL 80 blk 2 0 0 sm 4 gt 1400 7000 cyc 100 1000 5000 5100 5400\n",
      dir, "--blocks");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("3 blocks on 2 SMs; SMs by blocks they ran: 1: 1, 2: 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("min   1.00 p10   1.00 med   1.50 p90   1.50 max   2.00"), std::string::npos) << r.out;  // loops
  EXPECT_NE(r.out.find("exit after the first entry    min   4.00"), std::string::npos) << r.out;  // 5000 - 1000 ns
  EXPECT_NE(r.out.find("main loop on SMs that ran 2 block(s): median 1.75 us (2 blocks)"), std::string::npos) << r.out;
}

TEST_F(TimelineScript, TraceModeMeasuresTheBoundaryBetweenBackToBackLaunches) {
  // `lutmm bench --trace` CSV (-DLUTMM_TIMELINE=3): four launches of two blocks, 6 us apart; a block enters,
  // passes its dependency wait 2 us later (4000 cycles at 2 GHz), has its first tile 0.2 us after that, ends
  // its main loop at 8000 cycles and exits at 5 us; block 1 enters and leaves 0.5 us after block 0. Listed out
  // of order (the script sorts by entry); a lone launch far away (a warm-up) is left out of the report.
  std::string csv = std::string(kTraceHeader) +
      "80,0,0,0,0,100000,102000,105000,4000,4400,8000,8100,10000,2\n"
      "80,1,1,0,0,100500,102500,105500,4000,4400,8000,8100,10000,2\n";
  for (int l = 3; l >= 0; --l)
    for (int b = 0; b < 2; ++b) {
      const long long e = 1000000 + 6000LL * l + 500 * b;
      csv += fmt::format("80,{},{},0,0,{},{},{},4000,4400,8000,8100,10000,2\n", b, b, e, e + 2000, e + 5000);
    }
  const ToolRun r = run_timeline_script(csv, dir, "--trace");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("sm80 kernel, 2 blocks a launch, 4 back-to-back launches (first at 1000000 ns)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("period (last exit to last exit): median 6.00 us; span (first entry to last exit) median "
                       "5.50 us"), std::string::npos) << r.out;
  // the next launch's first block enters 6000 - 5500 ns after this one's last exit, passes its wait 2 us later
  EXPECT_NE(r.out.find("first entry   0.50 us, dependency met (first block)   2.50, (last block)   3.00"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main loop end to exit                                min   1.00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("launch: last dependency met to last main loop end    min   2.00"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("100000 ns"), std::string::npos) << r.out;  // (the warm-up)
}

// A Stream-K grid's records (items, the first item's marks): the switch between a block's items in three parts, and the
// main loop end by when the block entered against the previous launch's end.
TEST_F(TimelineScript, TraceModeTimesTheSwitchBetweenItemsAndTheLoopEndByEntry) {
  // four launches of two blocks 3 us apart at 2 GHz. Block 0 enters at e, runs two items (the first's main loop ends
  // at 3000 cycles, its tile staged at 3200, its epilogue done at 3600; the second's first tile at 4400), ends its
  // main loop 4 us after entry and exits at 5 us: the launch's last exit, so the next launch's block 0 entered 2 us
  // before it, block 1 (entering at e + 1 us, one item, main loop end 2 us after entry, exit at 3 us) 1 us before.
  std::string csv =
      "tag,sm,block_x,block_y,block_z,entry_ns,dependency_ns,exit_ns,cyc_dependency,cyc_first_tile,cyc_main_loop,"
      "cyc_staged,cyc_exit,grid_blocks,cyc_prologue_copies,cyc_prologue_table,items,cyc_first_item_main_loop,"
      "cyc_first_item_staged,cyc_first_item_done\n";
  for (int l = 0; l < 4; ++l) {
    const long long e = 1000000 + 3000LL * l;
    csv += fmt::format("80,0,0,0,0,{},{},{},4000,4400,8000,8100,10000,2,100,200,2,3000,3200,3600\n", e, e + 2000,
                       e + 5000);
    csv += fmt::format("80,1,1,0,0,{},{},{},2000,2400,4000,4100,6000,2,100,200,1,-1,-1,-1\n", e + 1000, e + 2000,
                       e + 4000);
  }
  const ToolRun r = run_timeline_script(csv, dir, "--trace");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto line = [](const char* name, const char* values) { return fmt::format("{:52} {}", name, values); };
  EXPECT_NE(r.out.find(line("switch: first item's main loop end to tile staged", "min   0.10 p10   0.10 med   0.10")),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find(line("switch: tile staged to epilogue done", "min   0.20 p10   0.20 med   0.20")),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find(line("switch: epilogue done to the last item's first tile", "min   0.40 p10   0.40 med   0.40")),
            std::string::npos) << r.out;
  // after the previous launch's end (e + 2 us): block 0's main loop ends at e + 4 us, block 1's at e + 3 us
  EXPECT_NE(r.out.find(line("loop end after prev end, entered >= 2 us before", "min   2.00 p10   2.00 med   2.00")),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find(line("loop end after prev end, entered later", "min   1.00 p10   1.00 med   1.00")),
            std::string::npos) << r.out;
}

// Without --ghz the trace's cycles become time at the clock the blocks ran at (cycles over globaltimer from entry to
// exit, median over the blocks): the H200's SMs ran decode GEMMs at ~1.8 GHz, not their 1.98 GHz boost clock.
TEST_F(TimelineScript, TraceModeMeasuresTheSmClockFromTheRecords) {
  // four launches of two blocks, each 9000 cycles over 5 us (1.8 GHz): main loop end at 7200 cycles (4 us)
  std::string csv = kTraceHeader;
  for (int l = 0; l < 4; ++l)
    for (int b = 0; b < 2; ++b) {
      const long long e = 1000000 + 6000LL * l + 500 * b;
      csv += fmt::format("80,{},{},0,0,{},{},{},3600,3960,7200,7290,9000,2\n", b, b, e, e + 2000, e + 5000);
    }
  const ToolRun r = run_timeline_script(csv, dir, "--trace", /*given_clock=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("SM clock 1.800 GHz"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main loop end to exit                                min   1.00"), std::string::npos) << r.out;
  // the last main loop ends 4 us after the last entry, 1 us before the last exit
  EXPECT_NE(r.out.find("launch: last main loop end to last exit              min   1.00"), std::string::npos) << r.out;
}

// A split-K grid (blockIdx.z the split): the report names the split whose block exits last and times its exit
// against its own staged tile and the exits of the same tile's other splits.
TEST_F(TimelineScript, TraceModeSaysWhichSplitExitsLastAndWhatItWaitedFor) {
  // four launches of one tile in two splits, 6 us apart, at 2 GHz: split 0 exits 4 us after its entry; split 1 enters
  // 0.5 us later, stages its tile 3.5 us after entry (7000 cycles) and exits 1 us after that
  std::string csv = kTraceHeader;
  for (int l = 0; l < 4; ++l) {
    const long long e = 1000000 + 6000LL * l;
    csv += fmt::format("80,0,0,0,0,{},{},{},2000,2400,7000,7200,8000,2\n", e, e + 1000, e + 4000);
    csv += fmt::format("80,1,0,0,1,{},{},{},1000,1400,6600,7000,9000,2\n", e + 500, e + 1000, e + 5000);
  }
  const ToolRun r = run_timeline_script(csv, dir, "--trace");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("last exit by split: 1: 4 launches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last exit: its tile staged to its exit               min   1.00"), std::string::npos) << r.out;
  // split 0 exited at 4 us, split 1 staged at 0.5 + 3.5 = 4 us
  EXPECT_NE(r.out.find("last exit: its tile's other splits' last exit after  min   0.00"), std::string::npos) << r.out;
  // per split, after the previous launch's last exit (its split 1 at e + 5 us): split 0 enters 1 us later, ends its
  // main loop 3.5 us and exits 4 us after its entry; split 1 enters 1.5 us later, ends its loop 3.3 us and exits
  // 4.5 us after its entry
  EXPECT_NE(r.out.find("split 0: after the previous launch's end, us: entry med   1.00 max   1.00; main loop end med   "
                       "4.50 max   4.50; exit med   5.00"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("split 1: after the previous launch's end, us: entry med   1.50 max   1.50; main loop end med   "
                       "4.80 max   4.80; exit med   6.00"),
            std::string::npos)
      << r.out;
}

// Two blocks of a launch on one SM: the report compares the older block's main loop with the younger's.
TEST_F(TimelineScript, TraceModeComparesTheOlderAndTheYoungerBlockOfAnSm) {
  // four launches of three blocks 6 us apart at 2 GHz: blocks 0 and 1 on SM 0 (block 1 enters 0.2 us later; main
  // loops of 3600 and 4600 cycles: 1.8 and 2.3 us), block 2 alone on SM 1 (left out of the comparison). In the last
  // launch both SM-0 blocks enter at once and block 0, the lower index, counts as the older.
  std::string csv = kTraceHeader;
  for (int l = 0; l < 4; ++l) {
    const long long e = 1000000 + 6000LL * l;
    const long long second = l == 3 ? e : e + 200;
    csv += fmt::format("80,0,0,0,0,{},{},{},1000,1400,5000,5100,6000,3\n", e, e + 500, e + 3000);
    csv += fmt::format("80,0,1,0,0,{},{},{},1000,1400,6000,6100,7000,3\n", second, e + 500, second + 3500);
    csv += fmt::format("80,1,2,0,0,{},{},{},1000,1400,9000,9100,9400,3\n", e + 100, e + 500, e + 4800);
  }
  const ToolRun r = run_timeline_script(csv, dir, "--trace");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto line = [](const char* name, const char* values) { return fmt::format("{:52} {}", name, values); };
  EXPECT_NE(r.out.find(line("SM of two blocks: the older one's main loop", "min   1.80 p10   1.80 med   1.80 p90   "
                            "1.80 max   1.80")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(line("SM of two blocks: the younger one's main loop", "min   2.30 p10   2.30 med   2.30")),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the younger one's main loop is the longer on 100% of 4"), std::string::npos) << r.out;
}

TEST_F(TimelineScript, TraceModeSaysSoWhenThereAreNoRecords) {
  const ToolRun r = run_timeline_script(kTraceHeader, dir, "--trace");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("-DLUTMM_TIMELINE=3"), std::string::npos) << r.out;
}

TEST_F(TimelineScript, SaysSoWhenNoKernelPrintedATimeline) {
  const ToolRun r = run_timeline_script("bench: 1 x 4096 x 4096\nmedian 7.0 us\n", dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("-DLUTMM_TIMELINE=1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace lutmm::test
