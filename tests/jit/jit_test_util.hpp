#pragma once
// Helpers shared by the JIT tests: tiny kernels, a scratch cache directory, environment overrides.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "jit/jit.hpp"

namespace lutmm::jit::testing {

// out[i] = in[i] * s. Needs nothing but built-ins: no header, no toolkit.
inline std::string scale_source(const std::string& name, const std::string& salt = "") {
  return "// " + salt + "\nextern \"C\" __global__ void " + name +
         "(float* out, const float* in, unsigned int n, float s) {\n"
         "  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) out[i] = in[i] * s;\n"
         "}\n";
}

inline CompileRequest scale_request(int arch = 80, const std::string& salt = "") {
  CompileRequest r;
  r.kernel_name = "lutmm_test_scale";
  r.source = scale_source(r.kernel_name, salt);
  r.arch = arch;
  return r;
}

// Sets (or, with nullopt, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh directory under the system temp folder, removed with everything in it at the end of the scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lutmm-jit-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The cubins under dir (a kernel cache folder): what has been compiled into it.
inline int64_t count_cubins(const std::filesystem::path& dir) {
  int64_t n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    n += e.is_regular_file() && e.path().extension() == ".cubin";
  return n;
}

// Points the disk cache at a fresh folder and empties the memory cache, for one test.
class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_memory_cache(); }
  void TearDown() override { clear_memory_cache(); }
  TempDir dir_;
  ScopedEnv env_{"LUTMM_CACHE_DIR", dir_.path().string()};
};

}  // namespace lutmm::jit::testing
