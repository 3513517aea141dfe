// The problem key (M buckets, what is and is not part of it), the tuning modes and LUTMM_TUNE, config
// sources, GPU name sanitising.
#include <stdio.h>
#include <stdlib.h>

#include <array>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tune_test_util.hpp"

namespace lutmm {
namespace {

using test::described_h200;
using test::make_problem;

void expect_error_naming(const std::function<void()>& f, const std::string& name) {
  try {
    f();
    ADD_FAILURE() << "expected an Error naming '" << name << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
  }
}

TEST(TuneKey, EveryMUpTo16IsItsOwnBucketThenPowersOfTwo) {
  for (int64_t m = 1; m <= 16; ++m) EXPECT_EQ(m_bucket(m), m);
  EXPECT_EQ(m_bucket(17), 32);
  EXPECT_EQ(m_bucket(31), 32);
  EXPECT_EQ(m_bucket(32), 32);
  EXPECT_EQ(m_bucket(33), 64);
  EXPECT_EQ(m_bucket(77), 128);
  EXPECT_EQ(m_bucket(4096), 4096);
  EXPECT_EQ(m_bucket(4097), 8192);
  EXPECT_EQ(m_bucket((1ll << 31) - 1), 1ll << 31);
  expect_error_naming([] { m_bucket(0); }, "m");
  // Every M maps into a bucket no smaller than itself and at most twice it.
  for (int64_t m = 1; m < 5000; ++m) {
    EXPECT_GE(m_bucket(m), m);
    EXPECT_LT(m_bucket(m), 2 * m);
    EXPECT_EQ(m_bucket(m_bucket(m)), m_bucket(m));
  }
}

TEST(TuneKey, BiasAndMWithinABucketDoNotChangeTheKeyEverythingElseDoes) {
  const DeviceInfo dev = described_h200();
  const Problem base = make_problem(40, 4096, 4096);
  const TuneKey key = tune_key(base, dev);
  EXPECT_EQ(key.m_bucket, 64);
  EXPECT_EQ(key.gpu, "NVIDIA H200");
  EXPECT_EQ(key.sm_count, 132);
  EXPECT_EQ(key.lutmm_version, std::string(version()));
  Problem p = base;
  p.has_bias = true;
  EXPECT_EQ(tune_key(p, dev), key);
  p.m = 64;
  EXPECT_EQ(tune_key(p, dev), key);
  p.m = 33;
  EXPECT_EQ(tune_key(p, dev), key);
  p.m = 65;
  EXPECT_NE(tune_key(p, dev), key);
  for (auto change : std::array<void (*)(Problem&), 5>{[](Problem& q) { q.n = 4104; }, [](Problem& q) { q.k = 4224; },
                                                       [](Problem& q) { q.bits = 3; },
                                                       [](Problem& q) { q.group_size = 64; },
                                                       [](Problem& q) { q.dtype = DType::f16; }}) {
    Problem q = base;
    change(q);
    EXPECT_NE(tune_key(q, dev), key) << q.str();
  }
  DeviceInfo other = dev;
  other.sm_count = 114;
  EXPECT_NE(tune_key(base, other), key);
  other = dev;
  other.cc_minor = 1;
  EXPECT_NE(tune_key(base, other), key);
  expect_error_naming([&] { tune_key(make_problem(1, 60, 128), dev); }, "n");
}

TEST(TuneKey, StrNamesTheGpuAndTheProblem) {
  const std::string s = tune_key(make_problem(20, 1280, 320, 4, 64), described_h200()).str();
  for (const char* part : {"NVIDIA H200", "sm_90", "132 SMs", "b4", "g64", "bf16", "N=1280", "K=320", "M<=32"})
    EXPECT_NE(s.find(part), std::string::npos) << part << " in " << s;
  EXPECT_NE(tune_key(make_problem(3, 1280, 320, 4, 64), described_h200()).str().find("M=3"), std::string::npos);
}

TEST(TuneKey, GpuNamesAreSanitisedForFileNames) {
  EXPECT_EQ(sanitize_gpu_name("NVIDIA H200"), "nvidia_h200");
  EXPECT_EQ(sanitize_gpu_name("NVIDIA A100-SXM4-80GB"), "nvidia_a100_sxm4_80gb");
  EXPECT_EQ(sanitize_gpu_name("  NVIDIA GeForce RTX 5090 "), "nvidia_geforce_rtx_5090");
  EXPECT_EQ(sanitize_gpu_name("a/b\\c..d"), "a_b_c_d");
  expect_error_naming([] { sanitize_gpu_name(""); }, "gpu_name");
  expect_error_naming([] { sanitize_gpu_name("#/#"); }, "gpu_name");
}

// Bad tuning options are named before anything else happens (no GPU needed).
TEST(TuneOptionsCheck, BadBudgetsNameTheOption) {
  const Problem p = make_problem(2, 320, 1280);
  struct Bad {
    const char* field;
    double TuneOptions::*member;
    double value;
  };
  for (const auto& [field, member, value] : {Bad{"budget_ms", &TuneOptions::budget_ms, 0.0},
                                             Bad{"small_key_budget_ms", &TuneOptions::small_key_budget_ms, -1.0},
                                             Bad{"small_key_us", &TuneOptions::small_key_us, -5.0}}) {
    TuneOptions o;
    o.*member = value;
    try {
      tune(p, nullptr, o);
      ADD_FAILURE() << field << " = " << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("options.") + field), std::string::npos) << e.what();
    }
  }
}

TEST(TuneMode, ParsesTheThreeModesAndNamesTheArgumentOtherwise) {
  EXPECT_EQ(parse_tune_mode("off"), TuneMode::off);
  EXPECT_EQ(parse_tune_mode("first-use"), TuneMode::first_use);
  EXPECT_EQ(parse_tune_mode("first_use"), TuneMode::first_use);
  EXPECT_EQ(parse_tune_mode("offline"), TuneMode::offline);
  for (TuneMode m : {TuneMode::off, TuneMode::first_use, TuneMode::offline})
    EXPECT_EQ(parse_tune_mode(to_string(m)), m);
  expect_error_naming([] { parse_tune_mode("On"); }, "mode");
  expect_error_naming([] { parse_tune_mode("", "LUTMM_TUNE"); }, "LUTMM_TUNE");
  EXPECT_EQ(to_string(ConfigSource::forced), "forced");
  EXPECT_EQ(to_string(ConfigSource::database), "database");
  EXPECT_EQ(to_string(ConfigSource::tuned), "tuned");
  EXPECT_EQ(to_string(ConfigSource::heuristic), "heuristic");
  EXPECT_EQ(to_string(ConfigSource::similar), "similar");
}

TEST(TuneMode, SetTuneModeOverridesUntilReset) {
  set_tune_mode(TuneMode::first_use);
  EXPECT_EQ(tune_mode(), TuneMode::first_use);
  set_tune_mode(TuneMode::off);
  EXPECT_EQ(tune_mode(), TuneMode::off);
  set_tune_mode(std::nullopt);
  const char* env = std::getenv("LUTMM_TUNE");
  if (env == nullptr || *env == '\0') EXPECT_EQ(tune_mode(), kDefaultTuneMode);
  expect_error_naming([] { set_tune_mode(static_cast<TuneMode>(7)); }, "mode");
}

// The child half of the next test: reports what LUTMM_TUNE gave in a fresh process.
TEST(TuneModeChild, ReportsTheEnvironmentMode) {
  if (std::getenv("LUTMM_TUNE_TEST_CHILD") == nullptr) GTEST_SKIP() << "runs as a child of TuneMode.Environment";
  try {
    std::printf("MODE=%s\n", std::string(to_string(tune_mode())).c_str());
  } catch (const Error& e) {
    std::printf("ERROR=%s\n", e.what());
    set_tune_mode(TuneMode::off);  // the override still works with a bad LUTMM_TUNE
    std::printf("OVERRIDE=%s\n", std::string(to_string(tune_mode())).c_str());
  }
  std::fflush(stdout);
}

std::string run_child(const char* value) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string command = "env -u LUTMM_TUNE LUTMM_TUNE_TEST_CHILD=1 ";
  if (value != nullptr) command += std::string("LUTMM_TUNE='") + value + "' ";
  command += "'" + exe + "' --gtest_filter=TuneModeChild.ReportsTheEnvironmentMode 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  pclose(pipe);
  return out;
}

TEST(TuneMode, LutmmTuneIsReadFromTheEnvironment) {
  EXPECT_NE(run_child(nullptr).find("MODE=" + std::string(to_string(kDefaultTuneMode))), std::string::npos);
  EXPECT_NE(run_child("").find("MODE=" + std::string(to_string(kDefaultTuneMode))), std::string::npos);
  EXPECT_NE(run_child("off").find("MODE=off"), std::string::npos);
  EXPECT_NE(run_child("first-use").find("MODE=first-use"), std::string::npos);
  EXPECT_NE(run_child("first_use").find("MODE=first-use"), std::string::npos);
  EXPECT_NE(run_child("offline").find("MODE=offline"), std::string::npos);
  const std::string bad = run_child("sometimes");
  EXPECT_NE(bad.find("ERROR=lutmm: argument 'LUTMM_TUNE'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("sometimes"), std::string::npos) << bad;
  EXPECT_NE(bad.find("OVERRIDE=off"), std::string::npos) << bad;
}

}  // namespace
}  // namespace lutmm
