#pragma once
// The tiny translation unit the JIT compiles for one kernel: it only instantiates a header-only kernel.
#include <string>
#include <vector>

#include "jit/jit.hpp"
#include "lutmm/config.hpp"

namespace lutmm {

// The GEMM kernels are named after their family: lutmm_gemm_sm80, lutmm_gemm_sm90 (what a profiler shows).
inline constexpr const char* kPackKernelName = "lutmm_pack_codes";

// The launch-time variants of one config's kernel, each an instantiation of its own (any change to the kernel's
// code moves the register allocation of its inlined main loop, docs/NOTES.md v1.12; runtime/gemm.cpp decides where
// each runs).
struct KernelVariant {
  bool split_spread = false;  // its splits of a tile sum it together (epilogue/epilogue.cuh: SplitSpread<K>)
  bool prewait = false;       // sm80 family: the first slices before the dependency wait (PrewaitFirstSlices<K>)
  bool operator==(const KernelVariant&) const = default;
};

// group_size >= k (one scale per row) compiles as group 0.
// Developer experiments: the words of $LUTMM_NVRTC_OPTIONS ("-DNAME=1 ..."), which every kernel request carries
// (and its cache key); empty where it is unset.
std::vector<std::string> developer_nvrtc_options();

jit::CompileRequest gemm_kernel_request(const Problem& p, const KernelConfig& c, int arch, KernelVariant variant = {});
jit::CompileRequest pack_kernel_request(int bits, int arch);
int kernel_group(const Problem& p);
// Whether the kernel of c takes x's TMA tensor map as a second parameter (x multicast, _mcN, and the
// warp-specialized kernel, _ws, load x by TMA); runtime/gemm.cpp encodes the map for those.
bool kernel_takes_x_map(const KernelConfig& c);

}  // namespace lutmm
