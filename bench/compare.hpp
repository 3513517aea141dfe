#pragma once
// Where a benchmark run stands against the targets, read back from files: `lutmm bench` CSVs (this
// library's own format, bench_csv_header()) and an anchor table (../shared/anchors/h200.csv: per shape the
// times of other LUT/int4 kernels measured the same way). No GPU involved: `lutmm compare` runs anywhere.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "lutmm/shapes.hpp"

namespace lutmm::bench {

// One line of CSV split into fields (RFC 4180: quoted fields may hold commas and doubled quotes).
std::vector<std::string> split_csv_line(const std::string& line);

// The rows of a `lutmm bench` CSV that the comparison needs. `name` is what errors call the input.
struct ResultRow {
  Shape shape;
  std::string config, status;
  double lutmm_us = 0, cublas_us = 0, floor_us = 0;  // 0 where the shape was not timed
  bool timed() const { return lutmm_us > 0 && cublas_us > 0; }
};
std::vector<ResultRow> read_results(std::istream& in, const std::string& name);
std::vector<ResultRow> read_results_file(const std::string& path);

// An anchor table: M, N, K, then `<kernel>_..._us` columns. Columns named cublas_* (dense baselines) and
// floor_* are not anchors; an empty cell means the kernel does not run that shape.
struct AnchorRow {
  Shape shape;
  std::map<std::string, double> us;  // kernel (the column name up to its first '_') -> microseconds
};
std::vector<AnchorRow> read_anchors(std::istream& in, const std::string& name);
std::vector<AnchorRow> read_anchors_file(const std::string& path);

struct AnchorLoss {
  Shape shape;
  std::string kernel, config;
  double anchor_us = 0, lutmm_us = 0;
};
struct SlowerThanCublas {
  Shape shape;
  std::string config;
  double lutmm_us = 0, cublas_us = 0;
};
struct Standing {
  struct Tally {
    int won = 0, lost = 0;  // shapes where lutmm is faster / not faster
  };
  std::map<std::string, Tally> per_kernel;  // per anchor kernel
  std::vector<AnchorLoss> losses;
  std::vector<Shape> not_benchmarked;      // anchor shapes absent (or untimed) in the results
  std::vector<SlowerThanCublas> slower;    // timed shapes with M <= small_m where cuBLAS (same run) was faster
  int small_m_shapes = 0;                  // timed shapes with M <= small_m
  int total_won() const;
  int total_lost() const;
};
// "Faster" is strict: a tie counts as a loss. Shapes are matched on (M, N, K); a shape listed in several
// result files takes its first timed row.
Standing compare_results(const std::vector<ResultRow>& results, const std::vector<AnchorRow>& anchors,
                         int64_t small_m = 77);

}  // namespace lutmm::bench
