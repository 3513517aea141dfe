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
  static constexpr std::array<TileChoice, 2> small{{{64, 32, 128}, {64, 64, 64}}};
  static constexpr std::array<TileChoice, 2> medium{{{128, 64, 64}, {64, 64, 64}}};
  static constexpr std::array<TileChoice, 1> large{{{128, 128, 64}}};
  const auto& prefs = p.m <= 8 ? std::span<const TileChoice>(decode8)
                      : p.m <= 16 ? std::span<const TileChoice>(decode16)
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
