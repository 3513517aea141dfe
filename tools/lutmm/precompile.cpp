// `lutmm precompile`: fills the kernel cache for a shape set, ahead of the first GEMM. NVRTC needs no GPU,
// so with --arch this runs on a build machine and the cache folder can be shipped. Per problem it compiles what
// gemm() would run (the tuning database's choice, a similar key's, or the heuristic's: choose_config) and the
// heuristic's (what LUTMM_TUNE=off runs), or every valid config; on parallel threads, one kernel each.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

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
  std::string gpu;  // with one --arch: the described GPU's name, so that GPU's tuning database applies
  int threads = 0;  // 0: one per core
};

struct Job {
  Problem problem;
  KernelConfig config;
  int arch = 0;
  const DeviceInfo* gpu = nullptr;  // the machine's GPU (its variants only); nullptr: any GPU of arch (--arch)
};

int run_precompile(const PrecompileArgs& a) {
  const std::vector<Shape> shapes = load_shapes(a.shapes);
  std::vector<int> archs = a.archs;
  const bool what_if = !archs.empty();
  if (!what_if) archs.push_back(planning_device(0).arch());
  if (!a.gpu.empty() && archs.size() != 1)
    throw UsageError(fmt::format("--gpu names the GPU of one --arch; got {} architectures", archs.size()));
  // What gemm() would run comes from choose_config, which in first-use mode measures keys it lacks: compiling
  // reads what is stored instead (this process only).
  if (tune_mode() == TuneMode::first_use) set_tune_mode(TuneMode::offline);

  // The whole job list first, so the bar knows its length and bad combinations are reported up front.
  std::vector<Job> jobs;
  std::vector<std::string> skipped;
  const DeviceInfo* gpu = what_if ? nullptr : &current_device_info();
  for (int arch : archs) {
    DeviceInfo dev = what_if ? what_if_device(arch) : *gpu;
    if (what_if && !a.gpu.empty()) dev.name = a.gpu;
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
          std::vector<KernelConfig> configs;
          if (a.all_configs) {
            configs = valid_configs(p, dev);
          } else {
            configs.push_back(choose_config(p, dev, nullptr, nullptr));
            if (const KernelConfig h = heuristic_config(p, dev); h != configs.front()) configs.push_back(h);
          }
          for (const KernelConfig& c : configs) jobs.push_back({p, c, arch, gpu});
        }
      }
    }
  }

  fmt::print("precompile: {} kernel{} for {} shape{} of '{}' on sm_{} into {}\n", jobs.size(),
             jobs.size() == 1 ? "" : "s", shapes.size(), shapes.size() == 1 ? "" : "s", a.shapes,
             join_ints(archs, ", sm_"), jit::cache_directory());
  for (const std::string& line : skipped) fmt::print("skipped {}\n", line);

  // Jobs of one kernel (split counts, other shapes of the same bits, group and dtype) wait for its first compile
  // (the JIT's cache builds each kernel once): the first job of each kernel goes ahead of the repeats, so the
  // threads compile distinct kernels side by side.
  {
    std::set<std::string> seen;
    std::stable_partition(jobs.begin(), jobs.end(), [&](const Job& job) {
      KernelConfig kernel = job.config;
      kernel.split_k = 0;
      return seen.insert(fmt::format("{} {} {} {} {}", job.arch, job.problem.bits, job.problem.group_size,
                                     to_string(job.problem.dtype), kernel.name())).second;
    });
  }
  int compiled = 0, cached = 0;
  double compile_ms = 0;
  std::vector<std::string> failures;
  const unsigned threads = a.threads > 0 ? static_cast<unsigned>(a.threads) : std::max(1u, std::thread::hardware_concurrency());
  const auto start = std::chrono::steady_clock::now();
  {
    bench::Progress bar(static_cast<int>(jobs.size()), true);
    std::mutex mutex;  // the counts, the failures and the bar
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < jobs.size(); i = next++) {
        const Job& job = jobs[i];
        std::string failure;
        double ms = 0;
        try {
          ms = job.gpu != nullptr ? precompile(job.problem, job.config, *job.gpu)
                                  : precompile(job.problem, job.config, job.arch);
        } catch (const Error& e) {
          failure = fmt::format("{} {} on sm_{}: {}", job.problem.str(), job.config.name(), job.arch, e.what());
        }
        std::lock_guard lock(mutex);
        if (!failure.empty()) {
          failures.push_back(std::move(failure));
        } else if (ms > 0) {
          ++compiled;
          compile_ms += ms;
        } else {
          ++cached;
        }
        bar.step(fmt::format("sm_{} {} {}", job.arch, job.problem.str(), job.config.name()));
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::min<size_t>(threads, jobs.size()); ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("compiled {}, from cache {}, skipped {}, failed {}; NVRTC {:.1f} s on {} thread{}, total {:.1f} s\n", compiled,
             cached, skipped.size(), failures.size(), compile_ms / 1000.0, threads, threads == 1 ? "" : "s", total_s);
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
  add_group_option(app, a->group);
  app->add_option("--dtype", a->dtypes, "Activation types, comma-separated: bf16, fp16")
      ->delimiter(',')
      ->check(dtype_validator())
      ->capture_default_str();
  app->add_flag("--all-configs", a->all_configs,
                "Every valid config of each problem, not only the one gemm() would run and the heuristic's");
  app->add_option("--arch", a->archs,
                  "Target compute capabilities, comma-separated, planned with what-if devices (default: the current GPU)")
      ->delimiter(',')
      ->check(arch_validator());
  app->add_option("--gpu", a->gpu,
                  "With one --arch: the GPU model as its driver names it (e.g. 'NVIDIA H200'), so that its tuning "
                  "database's choices are compiled");
  app->add_option("--threads", a->threads, "NVRTC threads (default: one per core)")->check(CLI::Range(1, 256));
  return {app, [a] { return run_precompile(*a); }};
}

}  // namespace lutmm::cli
