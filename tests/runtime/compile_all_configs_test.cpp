// CI has no GPU, but NVRTC needs none: every kernel the sm80 family offers is compiled here for sm_80 and
// sm_90a, for every bit width, and must come out without register spills or a stack frame (local memory
// in the main loop would cost more than any tile choice gains), and the sm90 family without ptxas serializing
// its wgmmas (1.2x slower at M = 64, docs/NOTES.md v1.26). Runs the compiles on all cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "jit/jit.hpp"
#include "lutmm/config.hpp"
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "described_gpus.hpp"
#include "runtime/kernel_shapes.hpp"
#include "runtime/kernel_source.hpp"

namespace lutmm {
namespace {
using test::described_h200;

struct Job {
  Problem problem;
  KernelConfig config;
  int arch;
  KernelVariant variant{};  // the split-spread and pre-wait variants (runtime/kernel_source.hpp)
};

TEST(CompileAllConfigs, EveryKernelCompilesWithoutSpillsForSm80AndSm90a) {
  std::vector<Job> jobs;
  for (int arch : {80, 90}) {
    std::vector<KernelConfig> shapes = sm80_kernel_shapes();
    if (arch == 90) shapes.insert(shapes.end(), sm90_kernel_shapes().begin(), sm90_kernel_shapes().end());
    for (const auto& shape : shapes) {
      for (LutPlacement lut : {LutPlacement::shared, LutPlacement::shared_wide, LutPlacement::registers}) {
        for (int bits : {2, 3, 4}) {
          Problem p;
          p.m = 1; p.n = 4096; p.k = 4096; p.bits = bits; p.group_size = 128; p.dtype = DType::bf16;
          // the dtype and group variants change little: cover them on alternating kernels
          if ((bits + shape.tile_n / 16 + (lut == LutPlacement::shared)) % 3 == 0) p.dtype = DType::f16;
          if (bits == 3) p.group_size = shape.tile_m >= 64 ? 4096 : 32;
          KernelConfig c = shape;
          c.lut = lut;
          // what no GPU runs (lutsmem256 on 2 or 3 bits, lutreg on the largest warp tiles) is not compiled
          if (!config_invalid_reason(c, p, described_h200()).empty()) continue;
          jobs.push_back({p, c, arch});
          // the spread split-K variant: its epilogue differs, the main loop and dequantizers do not (4-bit)
          if (bits == 4) jobs.push_back({p, c, arch, {.split_spread = true}});
          // the pre-wait variant (sm_90+, where launches overlap): 64 more registers through the first k tile
          if (arch == 90 && shape.family == 80 &&
              sm80_prewait_slices(c.tile_n, c.tile_m, c.tile_k, c.warps_n, c.warps_m, c.warps_k, false, false) > 0)
            jobs.push_back({p, c, arch, {.prewait = true}});
          // the Stream-K instantiation where it is valid: forcible on sm90 tiles, offered on the sm80 decode
          // tiles (4-bit only there: the dequantizers are the split-K kernels')
          if (shape.family == 90 ? bits != 2 : shape.tile_m <= 16 && bits == 4) {
            KernelConfig stream_k = c;
            stream_k.split_k = kStreamK;
            if (config_invalid_reason(stream_k, p, described_h200()).empty()) jobs.push_back({p, stream_k, arch});
          }
          if (shape.family == 90) {  // x multicast to pairs of column tiles (TMA), where it is valid
            KernelConfig multicast = c;
            multicast.x_multicast = 2;
            if (config_invalid_reason(multicast, p, described_h200()).empty()) jobs.push_back({p, multicast, arch});
          }
          if (shape.family == 90 && bits != 2) {  // the warp-specialized kernel (forcible) where it is valid
            KernelConfig ws = c;
            ws.warp_specialized = true;
            if (config_invalid_reason(ws, p, described_h200()).empty()) jobs.push_back({p, ws, arch});
          }
          if (shape.family == 80 && shape.tile_m <= 16 && shape.warps_k == 1) {  // the decode shapes also come with W streamed into registers
            c.w_in_registers = true;
            c.min_blocks = 1;  // (forcible, not offered: not with the register cap of _occN)
            jobs.push_back({p, c, arch});
          }
        }
      }
    }
  }
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  double slowest_ms = 0;
  std::string slowest;
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const Job& j = jobs[i];
      const std::string what =
          fmt::format("{}{}{} {} sm_{}", j.config.name(), j.variant.split_spread ? " (split-spread)" : "",
                      j.variant.prewait ? " (prewait)" : "", j.problem.str(), j.arch);
      try {
        const jit::CompiledKernel k = jit::compile(gemm_kernel_request(j.problem, j.config, j.arch, j.variant));
        std::lock_guard lock(mutex);
        if (k.cubin.empty()) failures.push_back(what + ": empty cubin");
        if (k.resources.spill_store_bytes != 0 || k.resources.spill_load_bytes != 0)
          failures.push_back(fmt::format("{}: spills {} / {} bytes", what, k.resources.spill_store_bytes,
                                         k.resources.spill_load_bytes));
        if (k.resources.stack_frame_bytes != 0)
          failures.push_back(fmt::format("{}: {} bytes stack frame", what, k.resources.stack_frame_bytes));
        if (k.resources.registers <= 0) failures.push_back(what + ": no register count in the ptxas report");
        if (k.resources.wgmma_serialized) failures.push_back(what + ": ptxas serialized its wgmmas (C7513-like advisory)");
        // Static shared memory is the 128-byte-row pair table alone (plus the 1 KB that sm_90 compilers
        // reserve in it, which the runtime's residency counts per block): anything else is shared memory
        // the launch and the residency arithmetic do not know of.
        const int table = lut_row_bytes(j.config.lut) == 128 ? sm80_lut_bytes(j.problem.bits, 128) : 0;
        if (k.resources.static_shared_bytes > table + (j.arch >= 90 ? 1024 : 0))
          failures.push_back(fmt::format("{}: {} bytes of static shared memory, expected {}", what,
                                         k.resources.static_shared_bytes, table));
        if (k.compile_ms > slowest_ms) {
          slowest_ms = k.compile_ms;
          slowest = what;
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        failures.push_back(what + ": " + e.what());
      }
    }
  };
  std::vector<std::thread> pool;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::printf("compiled %zu kernels; slowest %.0f ms (%s)\n", jobs.size(), slowest_ms, slowest.c_str());
}

TEST(CompileAllConfigs, PackKernelCompilesForEveryBitWidth) {
  for (int bits : {2, 3, 4}) {
    const jit::CompiledKernel k = jit::compile(pack_kernel_request(bits, 80));
    EXPECT_FALSE(k.cubin.empty());
    EXPECT_EQ(k.resources.spill_store_bytes, 0);
  }
}

// The developer timeline (ptx/timeline.cuh) is in a kernel only when asked for: its format string is in the
// cubin with -DLUTMM_TIMELINE=1 and absent without, for both families; -DLUTMM_TIMELINE=3 (the trace buffer
// instead of printf) compiles without the format string and without spills.
TEST(CompileAllConfigs, TimelineInstrumentationIsCompiledInOnlyOnRequest) {
  Problem p;
  p.m = 1; p.n = 4096; p.k = 4096; p.bits = 4; p.group_size = 128; p.dtype = DType::bf16;
  auto has_timeline = [](const jit::CompiledKernel& k) {
    const std::string marker = "TL %d blk";
    return std::search(k.cubin.begin(), k.cubin.end(), marker.begin(), marker.end()) != k.cubin.end();
  };
  for (const char* name : {"sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256", "sm90_n128_m64_k64_s6_w8x1_sk1_lutsmem"}) {
    jit::CompileRequest plain = gemm_kernel_request(p, KernelConfig::parse(name), 90);
    jit::CompileRequest timed = plain;
    timed.extra_options.push_back("-DLUTMM_TIMELINE=1");
    const jit::CompiledKernel without = jit::compile(plain), with = jit::compile(timed);
    EXPECT_FALSE(has_timeline(without)) << name;
    EXPECT_TRUE(has_timeline(with)) << name;
    EXPECT_EQ(with.resources.spill_store_bytes, 0) << name;
    jit::CompileRequest traced = plain;
    traced.extra_options.push_back("-DLUTMM_TIMELINE=3");
    const jit::CompiledKernel trace = jit::compile(traced);
    EXPECT_FALSE(has_timeline(trace)) << name;
    EXPECT_EQ(trace.resources.spill_store_bytes, 0) << name;
  }
}

// x multicast and warp-specialized kernels take x's tensor map as a second __grid_constant__ parameter; every
// other kernel keeps the one parameter block (runtime/gemm.cpp passes both pointers; the driver reads what a
// kernel declares). The warp-specialized one is its own entry function, launched with its producer warp.
TEST(CompileAllConfigs, OnlyXMulticastAndWarpSpecializedKernelsTakeATensorMap) {
  Problem p;
  p.m = 64; p.n = 4096; p.k = 4096; p.bits = 4; p.group_size = 128; p.dtype = DType::bf16;
  const std::string with = gemm_kernel_request(p, KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_mc2"), 90).source;
  const std::string ws = gemm_kernel_request(p, KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256_ws"), 90).source;
  const std::string without = gemm_kernel_request(p, KernelConfig::parse("sm90_n128_m64_k128_s4_w8x1_sk4_lutsmem256"), 90).source;
  for (const std::string& s : {with, ws})
    EXPECT_NE(s.find("const __grid_constant__ lutmm::ptx::TensorMap x_map"), std::string::npos) << s;
  EXPECT_EQ(without.find("TensorMap"), std::string::npos) << without;
  EXPECT_NE(with.find("Sm90Kernel<4, 128, true, 128, 64, 128, 4, 8, 256, false, 2, false>"), std::string::npos) << with;
  EXPECT_NE(ws.find("Sm90Kernel<4, 128, true, 128, 64, 128, 4, 8, 256, false, 1, true>"), std::string::npos) << ws;
  EXPECT_NE(ws.find("lutmm::gemm_sm90_ws<Kernel>"), std::string::npos) << ws;
  EXPECT_NE(ws.find("#include \"lutmm/kernels/gemm_sm90_ws.cuh\""), std::string::npos) << ws;
  EXPECT_NE(ws.find("__launch_bounds__(Kernel::kBlockThreads"), std::string::npos) << ws;
  EXPECT_EQ(without.find("gemm_sm90_ws"), std::string::npos) << without;
}

}  // namespace
}  // namespace lutmm
