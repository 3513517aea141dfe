#include "runtime/kernel_source.hpp"

#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "lutmm/error.hpp"

namespace lutmm {

int kernel_group(const Problem& p) { return p.group_size >= p.k ? 0 : p.group_size; }

bool kernel_takes_x_map(const KernelConfig& c) { return c.x_multicast > 1 || c.warp_specialized; }

namespace {
// sm_90 and sm_100-class GPUs get their arch-specific target; the sm80 family uses no feature of it, but
// later families do and one target per GPU keeps the cache simple.
bool arch_specific(int arch) { return arch == 90 || arch == 100 || arch == 103; }

jit::CompileRequest request(std::string kernel_name, int arch, std::string source) {
  jit::CompileRequest r;
  r.kernel_name = std::move(kernel_name);
  r.arch = arch;
  r.arch_specific = arch_specific(arch);
  r.source = std::move(source);
  r.extra_options = developer_nvrtc_options();
  return r;
}
}  // namespace

std::vector<std::string> developer_nvrtc_options() {
  std::vector<std::string> options;
  if (const char* extra = std::getenv("LUTMM_NVRTC_OPTIONS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) options.push_back(w);
  }
  return options;
}

jit::CompileRequest gemm_kernel_request(const Problem& p, const KernelConfig& c, int arch, KernelVariant variant) {
  // split-K is a launch parameter: the comment names the kernel with it normalised, so every split of one
  // tile shape is the same source, cache key and loaded module.
  KernelConfig kernel = c;
  kernel.split_k = c.split_k == kStreamK ? kStreamK : 0;  // Stream-K is its own instantiation
  const int group = kernel_group(p), lut_bytes = lut_row_bytes(c.lut);
  const bool bf16 = p.dtype == DType::bf16;
  // The family's traits struct (kernels/gemm_sm80_config.cuh, gemm_sm90_config.cuh) and entry function.
  std::string traits =
      c.family == 90
          ? fmt::format("Sm90Kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}>", p.bits, group, bf16,
                        c.tile_n, c.tile_m, c.tile_k, c.stages, c.warps_n, lut_bytes, c.split_k == kStreamK,
                        c.x_multicast, c.warp_specialized)
          : fmt::format("Sm80Kernel<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}>", p.bits, group, bf16,
                        c.tile_n, c.tile_m, c.tile_k, c.stages, c.warps_n, c.warps_m, lut_bytes, c.w_in_registers,
                        c.warps_k, c.split_k == kStreamK);
  if (variant.prewait) {
    if (c.family != 80) throw_argument_error("variant.prewait", "an sm80-family config", c.name());
    traits = fmt::format("PrewaitFirstSlices<lutmm::{}>", traits);  // (kernels/gemm_sm80_config.cuh)
  }
  if (variant.split_spread) traits = fmt::format("SplitSpread<lutmm::{}>", traits);  // (epilogue/epilogue.cuh)
  const char* family = c.family == 90 ? "sm90" : "sm80";
  const std::string name = fmt::format("lutmm_gemm_{}", family);  // (one name per family: `ncu -k` finds both sm90 kernels)
  const std::string entry = c.family == 90 && c.warp_specialized ? "sm90_ws" : family;  // header and function
  const bool x_map = kernel_takes_x_map(c);
  return request(name, arch, fmt::format(
      "// lutmm generated: {cfg} b{bits} g{group} {dtype}{spread}{prewait}\n"
      "#include \"lutmm/kernels/gemm_{entry}.cuh\"\n"
      "using Kernel = lutmm::{traits};\n"
      "extern \"C\" __global__ void __launch_bounds__(Kernel::kBlockThreads, {min_blocks})\n"
      "{name}(const __grid_constant__ lutmm::GemmParams p{map_param}) {{ lutmm::gemm_{entry}<Kernel>(p{map_arg}); }}\n",
      fmt::arg("cfg", kernel.name()), fmt::arg("bits", p.bits), fmt::arg("group", group),
      fmt::arg("dtype", bf16 ? "bf16" : "fp16"), fmt::arg("spread", variant.split_spread ? " split-spread" : ""),
      fmt::arg("prewait", variant.prewait ? " prewait" : ""),
      fmt::arg("entry", entry), fmt::arg("traits", traits),
      fmt::arg("min_blocks", c.min_blocks), fmt::arg("name", name),
      fmt::arg("map_param", x_map ? ", const __grid_constant__ lutmm::ptx::TensorMap x_map" : ""),
      fmt::arg("map_arg", x_map ? ", &x_map" : "")));
}

jit::CompileRequest pack_kernel_request(int bits, int arch) {
  return request(kPackKernelName, arch, fmt::format(
      "#include \"lutmm/kernels/pack_codes.cuh\"\n"
      "extern \"C\" __global__ void {name}(const unsigned char* codes, int n, int k, int k_padded, long long atoms,\n"
      "                                   unsigned int* packed, unsigned int* bad_codes) {{\n"
      "  lutmm::pack_codes_kernel<{bits}>(codes, n, k, k_padded, atoms, packed, bad_codes);\n}}\n",
      fmt::arg("name", kPackKernelName), fmt::arg("bits", bits)));
}

}  // namespace lutmm
