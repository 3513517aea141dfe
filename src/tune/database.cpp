// The tuning database: files on disk (one per GPU model) and the in-memory tables gemm() consults.
//
// Files. <cache dir>/tuning/<sanitised gpu>.json, guarded by an advisory lock on <that path>.lock (flock):
// every write is read-merge-write under the exclusive lock, through a temporary file in the same folder
// and a rename, so a reader never sees half a file and two processes storing different keys at once both
// keep theirs. A file that is corrupt or of an older format is renamed aside (<name>.corrupt-<time>) with
// one warning, and a new one is started; a file of a newer format (a later lutmm) is left alone and not
// written (this process keeps its results in memory).
//
// Memory. One table per GPU identity (name, compute capability, SM count), loaded on first use: the
// shipped defaults for that GPU model, then the user's file over them. Only entries of this lutmm version
// and this exact identity are loaded; the others stay in the file for whoever they belong to. Each loaded
// entry is checked (its config parses and is valid for its problem on this GPU); one that is not is
// ignored with a warning. Lookups take a shared lock and do one hash lookup.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "jit/jit.hpp"
#include "lutmm/error.hpp"
#include "lutmm/lutmm.hpp"
#include "tune/internal.hpp"

namespace lutmm {

namespace fs = std::filesystem;

namespace tuning_detail {
namespace {

// ---- files ----

// An exclusive flock on a lock file beside the database, held for one read-merge-write. The lock file is
// never removed: removing it would let two processes lock two different inodes of the same name.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_error(fmt::format("cannot open the lock file '{}': {}", path.string(), std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      throw_error(fmt::format("cannot lock '{}': {}", path.string(), std::strerror(err)));
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

fs::path lock_path(const fs::path& db) { return fs::path(db.string() + ".lock"); }

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw_error(fmt::format("cannot read '{}'", path.string()));
  return ss.str();
}

// Writes `text` to `path` through a temporary file in the same folder and a rename.
void write_atomically(const fs::path& path, const std::string& text) {
  static std::atomic<uint64_t> counter{0};
  const fs::path temp = path.parent_path() / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(),
                                                         counter.fetch_add(1));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      throw_error(fmt::format("cannot write '{}'", temp.string()));
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw_error(fmt::format("cannot rename '{}' to '{}': {}", temp.string(), path.string(), ec.message()));
  }
}

struct UserFile {
  bool writable = true;  // false for a file of a newer format
  DatabaseFile file;
};

// Reads a user database; the caller holds its lock. Sets a corrupt or old file aside (one warning).
UserFile read_user_file_locked(const fs::path& path) {
  UserFile out;
  const std::optional<std::string> text = read_text(path);
  if (!text) return out;
  ParsedFile parsed = parse_database(*text);
  switch (parsed.problem) {
    case FileProblem::none:
      out.file = std::move(parsed.file);
      return out;
    case FileProblem::newer:
      out.writable = false;
      warn_once("newer:" + path.string(),
                fmt::format("tuning database '{}': {}; this lutmm neither uses nor changes it (results stay in "
                            "memory), a newer lutmm will",
                            path.string(), parsed.why));
      return out;
    case FileProblem::corrupt:
    case FileProblem::old: {
      fs::path aside = fs::path(fmt::format("{}.corrupt-{}", path.string(), compact_time_now()));
      std::error_code ec;
      if (fs::exists(aside, ec)) aside = fs::path(fmt::format("{}-{}", aside.string(), ::getpid()));
      fs::rename(path, aside, ec);
      if (ec) {
        throw_error(fmt::format("tuning database '{}' is unusable ({}) and cannot be moved aside: {}", path.string(),
                                parsed.why, ec.message()));
      }
      warn_once("aside:" + path.string(),
                fmt::format("tuning database '{}' is unusable: {}; moved it to '{}' and started a new one",
                            path.string(), parsed.why, aside.string()));
      return out;
    }
  }
  return out;
}

std::string default_note(std::string_view gpu) {
  return fmt::format("lutmm tuning database for {}: one entry per tuned problem key (docs/TUNING.md); written by "
                     "lutmm, safe to edit or delete",
                     gpu);
}

// Merges `add` into the user database of one GPU model under its lock.
void merge_into_user_file(std::string_view gpu, const std::vector<TuneEntry>& add) {
  const fs::path path = tuning_database_path(gpu);
  FileLock lock(lock_path(path));
  UserFile f = read_user_file_locked(path);
  if (!f.writable) {
    throw_error(fmt::format("tuning database '{}' has a newer format; not writing to it (delete it or use the lutmm "
                            "that wrote it)",
                            path.string()));
  }
  merge_entries(f.file.entries, add);
  f.file.format_version = kTuningFormatVersion;
  if (f.file.gpu.empty()) f.file.gpu = std::string(gpu);
  if (f.file.note.empty()) f.file.note = default_note(gpu);
  write_atomically(path, serialize_database(f.file));
}

// ---- memory ----

struct ProblemKey {
  int64_t n, k, m_bucket;
  int32_t group;
  uint8_t bits, dtype;
  bool operator==(const ProblemKey&) const = default;
};

struct ProblemKeyHash {
  size_t operator()(const ProblemKey& key) const noexcept {
    // splitmix64 finaliser over the fields folded together: cheap and well spread.
    uint64_t h = static_cast<uint64_t>(key.n) * 0x9e3779b97f4a7c15ull;
    h ^= static_cast<uint64_t>(key.k) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(key.m_bucket) * 0xbf58476d1ce4e5b9ull;
    h ^= (static_cast<uint64_t>(static_cast<uint32_t>(key.group)) << 16) | (uint64_t{key.bits} << 8) | key.dtype;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return static_cast<size_t>(h);
  }
};

ProblemKey problem_key(int64_t n, int64_t k, int64_t bucket, int group, int bits, DType dtype) {
  return ProblemKey{n, k, bucket, group, static_cast<uint8_t>(bits), static_cast<uint8_t>(dtype)};
}

struct Slot {
  KernelConfig config;
  TuneEntry entry;
};

struct DeviceTable {
  DeviceInfo dev;  // the identity, and the limits loaded entries are checked against
  std::unordered_map<ProblemKey, Slot, ProblemKeyHash> slots;

  bool matches(const DeviceInfo& d) const {
    return d.sm_count == dev.sm_count && d.cc_major == dev.cc_major && d.cc_minor == dev.cc_minor && d.name == dev.name;
  }
  bool owns(const TuneKey& key) const {
    return key.sm_count == dev.sm_count && key.cc_major == dev.cc_major && key.cc_minor == dev.cc_minor &&
           key.gpu == dev.name && key.lutmm_version == version();
  }
};

struct State {
  std::shared_mutex mutex;
  std::vector<std::unique_ptr<DeviceTable>> tables;
  // Every entry this process stored or imported since the last reload_tuning(), applied over a table
  // when it is published: a table loaded from the file while another thread was storing still gets
  // that thread's entry (both happen under `mutex`).
  std::vector<TuneEntry> stored;
};

State& state() {
  static State s;
  return s;
}

// Serialises this process's file operations (flock does across processes; this keeps two threads from
// queueing on the same lock file and from interleaving their warnings).
std::mutex& file_mutex() {
  static std::mutex m;
  return m;
}

DeviceTable* find_table(State& s, const DeviceInfo& dev) {
  for (const auto& t : s.tables)
    if (t->matches(dev)) return t.get();
  return nullptr;
}

// Adds e to t when it belongs there and is usable; `origin` names where it came from for the warning.
void accept(DeviceTable& t, const TuneEntry& e, const std::string& origin) {
  if (!t.owns(e.key)) return;
  auto ignore = [&](const std::string& why) {
    warn_once("entry:" + origin + ":" + e.key.str(),
              fmt::format("tuning database {}: ignoring the entry for {}: {}", origin, e.key.str(), why));
  };
  KernelConfig c;
  try {
    c = KernelConfig::parse(e.config);
    const Problem p = problem_of(e.key, e.m);
    check_problem(p);
    if (const std::string why = config_invalid_reason(c, p, t.dev); !why.empty()) {
      ignore(fmt::format("config {} is not valid for it: {}", e.config, why));
      return;
    }
  } catch (const Error& err) {
    ignore(err.what());
    return;
  }
  t.slots[problem_key(e.key.n, e.key.k, e.key.m_bucket, e.key.group_size, e.key.bits, e.key.dtype)] = Slot{c, e};
}

std::unique_ptr<DeviceTable> load_table(const DeviceInfo& dev) {
  auto t = std::make_unique<DeviceTable>();
  t->dev = dev;
  const std::string name = sanitize_gpu_name(dev.name);
  for (const TuneEntry& e : shipped_entries(dev.name)) accept(*t, e, fmt::format("shipped data/tuning/{}.json", name));
  try {
    std::lock_guard guard(file_mutex());
    const fs::path path = tuning_database_path(dev.name);
    FileLock lock(lock_path(path));
    const UserFile f = read_user_file_locked(path);
    for (const TuneEntry& e : f.file.entries) accept(*t, e, fmt::format("'{}'", path.string()));
  } catch (const Error& e) {
    // An unreadable cache folder must not stop a GEMM: run from the shipped defaults and the heuristic.
    warn_once("user-db-read:" + name, fmt::format("{}; using the shipped tuning defaults only", e.what()));
  }
  return t;
}

// The table of dev, loading it first when needed; the caller then takes the shared lock again.
void ensure_table(const DeviceInfo& dev) {
  State& s = state();
  {
    std::shared_lock lock(s.mutex);
    if (find_table(s, dev)) return;
  }
  // Loaded outside the state lock (file I/O), then published; a thread that lost the race drops its copy.
  std::unique_ptr<DeviceTable> t = load_table(dev);
  std::unique_lock lock(s.mutex);
  if (find_table(s, dev)) return;
  for (const TuneEntry& e : s.stored) accept(*t, e, "(new entry)");
  s.tables.push_back(std::move(t));
}

// Whether an entry measured at M = `measured` serves a call at M = m of its bucket: not where the call needs more
// rows of tiles than the measurement ran and pads over a quarter more of them (a 96-row tile tuned at M = 96 runs two
// rows at M = 128, the second a third full: docs/TUNING.md). Large M, whose rows of tiles grow with it, passes.
bool serves_m(const KernelConfig& c, int64_t measured, int64_t m) {
  if (m <= measured || measured < 1 || c.tile_m < 1) return true;  // (the common case: the tuned M or below)
  const int64_t rows = (m + c.tile_m - 1) / c.tile_m, measured_rows = (measured + c.tile_m - 1) / c.tile_m;
  if (rows <= measured_rows) return true;
  const double padding = static_cast<double>(rows * c.tile_m) / static_cast<double>(m) - 1.0;
  const double measured_padding = static_cast<double>(measured_rows * c.tile_m) / static_cast<double>(measured) - 1.0;
  return padding <= measured_padding + 0.25;
}

}  // namespace

std::optional<KernelConfig> lookup_config(const Problem& p, const DeviceInfo& dev) {
  State& s = state();
  const ProblemKey key = problem_key(p.n, p.k, m_bucket(p.m), p.group_size, p.bits, p.dtype);
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::shared_lock lock(s.mutex);
      if (const DeviceTable* t = find_table(s, dev)) {
        const auto it = t->slots.find(key);
        if (it == t->slots.end() || !serves_m(it->second.config, it->second.entry.m, p.m)) return std::nullopt;
        return it->second.config;
      }
    }
    ensure_table(dev);
  }
  return std::nullopt;  // a reload_tuning() raced with the load: the next call loads again
}

std::vector<std::pair<int, DType>> similar_keys(const Problem& p) {
  // Nearest group first (in factors of two; one scale per row counts as G = K), the key's own activation type
  // before the other at each group; ties between a smaller and a larger group go to the larger (fewer scales,
  // closer to the tuned keys' common G = 128).
  std::vector<int> groups{32, 64, 128, 256};
  if (std::find(groups.begin(), groups.end(), static_cast<int>(p.k)) == groups.end()) groups.push_back(static_cast<int>(p.k));
  auto distance = [&](int g) { return std::abs(std::log2(static_cast<double>(g)) - std::log2(static_cast<double>(p.group_size))); };
  std::stable_sort(groups.begin(), groups.end(), [&](int a, int b) {
    const double da = distance(a), db = distance(b);
    return da != db ? da < db : a > b;
  });
  const DType other = p.dtype == DType::bf16 ? DType::f16 : DType::bf16;
  std::vector<std::pair<int, DType>> keys;
  for (const int g : groups) {
    if (p.k % g != 0) continue;  // (no weight of this K has that group: no entry either)
    if (g != p.group_size) keys.emplace_back(g, p.dtype);
    keys.emplace_back(g, other);
  }
  return keys;
}

std::optional<KernelConfig> lookup_similar_config(const Problem& p, const DeviceInfo& dev) {
  State& s = state();
  ensure_table(dev);
  std::shared_lock lock(s.mutex);
  const DeviceTable* t = find_table(s, dev);
  if (t == nullptr) return std::nullopt;
  const int64_t bucket = m_bucket(p.m);
  for (const auto& [group, dtype] : similar_keys(p)) {
    const auto it = t->slots.find(problem_key(p.n, p.k, bucket, group, p.bits, dtype));
    if (it == t->slots.end() || !serves_m(it->second.config, it->second.entry.m, p.m)) continue;
    if (!config_invalid_reason(it->second.config, p, dev).empty()) continue;  // (e.g. a k tile the group does not fit)
    return it->second.config;
  }
  return std::nullopt;
}

void remember(const TuneEntry& entry) {
  State& s = state();
  std::unique_lock lock(s.mutex);
  s.stored.push_back(entry);
  for (const auto& t : s.tables) accept(*t, entry, "(new entry)");
}

}  // namespace tuning_detail

using namespace tuning_detail;

std::string sanitize_gpu_name(std::string_view gpu_name) {
  std::string out;
  bool gap = false;
  for (const char ch : gpu_name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 && c < 128) {
      if (gap && !out.empty()) out += '_';
      gap = false;
      out += static_cast<char>(std::tolower(c));
    } else {
      gap = true;
    }
  }
  if (out.empty())
    throw_argument_error("gpu_name", "a GPU name with at least one ASCII letter or digit", fmt::format("'{}'", gpu_name));
  return out;
}

std::string tuning_database_path(std::string_view gpu_name) {
  const std::string file = sanitize_gpu_name(gpu_name) + ".json";
  const fs::path dir = fs::path(jit::cache_directory()) / "tuning";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_error(fmt::format("cannot create the tuning database folder '{}': {}", dir.string(), ec.message()));
  return (dir / file).string();
}

std::optional<TuneEntry> find_tuning(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  State& s = state();
  const ProblemKey key = problem_key(p.n, p.k, m_bucket(p.m), p.group_size, p.bits, p.dtype);
  ensure_table(dev);
  std::shared_lock lock(s.mutex);
  const DeviceTable* t = find_table(s, dev);
  if (t == nullptr) return std::nullopt;
  const auto it = t->slots.find(key);
  if (it == t->slots.end()) return std::nullopt;
  return it->second.entry;
}

void store_tuning(const TuneEntry& entry) {
  if (entry.key.gpu.empty()) throw_argument_error("entry.key.gpu", "a GPU name", "an empty string");
  if (entry.key.sm_count < 1) throw_argument_error("entry.key.sm_count", ">= 1", std::to_string(entry.key.sm_count));
  if (entry.key.lutmm_version.empty())
    throw_argument_error("entry.key.lutmm_version", "a version string", "an empty string");
  check_problem(problem_of(entry.key, entry.m));
  if (entry.key.m_bucket != m_bucket(entry.m))
    throw_argument_error("entry.key.m_bucket", fmt::format("{} (the bucket of m = {})", m_bucket(entry.m), entry.m),
                         std::to_string(entry.key.m_bucket));
  KernelConfig::parse(entry.config);  // throws naming 'config'
  if (!(entry.us >= 0) || !(entry.heuristic_us >= 0))
    throw_argument_error("entry.us", "times >= 0 microseconds", fmt::format("{} and {}", entry.us, entry.heuristic_us));
  remember(entry);
  std::lock_guard guard(file_mutex());
  merge_into_user_file(entry.key.gpu, {entry});
}

std::vector<TuneEntry> tuning_entries(std::string_view gpu_name) {
  const std::string name = sanitize_gpu_name(gpu_name);  // validates
  std::vector<TuneEntry> entries = shipped_entries(gpu_name);
  std::lock_guard guard(file_mutex());
  const fs::path path = tuning_database_path(gpu_name);
  FileLock lock(lock_path(path));
  merge_entries(entries, read_user_file_locked(path).file.entries);
  return entries;
}

size_t export_tuning(const std::string& path, std::string_view gpu_name) {
  if (path.empty()) throw_argument_error("path", "a file path", "an empty string");
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw_argument_error("path", "a file path", "the folder '" + path + "'");
  const fs::path parent = target.parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw_argument_error("path", "a path in an existing folder", "'" + path + "' (no folder '" + parent.string() + "')");
  DatabaseFile f;
  f.gpu = std::string(gpu_name);
  f.entries = tuning_entries(gpu_name);
  f.note = fmt::format("exported by lutmm {} on {}: shipped defaults and measured entries for {}; to ship it, "
                       "copy it to data/tuning/{}.json (docs/TUNING.md)",
                       version(), iso_time_now(), gpu_name, sanitize_gpu_name(gpu_name));
  write_atomically(target, serialize_database(f));
  return f.entries.size();
}

size_t import_tuning(const std::string& path) {
  if (path.empty()) throw_argument_error("path", "a tuning database file", "an empty string");
  const std::optional<std::string> text = read_text(path);
  if (!text) throw_argument_error("path", "a readable tuning database file", "'" + path + "' (cannot open it)");
  const ParsedFile parsed = parse_database(*text);
  if (parsed.problem != FileProblem::none)
    throw_error(fmt::format("'{}' is not a tuning database this lutmm can import: {}", path, parsed.why));
  std::map<std::string, std::pair<std::string, std::vector<TuneEntry>>> by_file;  // sanitised -> (gpu, entries)
  for (const TuneEntry& e : parsed.file.entries) {
    try {
      KernelConfig::parse(e.config);  // a config name this lutmm does not know: refuse the whole file
    } catch (const Error& err) {
      throw_error(fmt::format("'{}': the entry for {} names an unknown config: {}", path, e.key.str(), err.what()));
    }
    auto& slot = by_file[sanitize_gpu_name(e.key.gpu)];
    if (slot.first.empty()) slot.first = e.key.gpu;
    slot.second.push_back(e);
  }
  {
    std::lock_guard guard(file_mutex());
    for (const auto& [name, group] : by_file) merge_into_user_file(group.first, group.second);
  }
  for (const TuneEntry& e : parsed.file.entries) remember(e);
  return parsed.file.entries.size();
}

void reload_tuning() {
  State& s = state();
  std::unique_lock lock(s.mutex);
  s.tables.clear();
  s.stored.clear();
}

}  // namespace lutmm
