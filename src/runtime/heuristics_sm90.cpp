// The sm90 family's built-in choice (warpgroup MMA, H100/H200-class GPUs), from the session-5 H200 tuning of
// both shape sets (docs/bench/tune_*.txt; gains are tuned sm90 over the best sm80 heuristic pick): it wins
// every M >= 81 layer with N >= 1024 a multiple of 128 (1.1-1.8x), M = 33..80 from 8M weights up (1.15-1.25x),
// M = 17..32 on 16M+ weights (1.09-1.13x); it loses the small layers at M <= 80, whose few tiles and short K
// leave its warpgroups waiting (77 x 1280 x 2048: 8 vs 7 us), N < 1024 or N % 128 != 0, and every M <= 16.
#include <optional>

#include "lutmm/config.hpp"
#include "runtime/kernel_shapes.hpp"

namespace lutmm {

std::optional<KernelConfig> heuristic_config_sm90(const Problem& p, const DeviceInfo& dev) {
  if (dev.arch() != 90 || p.m < 17 || p.n < 1024 || p.n % 128 != 0) return std::nullopt;
  const int64_t weights = p.n * p.k;
  KernelConfig c;
  c.family = 90;
  c.split_k = 0;
  c.lut = LutPlacement::shared;
  auto shape = [&](int tile_n, int tile_m, int tile_k, int stages) {
    c.tile_n = tile_n; c.tile_m = tile_m; c.tile_k = tile_k; c.stages = stages; c.warps_n = tile_n / 16;
  };
  if (p.m <= 32) {
    // 17..32 on 16M+ weights: two warpgroups of N = 32 (1.09-1.13x); where 128-row tiles exceed 1.5 per SM
    // the sm80 four-strip tile stays ahead (32 x 28672 x 8192)
    if (weights < (int64_t{16} << 20) || 2 * (p.n / 128) > 3 * dev.sm_count) return std::nullopt;
    shape(128, 32, 128, 4);
  } else if (p.m <= 80) {
    if (weights < (int64_t{8} << 20)) return std::nullopt;  // small layers: the sm80 kernels' shorter fixed costs
    if (weights < (int64_t{32} << 20)) {  // one warpgroup of N = 64, the register table (8-16M: 1.15-1.18x)
      if (p.m > 64) return std::nullopt;
      shape(64, 64, 128, 4);
      c.lut = LutPlacement::registers;
    } else {  // four warpgroups of N = 64 (80), the 256-byte-row table for 4 bits (1.2-1.25x)
      shape(256, p.m <= 64 ? 64 : 80, 64, 4);
      if (p.bits == 4) c.lut = LutPlacement::shared_wide;
    }
  } else if (p.m <= 512 && weights <= (int64_t{2} << 20)) {
    shape(64, 64, 128, 4);  // small layers: one warpgroup of N = 64, the register table (1.4-1.6x)
    c.lut = LutPlacement::registers;
  } else if (p.m <= 512 && weights <= (int64_t{4} << 20)) {
    shape(128, 80, 64, 6);  // N = 80, the register table (333 x 1536 x 1536: 1.39x over the shared one)
    c.lut = LutPlacement::registers;
  } else if (p.m <= 160 && weights < (int64_t{32} << 20)) {
    shape(256, 64, 64, 4);  // M = 81..160 on mid-size weights: N = 64 (128 x 4096 x 4096: 1.43x over N = 128)
    if (p.bits == 4) c.lut = LutPlacement::shared_wide;
  } else if (p.m >= 256 && weights >= (int64_t{16} << 20)) {
    shape(128, 256, 64, 4);  // two warpgroups of N = 256 (1.6-1.7x)
  } else if (p.n >= 3072 || (p.m >= 2048 && p.n >= 1536)) {
    shape(256, 128, 64, 4);  // four warpgroups of N = 128 (1.3-1.8x), the 256-byte-row table for 4 bits
    if (p.bits == 4) c.lut = LutPlacement::shared_wide;
  } else {
    shape(128, 80, 64, 6);  // N = 1024..3071: two warpgroups of N = 80 (1.1-1.15x)
  }
  if (!config_invalid_reason(c, p, dev).empty()) return std::nullopt;
  c.split_k = resolve_split_k(c, p, dev);
  return c;
}

}  // namespace lutmm
