// The tuner: which configs to time for a key, in what order, how often, within what time.
//
//   1. candidates: valid_configs with split-K resolved and duplicates dropped (rank_configs), best
//      ranking-model estimate first; the heuristic's choice is always among them.
//   2. left out before any run: configs the model puts above kHopeless x the best estimate (for a large
//      problem a hopeless config costs tens of milliseconds a run), split-K configs whose partial sums
//      would need more than kMaxWorkspace, and configs whose grid has too many row tiles.
//   3. the heuristic's choice: `repetitions` runs; its median against its estimate calibrates the model's
//      figures into predicted run times.
//   4. screening: one run of every other candidate (its weight read from DRAM: tuning_detail::TimingSession
//      rotates copies), in rank order, while the predicted run fits in kScreeningShare of the budget
//      (measuring time only: launches and waits; compiles and loads are extra; a small key's budget is
//      TuneOptions::small_key_budget_ms where that is larger).
//   5. refinement: the candidates within kFinalist of the best screened time get up to `repetitions`
//      runs, budget permitting; the fastest median wins.
// Kernels are compiled and loaded as the runs reach their candidates (a batch of kPrepareBatch ahead), so a cold
// JIT cache compiles what the budget times, not every candidate; that time is not the budget's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "lutmm/gemm.hpp"
#include "tune/internal.hpp"
#include "tune/timing.hpp"

namespace lutmm {

namespace {

using namespace tuning_detail;

constexpr double kHopeless = 4.0;
constexpr double kScreeningShare = 0.7;  // of the budget; the rest is kept for the finalists' repetitions
constexpr double kFinalist = 1.2;
constexpr size_t kMaxFinalists = 6;
constexpr size_t kPrepareBatch = TimingSession::kCompileThreads;  // kernels compiled together, one a thread
constexpr size_t kMaxWorkspace = 128ull << 20;
constexpr int64_t kMaxRowTiles = 65535;

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void check_options(const TuneOptions& o) {
  if (!(o.budget_ms > 0) || !std::isfinite(o.budget_ms))
    throw_argument_error("options.budget_ms", "a positive number of milliseconds", fmt::format("{}", o.budget_ms));
  if (!(o.small_key_budget_ms >= 0) || !std::isfinite(o.small_key_budget_ms))
    throw_argument_error("options.small_key_budget_ms", "0 or a positive number of milliseconds",
                         fmt::format("{}", o.small_key_budget_ms));
  if (!(o.small_key_us >= 0) || !std::isfinite(o.small_key_us))
    throw_argument_error("options.small_key_us", "a non-negative number of microseconds", fmt::format("{}", o.small_key_us));
  if (o.repetitions < 1 || o.repetitions > 100)
    throw_argument_error("options.repetitions", "1 to 100", std::to_string(o.repetitions));
}

const DeviceInfo& tuning_device() {
  if (device_count() == 0) throw_error("tuning needs a CUDA device, and this machine has none");
  const DeviceInfo& dev = current_device_info();
  if (dev.arch() < 80) throw_error(fmt::format("{} is sm_{}; lutmm needs sm_80 or newer", dev.name, dev.arch()));
  return dev;
}

void check_not_capturing(cudaStream_t stream) {
  if (stream_is_capturing(stream))
    throw_argument_error("stream", "a stream that is not being captured into a CUDA graph (tuning measures)",
                         "a capturing stream");
}

}  // namespace

TuneResult tune(const Problem& p, cudaStream_t stream, const TuneOptions& options) {
  check_problem(p);
  check_options(options);
  const DeviceInfo& dev = tuning_device();
  std::lock_guard lock(tuning_mutex());
  RelaxedCaptureMode relaxed;
  check_not_capturing(stream);
  const auto start = Clock::now();

  TuneResult result;
  result.heuristic = heuristic_config(p, dev);
  std::vector<KernelConfig> ranked = rank_configs(p, dev);
  if (std::find(ranked.begin(), ranked.end(), result.heuristic) == ranked.end()) ranked.push_back(result.heuristic);

  std::vector<CandidateTiming>& cands = result.candidates;
  double best_estimate = 0;
  for (const KernelConfig& c : ranked) {
    CandidateTiming t;
    t.config = c;
    t.estimate_us = estimate_config_us(c, p, dev);
    best_estimate = cands.empty() ? t.estimate_us : std::min(best_estimate, t.estimate_us);
    cands.push_back(t);
  }
  std::stable_sort(cands.begin(), cands.end(),
                   [](const CandidateTiming& a, const CandidateTiming& b) { return a.estimate_us < b.estimate_us; });

  size_t heuristic_index = 0;
  std::vector<size_t> runnable;
  for (size_t i = 0; i < cands.size(); ++i) {
    CandidateTiming& t = cands[i];
    const bool is_heuristic = t.config == result.heuristic;
    if (is_heuristic) heuristic_index = i;
    const int64_t row_tiles = (p.m + t.config.tile_m - 1) / t.config.tile_m;
    const size_t workspace = split_k_workspace(t.config, p, dev).float_bytes;
    if (row_tiles > kMaxRowTiles) {
      t.note = fmt::format("skipped: {} row tiles, more than a grid allows ({})", row_tiles, kMaxRowTiles);
    } else if (!is_heuristic && workspace > kMaxWorkspace) {
      t.note = fmt::format("skipped: split-K partial sums of {:.0f} MiB (the tuner's limit is {} MiB)",
                           static_cast<double>(workspace) / (1 << 20), kMaxWorkspace >> 20);
    } else if (!is_heuristic && t.estimate_us > kHopeless * best_estimate) {
      t.note = fmt::format("skipped: the ranking model puts it at {:.0f}x the best estimate", t.estimate_us / best_estimate);
    } else {
      runnable.push_back(i);
    }
  }

  TimingSession session(p, dev, stream);
  result.prepare_ms = ms_since(start);

  // Kernels are compiled and loaded in rank order, a batch at a time, just before their candidates are timed:
  // on a cold JIT cache, compiling every runnable candidate up front cost minutes on keys whose budget then
  // timed ~50 of ~400 (docs/NOTES.md v1.20). A batch is the candidate needed now and the next runnable ones,
  // kPrepareBatch kernels in all, compiled on parallel threads. Compiling is not measuring: its time counts
  // to prepare_ms, not to the budget.
  std::vector<bool> prepared(cands.size(), false);
  size_t prepare_cursor = 0;  // runnable[prepare_cursor..] may still need preparing
  double compile_ms = 0;      // spent preparing after the measuring started
  auto ensure_prepared = [&](size_t i) {
    if (prepared[i]) return cands[i].note.empty();
    const auto t0 = Clock::now();
    std::vector<size_t> batch{i};
    std::vector<KernelConfig> configs{cands[i].config};
    std::set<std::string> kernels{kernel_name(cands[i].config)};
    for (; prepare_cursor < runnable.size(); ++prepare_cursor) {
      const size_t j = runnable[prepare_cursor];
      if (prepared[j] || j == i) continue;
      if (kernels.size() >= kPrepareBatch && kernels.count(kernel_name(cands[j].config)) == 0) break;
      kernels.insert(kernel_name(cands[j].config));
      batch.push_back(j);
      configs.push_back(cands[j].config);
    }
    const std::vector<std::string> errors = session.prepare(configs);
    std::vector<KernelConfig> ok;
    for (size_t b = 0; b < batch.size(); ++b) {
      prepared[batch[b]] = true;
      if (errors[b].empty()) {
        ok.push_back(configs[b]);
      } else {
        cands[batch[b]].note = "failed: " + errors[b];
      }
    }
    session.grow_workspace(ok);
    const double ms = ms_since(t0);
    result.prepare_ms += ms;
    compile_ms += ms;
    return cands[i].note.empty();
  };

  const auto measure_start = Clock::now();
  auto measured_ms = [&] { return ms_since(measure_start) - compile_ms; };
  std::vector<std::vector<double>> samples(cands.size());
  auto run = [&](size_t i, int runs) {
    if (!ensure_prepared(i)) return;
    try {
      const std::vector<double> us = session.time(cands[i].config, runs);
      samples[i].insert(samples[i].end(), us.begin(), us.end());
      cands[i].runs = static_cast<int>(samples[i].size());
      cands[i].us = median(samples[i]);
    } catch (const Error& e) {
      cands[i].note = std::string("failed: ") + e.what();
    }
  };
  const auto runnable_has = [&](size_t i) { return std::find(runnable.begin(), runnable.end(), i) != runnable.end(); };

  // 3. the heuristic's choice, in full: the reference time, the model's calibration and whether this is a
  // small key (TuneOptions::small_key_budget_ms).
  if (runnable_has(heuristic_index)) run(heuristic_index, options.repetitions);
  const CandidateTiming& h = cands[heuristic_index];
  const double calibration = h.runs > 0 && h.estimate_us > 0 ? h.us / h.estimate_us : 1.0;
  const double budget_ms = h.runs > 0 && h.us < options.small_key_us
                               ? std::max(options.budget_ms, options.small_key_budget_ms)
                               : options.budget_ms;
  result.budget_ms = budget_ms;
  // 4. screening, in rank order.
  for (size_t i : runnable) {
    if (i == heuristic_index) continue;
    const double predicted_ms = cands[i].estimate_us * calibration / 1000.0;
    if (measured_ms() + predicted_ms > kScreeningShare * budget_ms) {
      cands[i].note = fmt::format("skipped: the screening share of the {:.0f} ms budget was spent", budget_ms);
      continue;
    }
    run(i, 1);
  }
  // 5. refinement of the finalists.
  double best_us = 0;
  for (const CandidateTiming& t : cands)
    if (t.runs > 0 && (best_us == 0 || t.us < best_us)) best_us = t.us;
  if (best_us == 0) {
    std::string why;
    for (const CandidateTiming& t : cands)
      if (!t.note.empty() && why.empty()) why = t.config.name() + ": " + t.note;
    throw_error(fmt::format("tuning {} on {}: no config could be timed ({})", p.str(), dev.name, why));
  }
  std::vector<size_t> finalists;
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].runs > 0 && cands[i].us <= kFinalist * best_us) finalists.push_back(i);
  std::stable_sort(finalists.begin(), finalists.end(), [&](size_t a, size_t b) { return cands[a].us < cands[b].us; });
  if (finalists.size() > kMaxFinalists) finalists.resize(kMaxFinalists);
  for (size_t i : finalists) {
    int extra = options.repetitions - cands[i].runs;
    if (extra <= 0) continue;
    const double per_run_ms = cands[i].us / 1000.0;
    const double left_ms = budget_ms - measured_ms();
    extra = std::min(extra, static_cast<int>(left_ms / per_run_ms));
    if (extra <= 0) break;
    run(i, extra);
  }
  result.measure_ms = measured_ms();

  size_t best = cands.size();
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].runs > 0 && (best == cands.size() || cands[i].us < cands[best].us)) best = i;
  result.best = cands[best].config;

  TuneEntry& e = result.entry;
  e.key = tune_key(p, dev);
  e.m = p.m;
  e.config = result.best.name();
  e.us = cands[best].us;
  e.heuristic_config = result.heuristic.name();
  e.heuristic_us = cands[heuristic_index].runs > 0 ? cands[heuristic_index].us : 0.0;
  e.tuned_at = iso_time_now();
  if (options.store) {
    try {
      store_tuning(e);
      result.stored = true;
    } catch (const Error& err) {
      result.store_error = err.what();
    }
  }
  result.total_ms = ms_since(start);
  return result;
}

std::vector<CandidateTiming> time_configs(const Problem& p, const std::vector<KernelConfig>& configs,
                                          cudaStream_t stream, int repetitions) {
  check_problem(p);
  if (repetitions < 1 || repetitions > 1000)
    throw_argument_error("repetitions", "1 to 1000", std::to_string(repetitions));
  const DeviceInfo& dev = tuning_device();
  std::lock_guard lock(tuning_mutex());
  RelaxedCaptureMode relaxed;
  check_not_capturing(stream);

  std::vector<CandidateTiming> out(configs.size());
  std::vector<size_t> valid;
  std::vector<KernelConfig> valid_list;
  for (size_t i = 0; i < configs.size(); ++i) {
    CandidateTiming& t = out[i];
    t.config = configs[i];
    if (const std::string why = config_invalid_reason(t.config, p, dev); !why.empty()) {
      t.note = "failed: not valid here: " + why;
      continue;
    }
    t.config.split_k = resolve_split_k(t.config, p, dev);
    t.estimate_us = estimate_config_us(t.config, p, dev);
    valid.push_back(i);
    valid_list.push_back(t.config);
  }
  if (valid.empty()) return out;
  TimingSession session(p, dev, stream);
  const std::vector<std::string> errors = session.prepare(valid_list);
  std::vector<KernelConfig> prepared;
  for (size_t j = 0; j < valid.size(); ++j)
    if (errors[j].empty()) prepared.push_back(valid_list[j]);
  session.grow_workspace(prepared);
  for (size_t j = 0; j < valid.size(); ++j) {
    CandidateTiming& t = out[valid[j]];
    if (!errors[j].empty()) {
      t.note = "failed: " + errors[j];
      continue;
    }
    try {
      const std::vector<double> us = session.time(t.config, repetitions);
      t.runs = static_cast<int>(us.size());
      t.us = median(us);
    } catch (const Error& e) {
      t.note = std::string("failed: ") + e.what();
    }
  }
  return out;
}

}  // namespace lutmm
