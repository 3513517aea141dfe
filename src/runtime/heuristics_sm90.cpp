// The sm90 family's built-in choice (warpgroup MMA, H100/H200-class GPUs). Measured on the H200 (docs/NOTES.md,
// v1.9): against the best sm80 configs it wins the large layers from M = 64 up (64 x 8192 x 28672: 84 vs
// 106 us; 4096 x 8192 x 8192: 898 vs 1518 us) and loses the small ones, whose few tiles and short K leave its
// warpgroups waiting (64 x 1280 x 5120: 15 vs 11 us; 77 x 1280 x 2048: 8 vs 7 us), and every M <= 16.
#include <optional>

#include "lutmm/config.hpp"
#include "runtime/kernel_shapes.hpp"

namespace lutmm {

std::optional<KernelConfig> heuristic_config_sm90(const Problem& p, const DeviceInfo& dev) {
  if (dev.arch() != 90 || p.m < 49 || p.n * p.k < (int64_t{32} << 20)) return std::nullopt;
  KernelConfig c;
  c.family = 90;
  c.tile_k = 64;
  c.split_k = 0;
  if (p.m <= 80) {  // four warpgroups of N = 64 (80): 256 W rows a block, the 256-byte-row table for 4 bits
    c.tile_n = 256; c.tile_m = p.m <= 64 ? 64 : 80; c.stages = 4;
    c.lut = p.bits == 4 ? LutPlacement::shared_wide : LutPlacement::shared;
  } else if (p.m < 256) {
    c.tile_n = 256; c.tile_m = 128; c.stages = 4; c.lut = LutPlacement::shared;
  } else {  // two warpgroups of N = 256
    c.tile_n = 128; c.tile_m = 256; c.stages = 4; c.lut = LutPlacement::shared;
  }
  c.warps_n = c.tile_n / 16;
  if (!config_invalid_reason(c, p, dev).empty()) return std::nullopt;
  c.split_k = resolve_split_k(c, p, dev);
  return c;
}

}  // namespace lutmm
