#pragma once
// The benchmark's arithmetic, kept apart from the GPU so it is tested on any machine: group choice per K,
// bytes moved, the physical floor, how many weight copies defeat the L2, graph sizes, and the CSV.
#include <cstdint>
#include <string>
#include <vector>

#include "lutmm/dtype.hpp"
#include "lutmm/shapes.hpp"

namespace lutmm::bench {

// The group size benchmarked for K: `requested` when it divides K, else 64 when that divides K, else K
// (one scale per row). requested == 0 means one scale per row.
int choose_group(int64_t k, int requested);

// Bytes a weight-only-quantized GEMM must move at least: the b-bit codes, one 16-bit scale per (row,
// group), x and out (16-bit each). Logical sizes, not the padded layout: this is the physical floor's
// numerator, the same count the anchors in ../shared/anchors use.
struct Traffic {
  int64_t weight = 0, scales = 0, x = 0, out = 0;
  int64_t total() const { return weight + scales + x + out; }
};
Traffic traffic(int64_t m, int64_t n, int64_t k, int bits, int group);
double gemm_flops(int64_t m, int64_t n, int64_t k);  // 2 M N K

// The floor in microseconds: max(bytes / read bandwidth, flops / dense rate) (bytes/s and flop/s).
double floor_us(double bytes, double flops, double read_bytes_per_s, double dense_flops_per_s);

// How many copies of a buffer of `bytes_per_copy` rotate so that consecutive calls find nothing in an L2
// of `l2_bytes`: the smallest count whose total exceeds 4x the L2, at least 2, at most kMaxCopies (tiny
// weights: the cap keeps graphs and allocations bounded; `capped` says the 4x rule was not met).
inline constexpr int kMaxCopies = 8192;
struct CopyCount {
  int copies = 0;
  bool capped = false;
};
CopyCount rotation_copies(int64_t bytes_per_copy, int64_t l2_bytes);

// Calls captured in one graph: a whole number of rounds over the copies (so back-to-back replays keep
// the rotation) and enough calls that one replay lasts about target_us given a per-call estimate (so event
// resolution and the graph launch do not matter).
int calls_per_graph(int copies, double estimated_call_us, double target_us = 2000.0);

double median(std::vector<double> values);             // throws Error for an empty list
double geometric_mean(const std::vector<double>& values);  // of positive values; throws Error otherwise

// The two ceilings measured in the same run.
struct Ceilings {
  double read_bytes_per_s = 0;   // HBM read bandwidth
  double dense_flops_per_s = 0;  // dense bf16 GEMM rate
};

// One benchmarked shape. status is "ok", "skipped: <why>" (times absent), or "wrong: <what>" (a broken
// result: times are shown but must not be trusted).
struct BenchRow {
  Shape shape;
  int bits = 4;
  int group = 128;
  DType dtype = DType::bf16;
  std::string config;
  std::string config_source;      // where the config came from: to_string(ConfigSource)
  std::string launch;             // how gemm() launched it, beyond the config: "cluster" (split-K in a
                                  // thread-block cluster), "spread" (SplitSpread), "early" (next kernel at our
                                  // start), joined by '+'; empty: none of these
  std::string status = "ok";
  double lutmm_us = 0, cublas_us = 0;
  // A plain read of the same weight bytes (packed codes and scales) with the same rotation, in a graph of as many
  // launches: what moving those bytes costs on this GPU at this size, launches and ramp included (0: not timed).
  double read_us = 0;
  double host_us = 0;             // host time of one lutmm::gemm call (enqueue only)
  double compile_ms = 0;          // JIT compile of the kernel; 0 when it came from the cache
  double rel_err_vs_cublas = 0;   // ||lutmm - cuBLAS||_F / ||cuBLAS||_F on the same (rounded) weights
  int64_t bytes = 0;              // Traffic::total()
  double flops = 0;
  double floor_us = 0;
  int lutmm_copies = 0, dense_copies = 0, lutmm_calls = 0, dense_calls = 0;
  bool l2_cold = true;            // false when rotation_copies() was capped

  bool timed() const { return lutmm_us > 0 && cublas_us > 0; }
  double speedup() const { return cublas_us / lutmm_us; }
  double tbps() const { return static_cast<double>(bytes) / (lutmm_us * 1e-6) / 1e12; }
  double tflops() const { return flops / (lutmm_us * 1e-6) / 1e12; }
  double pct_floor() const { return 100.0 * floor_us / lutmm_us; }
  double pct_read() const { return 100.0 * read_us / lutmm_us; }  // of the plain read's speed
};

// Writes every row (one per shape, every column, numbers empty where not timed) to `path`, through a
// temporary file renamed into place. Throws Error naming the path when it cannot be written.
void write_bench_csv(const std::string& path, const std::vector<BenchRow>& rows, const Ceilings& ceilings,
                     const std::string& device_name);
// The header line (without newline), in column order.
std::string bench_csv_header();
// A CSV field, quoted when it holds a comma, quote or newline (RFC 4180).
std::string csv_field(const std::string& text);

}  // namespace lutmm::bench
