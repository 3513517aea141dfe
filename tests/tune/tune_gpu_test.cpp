// Tuning on the GPU: first use tunes, stores and then reuses a choice; a GEMM captured into a CUDA graph
// never tunes and still computes the right answer; the largest LLM shape tunes in under a second over
// warm JIT caches; small keys get their own budget; threads meeting an untuned key tune it once. Skips
// without a GPU.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "jit/jit_test_util.hpp"  // (count_cubins)
#include "tune/timing.hpp"
#include "tune_test_util.hpp"
#include "verify.hpp"  // bench/verify.hpp: random inputs, output comparison, tolerances
#include "leftover_cuda_error.hpp"  // fails the test that leaves a CUDA error behind

namespace lutmm {
namespace {

using test::make_problem;
using test::read_file;
using test::TuningSandbox;

#define REQUIRE_GPU()                                                   \
  do {                                                                  \
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";          \
  } while (0)

void cuda_ok(cudaError_t e, const char* what) { ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e); }

// One problem's inputs on the GPU, and its float64 reference.
struct GpuCase {
  Problem p;
  bench::VerifyInputs in;
  std::optional<DeviceWeight> weight;
  void* x = nullptr;
  std::vector<double> reference;

  explicit GpuCase(const Problem& problem, uint64_t seed) : p(problem) {
    bench::VerifyCase c;
    c.problem = p;
    c.seed = seed;
    in = bench::make_verify_inputs(c);
    weight = DeviceWeight::upload(in.weight);
    cudaMalloc(&x, in.x.size() * 2);
    cudaMemcpy(x, in.x.data(), in.x.size() * 2, cudaMemcpyHostToDevice);
    reference.resize(static_cast<size_t>(p.m * p.n));
    reference_gemm_f64(in.x.data(), p.m, in.weight, nullptr, reference.data());
  }
  ~GpuCase() { cudaFree(x); }

  void* new_output() const {
    void* out = nullptr;
    cudaMalloc(&out, static_cast<size_t>(p.m * p.n) * 2);
    cudaMemset(out, 0xff, static_cast<size_t>(p.m * p.n) * 2);  // NaN: an unwritten output shows
    return out;
  }
  std::vector<uint16_t> download(const void* out) const {
    std::vector<uint16_t> host(static_cast<size_t>(p.m * p.n));
    cudaMemcpy(host.data(), out, host.size() * 2, cudaMemcpyDeviceToHost);
    return host;
  }
  void expect_right(const std::vector<uint16_t>& out, const std::string& what) const {
    const bench::OutputComparison cmp = bench::compare_output(out.data(), reference.data(), p.m * p.n, p.dtype);
    EXPECT_EQ(cmp.unwritten, 0) << what;
    EXPECT_LE(cmp.rel_fro_error, bench::verify_tolerance(p.dtype)) << what;
  }
};

TEST(TuneGpu, FirstUseTunesStoresAndThenUsesTheChoice) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::first_use);
  const DeviceInfo& dev = current_device_info();
  const Problem p = make_problem(24, 1536, 640);
  ASSERT_FALSE(find_tuning(p, dev).has_value());

  // The first GEMM with this key tunes it, then runs the choice; the answer is right.
  GpuCase c(p, 11);
  void* out = c.new_output();
  gemm(c.x, p.m, c.weight->view(), nullptr, out);
  cuda_ok(cudaDeviceSynchronize(), "gemm after first-use tuning");
  c.expect_right(c.download(out), "the GEMM that tuned");
  cudaFree(out);

  const auto stored = find_tuning(p, dev);
  ASSERT_TRUE(stored.has_value()) << "first use stores the choice";
  EXPECT_EQ(stored->m, 24);
  EXPECT_EQ(stored->key.m_bucket, 32);
  EXPECT_GT(stored->us, 0);
  EXPECT_GT(stored->heuristic_us, 0);
  EXPECT_LE(stored->us, stored->heuristic_us) << "the heuristic's choice is among the timed ones";
  EXPECT_EQ(config_invalid_reason(KernelConfig::parse(stored->config), p, dev), "");
  const auto file = nlohmann::json::parse(read_file(tuning_database_path(dev.name)));
  ASSERT_EQ(file["entries"].size(), 1u);
  EXPECT_EQ(file["entries"][0]["config"], stored->config);

  // Later calls of the bucket use it: a database hit, in this process and after re-reading the file.
  Problem same_bucket = p;
  same_bucket.m = 30;
  ConfigChoice choice = chosen_config_with_source(same_bucket);
  EXPECT_EQ(choice.source, ConfigSource::database);
  EXPECT_EQ(choice.config.name(), stored->config);
  reload_tuning();
  choice = chosen_config_with_source(p);
  EXPECT_EQ(choice.source, ConfigSource::database);
  EXPECT_EQ(choice.config.name(), stored->config);

  // chosen_config_with_source tunes a new key itself (source tuned), then finds it (source database).
  const Problem decode = make_problem(5, 1536, 640);
  const ConfigChoice first = chosen_config_with_source(decode);
  EXPECT_EQ(first.source, ConfigSource::tuned);
  const ConfigChoice second = chosen_config_with_source(decode);
  EXPECT_EQ(second.source, ConfigSource::database);
  EXPECT_EQ(second.config, first.config);
  EXPECT_EQ(chosen_config(decode), first.config);

  // Offline reads what first use stored; off ignores it.
  set_tune_mode(TuneMode::offline);
  EXPECT_EQ(chosen_config_with_source(decode).source, ConfigSource::database);
  set_tune_mode(TuneMode::off);
  EXPECT_EQ(chosen_config_with_source(decode).source, ConfigSource::heuristic);
}

TEST(TuneGpu, GraphCaptureDuringFirstUseDoesNotTuneAndComputesTheRightAnswer) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::off);
  const DeviceInfo& dev = current_device_info();
  const Problem p = make_problem(4, 2048, 1024);
  GpuCase c(p, 12);
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  GemmOptions options;
  options.stream = stream;

  // An ordinary run first (the heuristic's config, as the captured call will use): it also sizes the
  // stream's split-K workspace, which cannot grow during a capture.
  void* expected = c.new_output();
  gemm(c.x, p.m, c.weight->view(), nullptr, expected, options);
  cuda_ok(cudaStreamSynchronize(stream), "the uncaptured run");

  set_tune_mode(TuneMode::first_use);
  void* captured = c.new_output();
  testing::internal::CaptureStderr();
  cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  gemm(c.x, p.m, c.weight->view(), nullptr, captured, options);
  gemm(c.x, p.m, c.weight->view(), nullptr, captured, options);  // said once, not per call
  cudaGraph_t graph = nullptr;
  cuda_ok(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string key = tune_key(p, dev).str();
  EXPECT_NE(err.find("lutmm: not tuning " + key + " during CUDA graph capture"), std::string::npos) << err;
  EXPECT_EQ(err.find("not tuning"), err.rfind("not tuning")) << "said once: " << err;
  EXPECT_NE(err.find(heuristic_config(p, dev).name()), std::string::npos) << err;
  EXPECT_FALSE(find_tuning(p, dev).has_value()) << "nothing was tuned during the capture";

  cudaGraphExec_t exec = nullptr;
  cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  cuda_ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  cuda_ok(cudaStreamSynchronize(stream), "the graph");
  const std::vector<uint16_t> a = c.download(expected), b = c.download(captured);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 2), 0) << "the captured GEMM matches the uncaptured one bitwise";
  c.expect_right(b, "the captured GEMM");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // The first call outside a capture tunes the key.
  EXPECT_EQ(chosen_config_with_source(p).source, ConfigSource::tuned);
  EXPECT_TRUE(find_tuning(p, dev).has_value());
  cudaFree(expected);
  cudaFree(captured);
  cudaStreamDestroy(stream);
}

int timed(const TuneResult& r) {
  int n = 0;
  for (const CandidateTiming& c : r.candidates) n += c.runs > 0;
  return n;
}

TEST(TuneGpu, TuningTheLargestLlmShapeTakesUnderOneSecondOverWarmCaches) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::off);
  const Problem p = make_problem(4096, 28672, 8192);
  TuneOptions options;
  options.store = false;
  // The tuner compiles and loads kernels as it reaches their candidates: a warm-up with twice the budget reaches
  // every candidate the timed call below reaches (the same rank order), so that call finds all of them loaded.
  TuneOptions warm_up_options = options;
  warm_up_options.budget_ms = 2 * options.budget_ms;
  const TuneResult warm_up = tune(p, nullptr, warm_up_options);
  const TuneResult r = tune(p, nullptr, options);
  for (const CandidateTiming& c : r.candidates)
    EXPECT_TRUE(c.runs > 0 || !c.note.empty()) << c.config.name() << " neither timed nor explained";
  std::printf("%s: %d of %zu candidates timed; prepare %.0f ms, measure %.0f ms, total %.0f ms (first: %.0f ms); "
              "best %s %.1f us, heuristic %s %.1f us\n",
              p.str().c_str(), timed(r), r.candidates.size(), r.prepare_ms, r.measure_ms, r.total_ms, warm_up.total_ms,
              r.entry.config.c_str(), r.entry.us, r.entry.heuristic_config.c_str(), r.entry.heuristic_us);
  EXPECT_LT(r.total_ms, 1000.0);
  EXPECT_GE(timed(r), 5);
  EXPECT_EQ(config_invalid_reason(r.best, p, current_device_info()), "");
  EXPECT_GT(r.entry.heuristic_us, 0);
  EXPECT_LE(r.entry.us, r.entry.heuristic_us);
  EXPECT_FALSE(r.stored);
  EXPECT_FALSE(find_tuning(p, current_device_info()).has_value());
}

// A key whose heuristic config runs in microseconds gets small_key_budget_ms: more of its candidates are timed
// than under budget_ms alone (40 ms: a screening costs ~0.4 ms since session 16, so 150 ms reached 290 of 393).
TEST(TuneGpu, SmallKeysGetTheirOwnBudget) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::off);
  const Problem p = make_problem(2, 320, 1280);
  TuneOptions options;
  options.store = false;
  options.budget_ms = 40;
  const TuneResult plain = tune(p, nullptr, options);
  EXPECT_EQ(plain.budget_ms, 40);
  options.small_key_budget_ms = 1500;
  const TuneResult small = tune(p, nullptr, options);
  ASSERT_LT(small.entry.heuristic_us, options.small_key_us) << "2 x 320 x 1280 should be a small key";
  EXPECT_EQ(small.budget_ms, 1500);
  EXPECT_GT(timed(small), timed(plain)) << small.budget_ms << " ms against " << plain.budget_ms;
  std::printf("2 x 320 x 1280: %d candidates timed in %.0f ms, %d in %.0f ms, of %zu\n", timed(plain), plain.measure_ms,
              timed(small), small.measure_ms, small.candidates.size());
  // a large key keeps budget_ms
  options.small_key_budget_ms = 100000;
  const TuneResult large = tune(make_problem(64, 8192, 8192), nullptr, options);
  EXPECT_EQ(large.budget_ms, 40);
}

// On a cold JIT cache the tuner compiles the kernels of the candidates it times (and a batch ahead), not of every
// candidate it might have reached: a small budget on a key whose kernels no other test compiles leaves most
// candidates untimed, and their kernels uncompiled (the disk cache shows what was compiled).
TEST(TuneGpu, TuningCompilesOnlyTheKernelsOfTheCandidatesItReaches) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::off);
  const Problem p = make_problem(2, 640, 1280, 3, 32, DType::f16);
  TuneOptions options;
  options.store = false;
  options.budget_ms = 60;
  const TuneResult r = tune(p, nullptr, options);
  std::set<std::string> timed_kernels, reached, unreached;
  for (const CandidateTiming& c : r.candidates) {
    if (c.runs > 0) timed_kernels.insert(tuning_detail::kernel_name(c.config));
    if (c.runs > 0 || c.note.rfind("failed", 0) == 0) reached.insert(tuning_detail::kernel_name(c.config));
  }
  for (const CandidateTiming& c : r.candidates)
    if (c.note.find("screening share") != std::string::npos && reached.count(tuning_detail::kernel_name(c.config)) == 0)
      unreached.insert(tuning_detail::kernel_name(c.config));
  const size_t cubins = static_cast<size_t>(jit::testing::count_cubins(sandbox.dir() / "kernels"));
  std::printf("%s: %zu kernels reached, %zu not reached, %zu compiled (prepare %.0f ms, measure %.0f ms)\n",
              p.str().c_str(), reached.size(), unreached.size(), cubins, r.prepare_ms, r.measure_ms);
  ASSERT_GT(unreached.size(), 16u) << "the budget should leave many kernels unreached";
  EXPECT_GE(cubins, timed_kernels.size());  // (no other test compiles 3-bit, group-32 fp16 kernels)
  // each reached kernel and its spread split-K variant, plus at most one batch of 8 ahead (and its variants)
  EXPECT_LE(cubins, 2 * (reached.size() + 8));
  EXPECT_LT(cubins, reached.size() + unreached.size());
}

TEST(TuneGpu, ThreadsMeetingAnUntunedKeyTuneItOnce) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::first_use);
  const Problem p = make_problem(12, 1024, 1024);
  constexpr int kThreads = 4;
  std::vector<ConfigChoice> choices(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        choices[t] = chosen_config_with_source(p);
      } catch (const Error&) {
        ++errors;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  int tuned = 0;
  for (const ConfigChoice& c : choices) {
    tuned += c.source == ConfigSource::tuned;
    EXPECT_TRUE(c.source == ConfigSource::tuned || c.source == ConfigSource::database) << to_string(c.source);
    EXPECT_EQ(c.config, choices[0].config);
  }
  EXPECT_EQ(tuned, 1);
}

TEST(TuneGpu, TimeConfigsTimesEachAndReportsTheOnesThatCannotRun) {
  REQUIRE_GPU();
  TuningSandbox sandbox(TuneMode::off);
  const DeviceInfo& dev = current_device_info();
  const Problem p = make_problem(16, 1280, 320, 4, 64);
  std::vector<KernelConfig> configs = valid_configs(p, dev);
  ASSERT_GE(configs.size(), 3u);
  configs.resize(3);
  configs.push_back(KernelConfig::parse("sm80_n64_m16_k256_s3_w4x1_sk1_lutsmem"));  // K padded to 384: invalid
  const std::vector<CandidateTiming> t = time_configs(p, configs, nullptr, 3);
  ASSERT_EQ(t.size(), configs.size());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t[i].runs, 3) << configs[i].name() << ": " << t[i].note;
    EXPECT_GT(t[i].us, 0);
    EXPECT_GE(t[i].config.split_k, 1) << "split-K resolved";
  }
  EXPECT_EQ(t[3].runs, 0);
  EXPECT_EQ(t[3].note.rfind("failed", 0), 0u) << t[3].note;
  EXPECT_THROW(time_configs(p, configs, nullptr, 0), Error);
}

}  // namespace
}  // namespace lutmm
