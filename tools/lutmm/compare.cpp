// `lutmm compare`: where benchmark results stand against the anchors (other LUT/int4 kernels measured the
// same way) and against cuBLAS at small M, from the CSVs `lutmm bench` wrote. Reads files only: no GPU.
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli.hpp"
#include "compare.hpp"

namespace lutmm::cli {
namespace {

struct CompareArgs {
  std::vector<std::string> results;
  std::string anchors;
  int64_t small_m = 77;
};

std::string shape_text(const Shape& s) { return fmt::format("{}x{}x{}", s.m, s.n, s.k); }

int run_compare(const CompareArgs& a) {
  std::vector<bench::ResultRow> results;
  for (const std::string& path : a.results) {
    std::vector<bench::ResultRow> rows = bench::read_results_file(path);
    results.insert(results.end(), rows.begin(), rows.end());
  }
  const bench::Standing s = bench::compare_results(results, bench::read_anchors_file(a.anchors), a.small_m);

  fmt::print("anchors ({}): lutmm faster in {} of {} comparisons\n", a.anchors, s.total_won(),
             s.total_won() + s.total_lost());
  for (const auto& [kernel, t] : s.per_kernel)
    fmt::print("  {:<10} faster on {:>3} of {:>3} shapes\n", kernel, t.won, t.won + t.lost);
  if (!s.losses.empty()) {
    fmt::print("\nnot faster than the anchor:\n  {:>18}  {:<10} {:>10} {:>10}  {}\n", "M x N x K", "anchor", "anchor us",
               "lutmm us", "config");
    for (const bench::AnchorLoss& l : s.losses)
      fmt::print("  {:>18}  {:<10} {:>10.2f} {:>10.2f}  {}\n", shape_text(l.shape), l.kernel, l.anchor_us, l.lutmm_us,
                 l.config);
  }
  fmt::print("\nM <= {}: {} of {} timed shapes slower than cuBLAS in the same run\n", a.small_m, s.slower.size(),
             s.small_m_shapes);
  for (const bench::SlowerThanCublas& r : s.slower)
    fmt::print("  {:>18}  {:>8.2f} us vs cuBLAS {:>8.2f}  {}\n", shape_text(r.shape), r.lutmm_us, r.cublas_us, r.config);
  if (!s.not_benchmarked.empty()) {
    fmt::print("\n{} anchor shape{} not in the results (or not timed):", s.not_benchmarked.size(),
               s.not_benchmarked.size() == 1 ? "" : "s");
    for (size_t i = 0; i < s.not_benchmarked.size() && i < 12; ++i) fmt::print(" {}", shape_text(s.not_benchmarked[i]));
    fmt::print("{}\n", s.not_benchmarked.size() > 12 ? " ..." : "");
  }
  return 0;
}

}  // namespace

Command add_compare(CLI::App& parent) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* app = parent.add_subcommand(
      "compare", "Compare `lutmm bench` CSVs with an anchor table (other kernels' times) and with cuBLAS at small M");
  app->add_option("--results", args->results, "A CSV written by `lutmm bench --csv` (repeatable)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--anchors", args->anchors, "Anchor table: M,N,K and one <kernel>_..._us column per kernel")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--small-m", args->small_m, "Report shapes up to this M that cuBLAS beat")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return {app, [args] { return run_compare(*args); }};
}

}  // namespace lutmm::cli
