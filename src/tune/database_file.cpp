// The tuning database's file format, version 1:
//
//   {
//     "format_version": 1,
//     "gpu": "NVIDIA H200",
//     "note": "free text",
//     "entries": [
//       { "gpu": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "lutmm_version": "0.1.0",
//         "bits": 4, "group_size": 128, "dtype": "bf16", "n": 4096, "k": 4096, "m_bucket": 32,   <- the key
//         "m": 32, "config": "sm80_n64_m32_k128_s4_w4x1_sk2_lutsmem", "us": 12.5,
//         "heuristic_config": "sm80_...", "heuristic_us": 13.1, "tuned_at": "2026-11-30T01:02:03Z" },
//       ...
//     ]
//   }
//
// Entries are kept in key order so that a file under version control diffs line by line. Fields are read
// strictly (a missing or ill-typed one makes the file corrupt); unknown fields are ignored, so a later
// minor addition does not need a new format version.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "tune/internal.hpp"

namespace lutmm::tuning_detail {

namespace {

const Json& field(const Json& j, const char* name, size_t index) {
  auto it = j.find(name);
  if (it == j.end()) throw Error(fmt::format("entry {}: field '{}' is missing", index, name));
  return *it;
}

std::string string_field(const Json& j, const char* name, size_t index) {
  const Json& v = field(j, name, index);
  if (!v.is_string()) throw Error(fmt::format("entry {}: field '{}' is not a string", index, name));
  return v.get<std::string>();
}

int64_t int_field(const Json& j, const char* name, size_t index, int64_t min_value) {
  const Json& v = field(j, name, index);
  if (!v.is_number_integer()) throw Error(fmt::format("entry {}: field '{}' is not an integer", index, name));
  const int64_t value = v.get<int64_t>();
  if (value < min_value) throw Error(fmt::format("entry {}: field '{}' is {}, below {}", index, name, value, min_value));
  return value;
}

double time_field(const Json& j, const char* name, size_t index) {
  const Json& v = field(j, name, index);
  if (!v.is_number()) throw Error(fmt::format("entry {}: field '{}' is not a number", index, name));
  const double value = v.get<double>();
  if (!(value >= 0) || !std::isfinite(value))
    throw Error(fmt::format("entry {}: field '{}' is {}, not a time in microseconds", index, name, value));
  return value;
}

auto key_tuple(const TuneKey& k) {
  return std::tie(k.gpu, k.cc_major, k.cc_minor, k.sm_count, k.lutmm_version, k.bits, k.group_size, k.dtype, k.n,
                  k.k, k.m_bucket);
}

}  // namespace

Json entry_to_json(const TuneEntry& e) {
  Json j = Json::object();
  j["gpu"] = e.key.gpu;
  j["compute_capability"] = fmt::format("{}.{}", e.key.cc_major, e.key.cc_minor);
  j["sm_count"] = e.key.sm_count;
  j["lutmm_version"] = e.key.lutmm_version;
  j["bits"] = e.key.bits;
  j["group_size"] = e.key.group_size;
  j["dtype"] = std::string(to_string(e.key.dtype));
  j["n"] = e.key.n;
  j["k"] = e.key.k;
  j["m_bucket"] = e.key.m_bucket;
  j["m"] = e.m;
  j["config"] = e.config;
  // Two decimals are far below run-to-run noise and keep the file readable.
  j["us"] = std::round(e.us * 100.0) / 100.0;
  j["heuristic_config"] = e.heuristic_config;
  j["heuristic_us"] = std::round(e.heuristic_us * 100.0) / 100.0;
  j["tuned_at"] = e.tuned_at;
  return j;
}

TuneEntry entry_from_json(const Json& j, size_t index) {
  if (!j.is_object()) throw Error(fmt::format("entry {} is not an object", index));
  TuneEntry e;
  e.key.gpu = string_field(j, "gpu", index);
  const std::string cc = string_field(j, "compute_capability", index);
  int major = 0, minor = 0;
  char tail = 0;
  if (std::sscanf(cc.c_str(), "%d.%d%c", &major, &minor, &tail) != 2 || major < 1 || minor < 0 || minor > 9)
    throw Error(fmt::format("entry {}: field 'compute_capability' is '{}', not like \"9.0\"", index, cc));
  e.key.cc_major = major;
  e.key.cc_minor = minor;
  e.key.sm_count = static_cast<int>(int_field(j, "sm_count", index, 1));
  e.key.lutmm_version = string_field(j, "lutmm_version", index);
  e.key.bits = static_cast<int>(int_field(j, "bits", index, 1));
  e.key.group_size = static_cast<int>(int_field(j, "group_size", index, 1));
  try {
    e.key.dtype = parse_dtype(string_field(j, "dtype", index));
  } catch (const Error&) {
    throw Error(fmt::format("entry {}: field 'dtype' is '{}', not bf16 or fp16", index, j["dtype"].get<std::string>()));
  }
  e.key.n = int_field(j, "n", index, 1);
  e.key.k = int_field(j, "k", index, 1);
  e.key.m_bucket = int_field(j, "m_bucket", index, 1);
  e.m = int_field(j, "m", index, 1);
  if (e.key.m_bucket != m_bucket(e.m))
    throw Error(fmt::format("entry {}: m {} does not fall in m_bucket {} (its bucket is {})", index, e.m,
                            e.key.m_bucket, m_bucket(e.m)));
  e.config = string_field(j, "config", index);
  e.us = time_field(j, "us", index);
  e.heuristic_config = string_field(j, "heuristic_config", index);
  e.heuristic_us = time_field(j, "heuristic_us", index);
  e.tuned_at = string_field(j, "tuned_at", index);
  return e;
}

ParsedFile parse_database(std::string_view text) {
  ParsedFile out;
  auto fail = [&](FileProblem problem, std::string why) {
    out.problem = problem;
    out.why = std::move(why);
    out.file.entries.clear();
    return out;
  };
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return fail(FileProblem::corrupt, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) return fail(FileProblem::corrupt, "not a JSON object");
  const auto version = j.find("format_version");
  if (version == j.end()) return fail(FileProblem::old, "it has no format_version (an old format)");
  if (!version->is_number_integer()) return fail(FileProblem::corrupt, "format_version is not an integer");
  out.file.format_version = version->get<int>();
  if (out.file.format_version < kTuningFormatVersion)
    return fail(FileProblem::old, fmt::format("it has format_version {}, older than this lutmm's {}",
                                              out.file.format_version, kTuningFormatVersion));
  if (out.file.format_version > kTuningFormatVersion)
    return fail(FileProblem::newer, fmt::format("it has format_version {}, newer than this lutmm's {}",
                                                out.file.format_version, kTuningFormatVersion));
  if (auto gpu = j.find("gpu"); gpu != j.end()) {
    if (!gpu->is_string()) return fail(FileProblem::corrupt, "field 'gpu' is not a string");
    out.file.gpu = gpu->get<std::string>();
  }
  if (auto note = j.find("note"); note != j.end() && note->is_string()) out.file.note = note->get<std::string>();
  const auto entries = j.find("entries");
  if (entries == j.end() || !entries->is_array()) return fail(FileProblem::corrupt, "field 'entries' is not a list");
  try {
    for (size_t i = 0; i < entries->size(); ++i) out.file.entries.push_back(entry_from_json((*entries)[i], i));
  } catch (const Error& e) {
    return fail(FileProblem::corrupt, e.what());
  }
  return out;
}

std::string serialize_database(const DatabaseFile& file) {
  std::vector<TuneEntry> entries = file.entries;
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TuneEntry& a, const TuneEntry& b) { return key_less(a.key, b.key); });
  Json j = Json::object();
  j["format_version"] = file.format_version;
  j["gpu"] = file.gpu;
  j["note"] = file.note;
  Json list = Json::array();
  for (const TuneEntry& e : entries) list.push_back(entry_to_json(e));
  j["entries"] = std::move(list);
  return j.dump(2) + "\n";
}

bool same_key(const TuneKey& a, const TuneKey& b) { return key_tuple(a) == key_tuple(b); }
bool key_less(const TuneKey& a, const TuneKey& b) { return key_tuple(a) < key_tuple(b); }

void merge_entries(std::vector<TuneEntry>& into, const std::vector<TuneEntry>& add) {
  for (const TuneEntry& e : add) {
    auto it = std::find_if(into.begin(), into.end(), [&](const TuneEntry& x) { return same_key(x.key, e.key); });
    if (it != into.end()) {
      *it = e;
    } else {
      into.push_back(e);
    }
  }
  std::stable_sort(into.begin(), into.end(), [](const TuneEntry& a, const TuneEntry& b) { return key_less(a.key, b.key); });
}

namespace {

std::mutex g_shipped_mutex;
std::optional<std::vector<std::pair<std::string, std::string>>> g_shipped_replacement;

// The shipped files in force: the embedded ones, or a test's replacement.
std::vector<std::pair<std::string, std::string>> shipped_files() {
  {
    std::lock_guard lock(g_shipped_mutex);
    if (g_shipped_replacement) return *g_shipped_replacement;
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const EmbeddedTuningFile& f : embedded_tuning_files()) files.emplace_back(f.name, f.text);
  return files;
}

}  // namespace

void replace_shipped_files(std::optional<std::vector<std::pair<std::string, std::string>>> files) {
  std::lock_guard lock(g_shipped_mutex);
  g_shipped_replacement = std::move(files);
}

std::vector<TuneEntry> shipped_entries(std::string_view gpu_name) {
  const std::string name = sanitize_gpu_name(gpu_name);
  for (const auto& [file_name, text] : shipped_files()) {
    if (name != file_name) continue;
    ParsedFile parsed = parse_database(text);
    if (parsed.problem != FileProblem::none) {
      warn_once("shipped-" + name, fmt::format("the tuning database shipped for '{}' (data/tuning/{}.json) is "
                                               "unusable: {}; it is ignored",
                                               gpu_name, name, parsed.why));
      return {};
    }
    return std::move(parsed.file.entries);
  }
  return {};
}

}  // namespace lutmm::tuning_detail
