#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "lutmm/config.hpp"

namespace lutmm {

// The tile shapes the sm80 family offers (split_k and lut left at their defaults). A deliberately
// small set: each is one JIT instantiation per (bits, group, dtype), compiled only when a run needs it.
const std::vector<KernelConfig>& sm80_kernel_shapes();
// The sm90 family's (warpgroup MMA, sm_90 GPUs only): one 16-row strip per warp, whole warpgroups.
const std::vector<KernelConfig>& sm90_kernel_shapes();

// Output tiles of tile_n x tile_m over p (N x M; the heuristics' grid arithmetic).
inline int64_t tile_count(const Problem& p, int tile_n, int tile_m) {
  return ((p.n + tile_n - 1) / tile_n) * ((p.m + tile_m - 1) / tile_m);
}

// How full the waves of a grid of `blocks` are on `slots` resident block slots: blocks over whole waves' slots
// (1: every wave full).
inline double wave_fill(int64_t blocks, int64_t slots) {
  if (slots < 1) slots = 1;
  return static_cast<double>(blocks) / static_cast<double>((blocks + slots - 1) / slots * slots);
}

// The sm90 family's choice where it beats the sm80 kernels (runtime/heuristics_sm90.cpp); nothing elsewhere.
std::optional<KernelConfig> heuristic_config_sm90(const Problem& p, const DeviceInfo& dev);

// Shared memory of a block of c on p: all of it (static + dynamic), and the dynamic part the launch asks for.
int config_shared_bytes(const KernelConfig& c, const Problem& p);
int config_dynamic_shared_bytes(const KernelConfig& c, const Problem& p);
// What a resident block of c takes of an SM's shared memory: config_shared_bytes plus the 1 KB the driver
// reserves per block on sm_80+.
int config_sm_shared_bytes(const KernelConfig& c, const Problem& p);

}  // namespace lutmm
