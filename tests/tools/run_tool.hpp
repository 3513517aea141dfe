#pragma once
// Runs the built `lutmm` command (LUTMM_BINARY_DIR/lutmm) as a child process and captures its exit code,
// stdout and stderr, for the CLI tests. Each test gets its own temporary folder (removed afterwards) for
// input files and a private kernel cache.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lutmm::test {

struct ToolRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A temporary folder for one test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lutmm_tool_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// $LUTMM_TOOL overrides the build tree's binary (binaries carried to another machine: scripts/gpu-bundle).
inline std::filesystem::path lutmm_binary() {
  if (const char* tool = std::getenv("LUTMM_TOOL"); tool != nullptr && *tool != '\0') return tool;
  return std::filesystem::path(LUTMM_BINARY_DIR) / "lutmm";
}

// Single-quotes one argument for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `lutmm args...` with LUTMM_CACHE_DIR set to cache_dir; stdout and stderr go to files in `scratch`.
inline ToolRun run_lutmm(const std::vector<std::string>& args, const TempDir& scratch,
                         const std::filesystem::path& cache_dir) {
  const std::filesystem::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  std::string cmd = "LUTMM_CACHE_DIR=" + shell_quote(cache_dir.string()) + " " + shell_quote(lutmm_binary().string());
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string()) + " </dev/null";
  const int status = std::system(cmd.c_str());
  ToolRun r;
  r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Runs `python3 scripts/<name> args...` (a .py script) or `bash scripts/<name> args...` of the source tree; stdout
// goes to ToolRun::out, stderr to ToolRun::err, or into out as well with merge_stderr (files in `scratch`).
// `environment` ("NAME=value ...", shell-quoted by the caller) precedes the command.
inline ToolRun run_project_script(const std::string& name, const std::vector<std::string>& args, const TempDir& scratch,
                                  bool merge_stderr = false, const std::string& environment = "") {
  const std::filesystem::path out = scratch / "script_stdout.txt", err = scratch / "script_stderr.txt";
  const bool python = name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0;
  std::string cmd = environment + (environment.empty() ? "" : " ") + (python ? "python3 " : "bash ") +
                    shell_quote(std::string(LUTMM_SOURCE_DIR) + "/scripts/" + name);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(out.string()) + (merge_stderr ? " 2>&1" : " 2>" + shell_quote(err.string())) + " </dev/null";
  const int status = std::system(cmd.c_str());
  ToolRun r;
  r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  if (!merge_stderr) r.err = slurp(err);
  return r;
}

// The fixture of the scripts' tests: skips where python3 is missing; a scratch folder per test.
class PythonScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  }
  TempDir dir;
};

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace lutmm::test
