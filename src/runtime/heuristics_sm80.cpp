// The sm80 family's built-in choice, used when nothing was measured (and to rank candidates).
// Small M is memory-bound: narrow tiles along M and split-K to put about two blocks on every SM.
// Large M is compute-bound: big tiles, so one dequantized fragment feeds many MMAs.
#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <vector>

#include "lutmm/config.hpp"
#include "lutmm/error.hpp"
#include "runtime/kernel_shapes.hpp"

namespace lutmm {

namespace {

struct TileChoice {
  int tile_n, tile_m, tile_k, warps_n;
  int warps_m = 0;  // 0: any (the first listed shape that matches)
  int stages = 0;   // 0: any
  int warps_k = 1;
};

// split_k 0: resolved by the one-wave rule (resolve_split_k); otherwise that count.
std::optional<KernelConfig> first_valid(const Problem& p, const DeviceInfo& dev, std::span<const TileChoice> choices,
                                        LutPlacement preferred = LutPlacement::shared, int split_k = 0) {
  // Fallbacks where shared memory is short: the 128-byte-row table, then registers.
  std::vector<LutPlacement> placements{preferred};
  for (LutPlacement lut : {LutPlacement::shared, LutPlacement::registers})
    if (lut != preferred) placements.push_back(lut);
  for (const TileChoice& t : choices) {
    for (const auto& s : sm80_kernel_shapes()) {
      if (s.tile_n != t.tile_n || s.tile_m != t.tile_m || s.tile_k != t.tile_k || s.warps_n != t.warps_n) continue;
      if ((t.warps_m != 0 && s.warps_m != t.warps_m) || (t.stages != 0 && s.stages != t.stages)) continue;
      if (s.warps_k != t.warps_k) continue;
      for (LutPlacement lut : placements) {
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

}  // namespace

// Preferences per M range, from the H200 tuning runs of both shape sets (docs/TUNING.md, docs/NOTES.md):
//  * LLM-sized weights: two 16-row strips per warp win at every M <= 64 (one x fragment feeds two
//    dequantized strips) except on weights up to 16M values (4096 x 4096), where eight warps of one strip
//    each won every M <= 8; wide decode layers also take 256-deep k tiles;
//  * small weights (N * K <= 8M, the diffusion conditioning and text layers): a block lives only a few
//    microseconds, so the 32 KB pair-table build does not pay; 64-row tiles with the register table won
//    every such shape with M <= 128, with one 256-deep k tile when K is 256;
//  * M in 33..64 on larger weights: 128 x 64 tiles with one warp row (each warp's two strips meet all 64
//    columns, W dequantized once per block): 64 x 28672 x 8192 138 -> 111 us, 64 x 8192 x 8192 42 -> 37;
//  * M > 64: tiles of 128 x 80 (128 x 64 where 80 pads M by 5% more) with one warp row, the 4-bit table
//    with 256-byte rows unless the weight is small: they beat the 128 x 128 tiles with 4 x 2 warps (whose
//    two warp rows dequantize every strip twice) by 1.05-1.2x on the LLM set and up to 1.8x on the
//    diffusion set (docs/NOTES.md, v1.7);
//  * four strips per warp (256-row tiles: one x fragment feeds four dequantized strips) where there are
//    enough of them, N % 256 == 0 (session 4, docs/NOTES.md v1.8): M = 16 and 17..32 on weights over 100M
//    values (256 x 16 / 256 x 32: 1.03-1.07x); M > 64 with K >= 512 and >= 1.5 tiles of 256 x 64 per SM
//    (2.5 on weights of up to 8M values), with the 128-byte-row table, whose static shared memory leaves
//    room for two blocks (1.04-1.18x); and the padded M of the medium rule with a tile of 256 x 32 per SM
//    (333 x 6144 x 1536: 1.69x);
//  * two warp groups splitting each k tile where the grid is small: 4-bit decode on weights of 4-16M
//    values (4096 x 4096: 1.12x; since session 16 on 64-row tiles, or Stream-K where those exceed the SMs)
//    and M = 33..80 on small weights with K > 2048 (64 x 1280 x 5120: 1.35x);
//  * larger M with few 128 x 128 tiles and short K (the narrow diffusion layers: N = 32..640 at M = 1024
//    and 4096): the widest tile that still gives about one block per SM, unsplit
//    (with K this short the split-K round trip costs more than the idle SMs).
//  * 4-bit decode at M <= 16 on 8-100M weights (session 17, from 200 held-out model layers): the tile whose split
//    grid best fills its resident slots, two or three blocks an SM (see the rule).
// The later entries are fallbacks for K that 128 or 256 does not divide, and for GPUs with less shared
// memory.
KernelConfig heuristic_config(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  if (auto c = heuristic_config_sm90(p, dev)) return *c;
  static constexpr std::array<TileChoice, 4> decode8{{{128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}, {256, 8, 64, 8}}};
  static constexpr std::array<TileChoice, 4> decode8_mid{{{128, 8, 128, 8}, {128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 4> decode8_wide{
      {{128, 8, 256, 4}, {128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> decode16{{{128, 16, 128, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  // 4-bit, M = 9..16 on weights over 16M values: the 256-deep k tiles of decode8_b4 (session 13's tuning picked
  // them on 4096 x 14336, 8192 x 8192 and 14336 x 4096 over the 128-deep ones: 1.06-1.07x, docs/NOTES.md v1.17)
  static constexpr std::array<TileChoice, 4> decode16_b4{
      {{128, 16, 256, 4, 1, 3}, {128, 16, 128, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  // four strips per warp
  static constexpr std::array<TileChoice, 1> strips4_m16{{{256, 16, 128, 4}}};
  static constexpr std::array<TileChoice, 1> strips4_m32{{{256, 32, 128, 4}}};
  static constexpr std::array<TileChoice, 1> strips4_m64{{{256, 64, 64, 4}}};
  // 4-bit decode on weights over 16M values: three 256-deep stages and the 256-byte-row table. (Two until
  // session 7, when the benchmarks timed both within 2%; since session 8 a block copies kStages - 1 stages of
  // W before it waits for the previous kernel, and session 8's tuning put three ahead on every M = 1..8 key
  // over 16M weights, by 1-6%.)
  static constexpr std::array<TileChoice, 4> decode8_b4{
      {{128, 8, 256, 4, 1, 3}, {128, 8, 128, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> medium{{{128, 32, 128, 4}, {128, 64, 64, 4, 2}, {64, 64, 64, 2}}};
  static constexpr std::array<TileChoice, 3> medium64_mid{{{64, 64, 128, 4, 1}, {128, 64, 64, 4, 1}, {128, 32, 128, 4}}};
  static constexpr std::array<TileChoice, 3> small_w32{{{64, 32, 128, 4}, {64, 16, 256, 4}, {64, 16, 128, 4}}};
  static constexpr std::array<TileChoice, 4> medium64{
      {{128, 64, 64, 4, 1}, {64, 64, 128, 4, 1}, {128, 32, 128, 4}, {128, 64, 64, 4, 2}}};
  // one warp row: each warp's strips meet all 80 (64) columns of the tile
  static constexpr std::array<TileChoice, 4> large80{{{128, 80, 64, 4, 1}, {128, 64, 64, 4, 1}, {128, 128, 64, 4}, {128, 128, 64, 2}}};
  static constexpr std::array<TileChoice, 4> large64{{{128, 64, 64, 4, 1}, {128, 80, 64, 4, 1}, {128, 128, 64, 4}, {128, 128, 64, 2}}};
  static constexpr std::array<TileChoice, 3> narrow80{{{64, 80, 128, 4, 1}, {64, 64, 128, 4, 1}, {64, 32, 128, 4}}};
  static constexpr std::array<TileChoice, 3> small_w8{{{64, 8, 128, 4}, {64, 8, 256, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> small_w8_k256{{{64, 8, 256, 4}, {64, 8, 128, 4}, {64, 8, 64, 4}}};
  static constexpr std::array<TileChoice, 3> small_w16{{{64, 16, 256, 4}, {64, 16, 128, 4}, {64, 16, 64, 4}}};
  // two warp groups splitting the k tile: small grids with long K
  static constexpr std::array<TileChoice, 1> small_w32_long_k{{{64, 32, 128, 4, 1, 4, 2}}};
  static constexpr std::array<TileChoice, 1> decode8_mid_stream_k{{{128, 8, 128, 4, 1, 2}}};  // (the _occ4 shape)
  static constexpr std::array<TileChoice, 1> decode8_mid_split{{{64, 8, 256, 4, 1, 3, 2}}};
  static constexpr std::array<TileChoice, 1> small_w8_eight_warps{{{128, 8, 128, 8}}};
  static constexpr std::array<TileChoice, 1> small_w8_groups{{{64, 8, 256, 4, 1, 3, 2}}};
  static constexpr std::array<TileChoice, 1> small_m80_two_strips{{{128, 16, 128, 4}}};
  static constexpr std::array<TileChoice, 2> narrow32{{{64, 32, 128, 4}, {64, 64, 64, 2}}};
  static constexpr std::array<TileChoice, 3> narrow16{{{64, 16, 128, 4}, {64, 16, 256, 4}, {64, 16, 64, 4}}};
  static constexpr std::array<TileChoice, 3> narrow_n64{{{64, 64, 128, 4, 1, 3}, {64, 32, 128, 4, 1, 4}, {64, 16, 128, 4, 1, 4}}};
  // Wide N: even 128-row tiles fill the GPU without splitting K, so deeper k tiles pay.
  const bool wide = p.n >= 16384;
  const bool small_weight = p.n * p.k <= 8ll * 1024 * 1024;
  const int64_t sms = dev.sm_count;
  const int64_t big_tiles = tile_count(p, 128, 128);
  const bool few_big_tiles = 8 * big_tiles <= 3 * sms;
  // Large M: 80-column tiles dequantize once for the most columns (they won the small-weight diffusion
  // layers); 64 (four stages) on larger weights unless that pads M more, or where 80 pads M by 5% more.
  const int64_t pad80 = (p.m + 79) / 80 * 80 - p.m, pad64 = (p.m + 63) / 64 * 64 - p.m;
  const bool use64 = pad80 > pad64 + p.m / 20 || (!small_weight && pad64 <= pad80);
  const std::span<const TileChoice> large = use64 ? std::span<const TileChoice>(large64) : std::span<const TileChoice>(large80);
  // The pair table in shared memory: with 256-byte rows (one instruction per lookup) for 4-bit codes.
  const LutPlacement pair_table = p.bits == 4 ? LutPlacement::shared_wide : LutPlacement::shared;
  // Large M: that table, or the register table where the weight is small.
  const LutPlacement big_m_lut = small_weight ? LutPlacement::registers : pair_table;
  std::span<const TileChoice> prefs;
  LutPlacement lut = LutPlacement::shared;
  const bool mid_weight = p.n * p.k <= 16ll * 1024 * 1024;
  // M = 9..16: the 256-deep tiles and the 256-byte-row table for 4-bit codes over 16M weights (the fill rule below
  // asks what this pick would give before it overrides it)
  const bool deep16 = p.bits == 4 && !mid_weight;
  const std::span<const TileChoice> decode16_prefs = deep16 ? std::span<const TileChoice>(decode16_b4) : std::span<const TileChoice>(decode16);
  const LutPlacement decode16_lut = deep16 ? LutPlacement::shared_wide : LutPlacement::shared;
  // M up to 511 that 64- and 80-column tiles would pad by over 10%
  const bool padded_a_lot = p.m < 512 && 10 * std::min(pad64, pad80) > p.m;
  const bool huge_weight = p.n * p.k > 100ll * 1000 * 1000;
  const bool n256 = p.n % 256 == 0;
  if (n256 && p.m > 8 && p.m <= 16 && huge_weight) {
    if (auto c = first_valid(p, dev, strips4_m16, pair_table)) return *c;
  }
  if (n256 && p.m > 16 && p.m <= 32 && huge_weight) {
    if (auto c = first_valid(p, dev, strips4_m32, LutPlacement::shared)) return *c;
  }
  // (small weights need more tiles: 1024 x {4608, 5120} x {1152, 640} stayed faster on 128 x 80 tiles)
  if (n256 && p.m > 64 && p.k >= 512 && tile_count(p, 256, 64) * 2 >= (small_weight ? 5 : 3) * sms) {
    if (auto c = first_valid(p, dev, strips4_m64, LutPlacement::shared)) return *c;
  }
  if (small_weight && p.m > 32 && p.m <= 80 && p.k > 2048) {
    if (auto c = first_valid(p, dev, small_w32_long_k, LutPlacement::shared)) return *c;
  }
  if (p.bits == 4 && p.m <= 8 && mid_weight && p.n * p.k >= 4ll * 1024 * 1024 && (p.k >= 2048 || p.n >= 4096)) {
    // 64-row tiles split into about two blocks an SM, two 256-deep k tiles a split at least (the tuned pick on
    // 4096 x 4096; 0.95-0.97x of 128-row tiles on it and on 2-6M-weight layers, 1.00-1.01x on 2048 x 7168; since
    // session 19 from 4M weights on, where the eight one-strip warps or the register table had been the rule:
    // 0.93x over the 30 measured layers it changes; not on 2-4M weights, 1.07x slower over five, nor where K < 2048
    // and N < 4096, 1.07-1.09x slower on 3072 x 1536 and 3200 x 1536, docs/NOTES.md v1.23); where
    // the 64-row tiles alone exceed the SMs (short K, wide N), Stream-K over 128 x 8 x 128 units with four blocks
    // an SM (the tuned pick on 2 x 9216 x 1536: 0.77x of one 128-row tile per block; 0.77-0.95x on N = 10240 ..
    // 14336, K = 1024 .. 1536, M = 1..8): session 16, docs/NOTES.md v1.20
    const int64_t tiles = tile_count(p, 64, 8), k_tiles = (p.k + 255) / 256;
    if (tiles > sms) {
      if (auto c = first_valid(p, dev, decode8_mid_stream_k, LutPlacement::shared, kStreamK)) return *c;
    }
    const int64_t splits = std::clamp<int64_t>(2 * sms / tiles, 1, std::max<int64_t>(1, k_tiles / 2));
    if (auto c = first_valid(p, dev, decode8_mid_split, LutPlacement::shared_wide, static_cast<int>(splits))) return *c;
  }
  // 4-bit decode on 16-100M weights (most of the 7-70B models' layers) from session 17's tuning of 200 held-out model
  // layers (docs/NOTES.md v1.21), where the one-wave split rule below left 1.1-2.1x: the choice is how many blocks an
  // SM and how well the grid fills them. With K a multiple of 256, one of three tiles split to fill their resident
  // slots (at most eight splits, two k tiles a split at least), the one whose grid fills them best, ties (within 2%)
  // going to the first: 128 x 8 x 256 in two stages with the 256-byte-row table (two blocks an SM; the tuned pick on
  // 8192 x 8192, 14336 x 4096, 16384 x 3072, 8192 x 3584, 5120 x 13824), then with the 128-byte-row table (three an
  // SM: 7168 x 5120, 12288 x 3072, 12288 x 4096, 24576 x 3072), then 64 x 8 x 256 in three stages with it (three an
  // SM: 3072 x 8192, whose 128-row tiles would need 16 splits). Otherwise (K = 4544, 10944: 64-deep k tiles) eight
  // one-strip warps over 256 rows with the 256-byte-row table split to fill two blocks an SM, or 64-row tiles
  // where those fill under half of them (2 x 2048 x 10944): 18176 x 4544 48.1 -> 23.2 us tuned. At M = 9..16 on
  // 8-100M weights likewise where the rule further below fills under three quarters of its slots: 128 x 16 x 256
  // tiles in three stages with the 256-byte-row table, four k tiles a split at least (two an SM: the tuned pick on
  // 4096 x 14336, 8192 x 8192, 14336 x 4096), then 64 x 16 x 128 in four with the 128-byte-row one (three an SM:
  // 3072 x 8192, 6144 x 4096, 6144 x 2048), or 64 x 16 x 64 in six where K is no multiple of 128; not where those
  // 64-row tiles are too few to fill the slots in eight splits (16 x 1536 x 8960 1.40x, 12 x 2048 x 5632 1.06x
  // slower so). A/B'd: 0.84x over the 89 keys whose pick these rows changed at M <= 8 (worst 1.08x: 8 x 3072 x
  // 24576) and 0.91x over 14 at M = 9..16 with the bounds (worst 1.045x: 16 x 7680 x 2560).
  const bool decode_fill = p.bits == 4 && !huge_weight &&
                           (p.m <= 8 ? !mid_weight : p.m <= 16 && p.n * p.k > 8ll * 1024 * 1024);
  if (decode_fill) {
    struct Filled {
      KernelConfig c;
      double fill;  // blocks over resident slots, per wave
    };
    auto fill_of = [&](const KernelConfig& c) {
      return wave_fill(tile_count(p, c.tile_n, c.tile_m) * c.split_k, sms * resident_blocks_per_sm(c, p, dev));
    };
    auto fill_slots = [&](const TileChoice& t, LutPlacement lut, int min_k_tiles) -> std::optional<Filled> {
      auto c = first_valid(p, dev, std::span<const TileChoice>(&t, 1), lut, 1);
      if (!c || c->lut != lut) return std::nullopt;
      const int64_t slots = sms * resident_blocks_per_sm(*c, p, dev), tiles = tile_count(p, c->tile_n, c->tile_m);
      const int64_t k_tiles = p.k / c->tile_k;
      if (p.m > 8 && c->tile_k == 128 && 32 * tiles < 3 * slots) return std::nullopt;  // (too few: under 3/4 in 8 splits)
      c->split_k = static_cast<int>(std::clamp<int64_t>(slots / tiles, 1, std::clamp<int64_t>(k_tiles / min_k_tiles, 1, 8)));
      c->split_k = resolve_split_k(*c, p, dev);
      return Filled{*c, fill_of(*c)};
    };
    std::optional<Filled> best;
    if (p.m > 8) {
      const auto rule = first_valid(p, dev, decode16_prefs, decode16_lut);
      if (!rule || fill_of(*rule) < 0.75) {
        static constexpr TileChoice deep16{128, 16, 256, 4, 1, 3}, rows64{64, 16, 128, 4, 1, 4}, rows64_k64{64, 16, 64, 4, 1, 6};
        const auto f = p.k % 128 == 0 ? fill_slots(rows64, LutPlacement::shared, 2) : fill_slots(rows64_k64, LutPlacement::shared, 4);
        if (f && p.k % 256 == 0) best = fill_slots(deep16, LutPlacement::shared_wide, 4);
        if (f && (!best || f->fill > best->fill + 0.02)) best = f;
      }
    } else if (p.k % 256 == 0) {
      static constexpr TileChoice two_stages{128, 8, 256, 4, 1, 2}, rows64{64, 8, 256, 4, 1, 3};
      for (const auto& [t, lut] : {std::pair{two_stages, LutPlacement::shared_wide}, std::pair{two_stages, LutPlacement::shared},
                                   std::pair{rows64, LutPlacement::shared}}) {
        const auto f = fill_slots(t, lut, 2);
        if (f && (!best || f->fill > best->fill + 0.02)) best = f;
      }
    } else {
      static constexpr TileChoice rows256{256, 8, 64, 8, 1, 6}, rows64{64, 8, 64, 4, 1, 6};
      best = fill_slots(rows256, LutPlacement::shared_wide, 4);
      if (!best || best->fill < 0.5) {
        if (const auto f = fill_slots(rows64, LutPlacement::shared_wide, 4); f && (!best || f->fill > best->fill)) best = f;
      }
    }
    if (best) return best->c;
  }
  // Small weights (sessions 14-15, after the table build moved before the dependency wait and the split-K
  // sums into clusters): M <= 8 on 2M weights or more with K > 1024 on eight one-strip warps over 128 rows with
  // the pair table (36 decode shapes 0.89x of the 64-row register-table tiles, 2 x 2560 x 2560 0.75x; on
  // K = 1024 1.02-1.05x slower: docs/NOTES.md v1.19) ...
  const bool pair_table_pays = p.n * p.k >= 2ll * 1024 * 1024 && p.k > 1024;  // (below: M <= 32)
  if (small_weight && p.m <= 8 && pair_table_pays) {
    if (auto c = first_valid(p, dev, small_w8_eight_warps, LutPlacement::shared)) {
      // at most eight splits where K <= 5120, so that a cluster sums them (0.93-0.97x on 112 shapes with K = 2560 ..
      // 5120 that the one-wave rule split 10-16 ways; at K = 6144 .. 8192 1.07-1.15x slower: session 16, v1.20)
      if (c->split_k > 8 && p.k <= 5120) {
        c->split_k = 8;
        c->split_k = resolve_split_k(*c, p, dev);
      }
      return *c;
    }
  }
  // ... and M = 9..80 on 128 x 16 tiles of two strips a warp with the 256-byte-row table, split into about 0.6
  // blocks an SM, two k tiles a split at least (the tuned counts: 25 tiles in 3-4 splits, 40 and 50 in two):
  // at M = 33..80 with K of 768..2048 (768 only from N = 640; the tuned best on four of the five such diffusion
  // keys, 1.04-1.18x over the register table's 64-row tiles; 14 shapes 0.72-0.99x in an A/B of the heuristic's
  // picks), at M = 9..32 where the decode rule above holds (2M weights, K > 1024; 6 shapes 0.53-0.86x). Where K
  // is shorter the 64 KB table does not pay: K <= 640, 320 x 768 and 4096 x 1024 ran 1.07-1.10x slower with it
  // (docs/NOTES.md v1.19).
  const bool m80_pair_table = p.m > 32 ? p.k >= 1024 || (p.k >= 768 && p.n >= 640) : p.m > 8 && pair_table_pays;
  if (small_weight && p.m <= 80 && p.k <= 2048 && m80_pair_table) {
    const int64_t tiles = tile_count(p, 128, 16), k_tiles = (p.k + 127) / 128;
    const int64_t splits = std::clamp<int64_t>((6 * sms + 10 * tiles - 1) / (10 * tiles), 1, std::max<int64_t>(1, k_tiles / 2));
    if (auto c = first_valid(p, dev, small_m80_two_strips, pair_table, static_cast<int>(splits))) return *c;
  }
  // ... and the smaller ones with K >= 1024 a multiple of 256 on 64-row tiles with two warp groups and the 128-byte
  // table, one 256-deep k tile a split (up to eight, summed in a cluster), where that makes at most 1.5 blocks an SM:
  // the tuned best on 2 x {320, 640, 1280} x 1280; 0.75-1.02x of the register table's 64-row tiles on 120 shapes of
  // 0.25-3M weights, 1.23-1.57x slower on the 4-8M-weight ones at K = 1024 (256-512 blocks: excluded); the pair
  // table on the register table's own tiles lost too (1.02x; 1.03-1.22x at K <= 512): session 16, docs/NOTES.md v1.20
  if (small_weight && p.m <= 8 && p.k >= 1024 && p.k % 256 == 0) {
    const int64_t splits = std::min<int64_t>(p.k / 256, 8);
    if (2 * tile_count(p, 64, 8) * splits <= 3 * sms) {
      if (auto c = first_valid(p, dev, small_w8_groups, LutPlacement::shared, static_cast<int>(splits))) return *c;
    }
  }
  if (small_weight && p.m <= 128) {
    // 256-deep k tiles for M <= 8 where K is long and a multiple of 256 (2 x 1536 x 2048: 1.26x, 2 x 3072 x
    // 1536: 1.17x over 128-deep ones), for M = 9..32 unless the grid is small and K can be split in 128s
    // (77 x 320 x 768 on 25 tiles: three splits of 128-deep tiles 1.22x faster than one 256-deep run)
    const bool deep8 = p.k <= 256 || (p.k >= 1536 && p.k % 256 == 0);
    const bool shallow16 = p.k >= 512 && 2 * tile_count(p, 64, 16) <= sms;
    prefs = p.m > 8 ? (p.m > 32 && p.k >= 1024 && p.k <= 2048 ? std::span<const TileChoice>(small_w32)
                       : (shallow16 ? std::span<const TileChoice>(narrow16) : std::span<const TileChoice>(small_w16)))
                    : (deep8 ? std::span<const TileChoice>(small_w8_k256) : std::span<const TileChoice>(small_w8));
    lut = LutPlacement::registers;
  } else if (p.m <= 8) {
    if (p.bits == 4 && !mid_weight) {
      if (auto c = first_valid(p, dev, decode8_b4, LutPlacement::shared_wide)) {
        // Stream-K where the split-K grid's waves leave over a tenth of their block slots idle (224 tiles on
        // the H200's 264 slots; 224 on an A100's 108, a third wave of 8) and every block still gets 15 k tiles
        // or more: a decode block streams W at a rate of its own, so the busiest slot sets the time.
        // 1 x 28672 x 8192 on the H200: 37.8 -> 36.1 us; on shorter runs the extra tile ends cost more than
        // the balance gives (1 x 14336 x 4096, 7 k tiles a block: 12.9 -> 13.8; v1.14). (16 until session 17:
        // 8 x 37888 x 3584, 15.7 a block, 28.1 -> 22.8 us; 1 x 28672 x 4096, 13.6, tuned unsplit.)
        KernelConfig stream_k = *c;
        stream_k.split_k = kStreamK;
        if (config_invalid_reason(stream_k, p, dev).empty()) {
          const int64_t slots = sms * resident_blocks_per_sm(*c, p, dev);
          const int64_t blocks = tile_count(p, c->tile_n, c->tile_m) * c->split_k;
          const int64_t waves = (blocks + slots - 1) / slots;
          const StreamKShape s = stream_k_shape(stream_k, p, dev);
          if (10 * blocks < 9 * waves * slots && s.tiles * s.k_tiles >= 15ll * s.blocks) return stream_k;
        }
        return *c;
      }
      prefs = decode8_b4;
      lut = LutPlacement::shared_wide;
    } else {
      prefs = wide ? std::span<const TileChoice>(decode8_wide)
                   : (mid_weight ? std::span<const TileChoice>(decode8_mid) : std::span<const TileChoice>(decode8));
    }
  } else if (p.m <= 16) {
    prefs = decode16_prefs;
    lut = decode16_lut;
  } else if (p.m > 32 && p.m <= 64) {
    prefs = mid_weight ? std::span<const TileChoice>(medium64_mid) : std::span<const TileChoice>(medium64);
    lut = mid_weight ? LutPlacement::registers : pair_table;
  } else if (p.m > 64 && padded_a_lot && n256 && tile_count(p, 256, 32) >= sms) {
    prefs = strips4_m32;
  } else if (p.m <= 64 || (padded_a_lot && tile_count(p, 128, 80) < sms)) {
    // (and M up to 511 that 64- and 80-column tiles would pad by over 10% where 128 x 80 tiles would leave
    // SMs idle: 333 x 1536 x 1536 ran 1.3x faster on 128 x 32 tiles; there the strips are dequantized many
    // times, and the register table, ALU-heavy, ran 1.56x slower than the 256-byte-row one even on this
    // small weight)
    prefs = medium;
    if (p.m > 64) lut = pair_table;
  } else if (few_big_tiles && p.k <= 1536 && p.m <= 128 && p.n > 1024) {
    // (M = 65..128 on the wide layers this rule below was not made for: 128 x 16 tiles, two strips a warp, M in
    // 16-column tiles; the tuned pick on 77 x 6144 x 1536; session 17's A/B: 77 x 6144 x 1536 17.9 -> 9.9 us, 80 x
    // 6144 x 1408 17.8 -> 10.2 against the narrow 64 x 32 tiles)
    if (auto c = first_valid(p, dev, decode16_b4, pair_table)) return *c;
    prefs = large;
    lut = big_m_lut;
  } else if (few_big_tiles && p.k <= 1536) {
    // N <= 64 (one 64-row tile across N): the widest tile along M that still gives about half a block
    // per SM, in two splits (4096 x 64 x 1536 on 64 x 64: 1.39x, 1024 x 32 x 1152 on 64 x 16: 1.22x
    // faster than the unsplit narrow tiles below, which decode W once per 32 or 8 columns).
    if (p.n <= 64) {
      for (const TileChoice& t : narrow_n64) {
        if (20 * tile_count(p, t.tile_n, t.tile_m) < 9 * sms) continue;
        if (auto c = first_valid(p, dev, std::span<const TileChoice>(&t, 1), LutPlacement::registers, 2)) return *c;
      }
    }
    // Unsplit; the widest tile that still gives about a block per SM: 128 x 80, 64 x 80, then 64-row
    // tiles of 32, 16 or 8 columns.
    std::span<const TileChoice> narrow = large;
    if (10 * tile_count(p, 128, 80) < 9 * sms) narrow = narrow80;
    if (10 * tile_count(p, 64, 80) < 9 * sms) narrow = narrow32;
    if (10 * tile_count(p, 64, 32) < 9 * sms) narrow = 10 * tile_count(p, 64, 16) < 9 * sms ? std::span<const TileChoice>(small_w8) : std::span<const TileChoice>(narrow16);
    if (auto c = first_valid(p, dev, narrow, big_m_lut, 1)) return *c;
    prefs = large;
    lut = big_m_lut;
  } else {
    // 64-row tiles where 128 would leave part of a tile empty (N % 128) or give under a third of a block
    // per SM (4096 x 320 x 1280: 1.65x, 300 x 1152 x 4096: 1.58x faster measured)
    const bool narrow_n = p.n % 128 != 0 || 3 * tile_count(p, 128, 80) < sms;
    lut = big_m_lut;
    if (!use64 && narrow_n) {  // (their 128-deep k tiles need K % 128 == 0; else the wide tiles)
      if (auto c = first_valid(p, dev, narrow80, lut)) return *c;
    }
    prefs = large;
  }
  if (auto c = first_valid(p, dev, prefs, lut)) return *c;
  // Nothing preferred fits (an unusual K or a GPU with little shared memory): any valid shape.
  for (const auto& s : sm80_kernel_shapes()) {
    const TileChoice t{s.tile_n, s.tile_m, s.tile_k, s.warps_n, s.warps_m, s.stages, s.warps_k};
    if (auto c = first_valid(p, dev, std::span<const TileChoice>(&t, 1))) return *c;
  }
  throw_error("no sm80 config fits " + p.str() + " on " + dev.name);
}

}  // namespace lutmm
