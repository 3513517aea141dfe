// NVRTC compiles (no GPU needed): targets and their fallbacks, logs and errors, the ptxas report, the
// embedded device headers, and that no toolkit include path is ever needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "jit/embedded_headers.hpp"
#include "jit/internal.hpp"
#include "jit/jit_test_util.hpp"
#include "lutmm/error.hpp"

namespace lutmm::jit {
namespace {

using testing::scale_request;

bool is_elf(const std::vector<char>& image) {
  return image.size() >= 4 && std::memcmp(image.data(),
                                          "\x7f"
                                          "ELF",
                                          4) == 0;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no Error thrown)";
}

TEST(Nvrtc, VersionAndArchs) {
  EXPECT_TRUE(std::regex_match(nvrtc_version(), std::regex(R"(\d+\.\d+)"))) << nvrtc_version();
  const std::vector<int> archs = nvrtc_supported_archs();
  ASSERT_FALSE(archs.empty());
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  // lutmm's kernels target Ampere and Hopper; any NVRTC it supports must know both.
  EXPECT_TRUE(std::binary_search(archs.begin(), archs.end(), 80));
  EXPECT_TRUE(std::binary_search(archs.begin(), archs.end(), 90));
}

TEST(Nvrtc, TargetSelection) {
  const std::vector<int> archs = nvrtc_supported_archs();
  EXPECT_EQ(nvrtc_target(80, false), "sm_80");
  EXPECT_EQ(nvrtc_target(86, false), "sm_86");
  EXPECT_EQ(nvrtc_target(90, true), "sm_90a");
  const int newest = archs.back();
  // A later minor of the newest major: the cubin of the newest one runs there.
  if (newest % 10 < 9) EXPECT_EQ(nvrtc_target(newest + 1, false), "sm_" + std::to_string(newest));
  // A new major: only PTX can run there.
  const int next_major = (newest / 10 + 1) * 10;
  EXPECT_EQ(nvrtc_target(next_major, false), "compute_" + std::to_string(newest));
  EXPECT_EQ(nvrtc_target(next_major + 5, false), "compute_" + std::to_string(newest));
  // No fallback for arch-specific code, nothing below the oldest supported arch, no arch-specific sm_80a.
  EXPECT_NE(error_of([&] { nvrtc_target(next_major, true); }).find("'arch'"), std::string::npos);
  EXPECT_NE(error_of([&] { nvrtc_target(archs.front() - 1, false); }).find("'arch'"), std::string::npos);
  EXPECT_NE(error_of([] { nvrtc_target(80, true); }).find("'arch_specific'"), std::string::npos);
}

TEST(Compile, Sm80CubinAndResources) {
  const CompiledKernel k = compile(scale_request(80));
  EXPECT_FALSE(k.is_ptx);
  EXPECT_EQ(k.target, "sm_80");
  ASSERT_FALSE(k.cubin.empty());
  EXPECT_TRUE(is_elf(k.cubin));
  EXPECT_NE(k.log.find("ptxas"), std::string::npos) << k.log;
  EXPECT_NE(k.log.find("'lutmm_test_scale' for 'sm_80'"), std::string::npos) << k.log;
  EXPECT_GT(k.resources.registers, 0);
  EXPECT_LT(k.resources.registers, 64);  // a multiply-add kernel
  EXPECT_EQ(k.resources.spill_store_bytes, 0);
  EXPECT_EQ(k.resources.spill_load_bytes, 0);
  EXPECT_EQ(k.resources.stack_frame_bytes, 0);
  EXPECT_GT(k.compile_ms, 0.0);
  EXPECT_FALSE(k.from_disk_cache);
  EXPECT_FALSE(k.from_memory_cache);
}

TEST(Compile, Sm90aCubin) {
  CompileRequest r = scale_request(90);
  r.arch_specific = true;
  const CompiledKernel k = compile(r);
  EXPECT_FALSE(k.is_ptx);
  EXPECT_EQ(k.target, "sm_90a");
  EXPECT_TRUE(is_elf(k.cubin));
  EXPECT_NE(k.log.find("for 'sm_90a'"), std::string::npos) << k.log;
  EXPECT_GT(k.resources.registers, 0);
  EXPECT_EQ(k.resources.spill_store_bytes, 0);
  // Different machine code than sm_80.
  EXPECT_NE(k.cubin, compile(scale_request(80)).cubin);
}

TEST(Compile, NewerMajorFallsBackToPtx) {
  const int newest = nvrtc_supported_archs().back();
  const CompiledKernel k = compile(scale_request((newest / 10 + 1) * 10));
  EXPECT_TRUE(k.is_ptx);
  EXPECT_EQ(k.target, "compute_" + std::to_string(newest));
  ASSERT_FALSE(k.cubin.empty());
  EXPECT_EQ(k.cubin.back(), '\0');  // what cuModuleLoadData needs for PTX
  const std::string ptx(k.cubin.data());
  EXPECT_NE(ptx.find(".entry lutmm_test_scale"), std::string::npos);
  EXPECT_NE(ptx.find(".target sm_" + std::to_string(newest)), std::string::npos);
  EXPECT_EQ(k.resources.registers, -1);  // ptxas did not run: the driver allocates registers at load
}

TEST(Compile, SyntaxErrorThrowsWithNvrtcLog) {
  CompileRequest r = scale_request(80);
  r.source = "extern \"C\" __global__ void lutmm_test_scale(float* p) { p[0] = undeclared_thing_42; }\n";
  const std::string message = error_of([&] { compile(r); });
  EXPECT_NE(message.find("lutmm_test_scale"), std::string::npos) << message;
  EXPECT_NE(message.find("sm_80"), std::string::npos) << message;
  // NVRTC's own diagnostic, with the offending identifier.
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  EXPECT_NE(message.find("\"undeclared_thing_42\" is undefined"), std::string::npos) << message;
}

TEST(Compile, MissingKernelThrows) {
  CompileRequest r = scale_request(80);
  r.kernel_name = "not_in_the_source";
  const std::string message = error_of([&] { compile(r); });
  EXPECT_NE(message.find("not_in_the_source"), std::string::npos) << message;
}

TEST(Compile, MangledKernelRejected) {
  CompileRequest r = scale_request(80);
  r.source = "__global__ void lutmm_cpp_linkage(float* p) { p[0] = 1.f; }\n";
  r.kernel_name = "lutmm_cpp_linkage";
  const std::string message = error_of([&] { compile(r); });
  EXPECT_NE(message.find("'kernel_name'"), std::string::npos) << message;
  EXPECT_NE(message.find("extern \"C\""), std::string::npos) << message;
}

TEST(Compile, ArgumentsChecked) {
  auto expect_argument = [](CompileRequest r, const std::string& argument) {
    const std::string message = error_of([&] { compile(r); });
    EXPECT_NE(message.find("argument '" + argument + "'"), std::string::npos) << message;
    // cache_key validates the same way, so a bad request never reaches the cache.
    EXPECT_NE(error_of([&] { cache_key(r); }).find("argument '" + argument + "'"), std::string::npos);
  };
  CompileRequest r = scale_request(80);
  r.source.clear();
  expect_argument(r, "source");
  r = scale_request(80);
  r.source.push_back('\0');
  expect_argument(r, "source");
  r = scale_request(80);
  r.kernel_name = "two words";
  expect_argument(r, "kernel_name");
  r.kernel_name = "";
  expect_argument(r, "kernel_name");
  r = scale_request(50);
  expect_argument(r, "arch");
  r = scale_request(80);
  r.arch_specific = true;
  expect_argument(r, "arch_specific");
  r = scale_request(80);
  r.extra_options = {"-arch=sm_70"};
  expect_argument(r, "extra_options");
  r.extra_options = {"--gpu-architecture=sm_70"};
  expect_argument(r, "extra_options");
  r.extra_options = {""};
  expect_argument(r, "extra_options");
}

TEST(Compile, ExtraOptionsAndLutmmJitDefineReachNvrtc) {
  CompileRequest r = scale_request(80);
  r.source =
      "#if !defined(LUTMM_JIT)\n#error LUTMM_JIT must be defined\n#endif\n"
      "extern \"C\" __global__ void lutmm_test_scale(float* p) { p[0] = LUTMM_TEST_VALUE; }\n";
  EXPECT_NE(error_of([&] { compile(r); }).find("LUTMM_TEST_VALUE"), std::string::npos);
  r.extra_options = {"-DLUTMM_TEST_VALUE=3.0f"};
  EXPECT_FALSE(compile(r).cubin.empty());
}

TEST(Compile, UsesStdCpp17) {
  CompileRequest r = scale_request(80);
  r.source =
      "template <int... N> constexpr int sum = (N + ... + 0);\n"  // a C++17 fold expression
      "extern \"C\" __global__ void lutmm_test_scale(int* p) { if constexpr (sum<1, 2> == 3) p[0] = 1; }\n";
  EXPECT_FALSE(compile(r).cubin.empty());
}

TEST(EmbeddedHeaders, MatchTheDeviceFolder) {
  const std::filesystem::path root = std::filesystem::path(LUTMM_SOURCE_DIR) / "device";
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().extension() == ".cuh")
      on_disk.insert(std::filesystem::relative(entry.path(), root).generic_string());
  std::set<std::string> embedded;
  for (const EmbeddedHeader& h : embedded_device_headers()) {
    embedded.insert(h.name);
    std::ifstream in(root / h.name, std::ios::binary);
    ASSERT_TRUE(in) << h.name;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), h.text) << h.name << " differs from its file: rebuild";
  }
  EXPECT_EQ(embedded, on_disk);
}

TEST(EmbeddedHeaders, IncludableByName) {
  const auto& headers = embedded_device_headers();
  const bool has_common = std::any_of(headers.begin(), headers.end(), [](const EmbeddedHeader& h) {
    return std::string(h.name) == "lutmm/common.cuh";
  });
  ASSERT_TRUE(has_common) << "device/lutmm/common.cuh is the header every kernel includes";
  CompileRequest r = scale_request(80);
  r.source =
      "#include \"lutmm/common.cuh\"\n"
      "extern \"C\" __global__ void lutmm_test_scale(uint32_t* p, uint64_t* q) { p[0] = 7u; q[0] = 9ull; }\n";
  const CompiledKernel k = compile(r);
  EXPECT_TRUE(is_elf(k.cubin));
}

// Device code must compile from the embedded headers alone. NVRTC searches no directory unless told (the
// first half shows that), and compile() passes no -I: every embedded header, all in one translation unit,
// compiles for each target lutmm builds kernels for.
TEST(EmbeddedHeaders, CompileWithoutToolkitIncludePath) {
  CompileRequest toolkit = scale_request(80);
  toolkit.source = "#include <cuda_fp16.h>\n" + toolkit.source;
  const std::string message = error_of([&] { compile(toolkit); });
  EXPECT_NE(message.find("cuda_fp16.h"), std::string::npos) << message;

  std::string all = "// every embedded device header\n";
  for (const EmbeddedHeader& h : embedded_device_headers()) all += "#include \"" + std::string(h.name) + "\"\n";
  for (const auto& [arch, specific] : {std::pair{80, false}, std::pair{90, true}}) {
    CompileRequest r = scale_request(arch);
    r.arch_specific = specific;
    r.source = all + r.source;
    for (const std::string& option : detail::nvrtc_options(r, nvrtc_target(r.arch, r.arch_specific)))
      EXPECT_FALSE(option.starts_with("-I")) << option;
    EXPECT_NO_THROW(compile(r)) << error_of([&] { compile(r); });
  }
}

TEST(PtxasReport, ParsesEveryEntry) {
  // ptxas -v output of NVRTC 13 for a module with two kernels and a noinline helper.
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'kern2' for 'sm_80'\n"
      "ptxas info    : Function properties for kern2\n"
      "ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 30 registers, used 1 barriers, 1152 bytes smem, 256 bytes cumulative stack size, "
      "360 bytes cmem[0]\n"
      "ptxas info    : Compile time = 7.621 ms\n"
      "ptxas info    : Function properties for _Z6helperf\n"
      "ptxas         .     512 bytes stack frame, 640 bytes spill stores, 640 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'kern' for 'sm_80'\n"
      "ptxas info    : Function properties for kern\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers, 364 bytes cmem[0]\n"
      "ptxas info    : Compile time = 1.552 ms\n";
  const KernelResources kern = parse_ptxas_report(log, "kern");
  EXPECT_EQ(kern.registers, 8);
  EXPECT_EQ(kern.stack_frame_bytes, 0);
  EXPECT_EQ(kern.spill_store_bytes, 0);
  EXPECT_EQ(kern.spill_load_bytes, 0);
  EXPECT_EQ(kern.static_shared_bytes, 0);
  const KernelResources kern2 = parse_ptxas_report(log, "kern2");
  EXPECT_EQ(kern2.registers, 30);
  EXPECT_EQ(kern2.stack_frame_bytes, 256);
  EXPECT_EQ(kern2.spill_store_bytes, 8);
  EXPECT_EQ(kern2.spill_load_bytes, 12);
  EXPECT_EQ(kern2.static_shared_bytes, 1152);
  // The largest over the entries; the helper is no entry and is left out.
  const KernelResources any = parse_ptxas_report(log);
  EXPECT_EQ(any.registers, 30);
  EXPECT_EQ(any.stack_frame_bytes, 256);
  EXPECT_EQ(any.spill_store_bytes, 8);
  EXPECT_EQ(any.spill_load_bytes, 12);
  const KernelResources missing = parse_ptxas_report(log, "_Z6helperf");
  EXPECT_EQ(missing.registers, -1);
  EXPECT_EQ(missing.stack_frame_bytes, -1);
  EXPECT_EQ(missing.static_shared_bytes, -1);
  const KernelResources none = parse_ptxas_report("");
  EXPECT_EQ(none.registers, -1);
  EXPECT_EQ(none.spill_store_bytes, -1);
  EXPECT_EQ(none.spill_load_bytes, -1);
  EXPECT_EQ(none.stack_frame_bytes, -1);
}

TEST(PtxasReport, SeesSerializedWgmmas) {
  // NVRTC 13.0's log of an sm90 GEMM whose A registers were written between two wgmmas of its pipeline
  // (session 22: the k tile's copies issued after its first wgmma); the advisory precedes the entry's lines.
  const std::string log =
      "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
      "wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage in the "
      "function 'lutmm_gemm_sm90'\n"
      "ptxas info    : 279 bytes gmem\n"
      "ptxas info    : Compiling entry function 'lutmm_gemm_sm90' for 'sm_90a'\n"
      "ptxas info    : Function properties for lutmm_gemm_sm90\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 118 registers, used 1 barriers\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n";
  const KernelResources gemm = parse_ptxas_report(log, "lutmm_gemm_sm90");
  EXPECT_TRUE(gemm.wgmma_serialized);
  EXPECT_EQ(gemm.registers, 118);
  EXPECT_FALSE(parse_ptxas_report(log, "other").wgmma_serialized);
  EXPECT_TRUE(parse_ptxas_report(log).wgmma_serialized);
  EXPECT_FALSE(parse_ptxas_report("").wgmma_serialized);
}

TEST(PtxasReport, SeesTheStackFrameOfARealCompile) {
  // A large, dynamically indexed local array under a register cap goes to local memory.
  CompileRequest r = scale_request(80);
  r.source =
      "extern \"C\" __global__ void __launch_bounds__(1024, 2) lutmm_test_scale(float* p, int k) {\n"
      "  float a[256];\n"
      "  for (int i = 0; i < 256; ++i) a[i] = p[i * k];\n"
      "  p[threadIdx.x] = a[(k * threadIdx.x) & 255];\n"
      "}\n";
  const CompiledKernel k = compile(r);
  EXPECT_GT(k.resources.stack_frame_bytes, 0) << k.log;
  EXPECT_GE(k.resources.spill_store_bytes, 0) << k.log;
  EXPECT_GT(k.resources.registers, 0) << k.log;
}

}  // namespace
}  // namespace lutmm::jit
