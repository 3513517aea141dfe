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

std::optional<KernelConfig> first_valid(const Problem& p, const DeviceInfo& dev, std::span<const TileChoice> choices,
                                        LutPlacement preferred = LutPlacement::shared) {
  const LutPlacement other = preferred == LutPlacement::shared ? LutPlacement::registers : LutPlacement::shared;
  for (const TileChoice& t : choices) {
    for (const auto& s : sm80_kernel_shapes()) {
      if (s.tile_n != t.tile_n || s.tile_m != t.tile_m || s.tile_k != t.tile_k || s.warps_n != t.warps_n) continue;
      for (LutPlacement lut : {preferred, other}) {  // the other one if shared memory is short
        KernelConfig c = s;
        c.lut = lut;
        c.split_k = 0;
        if (!config_invalid_reason(c, p, dev).empty()) continue;
        c.split_k = resolve_split_k(c, p, dev);
        return c;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

// Preferences per M range, from the H200 tuning runs of both shape sets (docs/TUNING.md, docs/NOTES.md):
//  * LLM-sized weights: two 16-row strips per warp win at every M <= 64 (one x fragment feeds two
//    dequantized strips), wide decode layers also take 256-deep k tiles, and from M = 128 the 128 x 128
//    tile with 4 x 2 warps (two strips, eight 8-column blocks per warp) beats 2 x 4 warps by ~16%;
//  * small weights (N * K <= 8M, the diffusion conditioning and text layers): a block lives only a few
//    microseconds, so the 32 KB pair-table build does not pay; 64-row tiles with the register table won
//    every such shape with M <= 128;
//  * M in 129..512 whose 128 x 128 tiles would not fill 1.5 waves: 128 x 32 tiles (four times the blocks).
// The later entries are fallbacks for K that 128 or 256 does not divide, and for GPUs with less shared
// memory.
KernelConfig heuristic_config(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  static constexpr std::array<TileChoice, 4> decode8{{{128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}, {256, 8, 64, 8}}};
  static constexpr std::array<TileChoice, 4> decode8_wide{
      {{128, 8, 256, 4}, {128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> decode16{{{128, 16, 128, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  static constexpr std::array<TileChoice, 3> medium{{{128, 32, 128, 4}, {128, 64, 64, 4}, {64, 64, 64, 2}}};
  static constexpr std::array<TileChoice, 2> large{{{128, 128, 64, 4}, {128, 128, 64, 2}}};
  static constexpr std::array<TileChoice, 3> small_w8{{{64, 8, 128, 4}, {64, 8, 256, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> small_w16{{{64, 16, 256, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  // Wide N: even 128-row tiles fill the GPU without splitting K, so deeper k tiles pay.
  const bool wide = p.n >= 16384;
  const bool small_weight = p.n * p.k <= 8ll * 1024 * 1024;
  const int64_t big_tiles = ((p.n + 127) / 128) * ((p.m + 127) / 128);
  const bool few_big_tiles = p.m <= 512 && 2 * big_tiles < 3ll * dev.sm_count;
  std::span<const TileChoice> prefs;
  LutPlacement lut = LutPlacement::shared;
  if (small_weight && p.m <= 128) {
    prefs = p.m <= 8 ? std::span<const TileChoice>(small_w8) : std::span<const TileChoice>(small_w16);
    lut = LutPlacement::registers;
  } else if (p.m <= 8) {
    prefs = wide ? std::span<const TileChoice>(decode8_wide) : std::span<const TileChoice>(decode8);
  } else if (p.m <= 16) {
    prefs = decode16;
  } else if (p.m <= 64 || few_big_tiles) {
    prefs = medium;
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
