// The runtime's choice of config for a GEMM nobody forced a config on: the hot path of every gemm() call.
// A database hit costs the mode (one atomic load), the key (a few integer operations) and one hash lookup
// under a shared lock; only a miss in first-use mode does more.
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "tune/internal.hpp"
#include "tune/timing.hpp"

namespace lutmm {

namespace {

using namespace tuning_detail;

// Keys whose first-use tuning failed in this process: not retried on every call.
std::mutex g_failed_mutex;
std::set<std::string> g_failed;

struct Tuned {
  KernelConfig config;
  ConfigSource source;
};

// What runs where nothing was stored for p's key and nothing is measured now: a similar key's stored choice,
// else the heuristic's.
Tuned untuned_choice(const Problem& p, const DeviceInfo& dev) {
  if (auto similar = lookup_similar_config(p, dev)) return {*similar, ConfigSource::similar};
  return {heuristic_config(p, dev), ConfigSource::heuristic};
}

std::string describe(const Tuned& t) {
  return fmt::format("the {} config {}", t.source == ConfigSource::similar ? "similar key's" : "heuristic's",
                     t.config.name());
}

std::optional<Tuned> tune_on_first_use(const Problem& p, const DeviceInfo& dev, cudaStream_t stream) {
  const std::string key = tune_key(p, dev).str();
  {
    std::lock_guard lock(g_failed_mutex);
    if (g_failed.count(key) != 0) return std::nullopt;
  }
  if (stream_is_capturing(stream)) {
    // Measuring would put the tuner's launches into the caller's graph (and allocating is not allowed):
    // this GEMM runs a similar key's or the heuristic's choice; the key is tuned by the first non-captured call.
    warn_once("capture:" + key, fmt::format("lutmm: not tuning {} during CUDA graph capture; using {}", key,
                                            describe(untuned_choice(p, dev))));
    return std::nullopt;
  }
  // dev must be the GPU this thread drives, not a described one (a what-if or a test's DeviceInfo): the
  // measurement runs on the current device.
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != dev.index) {
    cudaGetLastError();
    return std::nullopt;
  }
  const DeviceInfo& actual = device_info(current);
  if (actual.name != dev.name || actual.sm_count != dev.sm_count || actual.arch() != dev.arch()) return std::nullopt;
  std::lock_guard lock(tuning_mutex());
  if (auto c = lookup_config(p, dev)) return Tuned{*c, ConfigSource::database};  // another thread just tuned it
  try {
    const TuneResult r = tune(p, stream);
    if (!r.stored)
      warn_once("store:" + sanitize_gpu_name(dev.name),
                fmt::format("could not store tuning results ({}); they are kept in memory for this process",
                            r.store_error));
    return Tuned{r.best, ConfigSource::tuned};
  } catch (const Error& e) {
    {
      std::lock_guard failed_lock(g_failed_mutex);
      g_failed.insert(key);
    }
    warn_once("tune-failed:" + key,
              fmt::format("tuning {} failed: {}; using {}", key, e.what(), describe(untuned_choice(p, dev))));
    return std::nullopt;
  }
}

}  // namespace

KernelConfig choose_config(const Problem& p, const DeviceInfo& dev, cudaStream_t stream, ConfigSource* source) {
  check_problem(p);
  const TuneMode mode = tune_mode();
  if (mode != TuneMode::off) {
    if (auto c = lookup_config(p, dev)) {
      if (source != nullptr) *source = ConfigSource::database;
      return *c;
    }
    if (mode == TuneMode::first_use) {
      if (auto t = tune_on_first_use(p, dev, stream)) {
        if (source != nullptr) *source = t->source;
        return t->config;
      }
    }
  }
  const Tuned fallback = mode == TuneMode::off ? Tuned{heuristic_config(p, dev), ConfigSource::heuristic}
                                               : untuned_choice(p, dev);
  if (source != nullptr) *source = fallback.source;
  return fallback.config;
}

}  // namespace lutmm
