// The sm90 family's built-in choice (warpgroup MMA, H100/H200-class GPUs), from the H200 tunings of both
// shape sets (docs/bench/tune_*.txt; gains are tuned sm90 over the best sm80 heuristic pick). Session 5: it
// wins every M >= 81 layer with N >= 1024 a multiple of 128 (1.1-1.8x), M = 33..80 from 8M weights up
// (1.15-1.25x), M = 17..32 on 16M+ weights (1.09-1.13x); it loses every M <= 16 and, at M <= 80, the layers
// under 2M weights. Session 6 (after the cheaper split-K epilogue, docs/NOTES.md v1.10): also M = 33..80 on
// 2-8M weights (77 x 1280 x 2048 1.19x, 64 x 1280 x 5120 1.10x), the large-M layers with N < 1024
// (4096 x 320 x 320 1.47x, 1024 x 640 x 2560 1.17x), and 256-row warpgroup tiles of N = 128 ahead of 128-row
// ones of N = 256 at every large M (1.02-1.10x), of N = 80 where that fills the SMs' waves better.
#include <algorithm>
#include <optional>
#include <utility>

#include "lutmm/config.hpp"
#include "runtime/kernel_shapes.hpp"

namespace lutmm {

namespace {

// Whether the same tile `tall` made short_m rows high (with short_stages) finishes sooner when every SM runs
// one block at a time: waves of blocks (tiles x splits over the SMs) times the rows a block computes per
// split. The shorter tile must win by 20% (more tiles also re-read more of W: 1024 x 10240 x 1280 and
// 4096 x 2560 x 320, estimated 0.83, ran faster on the taller one).
// The work of tile t's grid when every SM runs one block at a time: waves of blocks (tiles x splits over the
// SMs) times the outputs a block computes per split.
double wave_work(const Problem& p, const DeviceInfo& dev, const KernelConfig& t) {
  const int splits = resolve_split_k(t, p, dev);
  const int64_t waves = (tile_count(p, t.tile_n, t.tile_m) * splits + dev.sm_count - 1) / std::max(1, dev.sm_count);
  return static_cast<double>(waves) * t.tile_n * t.tile_m / splits;
}

bool shorter_tile_fits_waves_better(const Problem& p, const DeviceInfo& dev, const KernelConfig& tall, int short_m,
                                    int short_stages) {
  KernelConfig low = tall;
  low.tile_m = short_m;
  low.stages = short_stages;
  return config_invalid_reason(low, p, dev).empty() && wave_work(p, dev, low) < 0.8 * wave_work(p, dev, tall);
}

// How much of the SMs' time a grid of tile c spends on real outputs, a block an SM at a time: M x N over the waves'
// block slots times the tile's outputs (idle slots of the last wave and the padding of N and M both count against it).
double useful_fill(const Problem& p, const DeviceInfo& dev, const KernelConfig& c) {
  const int64_t sms = std::max(1, dev.sm_count);
  const int64_t waves = (tile_count(p, c.tile_n, c.tile_m) + sms - 1) / sms;
  return static_cast<double>(p.m) * static_cast<double>(p.n) /
         (static_cast<double>(waves * sms) * c.tile_n * c.tile_m);
}

// A two-warpgroup tile of N = 96, 160 or 192 (128 rows) whose grid is one wave and keeps the SMs at least 1.25x as
// busy with real outputs as tile's unsplit grid (useful_fill; the busiest of the three). Session 20's retunes
// (docs/NOTES.md v1.24): 4096 x 640 x {640, 2560} on 128 x 160 (130 tiles) 0.77x of 256 x 128 (96 tiles, N padded to
// 768), 4096 x 320 x {320, 1280} on 128 x 96 (129) 0.88-0.90x of 128 x 128 (96), 4608 x 640 x 2560 and 8192 x 320 x
// 1280 on 128 x 192 (120, 129) 0.81-0.83x of 256 x 128; the same tiles in two waves lost (4096 x 640 x 2560 on 128 x
// 96: 215 tiles, 1.13x slower than 256 x 128).
std::optional<KernelConfig> one_wave_two_group_tile(const Problem& p, const DeviceInfo& dev, const KernelConfig& tile) {
  std::optional<KernelConfig> best;
  double best_fill = 1.25 * useful_fill(p, dev, tile);
  for (const auto& [tile_m, stages] : {std::pair{192, 4}, std::pair{160, 5}, std::pair{96, 6}}) {
    KernelConfig c = tile;
    c.tile_n = 128; c.warps_n = 8; c.tile_m = tile_m; c.tile_k = 64; c.stages = stages;
    const double fill = useful_fill(p, dev, c);
    if (tile_count(p, c.tile_n, c.tile_m) <= dev.sm_count && fill >= best_fill && config_invalid_reason(c, p, dev).empty()) {
      best = c;
      best_fill = fill;
    }
  }
  return best;
}

}  // namespace

std::optional<KernelConfig> heuristic_config_sm90(const Problem& p, const DeviceInfo& dev) {
  if (dev.arch() != 90 || p.m < 17) return std::nullopt;
  const int64_t weights = p.n * p.k;
  KernelConfig c;
  c.family = 90;
  c.split_k = 0;
  c.lut = LutPlacement::shared;
  auto shape = [&](int tile_n, int tile_m, int tile_k, int stages) {
    c.tile_n = tile_n; c.tile_m = tile_m; c.tile_k = tile_k; c.stages = stages; c.warps_n = tile_n / 16;
  };
  const LutPlacement pair_table = p.bits == 4 ? LutPlacement::shared_wide : LutPlacement::shared;
  if (p.m >= 2048 && p.n >= (p.m >= 4096 ? 512 : 768) && p.n < 1536 && p.n % 64 == 0 && p.k > 640) {
    // the diffusion layers of 512..1535 channels at 2048 tokens and more: four warpgroups of N = 128, or of N = 80
    // where those fill the SMs' waves better, with the 256-byte-row table (session 17's held-out tuning: 4096 x
    // 1152 x {1152, 4608} 1.30-1.34x, 4608 x 640 x 2560 1.31x, 4096 x 640 x {2048, 2560} 1.11x, 2048 x 1280 x 768
    // 1.36x over two warpgroups; A/B'd: 0.57-0.93x on six such layers at M = 2048 .. 3072, but 2048 x 640 x 2560 1.15x
    // slower, whose 640 rows pad the 256-row tiles by a sixth: from N = 768 there; at M = 1024 two stayed level,
    // docs/NOTES.md v1.21)
    shape(256, 128, 64, 4);
    c.lut = pair_table;
    if (shorter_tile_fits_waves_better(p, dev, c, 80, 4)) c.tile_m = 80;
    if (const auto one_wave = one_wave_two_group_tile(p, dev, c)) c = *one_wave;
  } else if (p.m >= 1024 && p.m < 2048 && p.n >= 768 && p.n < 1536 && p.n % 64 == 0 && p.k >= 4096) {
    // the same layers at 1024 tokens with long K: four warpgroups of N = 64 (128-deep k tiles) or N = 80, whichever
    // fills the SMs better in two splits (session 17's held-out tuning: 1024 x 1024 x 4096 on 256 x 64 in two splits
    // 22.6 us against 31.3 on the two-warpgroup tile unsplit, 104 tiles on 132 SMs; 1024 x {1152, 1280} x {4608,
    // 5120} on 256 x 80 in two, 1-4%)
    auto fill = [&](int tile_m) { return wave_fill(2 * tile_count(p, 256, tile_m), dev.sm_count); };
    // (and 128 rows where they fill as well: each W tile is then dequantized for fewer column tiles; 1500 x 1280 x
    // 5120 on 256 x 128 in two splits 42.0 us against 55.9 on 256 x 64, held-out set C)
    if (fill(128) + 0.02 >= std::max(fill(64), fill(80))) {
      shape(256, 128, 64, 4);
    } else if (p.k % 128 == 0 && fill(64) > fill(80)) {
      shape(256, 64, 128, 4);
    } else {
      shape(256, 80, 64, 4);
    }
    c.lut = pair_table;
    c.split_k = 2;
  } else if (p.n < 1024 || (p.n % 128 != 0 && (p.m >= 1024 || p.n % 64 != 0))) {
    // narrow layers at large M: two warpgroups of N = 128 or 80 (4096 x 320 x 320: 1.47x, 4096 x 640 x 640:
    // 1.12x, 1024 x 640 x 2560: 1.17x over the sm80 kernels), the register table where K is short: K = 321 .. 640
    // (4096 x 640 x 640: the 128-byte pair table 1.07x slower), not K <= 320 (session 16: the pair table 0.93-0.99x
    // on M = 2048 .. 8192, N = 320 .. 768)
    const bool large_m = p.m >= 2048 || (p.m >= 1024 && p.k >= 2048);
    if (!large_m || p.n < 256 || p.n % 64 != 0) return std::nullopt;
    shape(128, 128, 64, 5);
    c.lut = p.k <= 320 ? LutPlacement::shared : p.k <= 640 ? LutPlacement::registers : pair_table;
    if (shorter_tile_fits_waves_better(p, dev, c, 80, 6)) shape(128, 80, 64, 6);
    if (const auto one_wave = one_wave_two_group_tile(p, dev, c)) c = *one_wave;
  } else if (p.m <= 32) {
    // 17..32 on 16M+ weights: two warpgroups of N = 32 (1.09-1.13x); where 128-row tiles exceed 1.5 per SM
    // the sm80 four-strip tile stays ahead (32 x 28672 x 8192)
    if (weights < (int64_t{16} << 20) || 2 * (p.n / 128) > 3 * dev.sm_count) return std::nullopt;
    shape(128, 32, 128, 4);
  } else if (p.m <= 80) {
    if (weights < (int64_t{2} << 20)) return std::nullopt;  // small layers: the sm80 kernels' shorter fixed costs
    if (weights < (int64_t{8} << 20)) {  // two warpgroups of N = 32 (77 x 1280 x 2048: 1.19x, 64 x 1280 x 5120: 1.10x)
      // the 128-byte-row table up to K = 2048, the 256-byte one beyond (session 15: the 128-byte table 0.82-0.86x
      // of the register table's time on six such shapes, the register table having won before the table build
      // moved before the dependency wait; docs/NOTES.md v1.19)
      shape(128, 32, 128, 4);
      c.lut = p.k <= 2048 ? LutPlacement::shared : pair_table;
    } else if (p.m > 64) {  // four warpgroups of N = 80 from 32M weights (1.2-1.25x)
      if (weights < (int64_t{32} << 20)) {
        // 8-32M weights: two warpgroups of N = 80 where K > 1536 (session 17's held-out tuning: 77 x 2304 x 9216
        // 18.0 us against 25.8 on the sm80 64 x 80 tile, 65 x 1920 x 7680 14.7 against 25.1 on 128 x 32); shorter
        // K stays with the sm80 rules (77 x 6144 x 1536: 128 x 16 tiles)
        if (p.k <= 1536) return std::nullopt;
        shape(128, 80, 64, 6);
      } else {
        shape(256, 80, 64, 4);
        c.lut = pair_table;
      }
    } else {
      // 128-deep k tiles (session 7: eight wgmmas between two block barriers), the 256-byte-row table for 4
      // bits: two warpgroups of N = 64 up to 64M weights (64 x {4096, 10240, 14336} x ...: 1.03-1.17x over
      // the 64-deep tiles), four from there, in four stages (64 x 28672 x 8192: 76.1 -> 72.5 us over three)
      if (weights < (int64_t{64} << 20)) {
        shape(128, 64, 128, 4);
      } else {
        shape(256, 64, 128, 4);
      }
      c.lut = pair_table;
    }
  } else if (p.m <= 256 && weights <= (int64_t{16} << 20) && p.n <= 4096) {
    // M = 81..256 up to 16M weights: two warpgroups of N = 64 in 128-deep k tiles (128 x 4096 x 4096: 1.13x,
    // 256 x 4096 x 4096: 1.17x, 256 x 1280 x 5120: 1.21x, 256 x 1280 x 1280: 1.12x over the choices before;
    // 256 x 10240 x 1280 stays on four warpgroups of N = 128 below)
    shape(128, 64, 128, 4);
    c.lut = pair_table;
  } else if (p.m <= 512 && weights <= (int64_t{2} << 20)) {
    // small layers: two warpgroups of N = 64 in 128-deep k tiles with the pair table (session 15: 0.73-0.87x of
    // one warpgroup with the register table, which had won 1.4-1.6x in session 5, on six shapes M = 300..512)
    shape(128, 64, 128, 4);
    c.lut = pair_table;
  } else if (p.m <= 512 && weights <= (int64_t{4} << 20)) {
    // N = 32 where that gives a tile per SM (333 x 1536 x 1536: 132 tiles, 1.59x over N = 80 and the register
    // table), else N = 80 (449 x 2304 x 1152); the 256-byte-row table for 4 bits
    c.lut = pair_table;
    if ((p.n / 128) * ((p.m + 31) / 32) <= dev.sm_count) {
      shape(128, 32, 128, 4);
    } else {
      shape(128, 80, 64, 6);
    }
  } else if (p.m <= 160 && weights < (int64_t{64} << 20)) {
    // M = 81..160 on 16-64M weights: N = 64 in 128-deep k tiles (128 x {14336, 4096} x {4096, 14336}:
    // 1.07-1.08x over four warpgroups of N = 128, which stay ahead from 64M weights)
    shape(256, 64, 128, 4);
    c.lut = pair_table;
  } else if ((p.m >= 256 && weights >= (int64_t{16} << 20)) || p.n >= 3072 || (p.m >= 2048 && p.n >= 1536)) {
    // four warpgroups of N = 128 (1.3-1.8x over sm80; 1.02-1.10x over two of N = 256 in session 6), the
    // 256-byte-row table for 4 bits; N = 80 where its waves fit the SMs better (1024 x 4608 x 1152: 234
    // tiles in two waves instead of 144 in a wave and a bit: 1.21x; 1024 x 5120 x 640, 333 x 6144 x 1536)
    shape(256, 128, 64, 4);
    c.lut = pair_table;
    if (shorter_tile_fits_waves_better(p, dev, c, 80, 4)) c.tile_m = 80;
  } else {
    // N = 1024..3071: two warpgroups of N = 80 (1.1-1.15x), or four of N = 64 in 128-deep k tiles where their grid
    // (a block an SM either way) takes fewer waves of less work: waves x rows per split x tile_n, the two-warpgroup
    // tile kept within 10% (held-out set C, session 18: 1500 x 1280 x 1280 22.8 -> 13.7 us, 512 x 2560 x 2048
    // 33.0 -> 20.2, 512 x 1280 x 5120 38.1 -> 23.5 tuned; 1024 x 1280 x 1280, one wave of 128 x 80 tiles, stays)
    shape(128, 80, 64, 6);
    KernelConfig four = c;
    four.tile_n = 256; four.tile_m = 64; four.tile_k = 128; four.stages = 4; four.warps_n = 16;
    four.lut = pair_table;
    if (config_invalid_reason(four, p, dev).empty() && wave_work(p, dev, four) < 0.9 * wave_work(p, dev, c)) c = four;
  }
  if (!config_invalid_reason(c, p, dev).empty() && c.tile_k == 128) {
    // K that 128 does not divide (Falcon's 4544, DeepSeek-V2-Lite's 10944): the 64-deep tile of the same rows, at
    // least 64 columns (there is no 32-column one), six stages (two warpgroups) or four (four). Session 17's A/B
    // against the sm80 fallback: 32 x 18176 x 4544 78.9 -> 52.2 us, 64 x 18176 x 4544 58.6 -> 48.3, 48 x 2048 x
    // 10944 20.1 -> 15.0. (And N that 128 does not divide below M = 1024: 96 x 4672 x 4544, 2.2x behind its tuned
    // sm90 pick on the sm80 fallback, took the narrow branch's early return until session 18.)
    c.tile_k = 64;
    c.tile_m = std::max(c.tile_m, 64);
    c.stages = c.tile_n == 256 ? 4 : 6;
  }
  if (!config_invalid_reason(c, p, dev).empty()) return std::nullopt;
  if (c.split_k != 0) return c;  // (chosen with the tile)
  c.split_k = resolve_split_k(c, p, dev);
  // An unsplit grid of more than a wave (a block an SM at a time): two splits where they fill the last wave much
  // better and keep 2048 of K each (session 16: 4096 x 1536 x 6144 0.89x, 2048 x 3072 x 6144 0.90x, 4096 x 2560 x
  // 8192 0.96x). After the tile choice: counted into it, the split made taller tiles win where they lost (2048 x
  // 2560 x 8192 1.08x slower on 256 x 128 in two splits than on 256 x 80 unsplit, 4096 x 640 x 2560 1.28x).
  const int64_t tiles = tile_count(p, c.tile_n, c.tile_m);
  const int64_t slots = static_cast<int64_t>(std::max(1, dev.sm_count)) * resident_blocks_per_sm(c, p, dev);
  auto waves = [&](int64_t splits) { return static_cast<double>((tiles * splits + slots - 1) / slots) / splits; };
  if (c.split_k == 1 && tiles > slots && p.k >= 4096 && waves(2) < 0.85 * waves(1)) {
    KernelConfig split = c;
    split.split_k = 2;
    if (config_invalid_reason(split, p, dev).empty() && resolve_split_k(split, p, dev) == 2) c = split;
  }
  return c;
}

}  // namespace lutmm
