// `lutmm tune`: tunes every shape of a set on this GPU and stores the results in the tuning database;
// imports and exports databases (docs/TUNING.md). Also the measured table of `lutmm configs`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <set>

#include <fmt/core.h>

#include "metrics.hpp"   // bench/metrics.hpp: choose_group, the group bench runs for a K
#include "progress.hpp"  // bench/progress.hpp
#include "tune_cmd.hpp"

namespace lutmm::cli {
namespace {

struct TuneArgs {
  std::string shapes;
  int bits = 4;
  int group = 128;
  std::string dtype = "bf16";
  std::string export_path;
  std::string import_path;
  std::string gpu;
  double budget_ms = TuneOptions{}.budget_ms;
  // (the command tunes ahead of time: small keys get the larger budget, TuneOptions::small_key_budget_ms)
  double small_key_budget_ms = 2500;
  int repetitions = TuneOptions{}.repetitions;
  bool missing_only = false;
  bool quiet = false;
};

struct Row {
  Shape shape;
  int group = 0;
  std::string config, heuristic;
  double us = 0, heuristic_us = 0;
  int timed = 0, candidates = 0;
  double total_ms = 0;
  std::string status;  // empty: tuned now; else why not (or "in the database")
  bool failed = false;
};

std::string us_cell(double us) { return us > 0 ? fmt::format("{:.2f}", us) : std::string("-"); }

void print_rows(const std::vector<Row>& rows) {
  size_t cw = 6, hw = 9;
  for (const Row& r : rows) {
    cw = std::max(cw, r.config.size());
    hw = std::max(hw, r.heuristic.size());
  }
  const int c = static_cast<int>(cw), h = static_cast<int>(hw);
  fmt::print("{:>6} {:>6} {:>6} {:>5}  {:<{}} {:>9}  {:<{}} {:>9} {:>6} {:>7} {:>7}\n", "M", "N", "K", "G", "config", c,
             "us", "heuristic", h, "heur. us", "gain", "timed", "ms");
  for (const Row& r : rows) {
    fmt::print("{:>6} {:>6} {:>6} {:>5}  {:<{}} {:>9}  {:<{}} {:>9}", r.shape.m, r.shape.n, r.shape.k, r.group,
               r.config, c, us_cell(r.us), r.heuristic, h, us_cell(r.heuristic_us));
    if (r.us > 0 && r.heuristic_us > 0) {
      fmt::print(" {:>5.2f}x", r.heuristic_us / r.us);
    } else {
      fmt::print(" {:>6}", "-");
    }
    if (r.candidates > 0) {
      fmt::print(" {:>3}/{:<3} {:>7.0f}", r.timed, r.candidates, r.total_ms);
    } else {
      fmt::print(" {:>7} {:>7}", "", "");
    }
    if (!r.status.empty()) fmt::print("  {}", r.status);
    fmt::print("\n");
  }
}

int tune_shapes(const TuneArgs& a, const std::vector<Shape>& shapes, DType dtype) {
  if (device_count() == 0) {
    fmt::print(stderr,
               "lutmm tune: no CUDA device: tuning measures on the GPU (--import, and --export with --gpu, work "
               "without one)\n");
    return 1;
  }
  const DeviceInfo& dev = current_device_info();
  TuneOptions options;
  options.budget_ms = a.budget_ms;
  options.small_key_budget_ms = a.small_key_budget_ms;
  options.repetitions = a.repetitions;
  fmt::print("tuning {} shape{} on {} (sm_{}, {} SMs): {}-bit, group {}, {}; at most {:.0f} ms of measuring per key "
             "({:.0f} ms where the heuristic's config runs under {:.0f} us)\n",
             shapes.size(), shapes.size() == 1 ? "" : "s", dev.name, dev.arch(), dev.sm_count, a.bits, a.group,
             to_string(dtype), a.budget_ms, std::max(a.budget_ms, a.small_key_budget_ms), options.small_key_us);
  fmt::print("database: {}\n", tuning_database_path(dev.name));
  std::fflush(stdout);

  std::vector<Row> rows;
  std::set<std::string> keys;
  const auto start = std::chrono::steady_clock::now();
  int tuned = 0;
  {
    bench::Progress bar(static_cast<int>(shapes.size()), !a.quiet);
    for (const Shape& s : shapes) {
      Row row;
      row.shape = s;
      row.group = bench::choose_group(s.k, a.group);
      const Problem p = Problem::of(s.m, s.n, s.k, a.bits, row.group, dtype);
      try {
        check_problem(p);
        const TuneKey key = tune_key(p, dev);
        if (!keys.insert(key.str()).second) {
          row.status = "same key as an earlier shape (M bucket " + std::to_string(key.m_bucket) + ")";
        } else if (const auto stored = a.missing_only ? find_tuning(p, dev) : std::nullopt) {
          row.config = stored->config;
          row.us = stored->us;
          row.heuristic = stored->heuristic_config;
          row.heuristic_us = stored->heuristic_us;
          row.status = "in the database (" + stored->tuned_at + ")";
        } else {
          const TuneResult r = tune(p, nullptr, options);
          ++tuned;
          row.config = r.entry.config;
          row.us = r.entry.us;
          row.heuristic = r.entry.heuristic_config;
          row.heuristic_us = r.entry.heuristic_us;
          row.candidates = static_cast<int>(r.candidates.size());
          row.timed = static_cast<int>(std::count_if(r.candidates.begin(), r.candidates.end(),
                                                     [](const CandidateTiming& c) { return c.runs > 0; }));
          row.total_ms = r.total_ms;
          const int failed = static_cast<int>(std::count_if(r.candidates.begin(), r.candidates.end(),
                                                            [](const CandidateTiming& c) {
                                                              return c.note.rfind("failed", 0) == 0;
                                                            }));
          if (failed > 0) row.status = fmt::format("{} config{} failed", failed, failed == 1 ? "" : "s");
          if (!r.stored) {
            row.status = "NOT STORED: " + r.store_error;
            row.failed = true;
          }
        }
      } catch (const Error& e) {
        row.status = std::string("FAILED: ") + e.what();
        row.failed = true;
      }
      rows.push_back(row);
      bar.step(fmt::format("M={} N={} K={}", s.m, s.n, s.k));
    }
  }
  print_rows(rows);

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> gains;
  for (const Row& r : rows)
    if (r.us > 0 && r.heuristic_us > 0) gains.push_back(r.heuristic_us / r.us);
  const int failures = static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.failed; }));
  fmt::print("tuned {} key{} in {:.1f} s", tuned, tuned == 1 ? "" : "s", seconds);
  if (!gains.empty()) fmt::print("; geometric-mean gain over the heuristic {:.3f}x", bench::geometric_mean(gains));
  fmt::print("; {} failed\n", failures);
  return failures == 0 ? 0 : 1;
}

int run_tune(const TuneArgs& a) {
  if (a.shapes.empty() && a.import_path.empty() && a.export_path.empty())
    throw UsageError("nothing to do: give --shapes (tune), --import FILE or --export FILE");
  // Everything that can be refused is checked before the first measurement.
  std::vector<Shape> shapes;
  if (!a.shapes.empty()) shapes = load_shapes(a.shapes);
  const DType dtype = parse_dtype(a.dtype);
  std::string export_gpu = a.gpu;
  if (!a.export_path.empty() && export_gpu.empty()) {
    if (device_count() == 0) throw UsageError("--export without a GPU needs --gpu NAME (e.g. --gpu 'NVIDIA H200')");
    export_gpu = current_device_info().name;
  }

  if (!a.import_path.empty()) {
    const size_t n = import_tuning(a.import_path);
    fmt::print("imported {} entr{} from {}\n", n, n == 1 ? "y" : "ies", a.import_path);
  }
  int status = 0;
  if (!shapes.empty()) status = tune_shapes(a, shapes, dtype);
  if (!a.export_path.empty()) {
    const size_t n = export_tuning(a.export_path, export_gpu);
    fmt::print("exported {} entr{} for {} to {} (to ship them: data/tuning/{}.json)\n", n, n == 1 ? "y" : "ies",
               export_gpu, a.export_path, sanitize_gpu_name(export_gpu));
  }
  return status;
}

}  // namespace

Command add_tune(CLI::App& parent) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* app = parent.add_subcommand(
      "tune", "Time the kernel configs of each shape on this GPU and store the fastest (docs/TUNING.md)");
  app->add_option("--shapes", a->shapes, "diffusion, llm or a file of 'M N K' lines");
  app->add_option("--bits", a->bits, "Bits per weight code")->check(CLI::IsMember({2, 3, 4}))->capture_default_str();
  add_group_option(app, a->group);
  app->add_option("--dtype", a->dtype, "Activation type: bf16 or fp16")->check(dtype_validator())->capture_default_str();
  app->add_option("--budget-ms", a->budget_ms, "Measuring time per key (JIT compiles are extra)")
      ->check(CLI::Range(1.0, 600000.0))
      ->capture_default_str();
  app->add_option("--small-key-budget-ms", a->small_key_budget_ms,
                  "Measuring time per key whose heuristic config runs in under 20 us (0: --budget-ms for every key)")
      ->check(CLI::Range(0.0, 600000.0))
      ->capture_default_str();
  app->add_option("--repetitions", a->repetitions, "Timed runs of each finalist (median)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app->add_flag("--missing-only", a->missing_only, "Skip keys the database already has");
  app->add_option("--import", a->import_path, "Merge the entries of this database file into yours first");
  app->add_option("--export", a->export_path,
                  "Write this GPU's entries (shipped and yours) to this file, e.g. for data/tuning/");
  app->add_option("--gpu", a->gpu, "The GPU model to --export (default: the current GPU)");
  app->add_flag("--quiet", a->quiet, "No progress bar");
  return {app, [a] { return run_tune(*a); }};
}

bool print_config_timings(const Problem& p, const std::vector<KernelConfig>& configs, const KernelConfig& heuristic,
                          int repetitions) {
  const DeviceInfo& dev = current_device_info();
  const std::vector<CandidateTiming> t = time_configs(p, configs, nullptr, repetitions);
  const std::optional<TuneEntry> stored = find_tuning(p, dev);
  std::vector<size_t> order(t.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool ta = t[a].runs > 0, tb = t[b].runs > 0;
    if (ta != tb) return ta;
    return ta && t[a].us < t[b].us;
  });
  double best = 0;
  for (const CandidateTiming& c : t)
    if (c.runs > 0 && (best == 0 || c.us < best)) best = c.us;
  fmt::print("\nmeasured on {}: median of {} L2-cold run{} each (h = the heuristic's choice, d = the tuning "
             "database's)\n",
             dev.name, repetitions, repetitions == 1 ? "" : "s");
  fmt::print("    {:<44} {:>9} {:>8} {:>11}\n", "config", "us", "vs best", "model us");
  for (size_t i : order) {
    const CandidateTiming& c = t[i];
    const char h = c.config == heuristic ? 'h' : ' ';
    const char d = stored && stored->config == c.config.name() ? 'd' : ' ';
    fmt::print("{}{}  {:<44}", h, d, configs[i].name());
    if (c.runs > 0) {
      fmt::print(" {:>9.2f} {:>7.2f}x {:>11.1f}\n", c.us, c.us / best, c.estimate_us);
    } else {
      fmt::print("  {}\n", c.note);
    }
  }
  if (stored) {
    fmt::print("tuning database: {} ({:.2f} us when tuned at M={} on {})\n", stored->config, stored->us, stored->m,
               stored->tuned_at);
  } else {
    fmt::print("tuning database: no entry for this key (`lutmm tune` measures and stores one)\n");
  }
  return best > 0;
}

}  // namespace lutmm::cli
