// `lutmm precompile`: fills the kernel cache for a shape set, ahead of the first GEMM. NVRTC needs no GPU,
// so with --arch this runs on a build machine and the cache folder can be shipped.
#include <chrono>
#include <memory>

#include <fmt/core.h>

#include "cli.hpp"
#include "jit/jit.hpp"
#include "metrics.hpp"  // bench/metrics.hpp
#include "progress.hpp"  // bench/progress.hpp

namespace lutmm::cli {
namespace {

struct PrecompileArgs {
  std::string shapes;
  std::vector<int> bits = {4};
  int group = 128;
  std::vector<std::string> dtypes = {"bf16"};
  bool all_configs = false;
  std::vector<int> archs;
};

struct Job {
  Problem problem;
  KernelConfig config;
  int arch_override = 0;  // 0: the current GPU
  int arch = 0;           // for messages
};

int run_precompile(const PrecompileArgs& a) {
  const std::vector<Shape> shapes = load_shapes(a.shapes);
  std::vector<int> archs = a.archs;
  const bool what_if = !archs.empty();
  if (!what_if) archs.push_back(planning_device(0).arch());

  // The whole job list first, so the bar knows its length and bad combinations are reported up front.
  std::vector<Job> jobs;
  std::vector<std::string> skipped;
  for (int arch : archs) {
    const DeviceInfo dev = what_if ? what_if_device(arch) : current_device_info();
    for (const Shape& s : shapes) {
      for (int bits : a.bits) {
        for (const std::string& dtype : a.dtypes) {
          Problem p;
          p.m = s.m;
          p.n = s.n;
          p.k = s.k;
          p.bits = bits;
          // The group `lutmm bench` runs for this K (--group when it divides K, else 64, else K), so a
          // precompiled cache serves the benchmark of the same set.
          p.group_size = bench::choose_group(s.k, a.group);
          p.dtype = parse_dtype(dtype);
          try {
            check_problem(p);
          } catch (const Error& e) {
            skipped.push_back(fmt::format("{} on sm_{}: {}", p.str(), arch, e.what()));
            continue;
          }
          const std::vector<KernelConfig> configs =
              a.all_configs ? valid_configs(p, dev) : std::vector<KernelConfig>{heuristic_config(p, dev)};
          for (const KernelConfig& c : configs) jobs.push_back({p, c, what_if ? arch : 0, arch});
        }
      }
    }
  }

  fmt::print("precompile: {} kernel{} for {} shape{} of '{}' on sm_{} into {}\n", jobs.size(),
             jobs.size() == 1 ? "" : "s", shapes.size(), shapes.size() == 1 ? "" : "s", a.shapes,
             join_ints(archs, ", sm_"), jit::cache_directory());
  for (const std::string& line : skipped) fmt::print("skipped {}\n", line);

  int compiled = 0, cached = 0;
  double compile_ms = 0;
  std::vector<std::string> failures;
  const auto start = std::chrono::steady_clock::now();
  {
    bench::Progress bar(static_cast<int>(jobs.size()), true);
    for (const Job& job : jobs) {
      try {
        const double ms = precompile(job.problem, job.config, job.arch_override);
        if (ms > 0) {
          ++compiled;
          compile_ms += ms;
        } else {
          ++cached;
        }
      } catch (const Error& e) {
        failures.push_back(fmt::format("{} {} on sm_{}: {}", job.problem.str(), job.config.name(), job.arch, e.what()));
      }
      bar.step(fmt::format("sm_{} {} {}", job.arch, job.problem.str(), job.config.name()));
    }
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("compiled {}, from cache {}, skipped {}, failed {}; NVRTC {:.1f} s, total {:.1f} s\n", compiled, cached,
             skipped.size(), failures.size(), compile_ms / 1000.0, total_s);
  for (const std::string& f : failures) fmt::print(stderr, "failed: {}\n", f);
  return failures.empty() ? 0 : 1;
}

}  // namespace

Command add_precompile(CLI::App& parent) {
  auto a = std::make_shared<PrecompileArgs>();
  CLI::App* app = parent.add_subcommand(
      "precompile", "Compile (into the kernel cache) the kernels a shape set needs; works without a GPU given --arch");
  app->add_option("--shapes", a->shapes, "diffusion, llm or a file of 'M N K' lines")->required();
  app->add_option("--bits", a->bits, "Bit widths, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({2, 3, 4}))
      ->capture_default_str();
  app->add_option("--group", a->group,
                  "Weights per scale along K (0: one per row); where it does not divide K: 64, else K, as bench does")
      ->check(CLI::IsMember({0, 32, 64, 128, 256}))
      ->capture_default_str();
  app->add_option("--dtype", a->dtypes, "Activation types, comma-separated: bf16, fp16")
      ->delimiter(',')
      ->check(dtype_validator())
      ->capture_default_str();
  app->add_flag("--all-configs", a->all_configs, "Every valid config of each problem, not only the heuristic's");
  app->add_option("--arch", a->archs,
                  "Target compute capabilities, comma-separated, planned with what-if devices (default: the current GPU)")
      ->delimiter(',')
      ->check(arch_validator());
  return {app, [a] { return run_precompile(*a); }};
}

}  // namespace lutmm::cli
