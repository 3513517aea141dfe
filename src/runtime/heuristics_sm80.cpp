// The sm80 family's built-in choice, used when nothing was measured (and to rank candidates).
// Small M is memory-bound: narrow tiles along M and split-K to put about two blocks on every SM.
// Large M is compute-bound: big tiles, so one dequantized fragment feeds many MMAs.
#include <array>
#include <optional>
#include <span>

#include "lutmm/config.hpp"
#include "lutmm/error.hpp"
#include "runtime/kernel_shapes.hpp"

namespace lutmm {

namespace {

struct TileChoice {
  int tile_n, tile_m, tile_k, warps_n;
};

// split_k 0: resolved by the one-wave rule (resolve_split_k); otherwise that count.
std::optional<KernelConfig> first_valid(const Problem& p, const DeviceInfo& dev, std::span<const TileChoice> choices,
                                        LutPlacement preferred = LutPlacement::shared, int split_k = 0) {
  const LutPlacement other = preferred == LutPlacement::shared ? LutPlacement::registers : LutPlacement::shared;
  for (const TileChoice& t : choices) {
    for (const auto& s : sm80_kernel_shapes()) {
      if (s.tile_n != t.tile_n || s.tile_m != t.tile_m || s.tile_k != t.tile_k || s.warps_n != t.warps_n) continue;
      for (LutPlacement lut : {preferred, other}) {  // the other one if shared memory is short
        KernelConfig c = s;
        c.lut = lut;
        c.split_k = 0;
        if (!config_invalid_reason(c, p, dev).empty()) continue;
        c.split_k = split_k;
        c.split_k = resolve_split_k(c, p, dev);
        return c;
      }
    }
  }
  return std::nullopt;
}

int64_t tile_count(const Problem& p, int tile_n, int tile_m) {
  return ((p.n + tile_n - 1) / tile_n) * ((p.m + tile_m - 1) / tile_m);
}

}  // namespace

// Preferences per M range, from the H200 tuning runs of both shape sets (docs/TUNING.md, docs/NOTES.md):
//  * LLM-sized weights: two 16-row strips per warp win at every M <= 64 (one x fragment feeds two
//    dequantized strips) except on weights up to 16M values (4096 x 4096), where eight warps of one strip
//    each won every M <= 8; wide decode layers also take 256-deep k tiles, and from M = 128 the 128 x 128
//    tile with 4 x 2 warps (two strips, eight 8-column blocks per warp) beats 2 x 4 warps by ~16%;
//  * small weights (N * K <= 8M, the diffusion conditioning and text layers): a block lives only a few
//    microseconds, so the 32 KB pair-table build does not pay; 64-row tiles with the register table won
//    every such shape with M <= 128, with one 256-deep k tile when K is 256;
//  * M in 129..512 whose 128 x 128 tiles are few (at most 3/8 of the SMs) or just over one wave (up to
//    1.5 waves, where the second wave runs mostly empty): 128 x 32 tiles, four times the blocks;
//  * larger M with few 128 x 128 tiles and short K (the narrow diffusion layers: N = 32..640 at M = 1024
//    and 4096): 64-row tiles and the widest column block that still gives about one block per SM, unsplit
//    (with K this short the split-K round trip costs more than the idle SMs).
// The later entries are fallbacks for K that 128 or 256 does not divide, and for GPUs with less shared
// memory.
KernelConfig heuristic_config(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  static constexpr std::array<TileChoice, 4> decode8{{{128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}, {256, 8, 64, 8}}};
  static constexpr std::array<TileChoice, 4> decode8_mid{{{128, 8, 128, 8}, {128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 4> decode8_wide{
      {{128, 8, 256, 4}, {128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> decode16{{{128, 16, 128, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  static constexpr std::array<TileChoice, 3> medium{{{128, 32, 128, 4}, {128, 64, 64, 4}, {64, 64, 64, 2}}};
  static constexpr std::array<TileChoice, 2> large{{{128, 128, 64, 4}, {128, 128, 64, 2}}};
  static constexpr std::array<TileChoice, 3> small_w8{{{64, 8, 128, 4}, {64, 8, 256, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> small_w8_k256{{{64, 8, 256, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> small_w16{{{64, 16, 256, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  static constexpr std::array<TileChoice, 2> narrow32{{{64, 32, 128, 4}, {64, 64, 64, 2}}};
  static constexpr std::array<TileChoice, 3> narrow16{{{64, 16, 128, 4}, {64, 16, 256, 4}, {64, 16, 64, 4}}};
  // Wide N: even 128-row tiles fill the GPU without splitting K, so deeper k tiles pay.
  const bool wide = p.n >= 16384;
  const bool small_weight = p.n * p.k <= 8ll * 1024 * 1024;
  const int64_t sms = dev.sm_count;
  const int64_t big_tiles = tile_count(p, 128, 128);
  const bool few_big_tiles = 8 * big_tiles <= 3 * sms;
  const bool just_over_a_wave = big_tiles > sms && 2 * big_tiles <= 3 * sms;
  std::span<const TileChoice> prefs;
  LutPlacement lut = LutPlacement::shared;
  if (small_weight && p.m <= 128) {
    prefs = p.m > 8 ? std::span<const TileChoice>(small_w16)
                    : (p.k <= 256 ? std::span<const TileChoice>(small_w8_k256) : std::span<const TileChoice>(small_w8));
    lut = LutPlacement::registers;
  } else if (p.m <= 8) {
    prefs = wide ? std::span<const TileChoice>(decode8_wide)
                 : (p.n * p.k <= 16ll * 1024 * 1024 ? std::span<const TileChoice>(decode8_mid) : std::span<const TileChoice>(decode8));
  } else if (p.m <= 16) {
    prefs = decode16;
  } else if (p.m <= 64 || (p.m <= 512 && (few_big_tiles || just_over_a_wave))) {
    prefs = medium;
  } else if (few_big_tiles && p.k <= 1536) {
    // 64-row tiles; the column block: 32 when that gives ~a block per SM, else 16, else 8.
    const LutPlacement narrow_lut = small_weight ? LutPlacement::registers : LutPlacement::shared;
    std::span<const TileChoice> narrow = narrow32;
    if (10 * tile_count(p, 64, 32) < 9 * sms) narrow = 10 * tile_count(p, 64, 16) < 9 * sms ? std::span<const TileChoice>(small_w8) : std::span<const TileChoice>(narrow16);
    if (auto c = first_valid(p, dev, narrow, narrow_lut, 1)) return *c;
    prefs = large;
  } else {
    prefs = large;
  }
  if (auto c = first_valid(p, dev, prefs, lut)) return *c;
  // Nothing preferred fits (an unusual K or a GPU with little shared memory): any valid shape.
  for (const auto& s : sm80_kernel_shapes()) {
    const TileChoice t{s.tile_n, s.tile_m, s.tile_k, s.warps_n};
    if (auto c = first_valid(p, dev, std::span<const TileChoice>(&t, 1))) return *c;
  }
  throw_error("no sm80 config fits " + p.str() + " on " + dev.name);
}

}  // namespace lutmm
