// The tuning database without a GPU: round trip through the file, the in-memory choice, versioning,
// corrupt files, unusable entries, shipped defaults under the user's file, export/import, two processes
// (and several threads) storing at once, and the cost of a lookup.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tune_test_util.hpp"

namespace lutmm {
namespace {

namespace fs = std::filesystem;
using test::described_a100;
using test::described_h200;
using test::make_entry;
using test::make_problem;
using test::read_file;
using test::TuningSandbox;
using test::write_file;

// A config other than the heuristic's for M = 16..128 problems with K a multiple of 128 on the H200.
constexpr const char* kOther = "sm80_n128_m16_k128_s4_w4x1_sk1_lutreg";

std::vector<fs::path> set_aside_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".corrupt-") != std::string::npos) out.push_back(e.path());
  return out;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(TuningDatabase, RoundTripThroughAHumanReadableFile) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  const Problem p = make_problem(100, 4096, 4096);
  ASSERT_NE(heuristic_config(p, dev).name(), kOther);
  TuneEntry e = make_entry(p, dev, kOther, 12.5);
  store_tuning(e);

  const fs::path path = tuning_database_path(dev.name);
  EXPECT_EQ(path, sandbox.tuning_dir() / "nvidia_h200.json");
  const std::string text = read_file(path);
  EXPECT_NE(text.find("\n  \"entries\": [\n"), std::string::npos) << text;  // indented, one field a line
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format_version"], kTuningFormatVersion);
  EXPECT_EQ(j["gpu"], "NVIDIA H200");
  ASSERT_EQ(j["entries"].size(), 1u);
  const auto& je = j["entries"][0];
  EXPECT_EQ(je["config"], kOther);
  EXPECT_EQ(je["us"], 12.5);
  EXPECT_EQ(je["heuristic_us"], 15.63);  // rounded to two decimals
  EXPECT_EQ(je["m_bucket"], 128);
  EXPECT_EQ(je["m"], 100);
  EXPECT_EQ(je["compute_capability"], "9.0");
  EXPECT_EQ(je["sm_count"], 132);
  EXPECT_EQ(je["dtype"], "bf16");
  EXPECT_EQ(je["tuned_at"], "2026-11-30T00:00:00Z");

  reload_tuning();  // from the file, not from memory
  const auto found = find_tuning(p, dev);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->key, e.key);
  EXPECT_EQ(found->config, kOther);
  EXPECT_EQ(found->us, 12.5);
  EXPECT_EQ(found->m, 100);

  // Any M of the bucket finds it; the neighbouring buckets do not.
  for (int64_t m : {65, 100, 128}) {
    ConfigSource source = ConfigSource::forced;
    Problem q = p;
    q.m = m;
    q.has_bias = m == 65;
    EXPECT_EQ(choose_config(q, dev, nullptr, &source).name(), kOther) << m;
    EXPECT_EQ(source, ConfigSource::database);
  }
  for (int64_t m : {64, 129}) {
    ConfigSource source = ConfigSource::forced;
    Problem q = p;
    q.m = m;
    EXPECT_EQ(choose_config(q, dev, nullptr, &source), heuristic_config(q, dev)) << m;
    EXPECT_EQ(source, ConfigSource::heuristic);
  }
  const auto all = tuning_entries(dev.name);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].config, kOther);

  // Storing the same key again replaces the entry; another key adds one.
  e.config = "sm80_n64_m32_k128_s4_w4x1_sk1_lutsmem";
  store_tuning(e);
  store_tuning(make_entry(make_problem(100, 8192, 4096), dev, kOther));
  EXPECT_EQ(tuning_entries(dev.name).size(), 2u);
  EXPECT_EQ(choose_config(p, dev, nullptr, nullptr).name(), e.config);
  reload_tuning();
  EXPECT_EQ(choose_config(p, dev, nullptr, nullptr).name(), e.config);
}

// An entry serves the M of its bucket that its tile rows fit: a tile of 96 x rows tuned at M = 96 is not used at
// M = 97..128 (two rows of tiles, the second at most a third full), neither as the key's own entry nor as a similar
// key's; at large M the rows grow with M and the padding stays small.
TEST(TuningDatabase, AnEntryServesTheMsOfItsBucketThatItsTileRowsFit) {
  TuningSandbox sandbox(TuneMode::offline);
  const DeviceInfo dev = described_h200();
  const char* rows96 = "sm90_n128_m96_k64_s6_w8x1_sk1_lutsmem256";
  store_tuning(make_entry(make_problem(96, 4096, 4096), dev, rows96));
  auto choice = [&](const Problem& q) {
    ConfigSource source = ConfigSource::forced;
    const std::string name = choose_config(q, dev, nullptr, &source).name();
    return std::pair{name, source};
  };
  for (int64_t m : {65, 80, 96})
    EXPECT_EQ(choice(make_problem(m, 4096, 4096)), std::pair(std::string(rows96), ConfigSource::database)) << m;
  for (int64_t m : {97, 110, 128}) {
    const Problem q = make_problem(m, 4096, 4096);
    EXPECT_EQ(choice(q), std::pair(heuristic_config(q, dev).name(), ConfigSource::heuristic)) << m;
    const Problem other_group = make_problem(m, 4096, 4096, 4, 64);  // (the similar-key path)
    EXPECT_EQ(choice(other_group), std::pair(heuristic_config(other_group, dev).name(), ConfigSource::heuristic)) << m;
  }
  EXPECT_EQ(choice(make_problem(90, 4096, 4096, 4, 64)), std::pair(std::string(rows96), ConfigSource::similar));
  // 80-row tiles tuned at M = 77 still serve M = 128 (two full rows: no more padding than a quarter), not M = 100.
  const char* rows80 = "sm90_n128_m80_k64_s6_w8x1_sk1_lutsmem";
  store_tuning(make_entry(make_problem(77, 1280, 2048), dev, rows80));
  EXPECT_EQ(choice(make_problem(128, 1280, 2048)).first, rows80);
  EXPECT_NE(choice(make_problem(100, 1280, 2048)).first, rows80);
  // Large M: 192-row tiles tuned at M = 4608 serve the bucket up to 8192.
  const char* rows192 = "sm90_n128_m192_k64_s4_w8x1_sk1_lutsmem256";
  store_tuning(make_entry(make_problem(4608, 640, 2560), dev, rows192));
  for (int64_t m : {4097, 5000, 8192})
    EXPECT_EQ(choice(make_problem(m, 640, 2560)), std::pair(std::string(rows192), ConfigSource::database)) << m;
}

TEST(TuningDatabase, ModesDecideWhetherItIsRead) {
  TuningSandbox sandbox(TuneMode::offline);
  const DeviceInfo dev = described_h200();
  const Problem p = make_problem(16, 4096, 4096);
  store_tuning(make_entry(p, dev, kOther));
  ConfigSource source = ConfigSource::forced;
  EXPECT_EQ(choose_config(p, dev, nullptr, &source).name(), kOther);
  EXPECT_EQ(source, ConfigSource::database);

  set_tune_mode(TuneMode::off);
  EXPECT_EQ(choose_config(p, dev, nullptr, &source), heuristic_config(p, dev));
  EXPECT_EQ(source, ConfigSource::heuristic);

  // First use on a described device (not a GPU of this machine) cannot measure: database, else heuristic,
  // and nothing is written.
  set_tune_mode(TuneMode::first_use);
  EXPECT_EQ(choose_config(p, dev, nullptr, &source).name(), kOther);
  EXPECT_EQ(source, ConfigSource::database);
  const Problem untuned = make_problem(8, 4096, 4096);
  EXPECT_EQ(choose_config(untuned, dev, nullptr, &source), heuristic_config(untuned, dev));
  EXPECT_EQ(source, ConfigSource::heuristic);
  EXPECT_EQ(tuning_entries(dev.name).size(), 1u);
  EXPECT_THROW(choose_config(make_problem(0, 4096, 4096), dev, nullptr, &source), Error);
}

TEST(TuningDatabase, AKeyWithoutAnEntryTakesTheNearestSimilarKeysChoice) {
  TuningSandbox sandbox(TuneMode::offline);
  const DeviceInfo dev = described_h200();
  const Problem stored = make_problem(100, 4096, 4096);  // b4 g128 bf16
  ASSERT_NE(heuristic_config(stored, dev).name(), kOther);
  store_tuning(make_entry(stored, dev, kOther));
  auto choice = [&](const Problem& q) {
    ConfigSource source = ConfigSource::forced;
    const std::string name = choose_config(q, dev, nullptr, &source).name();
    return std::pair{name, source};
  };
  // The other activation type, other groups (nearest first), any M of the bucket: the stored choice.
  for (const Problem& q : {make_problem(100, 4096, 4096, 4, 128, DType::f16), make_problem(77, 4096, 4096, 4, 64),
                           make_problem(128, 4096, 4096, 4, 32, DType::f16), make_problem(100, 4096, 4096, 4, 4096)}) {
    ASSERT_TRUE(config_invalid_reason(KernelConfig::parse(kOther), q, dev).empty()) << q.str();
    EXPECT_EQ(choice(q), std::pair(std::string(kOther), ConfigSource::similar)) << q.str();
  }
  // Another bit width, M bucket or shape: nothing similar, the heuristic.
  for (const Problem& q : {make_problem(100, 4096, 4096, 3), make_problem(64, 4096, 4096, 4, 64, DType::f16),
                           make_problem(100, 4096, 8192, 4, 64)})
    EXPECT_EQ(choice(q), std::pair(heuristic_config(q, dev).name(), ConfigSource::heuristic)) << q.str();
  // A key's own entry comes before a similar one; the nearest group before a farther one, the key's own activation
  // type before the other at the same group.
  const Problem g64 = make_problem(100, 4096, 4096, 4, 64);
  const char* g64_config = "sm80_n64_m32_k128_s4_w4x1_sk1_lutsmem";
  store_tuning(make_entry(g64, dev, g64_config));
  EXPECT_EQ(choice(g64), std::pair(std::string(g64_config), ConfigSource::database));
  EXPECT_EQ(choice(make_problem(100, 4096, 4096, 4, 32)).first, g64_config);
  EXPECT_EQ(choice(make_problem(100, 4096, 4096, 4, 256)).first, kOther);
  const Problem fp16_g32 = make_problem(100, 4096, 4096, 4, 32, DType::f16);
  const char* fp16_config = "sm80_n128_m64_k64_s4_w4x1_sk1_lutsmem";
  store_tuning(make_entry(make_problem(100, 4096, 4096, 4, 64, DType::f16), dev, fp16_config));
  EXPECT_EQ(choice(fp16_g32).first, fp16_config);
  EXPECT_EQ(choice(make_problem(100, 4096, 4096, 4, 32)).first, g64_config);
  EXPECT_EQ((tuning_detail::similar_keys(fp16_g32)), (std::vector<std::pair<int, DType>>{
      {32, DType::bf16}, {64, DType::f16}, {64, DType::bf16}, {128, DType::f16}, {128, DType::bf16},
      {256, DType::f16}, {256, DType::bf16}, {4096, DType::f16}, {4096, DType::bf16}}));

  // Tuning off: the heuristic; first use on a described device (it cannot measure): the similar choice.
  set_tune_mode(TuneMode::off);
  const Problem q = make_problem(100, 4096, 4096, 4, 128, DType::f16);
  EXPECT_EQ(choice(q), std::pair(heuristic_config(q, dev).name(), ConfigSource::heuristic));
  set_tune_mode(TuneMode::first_use);
  EXPECT_EQ(choice(q), std::pair(std::string(kOther), ConfigSource::similar));
}

TEST(TuningDatabase, AnOlderFormatIsSetAsideWithOneWarning) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  const fs::path path = tuning_database_path(dev.name);
  write_file(path, R"({"format_version": 0, "gpu": "NVIDIA H200", "entries": []})");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(find_tuning(make_problem(16, 4096, 4096), dev).has_value());
  reload_tuning();
  EXPECT_FALSE(find_tuning(make_problem(16, 4096, 4096), dev).has_value());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "moved it to"), 1u) << err;
  EXPECT_NE(err.find("format_version 0"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(path));
  const auto aside = set_aside_files(sandbox.tuning_dir());
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_NE(read_file(aside[0]).find("\"format_version\": 0"), std::string::npos);
  // A new database starts where the old one was.
  store_tuning(make_entry(make_problem(16, 4096, 4096), dev, kOther));
  EXPECT_EQ(nlohmann::json::parse(read_file(path))["format_version"], kTuningFormatVersion);
}

TEST(TuningDatabase, ACorruptFileIsSetAsideNeverACrash) {
  const std::vector<std::string> bad = {
      "",
      "{\"format_version\": 1, \"entries\": [",
      "[1, 2, 3]",
      "{\"format_version\": \"one\", \"entries\": []}",
      "{\"format_version\": 1, \"entries\": \"none\"}",
      "{\"format_version\": 1, \"entries\": [{\"gpu\": \"NVIDIA H200\"}]}",
      "{\"format_version\": 1, \"entries\": [7]}",
      std::string("\x00\xff\xfe garbage", 11),
  };
  for (const std::string& text : bad) {
    TuningSandbox sandbox;
    const DeviceInfo dev = described_h200();
    const Problem p = make_problem(16, 4096, 4096);
    const fs::path path = tuning_database_path(dev.name);
    write_file(path, text);
    testing::internal::CaptureStderr();
    ConfigSource source = ConfigSource::forced;
    EXPECT_EQ(choose_config(p, dev, nullptr, &source), heuristic_config(p, dev));
    EXPECT_EQ(source, ConfigSource::heuristic);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(err, "lutmm: warning: tuning database"), 1u) << "for " << text << ": " << err;
    EXPECT_NE(err.find("moved it to"), std::string::npos) << err;
    EXPECT_EQ(set_aside_files(sandbox.tuning_dir()).size(), 1u) << text;
    store_tuning(make_entry(p, dev, kOther));
    reload_tuning();
    EXPECT_EQ(choose_config(p, dev, nullptr, nullptr).name(), kOther);
  }
}

TEST(TuningDatabase, ANewerFormatIsNeitherUsedNorOverwritten) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  const Problem p = make_problem(16, 4096, 4096);
  const fs::path path = tuning_database_path(dev.name);
  const std::string newer = R"({"format_version": 2, "gpu": "NVIDIA H200", "entries": [{"anything": 1}]})";
  write_file(path, newer);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(find_tuning(p, dev).has_value());
  try {
    store_tuning(make_entry(p, dev, kOther));
    ADD_FAILURE() << "storing into a newer-format database must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer format"), std::string::npos) << e.what();
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "newer than this lutmm"), 1u) << err;
  EXPECT_EQ(read_file(path), newer);
  EXPECT_TRUE(set_aside_files(sandbox.tuning_dir()).empty());
  // The result is still used by this process.
  EXPECT_EQ(choose_config(p, dev, nullptr, nullptr).name(), kOther);
}

TEST(TuningDatabase, UnusableEntriesAreIgnoredWithAWarningTheRestIsUsed) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  const Problem good = make_problem(16, 4096, 4096);
  const Problem unknown = make_problem(32, 4096, 4096);
  const Problem odd_k = make_problem(16, 1280, 320, 4, 64);  // K padded to 384: no 256-wide k tiles
  tuning_detail::DatabaseFile f;
  f.gpu = dev.name;
  f.entries = {make_entry(good, dev, kOther), make_entry(unknown, dev, "sm80_n64_m16_k128_s4_w4x1_sk2_lutfoo"),
               make_entry(odd_k, dev, "sm80_n64_m16_k256_s3_w4x1_sk1_lutsmem")};
  write_file(tuning_database_path(dev.name), tuning_detail::serialize_database(f));
  testing::internal::CaptureStderr();
  EXPECT_EQ(choose_config(good, dev, nullptr, nullptr).name(), kOther);
  ConfigSource source = ConfigSource::forced;
  EXPECT_EQ(choose_config(unknown, dev, nullptr, &source), heuristic_config(unknown, dev));
  EXPECT_EQ(source, ConfigSource::heuristic);
  EXPECT_EQ(choose_config(odd_k, dev, nullptr, &source), heuristic_config(odd_k, dev));
  EXPECT_EQ(source, ConfigSource::heuristic);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "ignoring the entry"), 2u) << err;
  EXPECT_NE(err.find("lutfoo"), std::string::npos) << err;
  EXPECT_NE(err.find("tile_k 256"), std::string::npos) << err;
  // Ignored, not deleted: the file keeps them.
  store_tuning(make_entry(make_problem(64, 4096, 4096), dev, kOther));
  EXPECT_EQ(nlohmann::json::parse(read_file(tuning_database_path(dev.name)))["entries"].size(), 4u);
}

TEST(TuningDatabase, EntriesOfOtherVersionsAndGpusStayButAreNotUsed) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  const Problem p = make_problem(16, 4096, 4096);
  TuneEntry old_version = make_entry(p, dev, kOther);
  old_version.key.lutmm_version = "0.0.1";
  DeviceInfo nvl = dev;
  nvl.sm_count = 114;
  const TuneEntry other_sms = make_entry(p, nvl, kOther);
  store_tuning(old_version);
  store_tuning(other_sms);
  reload_tuning();
  ConfigSource source = ConfigSource::forced;
  EXPECT_EQ(choose_config(p, dev, nullptr, &source), heuristic_config(p, dev));
  EXPECT_EQ(source, ConfigSource::heuristic);
  EXPECT_EQ(choose_config(p, nvl, nullptr, &source).name(), kOther);
  EXPECT_EQ(source, ConfigSource::database);
  store_tuning(make_entry(p, dev, kOther));
  EXPECT_EQ(tuning_entries(dev.name).size(), 3u);
  EXPECT_EQ(choose_config(p, dev, nullptr, &source).name(), kOther);
}

TEST(TuningDatabase, ShippedDefaultsLieUnderTheUserDatabase) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  const Problem a = make_problem(16, 4096, 4096), b = make_problem(8, 4096, 4096);
  tuning_detail::DatabaseFile shipped;
  shipped.gpu = dev.name;
  shipped.entries = {make_entry(a, dev, kOther), make_entry(b, dev, "sm80_n64_m8_k128_s4_w4x1_sk4_lutreg")};
  tuning_detail::replace_shipped_files(
      std::vector<std::pair<std::string, std::string>>{{"nvidia_h200", tuning_detail::serialize_database(shipped)}});
  reload_tuning();
  ConfigSource source = ConfigSource::forced;
  EXPECT_EQ(choose_config(a, dev, nullptr, &source).name(), kOther);
  EXPECT_EQ(source, ConfigSource::database);
  EXPECT_EQ(choose_config(b, dev, nullptr, &source).name(), "sm80_n64_m8_k128_s4_w4x1_sk4_lutreg");
  // The user's entry wins over the shipped one, in memory and after a reload.
  const std::string mine = "sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem";
  store_tuning(make_entry(a, dev, mine));
  EXPECT_EQ(choose_config(a, dev, nullptr, nullptr).name(), mine);
  reload_tuning();
  EXPECT_EQ(choose_config(a, dev, nullptr, nullptr).name(), mine);
  EXPECT_EQ(choose_config(b, dev, nullptr, nullptr).name(), "sm80_n64_m8_k128_s4_w4x1_sk4_lutreg");
  const auto all = tuning_entries(dev.name);
  ASSERT_EQ(all.size(), 2u);
  for (const TuneEntry& e : all) EXPECT_EQ(e.config, e.key.m_bucket == 16 ? mine : shipped.entries[1].config);
  // Mode off ignores the shipped database too.
  set_tune_mode(TuneMode::off);
  EXPECT_EQ(choose_config(b, dev, nullptr, &source), heuristic_config(b, dev));
  // Only the file named after the GPU applies.
  set_tune_mode(TuneMode::offline);
  EXPECT_EQ(choose_config(b, described_a100(), nullptr, &source), heuristic_config(b, described_a100()));
}

TEST(TuningDatabase, TheShippedFilesParseAndNameValidConfigs) {
  ASSERT_FALSE(tuning_detail::embedded_tuning_files().empty()) << "data/tuning/*.json is embedded";
  bool h200 = false, h100 = false;
  for (const auto& f : tuning_detail::embedded_tuning_files()) {
    const tuning_detail::ParsedFile parsed = tuning_detail::parse_database(f.text);
    ASSERT_EQ(parsed.problem, tuning_detail::FileProblem::none) << f.name << ": " << parsed.why;
    EXPECT_EQ(sanitize_gpu_name(parsed.file.gpu), f.name);
    EXPECT_FALSE(parsed.file.note.empty()) << f.name;
    for (const TuneEntry& e : parsed.file.entries) {
      EXPECT_EQ(sanitize_gpu_name(e.key.gpu), f.name);
      const KernelConfig c = KernelConfig::parse(e.config);
      // (the H100 SXM has the H200's 132 SMs and shared memory: the same described GPU checks both files)
      const std::string name = f.name;
      if ((name == "nvidia_h200" || name == "nvidia_h100_80gb_hbm3") && e.key.sm_count == 132) {
        EXPECT_EQ(config_invalid_reason(c, tuning_detail::problem_of(e.key, e.m), described_h200()), "") << e.config;
      }
    }
    h200 |= std::string(f.name) == "nvidia_h200";
    h100 |= std::string(f.name) == "nvidia_h100_80gb_hbm3";
  }
  EXPECT_TRUE(h200) << "data/tuning/nvidia_h200.json ships";
  EXPECT_TRUE(h100) << "data/tuning/nvidia_h100_80gb_hbm3.json ships";
}

TEST(TuningDatabase, ExportAndImportCarryEntriesBetweenMachines) {
  const DeviceInfo h = described_h200(), a = described_a100();
  const fs::path exported = fs::temp_directory_path() / fmt::format("lutmm_tune_export_{}.json", ::getpid());
  std::vector<TuneEntry> stored;
  {
    TuningSandbox sandbox;
    for (int64_t n : {1024, 2048, 4096}) {
      stored.push_back(make_entry(make_problem(16, n, 4096), h, kOther, static_cast<double>(n) / 100));
      store_tuning(stored.back());
    }
    store_tuning(make_entry(make_problem(16, 4096, 4096), a, kOther));  // another GPU: not exported with the H200
    EXPECT_EQ(export_tuning(exported.string(), h.name), 3u);
  }
  const auto j = nlohmann::json::parse(read_file(exported));
  EXPECT_EQ(j["gpu"], "NVIDIA H200");
  EXPECT_EQ(j["entries"].size(), 3u);
  EXPECT_NE(j["note"].get<std::string>().find("data/tuning/nvidia_h200.json"), std::string::npos);
  {
    TuningSandbox sandbox;
    EXPECT_FALSE(find_tuning(make_problem(16, 1024, 4096), h).has_value());
    EXPECT_EQ(import_tuning(exported.string()), 3u);
    for (const TuneEntry& e : stored) {
      const auto found = find_tuning(make_problem(16, e.key.n, 4096), h);
      ASSERT_TRUE(found.has_value()) << e.key.str();
      EXPECT_EQ(found->us, e.us);
    }
    reload_tuning();
    EXPECT_EQ(tuning_entries(h.name).size(), 3u);
    EXPECT_TRUE(tuning_entries(a.name).empty());
  }
  {
    TuningSandbox sandbox;
    const fs::path bad = sandbox.dir() / "bad.json";
    write_file(bad, "{\"format_version\": 1, \"entries\": [{}]}");
    try {
      import_tuning(bad.string());
      ADD_FAILURE() << "a broken file must not import";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    }
    tuning_detail::DatabaseFile f;
    f.gpu = h.name;
    f.entries = {make_entry(make_problem(16, 4096, 4096), h, "sm80_n64_m16_k128_s4_w4x1_sk2_lutfoo")};
    write_file(bad, tuning_detail::serialize_database(f));
    EXPECT_THROW(import_tuning(bad.string()), Error);
    EXPECT_TRUE(tuning_entries(h.name).empty()) << "nothing half-imported";
    EXPECT_THROW(import_tuning((sandbox.dir() / "missing.json").string()), Error);
    EXPECT_THROW(export_tuning((sandbox.dir() / "no" / "such" / "dir.json").string(), h.name), Error);
    EXPECT_THROW(export_tuning(sandbox.dir().string(), h.name), Error);
  }
  std::error_code ec;
  fs::remove(exported, ec);
}

TEST(TuningDatabase, StoreRejectsABadEntryBeforeWritingAnything) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  TuneEntry e = make_entry(make_problem(40, 4096, 4096), dev, kOther);
  auto expect_refused = [&](const TuneEntry& bad, const std::string& name) {
    try {
      store_tuning(bad);
      ADD_FAILURE() << "expected an Error naming " << name;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("'" + name + "'"), std::string::npos) << err.what();
    }
  };
  TuneEntry bad = e;
  bad.key.m_bucket = 32;
  expect_refused(bad, "entry.key.m_bucket");
  bad = e;
  bad.config = "sm80_n64";
  expect_refused(bad, "config");
  bad = e;
  bad.key.gpu.clear();
  expect_refused(bad, "entry.key.gpu");
  bad = e;
  bad.key.n = 60;
  expect_refused(bad, "n");
  bad = e;
  bad.us = -1;
  expect_refused(bad, "entry.us");
  EXPECT_FALSE(fs::exists(tuning_database_path(dev.name)));
  EXPECT_FALSE(find_tuning(make_problem(40, 4096, 4096), dev).has_value());
}

// N values of the entries each writer stores: writer w takes every `writers`-th one.
std::vector<int64_t> writer_ns(int writer, int writers, int per_writer) {
  std::vector<int64_t> ns;
  for (int i = 0; i < per_writer; ++i) ns.push_back(1024 + 16 * static_cast<int64_t>(i * writers + writer));
  return ns;
}

TEST(TuningDatabase, TwoProcessesStoringAtOnceLoseNothing) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  constexpr int kPerWriter = 40;
  tuning_database_path(dev.name);  // create the folder before forking
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  const int me = child == 0 ? 1 : 0;
  bool ok = true;
  for (int64_t n : writer_ns(me, 2, kPerWriter)) {
    try {
      store_tuning(make_entry(make_problem(16, n, 4096), dev, kOther));
    } catch (...) {
      ok = false;
    }
  }
  if (child == 0) _exit(ok ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed to store";
  EXPECT_TRUE(ok);
  const auto parsed = tuning_detail::parse_database(read_file(tuning_database_path(dev.name)));
  ASSERT_EQ(parsed.problem, tuning_detail::FileProblem::none) << parsed.why;
  std::set<int64_t> ns;
  for (const TuneEntry& e : parsed.file.entries) ns.insert(e.key.n);
  EXPECT_EQ(ns.size(), 2u * kPerWriter);
  for (int w = 0; w < 2; ++w)
    for (int64_t n : writer_ns(w, 2, kPerWriter)) EXPECT_EQ(ns.count(n), 1u) << "writer " << w << " N " << n;
  EXPECT_TRUE(set_aside_files(sandbox.tuning_dir()).empty());
}

TEST(TuningDatabase, SeveralThreadsStoringAndLookingUpAtOnce) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  constexpr int kThreads = 4, kPerThread = 15;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t n : writer_ns(t, kThreads, kPerThread)) {
        try {
          const Problem p = make_problem(16, n, 4096);
          store_tuning(make_entry(p, dev, kOther));
          if (choose_config(p, dev, nullptr, nullptr).name() != kOther) ++failures;
        } catch (...) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  reload_tuning();
  EXPECT_EQ(tuning_entries(dev.name).size(), static_cast<size_t>(kThreads * kPerThread));
  for (int t = 0; t < kThreads; ++t)
    for (int64_t n : writer_ns(t, kThreads, kPerThread))
      EXPECT_EQ(choose_config(make_problem(16, n, 4096), dev, nullptr, nullptr).name(), kOther);
}

// gemm() consults the database on every call; its whole host budget is about 3 us. Reported, not asserted
// (a loaded CI machine says nothing about the code).
TEST(TuningDatabase, LookupCostSanity) {
  TuningSandbox sandbox;
  const DeviceInfo dev = described_h200();
  for (int64_t n = 1024; n < 1024 + 16 * 200; n += 16) store_tuning(make_entry(make_problem(16, n, 4096), dev, kOther));
  const Problem hit = make_problem(16, 1024 + 16 * 77, 4096);
  const Problem miss = make_problem(16, 8192, 8192);
  constexpr int kCalls = 200000;
  auto time_ns = [&](const Problem& p, ConfigSource expected) {
    ConfigSource source = ConfigSource::forced;
    KernelConfig last;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) last = choose_config(p, dev, nullptr, &source);
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_EQ(source, expected);
    EXPECT_TRUE(config_invalid_reason(last, p, dev).empty());
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls;
  };
  const double hit_ns = time_ns(hit, ConfigSource::database);
  const double miss_ns = time_ns(miss, ConfigSource::heuristic);
  set_tune_mode(TuneMode::off);
  const double off_ns = time_ns(hit, ConfigSource::heuristic);
  std::printf("choose_config: database hit %.0f ns, miss (heuristic) %.0f ns, mode off %.0f ns per call\n", hit_ns,
              miss_ns, off_ns);
}

}  // namespace
}  // namespace lutmm
