// lutmm::gemm on the GPU against a float64 reference (bench/verify.hpp states the method and the
// tolerances): fresh random inputs per case, poisoned outputs, every bits x group x dtype combination,
// every embedded shape, every config on a subset, determinism, bad arguments. Skips without a GPU.
#include <gtest/gtest.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "jit/jit.hpp"
#include "jit/jit_test_util.hpp"  // (ScopedEnv)
#include "lutmm/lutmm.hpp"
#include "runtime/kernel_shapes.hpp"
#include "runtime/launch_choices.hpp"
#include "verify.hpp"
#include "leftover_cuda_error.hpp"  // fails the test that leaves a CUDA error behind

namespace lutmm {
namespace {

bool have_gpu() { return device_count() > 0; }

#define REQUIRE_GPU()                                  \
  do {                                                 \
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

Problem problem(int64_t m, int64_t n, int64_t k, int bits, int g, DType dtype) {
  return Problem::of(m, n, k, bits, g, dtype);
}

int group_for(int64_t k) { return k % 128 == 0 ? 128 : (k % 64 == 0 ? 64 : static_cast<int>(k)); }

uint64_t g_seed = 0x5eed;

void expect_passes(const Problem& p, std::optional<KernelConfig> cfg = std::nullopt, bool bias = false) {
  bench::VerifyCase c;
  c.problem = p;
  c.config = cfg;
  c.seed = ++g_seed;
  c.with_bias = bias;
  const bench::VerifyResult r = bench::verify_gemm(c);
  EXPECT_TRUE(r.passed) << r.str();
}

// Every shape of both sets, 4-bit, bf16 and fp16, the runtime's own config.
class EmbeddedShapes : public ::testing::TestWithParam<std::tuple<const char*, DType>> {};
TEST_P(EmbeddedShapes, RuntimeChoiceMatchesReference) {
  REQUIRE_GPU();
  const auto [set, dtype] = GetParam();
  for (const Shape& s : load_shapes(set)) expect_passes(problem(s.m, s.n, s.k, 4, group_for(s.k), dtype));
}
INSTANTIATE_TEST_SUITE_P(Sets, EmbeddedShapes,
                         ::testing::Combine(::testing::Values("diffusion", "llm"),
                                            ::testing::Values(DType::bf16, DType::f16)));

// bits x group x dtype x bias on the diffusion set's distinct small and odd shapes.
TEST(GemmGpu, EveryBitsGroupDtypeCombination) {
  REQUIRE_GPU();
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 4096, 4096}, {2, 1280, 320}, {8, 1152, 256},
                                                      {77, 640, 768},  {333, 1536, 1536}, {449, 2304, 1152},
                                                      {1024, 32, 1152}, {3, 24, 48}};
  for (const auto& s : shapes)
    for (int bits : {2, 3, 4})
      for (int g : {32, 64, 128, 256, 0})
        for (DType dtype : {DType::bf16, DType::f16}) {
          const int group = g == 0 ? static_cast<int>(s[2]) : g;
          if (s[2] % group != 0) continue;
          expect_passes(problem(s[0], s[1], s[2], bits, group, dtype), std::nullopt, (bits + g) % 2 == 0);
        }
}

// Every valid config (splits included) on a few shapes that exercise partial tiles in M, N and K, each shape a
// test of its own (they compile most of the kernels: the GPU check runs tests in parallel shards).
void expect_every_config_passes(int64_t m, int64_t n, int64_t k) {
  const DeviceInfo& dev = current_device_info();
  for (int bits : {2, 3, 4}) {
    const Problem p = problem(m, n, k, bits, group_for(k), bits == 3 ? DType::f16 : DType::bf16);
    for (const KernelConfig& c : valid_configs(p, dev)) expect_passes(p, c, bits == 4);
  }
}
TEST(GemmGpu, EveryConfigOnDecode) {
  REQUIRE_GPU();
  expect_every_config_passes(1, 1152, 1152);
}
TEST(GemmGpu, EveryConfigOnAConditioningBatch) {
  REQUIRE_GPU();
  expect_every_config_passes(77, 320, 768);
}
TEST(GemmGpu, EveryConfigOnMediumM) {
  REQUIRE_GPU();
  expect_every_config_passes(300, 1152, 4096);
}

// Each tile shape forced on a large-M problem too (valid_configs leaves big tiles out for small M only).
TEST(GemmGpu, EveryTileShapeOnLargeM) {
  REQUIRE_GPU();
  std::vector<KernelConfig> shapes = sm80_kernel_shapes();
  shapes.insert(shapes.end(), sm90_kernel_shapes().begin(), sm90_kernel_shapes().end());  // skipped below sm_90
  for (const auto& shape : shapes)
    for (LutPlacement lut : {LutPlacement::shared, LutPlacement::shared_wide, LutPlacement::registers}) {
      KernelConfig c = shape;
      c.lut = lut;
      c.split_k = 0;
      const Problem p = problem(1000, 1040, 1280, 4, 128, DType::bf16);
      // the 64 KB table of lutsmem256 leaves too little room for some _occN shapes, and lutreg too few
      // registers for the largest warp tiles (both checked in config_test)
      if (!config_invalid_reason(c, p, current_device_info()).empty()) continue;
      expect_passes(p, c);
    }
}

// The W-in-registers path (`_wreg`, forcible, not offered by valid_configs): every bit width, split-K,
// padding in N and K, both tables.
TEST(GemmGpu, WeightsInRegistersPathMatchesReference) {
  REQUIRE_GPU();
  for (const char* name : {"sm80_n64_m8_k64_s6_w4x1_sk2_lutsmem_wreg", "sm80_n128_m16_k128_s4_w4x1_skauto_lutreg_wreg",
                           "sm80_n256_m8_k128_s4_w8x1_sk1_lutsmem_wreg"})
    for (int bits : {2, 3, 4})
      for (const auto& s : std::vector<std::array<int64_t, 3>>{{1, 1152, 1152}, {5, 1000, 2048}, {16, 24, 128}})
        expect_passes(problem(s[0], s[1], s[2], bits, 64, bits == 3 ? DType::f16 : DType::bf16),
                      KernelConfig::parse(name), bits == 2);
}

// gemm() keeps per-thread launch plans, the split-K workspace pointer included: when a larger problem on
// the same stream replaces the workspace, a cached plan must pick up the new buffer. Alternate a small
// and a large split-K problem (and the default and a created stream), check each against the reference.
TEST(GemmGpu, LaunchPlansFollowWorkspaceGrowthAndStreams) {
  REQUIRE_GPU();
  struct Case {
    Problem p;
    const char* config;
    QuantizedWeight q;
    std::vector<uint16_t> x;
    std::vector<double> ref;
  };
  std::vector<Case> cases;
  for (auto [m, n, k, cfg] : std::vector<std::tuple<int64_t, int64_t, int64_t, const char*>>{
           {3, 256, 1024, "sm80_n64_m8_k128_s4_w4x1_sk2_lutsmem"},
           {40, 4096, 4096, "sm80_n64_m64_k64_s4_w2x2_sk8_lutreg"}}) {
    Case c;
    c.p = problem(m, n, k, 4, 128, DType::bf16);
    c.config = cfg;
    c.q = bench::random_quantized_weight(n, k, 4, 128, DType::bf16, ++g_seed);
    c.x = bench::random_values(m * k, DType::bf16, ++g_seed);
    c.ref.resize(static_cast<size_t>(m * n));
    reference_gemm_f64(c.x.data(), m, c.q, nullptr, c.ref.data());
    cases.push_back(std::move(c));
  }
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreate(&side), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    for (Case& c : cases) {
      const DeviceWeight w = DeviceWeight::upload(c.q);
      uint16_t *dx = nullptr, *dout = nullptr;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dx), c.x.size() * 2), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dout), c.ref.size() * 2), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dx, c.x.data(), c.x.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(dout, 0xff, c.ref.size() * 2), cudaSuccess);
      GemmOptions options;
      options.config = KernelConfig::parse(c.config);
      options.stream = round == 1 ? side : nullptr;
      gemm(dx, c.p.m, w.view(), nullptr, dout, options);
      ASSERT_EQ(cudaStreamSynchronize(options.stream), cudaSuccess);
      std::vector<uint16_t> out(c.ref.size());
      ASSERT_EQ(cudaMemcpy(out.data(), dout, out.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      const bench::OutputComparison cmp =
          bench::compare_output(out.data(), c.ref.data(), static_cast<int64_t>(out.size()), DType::bf16);
      EXPECT_EQ(cmp.unwritten, 0) << c.config << " round " << round;
      EXPECT_LE(cmp.rel_fro_error, bench::verify_tolerance(DType::bf16)) << c.config << " round " << round;
      cudaFree(dx);
      cudaFree(dout);
    }
  }
  cudaStreamDestroy(side);
}

// Layers run back to back on one stream with no synchronisation in between, each reading the output of
// the one before (widths[i] -> widths[i + 1], m rows). Outputs start as NaN poison, so a kernel that reads x
// before its predecessor has written it shows; each layer is compared with the float64 reference of the
// input it read, downloaded at the end.
class LayerChain {
 public:
  LayerChain(int64_t m, std::vector<int64_t> widths) : m_(m), widths_(std::move(widths)), acts_(widths_.size()) {}
  ~LayerChain() {
    for (uint16_t* a : acts_) cudaFree(a);
  }
  int layers() const { return static_cast<int>(widths_.size()) - 1; }
  Problem problem_of(int i) const { return problem(m_, widths_[i + 1], widths_[i], 4, 128, DType::bf16); }

  void allocate() {
    for (size_t i = 0; i < widths_.size(); ++i) {
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&acts_[i]), m_ * widths_[i] * 2), cudaSuccess);
      ASSERT_EQ(cudaMemset(acts_[i], 0xff, m_ * widths_[i] * 2), cudaSuccess);
    }
    const std::vector<uint16_t> x = bench::random_values(m_ * widths_[0], DType::bf16, ++g_seed);
    ASSERT_EQ(cudaMemcpy(acts_[0], x.data(), x.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    for (int i = 0; i < layers(); ++i) {
      weights_.push_back(bench::random_quantized_weight(widths_[i + 1], widths_[i], 4, 128, DType::bf16, ++g_seed));
      device_.push_back(DeviceWeight::upload(weights_.back()));
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  // Every layer once per round, layer i with options[i].
  void run(const std::vector<GemmOptions>& options, int rounds = 1) {
    for (int r = 0; r < rounds; ++r)
      for (int i = 0; i < layers(); ++i) gemm(acts_[i], m_, device_[i].view(), nullptr, acts_[i + 1], options[i]);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  void expect_matches_reference() const {
    std::vector<std::vector<uint16_t>> host(widths_.size());
    for (size_t i = 0; i < widths_.size(); ++i) {
      host[i].resize(static_cast<size_t>(m_ * widths_[i]));
      ASSERT_EQ(cudaMemcpy(host[i].data(), acts_[i], host[i].size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    for (int i = 0; i < layers(); ++i) {
      std::vector<double> ref(static_cast<size_t>(m_ * widths_[i + 1]));
      reference_gemm_f64(host[i].data(), m_, weights_[i], nullptr, ref.data());
      const bench::OutputComparison cmp =
          bench::compare_output(host[i + 1].data(), ref.data(), static_cast<int64_t>(ref.size()), DType::bf16);
      EXPECT_EQ(cmp.unwritten, 0) << "layer " << i;
      EXPECT_LE(cmp.rel_fro_error, bench::verify_tolerance(DType::bf16)) << "layer " << i;
    }
  }

 private:
  int64_t m_;
  std::vector<int64_t> widths_;
  std::vector<uint16_t*> acts_;
  std::vector<QuantizedWeight> weights_;
  std::vector<DeviceWeight> device_;
};

// On sm_90+ every GEMM is a programmatic dependent launch (runtime/gemm.cpp): a kernel must wait for its
// predecessor before reading x. Split-K configs alternate with the runtime's own choice.
TEST(GemmGpu, ChainedLayersReadTheirPredecessorsOutput) {
  REQUIRE_GPU();
  LayerChain chain(5, {1024, 2048, 1024, 2048, 1024, 4096, 1024});
  ASSERT_NO_FATAL_FAILURE(chain.allocate());
  std::vector<GemmOptions> options(chain.layers());
  for (int i = 1; i < chain.layers(); i += 2) options[i].config = KernelConfig::parse("sm80_n64_m8_k128_s4_w4x1_sk4_lutsmem");
  ASSERT_NO_FATAL_FAILURE(chain.run(options));
  chain.expect_matches_reference();
}

// Chained layers whose grids let the next kernel launch at their start (a full grid of 2 x 114 KB blocks per
// SM; a grid on a handful of SMs) and ones that let it launch only after their main loop: each layer copies
// its first W tiles before waiting for the previous one, whose output it then reads (runtime/gemm.cpp).
TEST(GemmGpu, EarlyDependentLaunchesKeepChainedLayersCorrect) {
  REQUIRE_GPU();
  if (current_device_info().arch() < 90) GTEST_SKIP() << "programmatic dependent launch needs sm_90+";
  LayerChain chain(3, {1024, 8192, 1024, 256, 1024});
  ASSERT_NO_FATAL_FAILURE(chain.allocate());
  // (layer 1: 16 tiles in four splits, 64 blocks: mid-sized)
  const char* configs[] = {"sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256", "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256",
                           "sm80_n64_m8_k256_s3_w4x1_sk1_lutreg", nullptr};
  std::vector<GemmOptions> options(chain.layers());
  int early = 0;
  for (int i = 0; i < chain.layers(); ++i) {
    const Problem p = chain.problem_of(i);
    options[i].config = configs[i] ? KernelConfig::parse(configs[i]) : chosen_config(p);
    const LaunchChoices overlap = launch_choices(p, *options[i].config);
    EXPECT_TRUE(overlap.overlap_previous) << "layer " << i;
    early += overlap.dependents_early ? 1 : 0;
  }
  EXPECT_GE(early, 2) << "the full and the tiny grid launch their successors early";
  EXPECT_LT(early, chain.layers()) << "a mid-sized grid does not";
  ASSERT_NO_FATAL_FAILURE(chain.run(options, 3));  // (repeated: a race would show on some round)
  chain.expect_matches_reference();
}

// Weights rewritten on the stream right before a GEMM (here device-to-device copies of another weight's codes,
// scales and table into them; the kernels read all three before the dependency wait): with
// weights_just_written the GEMM reads the new ones.
TEST(GemmGpu, WeightsJustWrittenOnTheStreamAreTheOnesUsed) {
  REQUIRE_GPU();
  constexpr int64_t m = 4, n = 2048, k = 1024;
  const QuantizedWeight first = bench::random_quantized_weight(n, k, 4, 128, DType::bf16, ++g_seed);
  const QuantizedWeight second = bench::random_quantized_weight(n, k, 4, 128, DType::bf16, ++g_seed);
  ASSERT_NE(first.table, second.table);  // (random tables: the copy of the table below must show)
  DeviceWeight target = DeviceWeight::upload(first);
  const DeviceWeight source = DeviceWeight::upload(second);
  const PackedShape s = packed_shape(n, k, 4, 128);
  const std::vector<uint16_t> x = bench::random_values(m * k, DType::bf16, ++g_seed);
  uint16_t *dx = nullptr, *dout = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dx), x.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dout), m * n * 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dout, 0xff, m * n * 2), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  GemmOptions options;
  options.stream = stream;
  gemm(dx, m, target.view(), nullptr, dout, options);  // a GEMM on the old weights first
  ASSERT_EQ(cudaMemcpyAsync(const_cast<uint32_t*>(target.view().packed), source.view().packed, s.words() * 4,
                            cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(const_cast<uint16_t*>(target.view().scales), source.view().scales,
                            pack_scales(second.scales.data(), n, k, 128).size() * 2, cudaMemcpyDeviceToDevice, stream),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(const_cast<uint16_t*>(target.view().table), source.view().table, second.table.size() * 2,
                            cudaMemcpyDeviceToDevice, stream),
            cudaSuccess);
  options.weights_just_written = true;
  gemm(dx, m, target.view(), nullptr, dout, options);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<uint16_t> out(static_cast<size_t>(m * n));
  ASSERT_EQ(cudaMemcpy(out.data(), dout, out.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<double> ref(out.size());
  reference_gemm_f64(x.data(), m, second, nullptr, ref.data());
  const bench::OutputComparison cmp = bench::compare_output(out.data(), ref.data(), static_cast<int64_t>(ref.size()), DType::bf16);
  EXPECT_EQ(cmp.unwritten, 0);
  EXPECT_LE(cmp.rel_fro_error, bench::verify_tolerance(DType::bf16));
  cudaStreamDestroy(stream);
  cudaFree(dx);
  cudaFree(dout);
}

// Runs p with the config `name` `runs` times on fresh poisoned outputs and expects bitwise-equal results.
void expect_deterministic(const Problem& p, const char* name, int runs) {
  bench::VerifyCase c;
  c.problem = p;
  c.config = KernelConfig::parse(name);
  c.seed = ++g_seed;
  const bench::DeterminismResult r = bench::check_determinism(c, runs);
  EXPECT_TRUE(r.identical) << name << ": " << r.differing << " outputs differ";
  EXPECT_EQ(r.unwritten, 0);
}

TEST(GemmGpu, SplitKIsDeterministic) {
  REQUIRE_GPU();
  for (const char* name : {"sm80_n64_m8_k128_s4_w4x1_sk8_lutsmem", "sm80_n128_m64_k64_s4_w4x2_sk4_lutreg"})
    expect_deterministic(problem(5, 4096, 4096, 4, 128, DType::bf16), name, 4);
}

// On sm_90+ the runtime launches the pre-wait variant (kernels/gemm_sm80_config.cuh: PrewaitFirstSlices, warps
// dequantize their first slices before the dependency wait) only where every split has at least 8 k tiles, outside
// cluster launches, on GPUs whose HBM outruns the decode loop (runtime/gemm.cpp: prewait_first_slices);
// LUTMM_PREWAIT=1 drops the last condition, so this runs the variant on any sm_90 GPU. 16 k tiles in two splits take
// it, 15 (splits of 8 and 7) do not; both must match the reference and be bitwise the same run after run.
// (Each setting has shapes of its own: gemm() caches a plan per shape and config.)
TEST(GemmGpu, PrewaitVariantOnlyWhereEverySplitIsLong) {
  REQUIRE_GPU();
  const DeviceInfo& dev = current_device_info();
  if (dev.arch() >= 90)
    EXPECT_GT(dev.memory_bytes_per_sm_clock(), 0.0) << "the driver reports no memory clock or bus width";
  const char* const names[] = {"sm80_n64_m8_k128_s4_w4x1_sk2_lutsmem", "sm80_n64_m8_k128_s4_w4x1_sk2_lutsmem256"};
  {
    jit::testing::ScopedEnv forced("LUTMM_PREWAIT", "1");
    for (const char* name : names)
      for (int64_t k_tiles : {16, 15})
        for (int64_t m : {1, 5})
          for (int bits : {3, 4}) {
            if (bits == 3 && std::string(name).ends_with("256")) continue;  // (the 256-byte rows are 4-bit only)
            const Problem p = problem(m, 4096, k_tiles * 128, bits, 128, bits == 3 ? DType::f16 : DType::bf16);
            const KernelConfig c = KernelConfig::parse(name);
            const LaunchChoices l = launch_choices(p, c);
            EXPECT_FALSE(l.cluster_split) << name << ": the test needs a launch without clusters";
            EXPECT_EQ(l.prewait, dev.arch() >= 90 && k_tiles == 16) << name << " " << p.str();
            expect_passes(p, c, m == 5);
            expect_deterministic(p, name, 3);
          }
  }
  jit::testing::ScopedEnv off("LUTMM_PREWAIT", "0");
  EXPECT_FALSE(launch_choices(problem(1, 2048, 16 * 128, 4, 128, DType::bf16), KernelConfig::parse(names[1])).prewait);
}

// Small split-K GEMMs on sm_90+ reduce inside a thread-block cluster (runtime/gemm.cpp: cluster_split_k);
// elsewhere, and for larger ones, through the global workspace. Both must match the reference and be
// bitwise deterministic; these shapes take the cluster path on an H200 (64 x 1280 x 5120 and 1 x 14336 x 4096
// by its rule for grids whose clusters all fit at once: one block per SM, and more blocks than SMs).
TEST(GemmGpu, SmallSplitKMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  std::vector<std::tuple<int64_t, int64_t, int64_t, const char*>> cases = {
      {3, 1152, 1152, "sm80_n64_m8_k128_s4_w4x1_sk4_lutsmem"},
      {8, 1536, 2048, "sm80_n64_m8_k128_s4_w4x1_sk8_lutreg"},
      {77, 640, 2048, "sm80_n64_m16_k128_s4_w4x1_sk2_lutreg"}};
  const bool h200_like = current_device_info().arch() == 90 && current_device_info().sm_count >= 132;
  if (h200_like) {
    cases.push_back({64, 1280, 5120, "sm90_n128_m32_k128_s4_w8x1_sk5_lutsmem256"});   // 3.3 MB, 100 blocks
    cases.push_back({1, 14336, 4096, "sm80_n128_m8_k256_s3_w4x1_sk2_lutsmem256"});  // 29 MB, 224 blocks
    // 128 blocks of a kernel that holds two an SM: clusters of four would crowd them onto fewer SMs.
    EXPECT_FALSE(launch_choices(problem(16, 4096, 4096, 4, 128, DType::bf16),
                                KernelConfig::parse("sm80_n128_m16_k128_s4_w4x1_sk4_lutsmem"))
                     .cluster_split);
  }
  for (auto [m, n, k, name] : cases) {
    const Problem p = problem(m, n, k, 4, 128, DType::bf16);
    if (h200_like) EXPECT_TRUE(launch_choices(p, KernelConfig::parse(name)).cluster_split) << name;
    expect_passes(p, KernelConfig::parse(name), /*bias=*/m == 8);
    expect_deterministic(p, name, 3);
  }
}

// Forced configs, each (M, N, K, bits, group, name) against the reference (bf16 at 4 bits, fp16 otherwise; a
// bias at odd M) and bitwise the same in three runs.
using ForcedCase = std::tuple<int64_t, int64_t, int64_t, int, int, const char*>;
void expect_forced_configs_pass(const std::vector<ForcedCase>& cases) {
  for (const auto& [m, n, k, bits, group, name] : cases) {
    const Problem p = problem(m, n, k, bits, group, bits == 4 ? DType::bf16 : DType::f16);
    expect_passes(p, KernelConfig::parse(name), /*bias=*/m % 2 == 1);
    expect_deterministic(p, name, 3);
  }
}

// The cluster split-K epilogue (epilogue::finish_in_cluster) deals a tile out to the splits: the sm80 kernels
// pull 8-float chunks (block r: chunks r T .. r T + T - 1, then every S T further), the sm90 kernels push
// contiguous row shares by bulk copies. Split counts that divide neither the chunks nor the rows (3, 6, 7), M
// and N tails (rows and chunks past the problem are not stored), 2/3-bit fp16 with bias, and an sm90 tile too
// large for the push area (128 x 256: it pulls). Small weights (<= 2.5 MB), so that each runs in clusters on
// sm_90 GPUs.
TEST(GemmGpu, ClusterSplitKDealsEveryChunkOnce) {
  REQUIRE_GPU();
  const std::vector<ForcedCase> cases = {
      {5, 1160, 1152, 4, 128, "sm80_n64_m8_k128_s4_w4x1_sk3_lutsmem"},      // 40 chunks, 3 splits, N tail
      {2, 1280, 1792, 4, 64, "sm80_n64_m8_k128_s4_w4x1_sk7_lutsmem"},       // 16 chunks, 7 splits
      {77, 1288, 1024, 3, 128, "sm90_n128_m80_k64_s6_w8x1_sk6_lutsmem"},    // M and N tails, uneven splits
      {64, 1280, 1280, 2, 32, "sm90_n128_m64_k128_s4_w8x1_sk2_lutreg"},
      {130, 2048, 1024, 4, 128, "sm90_n256_m128_k64_s4_w16x1_sk2_lutsmem"}};  // pulled (no room to push)
  if (current_device_info().arch() >= 90)
    for (const auto& [m, n, k, bits, group, name] : cases)
      EXPECT_TRUE(launch_choices(problem(m, n, k, bits, group, bits == 4 ? DType::bf16 : DType::f16),
                                 KernelConfig::parse(name))
                      .cluster_split)
          << name;
  expect_forced_configs_pass(cases);
}

// Stream-K (sm90 family, sm_90 GPUs): one wave of blocks share the (tile, k tile) units; blocks that share
// a tile add their partial tiles in K order. Odd M and N, bias, 2/3-bit fp16, short and long K, more blocks
// than tiles and fewer: against the reference, and bitwise the same run after run.
TEST(GemmGpu, StreamKMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  if (current_device_info().arch() != 90) GTEST_SKIP() << "the sm90 family needs an sm_90 GPU";
  expect_forced_configs_pass({{64, 4096, 4096, 4, 128, "sm90_n256_m64_k64_s4_w16x1_skstream_lutsmem256"},
                              {77, 1000, 2048, 4, 128, "sm90_n128_m80_k64_s6_w8x1_skstream_lutsmem"},
                              {300, 1040, 1152, 3, 32, "sm90_n128_m128_k64_s5_w8x1_skstream_lutreg"},
                              {5, 28672, 1024, 2, 128, "sm90_n128_m8_k128_s4_w8x1_skstream_lutsmem"}});
}

// Stream-K on the sm80 family (any sm_80+ GPU): items that start and end inside tiles, several tiles per
// block (K = 320 on 64-deep tiles), M short of the tile, 2/3/4 bits, groups 32, 64, 128 and K, fp16,
// bias at odd M, the 8-warp tiles whose warp groups split each k tile: against the reference and bitwise the
// same run after run.
TEST(GemmGpu, Sm80StreamKMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  expect_forced_configs_pass({{1, 3584, 4096, 4, 128, "sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256"},
                              {5, 1000, 2048, 3, 32, "sm80_n64_m8_k128_s4_w4x1_skstream_lutsmem"},
                              {16, 2048, 1024, 2, 1024, "sm80_n128_m16_k128_s4_w4x1_skstream_lutreg"},
                              {8, 4096, 4096, 4, 128, "sm80_n128_m8_k256_s3_w4x1x2_skstream_lutsmem256"},
                              {13, 1280, 768, 4, 128, "sm80_n64_m16_k256_s3_w4x1_skstream_lutreg"},
                              {1, 4096, 320, 4, 64, "sm80_n64_m8_k64_s6_w4x1_skstream_lutreg"}});
}

// Split-K where the splits of a tile sum it together, each a share, once all have stored their partial tiles
// (runtime/gemm.cpp: spread_pays and one_wave: one-wave grids of 64-row tiles whose slots add up to >= 64 KB):
// M past the tile and over two tile rows, 2/3-bit fp16, bias at odd M, the sm80 family (any GPU) and on sm_90
// the sm90 one; against the reference and bitwise the same run after run. Interleaved with a last-arrival
// GEMM (a decode shape's small slots) on the same stream, whose tile counters both kinds share (each leaves
// them at 0 for the next).
TEST(GemmGpu, SpreadSplitKMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  // (weights over 2.5 MB: smaller split GEMMs reduce in clusters on sm_90, runtime/gemm.cpp: cluster_split_k)
  std::vector<ForcedCase> spread = {{64, 4096, 4096, 4, 128, "sm80_n128_m64_k64_s4_w4x1_sk4_lutsmem256"},
                                    {77, 4096, 4096, 3, 32, "sm80_n128_m64_k64_s4_w4x1_sk2_lutsmem"},
                                    {40, 4096, 6144, 2, 128, "sm80_n128_m64_k64_s4_w4x1_sk4_lutsmem"}};
  if (current_device_info().arch() == 90) {
    spread.push_back({64, 4096, 4096, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256"});
    spread.push_back({63, 1280, 5120, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk5_lutsmem256"});
    spread.push_back({77, 4096, 2048, 3, 64, "sm90_n128_m64_k128_s4_w8x1_sk2_lutsmem_ws"});
  }
  const ForcedCase last_arrival{1, 4096, 4096, 4, 128, "sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256"};
  auto spreads = [](const ForcedCase& c) {
    const auto& [m, n, k, bits, group, name] = c;
    return launch_choices(problem(m, n, k, bits, group, bits == 4 ? DType::bf16 : DType::f16),
                          KernelConfig::parse(name))
        .split_spread;
  };
  for (const ForcedCase& c : spread) EXPECT_TRUE(spreads(c)) << std::get<5>(c);
  EXPECT_FALSE(spreads(last_arrival));
  for (int round = 0; round < 2; ++round) {
    expect_forced_configs_pass(spread);
    expect_forced_configs_pass({last_arrival});
  }
}

// Split-K over flagged slots (runtime/gemm.cpp: flagged_split_k; epilogue/epilogue.cuh: finish_flagged): the last
// split's block sums each tile from words that carry every other split's values with a mark, and clears them.
// On the H200 the three 4-bit decode cases take that path (one-wave grids, pairs of values for at most a quarter of
// the threads, four splits, an N tail); the 3-bit and 2-bit ones (bias, fp16) check whichever path the
// runtime picks; the Stream-K cases sum with the block whose run ends in the tile. Against the
// reference and bitwise the same run after run; then rounds of fresh inputs alternating with a last-arrival GEMM
// on the same stream (the two share the counter buffer): a summer that found a word still marked from an earlier
// launch would add a stale value and miss the reference.
TEST(GemmGpu, FlaggedSplitKMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  const std::vector<ForcedCase> flagged = {{1, 4096, 4096, 4, 128, "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256"},
                                           {2, 4104, 4096, 4, 128, "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256"},
                                           {1, 2048, 8192, 4, 128, "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem256"}};
  const bool h200_like = current_device_info().arch() == 90 && current_device_info().sm_count >= 132;
  if (h200_like)
    for (const auto& [m, n, k, bits, group, name] : flagged)
      EXPECT_TRUE(launch_choices(problem(m, n, k, bits, group, DType::bf16), KernelConfig::parse(name)).split_flagged)
          << name << " at M = " << m;
  expect_forced_configs_pass(flagged);
  expect_forced_configs_pass({{1, 4104, 4096, 3, 64, "sm80_n64_m8_k256_s3_w4x1x2_sk4_lutsmem"},
                              {1, 6152, 4096, 2, 128, "sm80_n32_m16_k256_s4_w2x1_sk2_lutreg"}});
  // Stream-K: the block whose run ends in a shared tile sums it (split 0), the blocks that share it (two to four on
  // these grids) stored their parts as the first items of their runs; odd M stores a bias too
  const std::vector<ForcedCase> stream = {{1, 28672, 8192, 4, 128, "sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256"},
                                          {2, 28672, 8192, 4, 128, "sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256"},
                                          {1, 28672, 8192, 4, 128, "sm80_n256_m8_k128_s4_w4x1_skstream_lutsmem"},
                                          {1, 28672, 8192, 3, 64, "sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem"}};
  if (h200_like)
    for (const auto& [m, n, k, bits, group, name] : stream)
      EXPECT_TRUE(launch_choices(problem(m, n, k, bits, group, bits == 4 ? DType::bf16 : DType::f16),
                                 KernelConfig::parse(name))
                      .split_flagged)
          << name << " at M = " << m;
  expect_forced_configs_pass(stream);
  const Problem last_arrival = problem(16, 4096, 4096, 4, 128, DType::bf16);
  const KernelConfig last_arrival_config = KernelConfig::parse("sm80_n128_m16_k256_s3_w4x1_sk4_lutsmem256");
  EXPECT_FALSE(launch_choices(last_arrival, last_arrival_config).split_flagged);
  for (int round = 0; round < 4; ++round) {
    expect_passes(problem(1, 4096, 4096, 4, 128, DType::bf16), KernelConfig::parse(std::get<5>(flagged[0])));
    expect_passes(last_arrival, last_arrival_config);
    expect_passes(problem(1, 28672, 8192, 4, 128, DType::bf16), KernelConfig::parse(std::get<5>(stream[0])));
  }
}

// The spread sum's way out when its blocks are not all resident (a GPU shared with other work): a block that
// has waited too long leaves its share to the last arrival (epilogue/epilogue.cuh). With no patience at all
// (-DLUTMM_SPREAD_PATIENCE_NS=0) every block but the last leaves at once, so the last arrival sums the shares
// of the others: still against the reference and bitwise the same run after run. On a thread of its own, whose
// launch plans (thread-local) are built afresh with the option.
TEST(GemmGpu, SpreadSplitKBlocksThatStopWaitingLeaveTheirShareToTheLastArrival) {
  REQUIRE_GPU();
  std::vector<ForcedCase> spread = {{64, 4096, 4096, 4, 128, "sm80_n128_m64_k64_s4_w4x1_sk4_lutsmem256"},
                                    {77, 4096, 4096, 3, 32, "sm80_n128_m64_k64_s4_w4x1_sk2_lutsmem"}};
  if (current_device_info().arch() == 90) {
    spread.push_back({64, 4096, 4096, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256"});
    spread.push_back({63, 1280, 5120, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk5_lutsmem256"});
    spread.push_back({77, 4096, 2048, 3, 64, "sm90_n128_m64_k128_s4_w8x1_sk2_lutsmem_ws"});
  }
  const char* const saved = std::getenv("LUTMM_NVRTC_OPTIONS");
  const std::string restore = saved != nullptr ? saved : "";
  ::setenv("LUTMM_NVRTC_OPTIONS", "-DLUTMM_SPREAD_PATIENCE_NS=0", 1);
  std::thread([&] { expect_forced_configs_pass(spread); }).join();
  if (saved != nullptr)
    ::setenv("LUTMM_NVRTC_OPTIONS", restore.c_str(), 1);
  else
    ::unsetenv("LUTMM_NVRTC_OPTIONS");
}

// Kernels load as context-independent libraries (jit/loaded_kernel.cpp): the ones loaded in the primary context
// run in a context of the caller's own (cuCtxCreate) and in a green context holding a quarter of the SMs, whose
// SM count the runtime plans for (device.cpp: context_sm_count): split-K with the last arrival summing, the spread
// sum, Stream-K, cluster split-K, and the runtime's own choice. Against the reference and bitwise the same run
// after run in each context.
// (The driver functions through cudart's entry points, as the library resolves its own: the test binary must
// start where no driver is installed, to skip.)
template <typename Fn>
Fn driver_function(const char* symbol, unsigned int abi) {
  return reinterpret_cast<Fn>(jit::driver_entry_point(symbol, abi));
}

TEST(GemmGpu, RunsInContextsOfTheCallersOwnAndInGreenContexts) {
  REQUIRE_GPU();
  const auto cu_device_get = driver_function<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
  const auto cu_ctx_create = driver_function<PFN_cuCtxCreate_v12050>("cuCtxCreate", 12050);
  const auto cu_ctx_destroy = driver_function<PFN_cuCtxDestroy_v4000>("cuCtxDestroy", 4000);
  const auto cu_ctx_push = driver_function<PFN_cuCtxPushCurrent_v4000>("cuCtxPushCurrent", 4000);
  const auto cu_ctx_pop = driver_function<PFN_cuCtxPopCurrent_v4000>("cuCtxPopCurrent", 4000);
  const auto cu_get_resource = driver_function<PFN_cuDeviceGetDevResource_v12040>("cuDeviceGetDevResource", 12040);
  const auto cu_split = driver_function<PFN_cuDevSmResourceSplitByCount_v12040>("cuDevSmResourceSplitByCount", 12040);
  const auto cu_desc = driver_function<PFN_cuDevResourceGenerateDesc_v12040>("cuDevResourceGenerateDesc", 12040);
  const auto cu_green_create = driver_function<PFN_cuGreenCtxCreate_v12040>("cuGreenCtxCreate", 12040);
  const auto cu_green_context = driver_function<PFN_cuCtxFromGreenCtx_v12040>("cuCtxFromGreenCtx", 12040);
  const auto cu_green_destroy = driver_function<PFN_cuGreenCtxDestroy_v12040>("cuGreenCtxDestroy", 12040);
  for (const void* fn : {(const void*)cu_device_get, (const void*)cu_ctx_create, (const void*)cu_ctx_destroy,
                         (const void*)cu_ctx_push, (const void*)cu_ctx_pop, (const void*)cu_get_resource,
                         (const void*)cu_split, (const void*)cu_desc, (const void*)cu_green_create,
                         (const void*)cu_green_context, (const void*)cu_green_destroy})
    ASSERT_NE(fn, nullptr) << "a driver function this test needs is missing (a driver older than CUDA 12.5)";
  std::vector<ForcedCase> cases = {{1, 4096, 4096, 4, 128, "sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256"},
                                   {1, 3584, 4096, 4, 128, "sm80_n128_m8_k256_s3_w4x1_skstream_lutsmem256"},
                                   {64, 4096, 4096, 4, 128, "sm80_n128_m64_k64_s4_w4x1_sk4_lutsmem256"},
                                   {5, 1000, 2048, 3, 32, "sm80_n64_m8_k128_s4_w4x1_skstream_lutsmem"}};
  if (current_device_info().arch() == 90) {
    cases.push_back({64, 1280, 5120, 4, 128, "sm90_n128_m32_k128_s4_w8x1_sk5_lutsmem256"});
    cases.push_back({77, 1000, 2048, 4, 128, "sm90_n128_m80_k64_s6_w8x1_skstream_lutsmem"});
  }
  expect_forced_configs_pass(cases);  // (the primary context: the kernels load here)
  int ordinal = 0;
  ASSERT_EQ(cudaGetDevice(&ordinal), cudaSuccess);
  CUdevice device = 0;
  ASSERT_EQ(cu_device_get(&device, ordinal), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  {
    CUcontext own = nullptr;
    ASSERT_EQ(cu_ctx_create(&own, nullptr, 0, device), CUDA_SUCCESS);  // (current from here)
    SCOPED_TRACE("a context of the caller's own");
    EXPECT_EQ(current_device_info().sm_count, device_info(ordinal).sm_count);
    expect_forced_configs_pass(cases);
    EXPECT_EQ(cu_ctx_pop(&popped), CUDA_SUCCESS);
    EXPECT_EQ(popped, own);
    EXPECT_EQ(cu_ctx_destroy(own), CUDA_SUCCESS);
  }
  CUdevResource sms{}, part{}, rest{};
  ASSERT_EQ(cu_get_resource(device, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  unsigned int groups = 1;
  ASSERT_EQ(cu_split(&part, &groups, &sms, &rest, 0, std::max(8u, sms.sm.smCount / 4 / 8 * 8)),
            CUDA_SUCCESS);
  ASSERT_EQ(groups, 1u);
  CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(cu_desc(&desc, &part, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  ASSERT_EQ(cu_green_create(&green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
  CUcontext green_context = nullptr;
  ASSERT_EQ(cu_green_context(&green_context, green), CUDA_SUCCESS);
  ASSERT_EQ(cu_ctx_push(green_context), CUDA_SUCCESS);
  {
    SCOPED_TRACE("a green context of " + std::to_string(part.sm.smCount) + " of " + std::to_string(sms.sm.smCount) +
                 " SMs");
    // the runtime plans for the context's SMs (grids, splits, the database's keys)
    EXPECT_EQ(context_sm_count(), static_cast<int>(part.sm.smCount));
    EXPECT_EQ(current_device_info().sm_count, static_cast<int>(part.sm.smCount));
    expect_forced_configs_pass(cases);
    // and its own choice: no database key has this SM count, so a similar key's or the heuristic's, for it
    expect_passes(problem(1, 4096, 4096, 4, 128, DType::bf16));
    expect_passes(problem(77, 1280, 2048, 4, 128, DType::bf16));
  }
  EXPECT_EQ(cu_ctx_pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(cu_green_destroy(green), CUDA_SUCCESS);
}

// x multicast (sm90 family, _mcN): pairs or fours of column tiles in a cluster share each x tile through TMA
// multicasts, with mbarriers between the blocks (kernels/gemm_sm90.cuh). M past the tile (rows zero-filled
// by TMA), M over several tiles, K past the last 64 columns, split-K, bias, 2/3-bit fp16, groups 32 and K,
// clusters of 4: against the reference, and bitwise the same run after run.
TEST(GemmGpu, XMulticastMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  if (current_device_info().arch() != 90) GTEST_SKIP() << "the sm90 family needs an sm_90 GPU";
  expect_forced_configs_pass({
           {64, 4096, 4096, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_mc2"},
           {77, 1280, 2048, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk2_lutsmem256_mc2"},
           {33, 1280, 1152, 3, 32, "sm90_n128_m32_k128_s4_w8x1_sk1_lutsmem_mc2"},
           {300, 2048, 1072, 2, 1072, "sm90_n256_m64_k64_s4_w16x1_sk1_lutreg_mc2"},
           {64, 28672, 1024, 4, 1024, "sm90_n256_m64_k128_s3_w16x1_sk1_lutsmem256_mc2"},
           {200, 4096, 512, 4, 128, "sm90_n128_m128_k64_s5_w8x1_sk2_lutsmem_mc4"},
           {1000, 2048, 1024, 4, 128, "sm90_n128_m256_k64_s4_w8x1_sk1_lutsmem256_mc2"}});
}

// The warp-specialized kernel (_ws): M and N tails, K past the last k tile's end in x (TMA zero fill),
// 2/3/4 bits, short and long groups, fp16, bias, split-K through the workspace and in clusters.
TEST(GemmGpu, WarpSpecializedMatchesReferenceAndIsDeterministic) {
  REQUIRE_GPU();
  if (current_device_info().arch() != 90) GTEST_SKIP() << "the sm90 family needs an sm_90 GPU";
  expect_forced_configs_pass({
           {64, 4096, 4096, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_ws"},
           {77, 1000, 2048, 4, 128, "sm90_n128_m64_k128_s4_w8x1_sk2_lutsmem256_ws"},
           {5, 1000, 2048, 3, 32, "sm90_n128_m32_k128_s4_w8x1_sk3_lutsmem_ws"},
           {33, 2048, 2048, 2, 2048, "sm90_n64_m64_k128_s4_w4x1_sk1_lutreg_ws"},
           {80, 640, 448, 4, 64, "sm90_n128_m80_k64_s6_w8x1_sk2_lutreg_ws"},
           {1, 8192, 1024, 4, 128, "sm90_n128_m8_k128_s4_w8x1_sk4_lutsmem256_ws"},
           {1000, 1024, 1024, 4, 128, "sm90_n128_m256_k64_s4_w8x1_sk1_lutsmem_ws"}});
}

TEST(GemmGpu, GpuPackerMatchesCpuPacker) {
  REQUIRE_GPU();
  for (int bits : {2, 3, 4}) {
    const QuantizedWeight q = bench::random_quantized_weight(200, 320, bits, 64, DType::bf16, ++g_seed);
    uint8_t* d_codes = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_codes), q.codes.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_codes, q.codes.data(), q.codes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    const DeviceWeight gw = DeviceWeight::pack_on_device(d_codes, q.n, q.k, bits, 64, DType::bf16, q.table.data(),
                                                         q.scales.data());
    EXPECT_EQ(gw.download_codes(), q.codes);
    const PackedShape s = packed_shape(q.n, q.k, bits, 64);
    std::vector<uint32_t> words(static_cast<size_t>(s.words()));
    ASSERT_EQ(cudaMemcpy(words.data(), gw.view().packed, words.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(words, pack_codes(q.codes.data(), q.n, q.k, bits));
    // an out-of-range code is refused
    const uint8_t bad = static_cast<uint8_t>(1 << bits);
    ASSERT_EQ(cudaMemcpy(d_codes + 17, &bad, 1, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_THROW(DeviceWeight::pack_on_device(d_codes, q.n, q.k, bits, 64, DType::bf16, q.table.data(),
                                              q.scales.data()),
                 Error);
    cudaFree(d_codes);
  }
}

TEST(GemmGpu, BadArgumentsThrowBeforeWritingAnything) {
  REQUIRE_GPU();
  const QuantizedWeight q = bench::random_quantized_weight(64, 128, 4, 128, DType::bf16, ++g_seed);
  const DeviceWeight w = DeviceWeight::upload(q);
  uint16_t *x = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), 4 * 128 * 2 + 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), 4 * 64 * 2 + 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(out, 0xff, 4 * 64 * 2 + 64), cudaSuccess);
  auto expect_error = [&](const std::function<void()>& fn, const char* arg) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << arg;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + arg + "'"), std::string::npos) << e.what();
    }
  };
  expect_error([&] { gemm(nullptr, 4, w.view(), nullptr, out); }, "x");
  expect_error([&] { gemm(x + 1, 4, w.view(), nullptr, out); }, "x");
  expect_error([&] { gemm(x, 4, w.view(), nullptr, out + 3); }, "out");
  expect_error([&] { gemm(x, 0, w.view(), nullptr, out); }, "m");
  WeightView bad = w.view();
  bad.n = 60;
  expect_error([&] { gemm(x, 4, bad, nullptr, out); }, "n");
  bad = w.view();
  bad.packed = nullptr;
  expect_error([&] { gemm(x, 4, bad, nullptr, out); }, "w.packed");
  GemmOptions forced;
  forced.config = KernelConfig::parse("sm80_n64_m16_k256_s3_w4x1_sk1_lutsmem");  // tile_k 256 > padded K 128
  expect_error([&] { gemm(x, 4, w.view(), nullptr, out, forced); }, "config");
  std::vector<uint16_t> host(4 * 64 + 32);
  ASSERT_EQ(cudaMemcpy(host.data(), out, host.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (uint16_t v : host) ASSERT_EQ(v, 0xffff) << "an output was written by a call that failed";
  cudaFree(x);
  cudaFree(out);
}

}  // namespace
}  // namespace lutmm
