#pragma once
// Shared by the tuning tests: a private cache folder per test (LUTMM_CACHE_DIR), no shipped defaults
// unless a test installs some, a fixed tuning mode, described GPUs, and entries to store.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "lutmm/lutmm.hpp"
#include "described_gpus.hpp"
#include "tune/internal.hpp"

namespace lutmm::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// For the lifetime of one test: LUTMM_CACHE_DIR is a new temporary folder, the shipped databases are
// replaced by none, the tuning mode is `mode`, and the in-memory tables start empty. Restores all of it.
class TuningSandbox {
 public:
  explicit TuningSandbox(TuneMode mode = TuneMode::offline) {
    std::string pattern = (std::filesystem::temp_directory_path() / "lutmm_tune_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    if (const char* old = std::getenv("LUTMM_CACHE_DIR")) old_cache_ = old;
    setenv("LUTMM_CACHE_DIR", dir_.c_str(), 1);
    tuning_detail::replace_shipped_files(std::vector<std::pair<std::string, std::string>>{});
    set_tune_mode(mode);
    reload_tuning();
  }
  ~TuningSandbox() {
    set_tune_mode(std::nullopt);
    tuning_detail::replace_shipped_files(std::nullopt);
    if (old_cache_) {
      setenv("LUTMM_CACHE_DIR", old_cache_->c_str(), 1);
    } else {
      unsetenv("LUTMM_CACHE_DIR");
    }
    reload_tuning();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TuningSandbox(const TuningSandbox&) = delete;
  TuningSandbox& operator=(const TuningSandbox&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path tuning_dir() const { return dir_ / "tuning"; }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> old_cache_;
};

inline Problem make_problem(int64_t m, int64_t n, int64_t k, int bits = 4, int group = 128,
                            DType dtype = DType::bf16) {
  return Problem::of(m, n, k, bits, group, dtype);
}

// An entry for p on dev naming `config` (which the caller picks valid or not, as the test needs).
inline TuneEntry make_entry(const Problem& p, const DeviceInfo& dev, const std::string& config, double us = 10.0) {
  TuneEntry e;
  e.key = tune_key(p, dev);
  e.m = p.m;
  e.config = config;
  e.us = us;
  e.heuristic_config = heuristic_config(p, dev).name();
  e.heuristic_us = us * 1.25;
  e.tuned_at = "2026-11-30T00:00:00Z";
  return e;
}

}  // namespace lutmm::test
