// `lutmm configs`: every config valid for one problem on this GPU (or a what-if GPU), the heuristic's
// choice marked; with --compile, each compiled by NVRTC (no GPU needed with --arch) and ptxas' report of it:
// what a tile shape costs in registers and whether it spills, before any device time goes into timing it.
#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/core.h>

#include "cli.hpp"
#include "jit/jit.hpp"
#include "metrics.hpp"   // bench/metrics.hpp
#include "progress.hpp"  // bench/progress.hpp
#include "runtime/kernel_source.hpp"
#include "tune_cmd.hpp"
#include "util/parallel.hpp"

namespace lutmm::cli {
namespace {

struct ConfigsArgs {
  std::string shape;
  int bits = 4;
  int group = 128;
  std::string dtype = "bf16";
  bool bias = false;
  int arch = 0;
  bool no_time = false;
  int repetitions = 3;
  bool compile = false;
  std::string only;
};

// ptxas' report of each config's kernel for the planning device's architecture (compiled into the kernel cache, or
// loaded from it): a line per config, or the compile's error. Returns the reports in the configs' order.
struct CompileReport {
  jit::KernelResources resources;
  double compile_ms = 0;  // 0: from the cache
  std::string error;
};
std::vector<CompileReport> compile_configs(const Problem& p, const std::vector<KernelConfig>& configs, int arch) {
  std::vector<CompileReport> reports(configs.size());
  std::mutex mutex;  // the bar
  bench::Progress bar(static_cast<int>(configs.size()), true);
  detail::parallel_for(static_cast<int64_t>(configs.size()), 0, [&](int, int64_t i) {
    CompileReport& r = reports[static_cast<size_t>(i)];
    try {
      const jit::CompiledKernel k = jit::compile_cached(gemm_kernel_request(p, configs[i], arch));
      r.resources = k.resources;
      r.compile_ms = k.compile_ms;
    } catch (const Error& e) {
      r.error = e.what();  // (one config's failure is its row's, not the command's end)
    }
    std::lock_guard lock(mutex);
    bar.step(configs[i].name());
  });
  return reports;
}

int run_configs(const ConfigsArgs& a) {
  const Shape s = parse_shape_arg(a.shape, "--shape");
  Problem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.bits = a.bits;
  p.group_size = bench::choose_group(s.k, a.group);  // (as bench: 64 where --group does not divide K, else K)
  p.dtype = parse_dtype(a.dtype);
  p.has_bias = a.bias;
  check_problem(p);
  const DeviceInfo dev = planning_device(a.arch);

  std::vector<KernelConfig> configs = valid_configs(p, dev);
  if (!a.only.empty()) {
    const size_t valid = configs.size();
    std::erase_if(configs, [&](const KernelConfig& c) { return c.name().find(a.only) == std::string::npos; });
    if (configs.empty())
      throw_argument_error("only", fmt::format("a part of the name of one of the {} configs valid here", valid),
                           fmt::format("'{}'", a.only));
  }
  const KernelConfig chosen = heuristic_config(p, dev);
  fmt::print("problem: {}\n", p.str());
  fmt::print("device: {}, sm_{}, {} SMs, L2 {}, shared memory per block {}\n", dev.name, dev.arch(), dev.sm_count,
             format_bytes(dev.l2_bytes), format_bytes(dev.smem_per_block_optin));
  if (a.arch != 0) {
    fmt::print("(a what-if: these are published figures of one sm_{} GPU, not a measured device)\n", a.arch);
  }
  fmt::print("{} valid config{}{} (* = the heuristic's choice)\n", configs.size(), configs.size() == 1 ? "" : "s",
             a.only.empty() ? "" : fmt::format(" named *{}*", a.only));
  // The heuristic returns a concrete split-K. Mark the listed config equal to it; failing that, the
  // listed split-K-auto config that resolves to it (the same kernel, the count chosen at run time).
  const auto resolved = [&](KernelConfig c) {
    c.split_k = resolve_split_k(c, p, dev);
    return c;
  };
  const auto exact = std::find(configs.begin(), configs.end(), chosen);
  const auto marked = exact != configs.end() ? exact : std::find_if(configs.begin(), configs.end(), [&](const KernelConfig& c) {
    return c.split_k == 0 && resolved(c) == chosen;
  });
  std::vector<CompileReport> reports;
  if (a.compile) reports = compile_configs(p, configs, dev.arch());
  fmt::print("  {:<48} {:>7} {:>7}{}\n", "config", "threads", "split-K",
             a.compile ? fmt::format(" {:>9} {:>7} {:>9} {:>10}", "registers", "spills", "blocks/SM", "compile ms") : "");
  bool failed = false;
  for (auto it = configs.begin(); it != configs.end(); ++it) {
    const int splits = resolve_split_k(*it, p, dev);
    std::string compiled;
    if (a.compile) {
      const CompileReport& r = reports[static_cast<size_t>(it - configs.begin())];
      failed |= !r.error.empty();
      // (spills: store bytes + load bytes of ptxas' report; blocks/SM: the runtime's estimate for this device)
      compiled = r.error.empty()
                     ? fmt::format(" {:>9} {:>7} {:>9} {:>10}", r.resources.registers,
                                   r.resources.spill_store_bytes + r.resources.spill_load_bytes,
                                   resident_blocks_per_sm(*it, p, dev),
                                   r.compile_ms > 0 ? fmt::format("{:.0f}", r.compile_ms) : std::string("cached"))
                     : "  compile failed: " + r.error.substr(0, r.error.find('\n'));
    }
    fmt::print("{} {:<48} {:>7} {:>7}{}\n", it == marked ? '*' : ' ', it->name(), it->threads(),
               splits == kStreamK ? std::string("stream") : std::to_string(splits), compiled);
  }
  if (failed) {
    fmt::print(stderr, "lutmm configs: a listed config did not compile (its row says why)\n");
    return 1;
  }
  // (--only may leave the heuristic's choice out of the list: then nothing is said of it)
  if (marked == configs.end() && (a.only.empty() || chosen.name().find(a.only) != std::string::npos)) {
    const std::string why = config_invalid_reason(chosen, p, dev);
    if (!why.empty()) {
      // The heuristic must pick a valid config; say so loudly rather than hide it.
      fmt::print(stderr, "lutmm configs: the heuristic's choice {} is not valid here: {}\n", chosen.name(), why);
      return 1;
    }
    fmt::print("* {:<48} {:>7} {:>7}  (the heuristic's choice: valid, with a split-K outside the listed ones)\n",
               chosen.name(), chosen.threads(), chosen.split_k);
  }
  // On a real GPU, measure them too (the tuner's timing function).
  if (a.arch == 0 && !a.no_time && !configs.empty() && !print_config_timings(p, configs, chosen, a.repetitions)) {
    fmt::print(stderr, "lutmm configs: not one config could be timed (the reasons are in the table)\n");
    return 1;
  }
  return 0;
}

}  // namespace

Command add_configs(CLI::App& parent) {
  auto a = std::make_shared<ConfigsArgs>();
  CLI::App* app = parent.add_subcommand("configs", "List the kernel configs valid for one problem, marking the heuristic's choice (and timing each on a GPU)");
  app->add_option("--shape", a->shape, "The problem: out[M,N] = x[M,K] . W[N,K]^T")
      ->required()
      ->check(shape_validator());
  app->add_option("--bits", a->bits, "Bits per weight code")->check(CLI::IsMember({2, 3, 4}))->capture_default_str();
  add_group_option(app, a->group);
  app->add_option("--dtype", a->dtype, "Activation type: bf16 or fp16")->check(dtype_validator())->capture_default_str();
  app->add_flag("--bias", a->bias, "The problem adds a bias");
  app->add_option("--arch", a->arch,
                  "Plan for a what-if GPU of this compute capability instead of the current one "
                  "(published figures of a representative model: 90 = H200-like, 132 SMs)")
      ->check(arch_validator());
  app->add_flag("--no-time", a->no_time, "On a GPU, only list the configs (by default each is also timed)");
  app->add_flag("--compile", a->compile,
                "Also compile each listed config with NVRTC for the planned architecture (into the kernel cache; no GPU "
                "needed with --arch) and show ptxas' registers and spill bytes, the blocks an SM fits and the compile time");
  app->add_option("--only", a->only, "List (and compile, and time) only the configs whose name contains this text");
  app->add_option("--repetitions", a->repetitions, "Timed L2-cold runs per config on a GPU (median)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  return {app, [a] { return run_configs(*a); }};
}

}  // namespace lutmm::cli
