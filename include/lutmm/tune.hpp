#pragma once
// Just-in-time tuning (docs/TUNING.md is the user's guide).
//
// For a problem key the tuner times the valid configs on the current GPU (weights read from DRAM, CUDA events, a few
// repetitions, median), keeps the fastest and stores it in a database; gemm() then uses the stored choice.
//
// The key (TuneKey): GPU name, compute capability, SM count, lutmm version, bits, group size, dtype, N, K
// and an M bucket. Bias is not part of it (the epilogue's bias add does not change which tiles win).
//   M bucket:  M = 1 .. 16  -> M itself     (decode batches: every M is its own key)
//              M > 16       -> the next power of two >= M   (17..32 -> 32, 33..64 -> 64, 65..128 -> 128, ...)
// The first M of a bucket that gets tuned is the one measured (TuneEntry::m); the rest of the bucket reuses
// the choice. Every config valid for one M of a bucket is valid for all of them (validity depends on K,
// the group and the GPU's shared memory, never on M).
//
// The database: one JSON file per GPU model, <cache dir>/tuning/<sanitised GPU name>.json (cache dir:
// $LUTMM_CACHE_DIR or ~/.cache/lutmm), with a format version, written atomically under a file lock so
// several processes tuning at once lose nothing. Under it lie the databases shipped with lutmm
// (data/tuning/*.json, embedded at build time): a key found in both uses the user's entry.
//
// Modes (LUTMM_TUNE=off|first-use|offline, or set_tune_mode()); the default is offline, so that no GEMM
// measures (or allocates for measuring) unless asked to:
//   off        the heuristic only; no database is read
//   first_use  a GEMM whose key is in no database tunes it (once), stores the choice and uses it; never
//              while its stream is being captured into a CUDA graph
//   offline    the database when it has the key, else the heuristic; never measures
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include "lutmm/config.hpp"
#include "lutmm/device.hpp"
#include "lutmm/dtype.hpp"

namespace lutmm {

// ---- modes ----
enum class TuneMode : uint8_t { off, first_use, offline };
inline constexpr TuneMode kDefaultTuneMode = TuneMode::offline;

std::string_view to_string(TuneMode mode);  // "off", "first-use", "offline"
// Accepts off, first-use (also first_use), offline; otherwise throws Error naming `argument`.
TuneMode parse_tune_mode(std::string_view text, std::string_view argument = "mode");
// The mode in force: set_tune_mode's value, else LUTMM_TUNE (read once; a bad value throws Error naming
// LUTMM_TUNE, every time it is consulted), else kDefaultTuneMode.
TuneMode tune_mode();
// Overrides LUTMM_TUNE for the whole process; nullopt goes back to LUTMM_TUNE / the default.
void set_tune_mode(std::optional<TuneMode> mode);

// Where the config a GEMM runs came from.
enum class ConfigSource : uint8_t {
  forced,     // the caller named it (GemmOptions::config, --config)
  database,   // a stored tuning result (yours or shipped)
  tuned,      // measured just now, by this call (first_use)
  heuristic,  // the built-in choice without measurement
  similar,    // no entry for this key: the stored choice of the same shape with another group size or activation
              // type (nearest group first), where it is valid for this one (docs/TUNING.md)
};
std::string_view to_string(ConfigSource source);  // "forced", "database", "tuned", "heuristic", "similar"

// ---- the key ----
int64_t m_bucket(int64_t m);  // see above; throws Error naming 'm' for m < 1

struct TuneKey {
  std::string gpu;  // DeviceInfo::name, as the driver reports it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::string lutmm_version;
  int bits = 4;
  int group_size = 128;  // == k for one scale per row
  DType dtype = DType::bf16;
  int64_t n = 0, k = 0;
  int64_t m_bucket = 0;
  std::string str() const;  // "NVIDIA H200 sm_90 132 SMs lutmm 0.1.0 b4 g128 bf16 N=4096 K=4096 M<=32"
  bool operator==(const TuneKey&) const = default;
};
TuneKey tune_key(const Problem& p, const DeviceInfo& dev);  // checks p

// One stored result.
struct TuneEntry {
  TuneKey key;
  int64_t m = 0;                 // the M that was measured (within key.m_bucket's bucket)
  std::string config;            // KernelConfig::name() of the fastest, split-K concrete
  double us = 0;                 // its median time
  std::string heuristic_config;  // what the heuristic picks for the measured problem
  double heuristic_us = 0;       // its median time, measured the same way
  std::string tuned_at;          // ISO 8601 UTC, "2026-11-30T01:02:03Z"
};

// ---- the database ----
inline constexpr int kTuningFormatVersion = 1;

// "NVIDIA H200" -> "nvidia_h200": lower case, every run of other characters one '_', none at either end.
std::string sanitize_gpu_name(std::string_view gpu_name);
// <cache dir>/tuning/<sanitised>.json (the folder is created on demand).
std::string tuning_database_path(std::string_view gpu_name);
// The stored choice for p on dev (user entry over shipped default), checked valid for p on dev.
std::optional<TuneEntry> find_tuning(const Problem& p, const DeviceInfo& dev);
// Adds or replaces (same key) one entry in its GPU's user database: read-merge-write under a file lock,
// atomic rename. Throws Error when the file cannot be written; the in-memory choice is updated either way.
void store_tuning(const TuneEntry& entry);
// Every entry of one GPU model: shipped defaults and the user file, the user's winning on equal keys,
// in key order (all versions and SM counts, not only the current device's).
std::vector<TuneEntry> tuning_entries(std::string_view gpu_name);
// Writes tuning_entries(gpu_name) as a database file (what data/tuning/<gpu>.json holds); returns the count.
size_t export_tuning(const std::string& path, std::string_view gpu_name);
// Merges every entry of a database file into the user databases of their GPUs (the imported entry
// replaces one with the same key); returns the count. Throws Error naming the file when it is not a
// database of this format version, or an entry lacks a field.
size_t import_tuning(const std::string& path);
// Forgets what was loaded and stored in memory, so the next lookup re-reads LUTMM_CACHE_DIR and the files
// (tests, tools; a result whose file write failed is lost with it).
void reload_tuning();

// ---- the tuner ----
struct TuneOptions {
  double budget_ms = 600;  // measuring time (launches, covers, waits); JIT compiles and loads are extra
  // Keys whose heuristic config runs in under small_key_us get max(budget_ms, small_key_budget_ms): more
  // screening for keys whose runs are microseconds (docs/NOTES.md v1.18: 2.5 s found configs 4-17% faster on five
  // of 55 small keys when a screening cost 6-40 ms; since v1.20 it costs ~0.4 ms and 600 ms reach every candidate
  // of such a key). 0 keeps budget_ms for every key (first-use tuning, which runs inside a model's first call,
  // keeps it short).
  double small_key_budget_ms = 0;
  double small_key_us = 20;
  int repetitions = 5;     // timed runs of each finalist and of the heuristic's choice (median)
  bool store = true;       // store the result with store_tuning
};

struct CandidateTiming {
  KernelConfig config;  // split-K concrete
  double estimate_us = 0;  // the ranking model's figure (rank_configs)
  double us = 0;        // median of `runs` runs (weights from DRAM); 0 when not timed
  int runs = 0;
  std::string note;     // empty when timed; "skipped: <why>" or "failed: <error>" otherwise
};

struct TuneResult {
  TuneEntry entry;
  KernelConfig best, heuristic;
  std::vector<CandidateTiming> candidates;  // in rank order
  double prepare_ms = 0;   // inputs, JIT compiles and kernel loads
  double measure_ms = 0;   // the timed part (bounded by budget_ms, plus the last run)
  double budget_ms = 0;    // the key's measuring budget (TuneOptions::budget_ms, or small_key_budget_ms)
  double total_ms = 0;
  bool stored = false;
  std::string store_error;  // why store_tuning failed, when it did
};

// Times the candidates for p's key on the current GPU and returns the fastest. The work runs on lutmm's
// private stream of the device, after the work already queued on `stream` (so it does not overlap the
// caller's kernels); inputs are random, never zero, and allocated for the call. Throws Error when `stream`
// is being captured, for a GPU older than sm_80, or when not one candidate ran. Thread-safe (one tuning
// at a time per process).
TuneResult tune(const Problem& p, cudaStream_t stream = nullptr, const TuneOptions& options = {});

// The timing function tune() uses, for any list of configs (split_k 0 is resolved first): `repetitions`
// runs each (weights from DRAM), median. A config that cannot run gets a "failed: ..." note; the rest still run.
std::vector<CandidateTiming> time_configs(const Problem& p, const std::vector<KernelConfig>& configs,
                                          cudaStream_t stream = nullptr, int repetitions = 3);

// The ranking model of the architecture (tune/rank_sm80.cpp): an estimate in microseconds from the waves
// of tiles over the SMs, the bytes each tile moves and the pipeline depth. It orders and prunes tune()'s
// candidates; it is not a prediction to report.
double estimate_config_us(const KernelConfig& c, const Problem& p, const DeviceInfo& dev);
// valid_configs with split_k resolved, duplicates dropped, best estimate first.
std::vector<KernelConfig> rank_configs(const Problem& p, const DeviceInfo& dev);

// ---- the runtime's choice (what gemm() runs when no config is forced) ----
// off -> heuristic; else a database hit; else, in first_use and when `stream` is not being captured,
// tune now (on the private stream), store, use; else a similar key's stored choice (ConfigSource::similar), else
// the heuristic (when capturing, said once per key on stderr). A tuning failure is reported once on stderr and
// the similar key's choice or the heuristic is used. `source` may be null.
KernelConfig choose_config(const Problem& p, const DeviceInfo& dev, cudaStream_t stream, ConfigSource* source);

}  // namespace lutmm
