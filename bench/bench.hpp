#pragma once
// `lutmm bench`: lutmm::gemm against dense cuBLAS on the current GPU, with the physical floor measured in
// the same run.
//
// Method (the one the anchors in ../shared/anchors use, so the figures compare):
//   - ceilings: HBM read bandwidth from a 2 GiB read-only xor reduction (16-byte loads, grid-stride, JIT
//     compiled like lutmm's kernels) and the dense bf16 rate from cublasGemmEx at 8192^3;
//   - per shape: a random quantized weight (G = group when it divides K, else 64, else K), copied until the
//     copies exceed 4x the L2, and as many dense dtype copies [N][K] for cuBLAS; each side is one CUDA graph
//     of many calls, call i on copy i mod copies, so every call streams its weight from HBM as across a
//     model's layers; the time is the median over `replays` graph replays (CUDA events) per call;
//   - floor = max(bytes / read bandwidth, 2MNK / dense rate), bytes = codes + scales + x + out;
//   - a second ruler, read_us: the same read-only kernel over each call's codes and scales (the slab's copies in
//     turn), a graph of as many launches: what moving those bytes costs here at that size, launch and ramp
//     included (pct_read = read_us / lutmm_us);
//   - the JIT compile and every allocation happen in a warm-up before any capture; inputs are random and
//     never zero; the lutmm output is checked for unwritten values and against cuBLAS on the same weights.
#include <optional>
#include <string>
#include <vector>

#include "lutmm/config.hpp"
#include "lutmm/dtype.hpp"
#include "lutmm/shapes.hpp"
#include "metrics.hpp"

namespace lutmm::bench {

struct BenchOptions {
  std::vector<Shape> shapes;
  int bits = 4;
  int group = 128;                     // 32, 64, 128, 256, or 0 for one scale per row
  DType dtype = DType::bf16;
  std::optional<KernelConfig> config;  // force one config for every shape; otherwise the runtime's choice
  std::string csv_path, png_path;      // empty: not written
  int replays = 7;
  bool progress = true;                // progress bar on stderr
  std::string trace_path;              // developers: the blocks' trace as CSV (runtime/trace.hpp); empty: none
};

// Runs the benchmark, prints the table and summary on stdout, writes the CSV and the plot when asked.
// Returns 0 when every shape ran with a correct-looking result; 1 when there is no CUDA device (after
// printing "no CUDA device") or when a shape left outputs unwritten or disagreed with cuBLAS. Throws Error
// for bad options (before any GPU work) and for CUDA/cuBLAS failures.
int run_bench(const BenchOptions& options);

// The two ceilings on the current GPU (the first part of run_bench).
Ceilings measure_ceilings();

// Checks options as run_bench does; throws Error naming the field.
void check_bench_options(const BenchOptions& options);

// Where scripts/plot_bench.py is: $LUTMM_PLOT_SCRIPT, else the source tree this was built from, else
// next to the executable (../scripts, ../share/lutmm). Empty when none exists.
std::string plot_script_path();

}  // namespace lutmm::bench
