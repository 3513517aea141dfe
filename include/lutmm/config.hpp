#pragma once
// A kernel config: one small value type with a readable, stable name. It is what users force, what the
// tuner stores and what error messages print. The packed weight layout does not depend on it.
//
//   sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem[_wreg][_occ3]      (w4x1x2: two warp groups split each k tile)
//   |    |   |   |    |  |    |   '-- where the dequant table lives: lutsmem (a pair table in shared memory),
//   |    |   |   |    |  |    |       lutsmem256 (4-bit only: the same with 256-byte rows, 64 KB, one
//   |    |   |   |    |  |    |       instruction fewer per lookup) or lutreg (registers)
//   |    |   |   |    |  |    '------ split-K: sk1, sk2, ... or skauto (from the SM count at run time), or
//   |    |   |   |    |  |            skstream (Stream-K: one wave of blocks sharing all the work evenly)
//   |    |   |   |    |  '----------- warps along N x warps along M [x warp groups along K, when > 1:
//   |    |   |   |    |               each takes its share of every k tile's slices; their partial
//   |    |   |   |    |               tiles are added in shared memory in group order]
//   |    |   |   |    '-------------- pipeline stages
//   |    |   |   '------------------- K per main-loop step (multiple of 64)
//   |    |   '----------------------- x rows (M) per block (multiple of 8)
//   |    '--------------------------- W rows (N) per block (multiple of 16)
//   '-------------------------------- kernel family: sm80 = mma.sync path, runs on every sm_80+ GPU;
//                                     sm90 = warpgroup MMA (wgmma, sm_90 GPUs only): one 16-row strip per
//                                     warp, whole warpgroups (w4x1, w8x1, w16x1), no _wreg / _occN
//   _wreg (optional): W streams global -> registers one k tile ahead instead of through shared memory
//   _occN (optional, N >= 2): the kernel is compiled for N resident blocks per SM (__launch_bounds__ caps
//         its registers at what N blocks leave each thread), and the config is valid only where N blocks'
//         shared memory fits one SM
//   _mcN (optional, sm90, N = 2 or 4): N neighbouring column tiles run as one thread-block cluster that
//         reads each x tile from L2 once: every block's TMA unit loads 1/N of its rows and multicasts them
//         into all N blocks (at M = 64 the blocks re-read x as many bytes as W from L2 otherwise).
//         Forcible, not offered: slower on every shape measured on the H200 (docs/NOTES.md, v1.11)
//   _ws (optional, sm90, split-K): warp-specialized: one more warp per block fills whole stages (x by TMA)
//         and hands them over through per-stage mbarriers instead of a block barrier per k tile
//         (kernels/gemm_sm90_ws.cuh). Forcible, not offered: from 2% faster to 15% slower than the block-
//         synchronous kernel on the H200 (docs/NOTES.md, v1.13)
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lutmm/device.hpp"
#include "lutmm/dtype.hpp"

namespace lutmm {

enum class LutPlacement : uint8_t { shared, registers, shared_wide };
// Bytes per pair-table row in shared memory (0: the table lives in registers).
inline int lut_row_bytes(LutPlacement lut) {
  return lut == LutPlacement::registers ? 0 : (lut == LutPlacement::shared_wide ? 256 : 128);
}

// KernelConfig::split_k for Stream-K: one wave of blocks (SMs x blocks per SM, read at run time) divide the
// (output tile, k tile) units evenly; blocks that share a tile add their partial tiles in a fixed order.
constexpr int kStreamK = -1;

struct KernelConfig {
  int family = 80;
  int tile_n = 64;
  int tile_m = 16;
  int tile_k = 128;
  int stages = 4;
  int warps_n = 4;
  int warps_m = 1;
  int warps_k = 1;  // warp groups splitting each k tile (name: w{n}x{m}x{k}, the x{k} only when > 1)
  int split_k = 0;  // 0 = automatic, kStreamK = Stream-K
  LutPlacement lut = LutPlacement::shared;
  bool w_in_registers = false;
  int min_blocks = 1;  // _occN: blocks per SM the kernel is compiled to fit
  int x_multicast = 1;  // _mcN: column tiles per cluster sharing each x tile (sm90; 1: none)
  bool warp_specialized = false;  // _ws: a producer warp and mbarrier stages (sm90)

  // The launch's block: the MMA warps, and the producer warp of _ws.
  int threads() const { return 32 * (warps_n * warps_m * warps_k + (warp_specialized ? 1 : 0)); }
  std::string name() const;
  static KernelConfig parse(std::string_view name);  // throws Error naming 'config'
  bool operator==(const KernelConfig&) const = default;
};

// One GEMM problem as the runtime sees it.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int bits = 4;
  int group_size = 128;  // == k for one scale per row
  DType dtype = DType::bf16;
  bool has_bias = false;
  std::string str() const;  // "M=1 N=4096 K=4096 b4 g128 bf16"
  static Problem of(int64_t m, int64_t n, int64_t k, int bits = 4, int group_size = 128, DType dtype = DType::bf16) {
    Problem p;
    p.m = m; p.n = n; p.k = k; p.bits = bits; p.group_size = group_size; p.dtype = dtype;
    return p;
  }
};

// Shape rules of the problem (checked before any launch; throws Error naming the argument).
void check_problem(const Problem& p);
// Whether cfg can run p on dev; when not, why (empty string when valid).
std::string config_invalid_reason(const KernelConfig& cfg, const Problem& p, const DeviceInfo& dev);
// Every config the library offers for p on dev (split_k concrete values and auto).
std::vector<KernelConfig> valid_configs(const Problem& p, const DeviceInfo& dev);
// The built-in choice without measurement (runtime/heuristics_sm90.cpp on sm_90 GPUs where that family wins,
// runtime/heuristics_sm80.cpp otherwise). split_k comes out concrete (a count, or Stream-K for the large decode
// layers whose split-K grid leaves block slots idle).
KernelConfig heuristic_config(const Problem& p, const DeviceInfo& dev);
// How many blocks of cfg fit on one SM of dev at once (shared memory, threads, an estimate of registers).
int resident_blocks_per_sm(const KernelConfig& cfg, const Problem& p, const DeviceInfo& dev);
// Resolves split_k = 0 to a concrete count from the SM count (kStreamK stays kStreamK).
int resolve_split_k(const KernelConfig& cfg, const Problem& p, const DeviceInfo& dev);
// The grid of a Stream-K config: blocks (one wave), output tiles, k tiles per tile, and the most blocks
// that share one tile (the workspace's slots per tile).
struct StreamKShape {
  int blocks = 0;
  int64_t tiles = 0;
  int k_tiles = 0;
  int max_sharing = 0;
  bool schedule_fits = true;  // the kernel's 32-bit schedule arithmetic holds ((units + 1) x blocks < 2^32)
};
StreamKShape stream_k_shape(const KernelConfig& cfg, const Problem& p, const DeviceInfo& dev);

}  // namespace lutmm
