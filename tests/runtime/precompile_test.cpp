// lutmm::precompile compiles a config's kernel and the variants a run may launch: for a described GPU only those
// that GPU may take. NVRTC needs no GPU; the cubins written to a fresh cache folder say what was compiled.
#include <gtest/gtest.h>

#include "described_gpus.hpp"
#include "jit/jit_test_util.hpp"
#include "lutmm/gemm.hpp"

namespace lutmm {
namespace {
using jit::testing::CacheTest;
using jit::testing::ScopedEnv;

class Precompile : public CacheTest {
 protected:
  int64_t cubins() const { return jit::testing::count_cubins(dir_.path()); }
};

// An sm_90 GPU with HBM bringing each SM `bytes_per_sm_clock` bytes a clock at 1.98 GHz.
DeviceInfo sm90_with_memory(const char* name, double bytes_per_sm_clock) {
  DeviceInfo d = test::described(name, 9, 0, 132, 50, 227, 228, 2048);
  d.sm_clock_khz = 1980000;
  d.memory_bytes_per_second = static_cast<int64_t>(bytes_per_sm_clock * 132 * 1.98e9);
  return d;
}

Problem decode_problem(int64_t k, int group_size = 128, DType dtype = DType::bf16) {
  Problem p;
  p.m = 1;
  p.n = 8192;
  p.k = k;
  p.bits = 3;
  p.group_size = group_size;
  p.dtype = dtype;
  return p;
}

// (Each step that should compile the variant uses a kernel not compiled before: another group size or dtype.)
TEST_F(Precompile, TheVariantsOnlyWhereTheGpuAndEverySplitMayTakeThem) {
  const DeviceInfo h100_like = sm90_with_memory("NVIDIA H100 80GB HBM3", 12.8);
  const DeviceInfo h200_like = sm90_with_memory("NVIDIA H200", 18.8);
  // 128-wide k tiles, one x column block a warp: a config with the pre-wait slices
  KernelConfig c = KernelConfig::parse("sm80_n128_m8_k128_s4_w4x1_sk4_lutsmem");
  precompile(decode_problem(8192), c, h100_like);  // four splits of 16 k tiles, but the H100's HBM: plain only
  EXPECT_EQ(cubins(), 1);
  {
    ScopedEnv off("LUTMM_PREWAIT", "0");
    precompile(decode_problem(8192), c, h200_like);
    EXPECT_EQ(cubins(), 1) << "LUTMM_PREWAIT=0";
  }
  c.split_k = 2;
  precompile(decode_problem(1920), c, h200_like);  // 15 k tiles in splits of 8 and 7: never the variant
  EXPECT_EQ(cubins(), 1) << "a split of 7 k tiles";
  c.split_k = 1;
  {
    ScopedEnv on("LUTMM_PREWAIT", "1");  // the bandwidth condition dropped: the H100 takes it too
    precompile(decode_problem(1920), c, h100_like);  // one split of 15
    EXPECT_EQ(cubins(), 2) << "LUTMM_PREWAIT=1";
  }
  precompile(decode_problem(1920, 64), c, h200_like);
  EXPECT_EQ(cubins(), 4) << "the H200, one split of 15";
  // for an architecture, whatever its GPUs' HBM: the variant wherever the splits allow
  c.split_k = 4;
  precompile(decode_problem(8192, 128, DType::f16), c, 90);
  EXPECT_EQ(cubins(), 6) << "sm_90";
  // Stream-K blocks run items of any length: its kernels have no variant (prewait_slices_of is 0 for them), whatever
  // the K and the GPU
  c.split_k = kStreamK;
  {
    ScopedEnv on("LUTMM_PREWAIT", "1");
    precompile(decode_problem(8192), c, h200_like);
    EXPECT_EQ(cubins(), 7) << "Stream-K";
  }
}

TEST_F(Precompile, NoVariantBeforeSm90) {
  // the same config on an A100: no dependent launch, so the plain kernel for sm_80 only
  const KernelConfig c = KernelConfig::parse("sm80_n128_m8_k128_s4_w4x1_sk4_lutsmem");
  precompile(decode_problem(8192), c, test::described_a100());
  EXPECT_EQ(cubins(), 1);
}

}  // namespace
}  // namespace lutmm
