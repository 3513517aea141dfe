// `lutmm bench`: lutmm::gemm against dense cuBLAS over a shape set (bench/bench.hpp describes the method).
#include <memory>
#include <optional>

#include "bench.hpp"
#include "cli.hpp"

namespace lutmm::cli {
namespace {

struct BenchArgs {
  std::string shapes;
  int bits = 4;
  int group = 128;
  std::string dtype = "bf16";
  std::string config;
  std::string csv, png;
  int replays = 7;
  bool quiet = false;
  std::string trace;
};

int run_bench_command(const BenchArgs& a) {
  bench::BenchOptions o;
  o.shapes = load_shapes(a.shapes);
  o.bits = a.bits;
  o.group = a.group;
  o.dtype = parse_dtype(a.dtype);
  if (!a.config.empty()) o.config = KernelConfig::parse(a.config);
  o.csv_path = a.csv;
  o.png_path = a.png;
  o.replays = a.replays;
  o.progress = !a.quiet;
  o.trace_path = a.trace;
  return bench::run_bench(o);
}

}  // namespace

Command add_bench(CLI::App& parent) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* app = parent.add_subcommand("bench", "Time lutmm::gemm against dense cuBLAS and the physical floor");
  app->add_option("--shapes", a->shapes, "diffusion, llm or a file of 'M N K' lines")->required();
  app->add_option("--bits", a->bits, "Bits per weight code")->check(CLI::IsMember({2, 3, 4}))->capture_default_str();
  add_group_option(app, a->group);
  app->add_option("--dtype", a->dtype, "Activation type: bf16 or fp16")->check(dtype_validator())->capture_default_str();
  app->add_option("--config", a->config, "Force one kernel config for every shape");
  app->add_option("--csv", a->csv, "Write the results as CSV to this file");
  app->add_option("--png", a->png, "Plot the results to this PNG file (needs python3 with matplotlib)");
  app->add_option("--replays", a->replays, "Graph replays per shape (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app->add_flag("--quiet", a->quiet, "No progress bar");
  app->add_option("--trace", a->trace,
                  "Developers: write every block's entry, dependency wait, phases and exit (kernels built with "
                  "LUTMM_NVRTC_OPTIONS=-DLUTMM_TIMELINE=3) as CSV to this file, for scripts/timeline.py --trace");
  return {app, [a] { return run_bench_command(*a); }};
}

}  // namespace lutmm::cli
