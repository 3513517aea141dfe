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
  int tile_n, tile_m, tile_k;
};

std::optional<KernelConfig> first_valid(const Problem& p, const DeviceInfo& dev, const TileChoice* begin,
                                        const TileChoice* end) {
  for (const TileChoice* t = begin; t != end; ++t) {
    for (const auto& s : sm80_kernel_shapes()) {
      if (s.tile_n != t->tile_n || s.tile_m != t->tile_m || s.tile_k != t->tile_k) continue;
      for (LutPlacement lut : {LutPlacement::shared, LutPlacement::registers}) {  // registers if smem is short
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

KernelConfig heuristic_config(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  static constexpr std::array<TileChoice, 2> decode8{{{64, 8, 128}, {64, 8, 64}}};
  static constexpr std::array<TileChoice, 2> decode16{{{64, 16, 128}, {64, 16, 64}}};
  // Wide N: 64-row tiles would need more than one wave of blocks; 128-row tiles with 8 warps share one
  // pair table among twice the warps and fit in one wave (measured: 1 x 28672 x 8192, 70 -> 53 us).
  static constexpr std::array<TileChoice, 3> decode8_wide{{{128, 8, 128}, {64, 8, 128}, {64, 8, 64}}};
  static constexpr std::array<TileChoice, 3> decode16_wide{{{128, 16, 128}, {64, 16, 128}, {64, 16, 64}}};
  static constexpr std::array<TileChoice, 2> small{{{64, 32, 128}, {64, 64, 64}}};
  static constexpr std::array<TileChoice, 2> medium{{{128, 64, 64}, {64, 64, 64}}};
  static constexpr std::array<TileChoice, 1> large{{{128, 128, 64}}};
  KernelConfig narrow = sm80_kernel_shapes().front();  // 64 x 8 x 128, 4 warps
  narrow.lut = LutPlacement::shared;
  const int64_t narrow_tiles = (p.n + 63) / 64;
  const bool wide = narrow_tiles > static_cast<int64_t>(resident_blocks_per_sm(narrow, p, dev)) * dev.sm_count;
  const auto& prefs = p.m <= 8 ? (wide ? std::span<const TileChoice>(decode8_wide) : std::span<const TileChoice>(decode8))
                      : p.m <= 16 ? (wide ? std::span<const TileChoice>(decode16_wide) : std::span<const TileChoice>(decode16))
                      : p.m <= 32 ? std::span<const TileChoice>(small)
                      : p.m <= 64 ? std::span<const TileChoice>(medium)
                                  : std::span<const TileChoice>(large);
  if (auto c = first_valid(p, dev, prefs.data(), prefs.data() + prefs.size())) return *c;
  // Nothing preferred fits (an unusual K or a GPU with little shared memory): any valid shape.
  for (const auto& s : sm80_kernel_shapes()) {
    const TileChoice t{s.tile_n, s.tile_m, s.tile_k};
    if (auto c = first_valid(p, dev, &t, &t + 1)) return *c;
  }
  throw_error("no sm80 config fits " + p.str() + " on " + dev.name);
}

}  // namespace lutmm
