// Tuning modes (LUTMM_TUNE), config sources, the problem key and its M bucket, and the small helpers the
// tune module shares (warnings, timestamps).
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>
#include <string>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "lutmm/lutmm.hpp"
#include "tune/internal.hpp"

namespace lutmm {

namespace {

// -1: no override (LUTMM_TUNE / the default); else a TuneMode value. An atomic, so the mode costs one load
// on every gemm() call.
std::atomic<int> g_mode_override{-1};

struct EnvMode {
  TuneMode mode = kDefaultTuneMode;
  std::string error;  // set when LUTMM_TUNE holds a bad value
};

// LUTMM_TUNE is read once per process; a bad value is remembered and reported each time it is consulted.
const EnvMode& env_mode() {
  static const EnvMode parsed = [] {
    EnvMode m;
    const char* text = std::getenv("LUTMM_TUNE");
    if (text == nullptr || *text == '\0') return m;
    try {
      m.mode = parse_tune_mode(text, "LUTMM_TUNE");
    } catch (const Error& e) {
      m.error = e.what();
    }
    return m;
  }();
  return parsed;
}

}  // namespace

std::string_view to_string(TuneMode mode) {
  switch (mode) {
    case TuneMode::off: return "off";
    case TuneMode::first_use: return "first-use";
    case TuneMode::offline: return "offline";
  }
  return "?";
}

TuneMode parse_tune_mode(std::string_view text, std::string_view argument) {
  if (text == "off") return TuneMode::off;
  if (text == "first-use" || text == "first_use") return TuneMode::first_use;
  if (text == "offline") return TuneMode::offline;
  throw_argument_error(argument, "one of off, first-use, offline", fmt::format("'{}'", text));
}

TuneMode tune_mode() {
  const int forced = g_mode_override.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<TuneMode>(forced);
  const EnvMode& env = env_mode();
  if (!env.error.empty()) throw Error(env.error);
  return env.mode;
}

void set_tune_mode(std::optional<TuneMode> mode) {
  if (mode && *mode != TuneMode::off && *mode != TuneMode::first_use && *mode != TuneMode::offline)
    throw_argument_error("mode", "TuneMode::off, first_use or offline",
                         "enum value " + std::to_string(static_cast<int>(*mode)));
  g_mode_override.store(mode ? static_cast<int>(*mode) : -1, std::memory_order_relaxed);
}

std::string_view to_string(ConfigSource source) {
  switch (source) {
    case ConfigSource::forced: return "forced";
    case ConfigSource::database: return "database";
    case ConfigSource::tuned: return "tuned";
    case ConfigSource::heuristic: return "heuristic";
    case ConfigSource::similar: return "similar";
  }
  return "?";
}

int64_t m_bucket(int64_t m) {
  if (m < 1) throw_argument_error("m", "M >= 1", std::to_string(m));
  if (m <= 16) return m;
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(m)));
}

std::string TuneKey::str() const {
  const std::string bucket = m_bucket <= 16 ? fmt::format("M={}", m_bucket) : fmt::format("M<={}", m_bucket);
  return fmt::format("{} sm_{}{} {} SMs lutmm {} b{} g{} {} N={} K={} {}", gpu, cc_major, cc_minor, sm_count,
                     lutmm_version, bits, group_size, to_string(dtype), n, k, bucket);
}

TuneKey tune_key(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  TuneKey key;
  key.gpu = dev.name;
  key.cc_major = dev.cc_major;
  key.cc_minor = dev.cc_minor;
  key.sm_count = dev.sm_count;
  key.lutmm_version = version();
  key.bits = p.bits;
  key.group_size = p.group_size;
  key.dtype = p.dtype;
  key.n = p.n;
  key.k = p.k;
  key.m_bucket = m_bucket(p.m);
  return key;
}

namespace tuning_detail {

void warn_once(const std::string& kind, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  {
    std::lock_guard lock(mutex);
    if (!seen.insert(kind).second) return;
  }
  if (message.rfind("lutmm: ", 0) == 0) {
    fmt::print(stderr, "{}\n", message);
  } else {
    fmt::print(stderr, "lutmm: warning: {}\n", message);
  }
  std::fflush(stderr);
}

namespace {
std::tm utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}
}  // namespace

std::string iso_time_now() {
  const std::tm tm = utc_now();
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

std::string compact_time_now() {
  const std::tm tm = utc_now();
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

Problem problem_of(const TuneKey& key, int64_t m) {
  Problem p;
  p.m = m;
  p.n = key.n;
  p.k = key.k;
  p.bits = key.bits;
  p.group_size = key.group_size;
  p.dtype = key.dtype;
  return p;
}

std::recursive_mutex& tuning_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

}  // namespace tuning_detail
}  // namespace lutmm
