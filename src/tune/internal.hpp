#pragma once
// What the files of src/tune/ share and the tests reach into; not part of any public contract.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lutmm/tune.hpp"
#include "tune/embedded_tuning.hpp"

namespace lutmm::tuning_detail {

// Prints "lutmm: warning: <message>" (or the message as is when it already starts with "lutmm: ") to
// stderr the first time each `kind` comes up in this process.
void warn_once(const std::string& kind, const std::string& message);

// "2026-11-30T01:02:03Z" (now, UTC) and the compact form used in set-aside names, "20261130T010203Z".
std::string iso_time_now();
std::string compact_time_now();

// ---- the database file format (database_file.cpp) ----
using Json = nlohmann::ordered_json;

Json entry_to_json(const TuneEntry& e);
// Throws Error("... entry <index>: field '<name>' ...") for a missing or ill-typed field.
TuneEntry entry_from_json(const Json& j, size_t index);

struct DatabaseFile {
  int format_version = kTuningFormatVersion;
  std::string gpu;
  std::string note;
  std::vector<TuneEntry> entries;
};

// Why a database text could not be used.
enum class FileProblem : uint8_t {
  none,
  corrupt,  // not JSON, not an object, a field missing or ill-typed
  old,      // format_version missing or older than kTuningFormatVersion
  newer,    // format_version newer: written by a later lutmm
};

struct ParsedFile {
  FileProblem problem = FileProblem::none;
  std::string why;  // empty when problem == none
  DatabaseFile file;
};
ParsedFile parse_database(std::string_view text);
std::string serialize_database(const DatabaseFile& file);  // pretty-printed JSON, entries in key order

bool same_key(const TuneKey& a, const TuneKey& b);
bool key_less(const TuneKey& a, const TuneKey& b);
// Inserts or replaces (same key) each of `add` into `into`, then sorts by key.
void merge_entries(std::vector<TuneEntry>& into, const std::vector<TuneEntry>& add);

// The shipped entries of one GPU model (empty when none is shipped or the shipped file is unusable).
std::vector<TuneEntry> shipped_entries(std::string_view gpu_name);
// For tests: replaces the embedded files by these (sanitised name, JSON text) pairs; nullopt restores the
// embedded ones. Takes effect for tables loaded afterwards (call reload_tuning()).
void replace_shipped_files(std::optional<std::vector<std::pair<std::string, std::string>>> files);

// ---- the in-memory tables (database.cpp) ----
// The stored config for p on dev, or nullopt: the fast path of every gemm() call (a hash lookup under a
// shared lock once the device's table is loaded). An entry whose tile rows were fitted to a smaller M of the
// bucket than p's (docs/TUNING.md, "M bucket") does not count.
std::optional<KernelConfig> lookup_config(const Problem& p, const DeviceInfo& dev);
// Where p's own key has no entry: the stored config of the same shape (N, K, M bucket, bits) with another group
// size or activation type, valid for p, nearest group first (docs/TUNING.md, "Keys without an entry"). The kernels
// differ between those only in the scales' stride and the conversions, so the ranking of configs carries over
// (docs/NOTES.md v1.22 measured it).
std::optional<KernelConfig> lookup_similar_config(const Problem& p, const DeviceInfo& dev);
// The (group, dtype) pairs lookup_similar_config tries for p, in order (for tests).
std::vector<std::pair<int, DType>> similar_keys(const Problem& p);
// Makes `entry` the in-memory choice of loaded tables it belongs to (also when the file write failed).
void remember(const TuneEntry& entry);

// ---- the tuner's internals (tuner.cpp, timing.cpp) ----
// One tuning (and one timing session) at a time per process: measurements of two would disturb each other.
std::recursive_mutex& tuning_mutex();

// The problem a key stands for, measured at M = m.
Problem problem_of(const TuneKey& key, int64_t m);

}  // namespace lutmm::tuning_detail
