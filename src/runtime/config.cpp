// Config names, problem rules and the config space of the sm80 and sm90 families.
#include "lutmm/config.hpp"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "lutmm/format.hpp"
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/kernels/gemm_sm90_config.cuh"
#include "lutmm/pack.hpp"
#include "lutmm/scheduler/stream_k.cuh"
#include "runtime/kernel_shapes.hpp"
#include "runtime/kernel_source.hpp"

namespace lutmm {

std::string KernelConfig::name() const {
  const std::string groups_k = warps_k > 1 ? fmt::format("x{}", warps_k) : std::string();
  const std::string split =
      split_k == 0 ? std::string("auto") : (split_k == kStreamK ? std::string("stream") : std::to_string(split_k));
  const char* table = lut == LutPlacement::shared ? "smem" : (lut == LutPlacement::shared_wide ? "smem256" : "reg");
  return fmt::format("sm{}_n{}_m{}_k{}_s{}_w{}x{}{}_sk{}_lut{}{}{}{}{}", family, tile_n, tile_m, tile_k, stages,
                     warps_n, warps_m, groups_k, split, table, w_in_registers ? "_wreg" : "",
                     min_blocks > 1 ? fmt::format("_occ{}", min_blocks) : std::string(),
                     x_multicast > 1 ? fmt::format("_mc{}", x_multicast) : std::string(), warp_specialized ? "_ws" : "");
}

namespace {

bool take_int(std::string_view& s, std::string_view prefix, int& out) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(ptr - s.data()));
  return true;
}

bool take(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

}  // namespace

KernelConfig KernelConfig::parse(std::string_view name) {
  const std::string expected = "a config name like sm80_n64_m16_k128_s4_w4x1_sk2_lutsmem";
  KernelConfig c;
  std::string_view s = name;
  bool ok = take_int(s, "sm", c.family) && take_int(s, "_n", c.tile_n) && take_int(s, "_m", c.tile_m) &&
            take_int(s, "_k", c.tile_k) && take_int(s, "_s", c.stages) && take_int(s, "_w", c.warps_n) &&
            take_int(s, "x", c.warps_m);
  if (ok && s.substr(0, 1) == "x") ok = take_int(s, "x", c.warps_k) && c.warps_k > 1;  // optional: x{warps_k}
  ok = ok && take(s, "_sk");
  if (ok) {
    if (take(s, "auto")) {
      c.split_k = 0;
    } else if (take(s, "stream")) {
      c.split_k = kStreamK;
    } else {
      ok = take_int(s, "", c.split_k) && c.split_k >= 1;
    }
  }
  if (ok) {
    if (take(s, "_lutsmem256")) c.lut = LutPlacement::shared_wide;
    else if (take(s, "_lutsmem")) c.lut = LutPlacement::shared;
    else if (take(s, "_lutreg")) c.lut = LutPlacement::registers;
    else ok = false;
  }
  if (ok && take(s, "_wreg")) c.w_in_registers = true;
  if (ok && s.substr(0, 4) == "_occ") ok = take_int(s, "_occ", c.min_blocks) && c.min_blocks >= 2;
  if (ok && s.substr(0, 3) == "_mc") ok = take_int(s, "_mc", c.x_multicast) && c.x_multicast >= 2;
  if (ok && take(s, "_ws")) c.warp_specialized = true;
  if (!ok || !s.empty()) throw_argument_error("config", expected, fmt::format("'{}'", name));
  if (c.family != 80 && c.family != 90)
    throw_argument_error("config", "kernel family sm80 or sm90", fmt::format("'{}'", name));
  const auto& shapes = c.family == 90 ? sm90_kernel_shapes() : sm80_kernel_shapes();
  const bool shape_known = std::any_of(shapes.begin(), shapes.end(), [&](const auto& k) {
    return k.tile_n == c.tile_n && k.tile_m == c.tile_m && k.tile_k == c.tile_k && k.stages == c.stages &&
           k.warps_n == c.warps_n && k.warps_m == c.warps_m && k.warps_k == c.warps_k;
  });
  if (!shape_known)
    throw_argument_error("config", "one of the tile shapes listed by `lutmm configs`", fmt::format("'{}'", name));
  return c;
}

std::string Problem::str() const {
  return fmt::format("M={} N={} K={} b{} g{} {}{}", m, n, k, bits, group_size, to_string(dtype), has_bias ? " +bias" : "");
}

void check_problem(const Problem& p) {
  if (p.m < 1 || p.m > (1ll << 31) - 1) throw_argument_error("m", "1 <= M < 2^31", std::to_string(p.m));
  if (p.n < 8 || p.n % 8 != 0 || p.n > (1ll << 30))
    throw_argument_error("n", "a positive multiple of 8 (N = output features)", std::to_string(p.n));
  if (p.k < 16 || p.k % 16 != 0 || p.k > (1ll << 30))
    throw_argument_error("k", "a positive multiple of 16 (K = input features)", std::to_string(p.k));
  check_bits(p.bits);
  check_group_size(p.group_size, p.k);
}

int config_shared_bytes(const KernelConfig& c, const Problem& p) {
  const int group = kernel_group(p);
  // (x multicast and _ws: their mbarriers are static shared memory, and with them the sm_90 compiler's 1 KB
  // reserve)
  if (c.family == 90)
    return sm90_shared_bytes(p.bits, group, c.tile_n, c.tile_m, c.tile_k, c.stages, lut_row_bytes(c.lut)) +
           (c.x_multicast > 1 || c.warp_specialized ? 1024 : 0);
  return sm80_shared_bytes(p.bits, group, c.tile_n, c.tile_m, c.tile_k, c.stages, lut_row_bytes(c.lut), c.w_in_registers);
}

int config_sm_shared_bytes(const KernelConfig& c, const Problem& p) { return config_shared_bytes(c, p) + 1024; }

int config_dynamic_shared_bytes(const KernelConfig& c, const Problem& p) {
  const int group = kernel_group(p);
  if (c.family == 90)
    return sm90_dynamic_shared_bytes(p.bits, group, c.tile_n, c.tile_m, c.tile_k, c.stages, lut_row_bytes(c.lut));
  return sm80_dynamic_shared_bytes(p.bits, group, c.tile_n, c.tile_m, c.tile_k, c.stages, lut_row_bytes(c.lut),
                                   c.w_in_registers);
}

std::string config_invalid_reason(const KernelConfig& c, const Problem& p, const DeviceInfo& dev) {
  if (c.family != 80 && c.family != 90) return fmt::format("no kernel family sm{} (sm80 or sm90)", c.family);
  if (dev.arch() < 80) return fmt::format("the GPU is sm_{}, the sm80 family needs sm_80 or newer", dev.arch());
  if (c.family == 90) {
    // wgmma exists on sm_90a alone (sm_100-class GPUs have another tensor-core interface)
    if (dev.arch() != 90) return fmt::format("the sm90 family (wgmma) runs on sm_90 GPUs only, this one is sm_{}", dev.arch());
    if (c.warps_m != 1 || c.warps_k != 1 || c.warps_n % 4 != 0 || c.tile_n != 16 * c.warps_n)
      return "the sm90 family has whole warpgroups of one 16-row strip per warp (w{4,8,..}x1, tile_n = 16 x warps)";
    if (!sm90_tile_m_supported(c.tile_m)) return fmt::format("the sm90 family has no wgmma for tile_m {}", c.tile_m);
    if (c.w_in_registers || c.min_blocks != 1) return "_wreg and _occN belong to the sm80 family";
  }
  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  if (c.warp_specialized) {
    if (c.family != 90) return "the warp-specialized kernel (_ws) belongs to the sm90 family (TMA, mbarriers)";
    if (c.split_k == kStreamK) return "the warp-specialized kernel (_ws) runs one split-K item per block, not Stream-K";
    if (c.x_multicast != 1) return "the warp-specialized kernel (_ws) loads x by its own TMA copies, not multicast (_mcN)";
    // a 16-warp block plus the producer is capped at 96 registers a thread: the 256-row tiles spill
    if (c.warps_n > 8) return fmt::format("the warp-specialized kernel (_ws) has tiles of up to 128 rows (w8x1), not {}", c.tile_n);
  }
  if (c.x_multicast != 1) {
    if (c.family != 90) return "x multicast (_mcN) belongs to the sm90 family (TMA)";
    if (c.x_multicast != 2 && c.x_multicast != 4)
      return fmt::format("x multicast to {} blocks: clusters of 2 or 4 column tiles", c.x_multicast);
    if (c.split_k == kStreamK) return "x multicast (_mcN) runs one split-K item per block, not Stream-K";
    // each block's TMA loads whole 8-row swizzle atoms of the x tile
    if (c.tile_m % (8 * c.x_multicast) != 0)
      return fmt::format("x multicast to {} blocks needs tile_m a multiple of {}, not {}", c.x_multicast,
                         8 * c.x_multicast, c.tile_m);
    const int64_t n_tiles = (ps.n_padded + c.tile_n - 1) / c.tile_n;
    if (n_tiles % c.x_multicast != 0)
      return fmt::format("x multicast to clusters of {} needs a multiple of {} column tiles, N = {} makes {}",
                         c.x_multicast, c.x_multicast, p.n, n_tiles);
  }
  if (ps.k_padded % c.tile_k != 0)
    return fmt::format("tile_k {} does not divide the padded K {}", c.tile_k, ps.k_padded);
  const int group = kernel_group(p);
  if (group != 0 && group > c.tile_k && group % c.tile_k != 0)
    return fmt::format("group {} straddles tile_k {}", group, c.tile_k);
  if (c.lut == LutPlacement::shared_wide && p.bits != 4)
    return fmt::format("lutsmem256 needs 4-bit codes (their pair index is a whole byte), not {}-bit", p.bits);
  if (c.w_in_registers && c.warps_k > 1)
    return "_wreg loads each warp's W for the whole k tile; it does not combine with warp groups splitting it (w..x..x2)";
  // 128 accumulators a thread (four strips x 64 columns a warp) leave no room for the 8 table registers
  // of lutreg (4-bit: ptxas spills at 255 registers).
  const int accumulators = (c.tile_n / c.warps_n / 16) * (c.tile_m / c.warps_m / 8) * 4;
  if (c.lut == LutPlacement::registers && accumulators >= 128)
    return fmt::format("lutreg with {} accumulators a thread (a {} x {} warp tile) runs out of registers; use lutsmem",
                       accumulators, c.tile_n / c.warps_n, c.tile_m / c.warps_m);
  const int smem = config_shared_bytes(c, p);
  if (smem > dev.smem_per_block_optin)
    return fmt::format("needs {} bytes of shared memory, the GPU allows {}", smem, dev.smem_per_block_optin);
  if (c.min_blocks < 1) return "min_blocks must be >= 1";
  if (c.min_blocks > 1) {
    const int per_block = config_sm_shared_bytes(c, p);
    if (dev.smem_per_sm > 0 && c.min_blocks * per_block > dev.smem_per_sm)
      return fmt::format("_occ{} needs {} blocks of {} bytes of shared memory on one SM, which has {}", c.min_blocks,
                         c.min_blocks, per_block, dev.smem_per_sm);
    if (dev.max_threads_per_sm > 0 && c.min_blocks * c.threads() > dev.max_threads_per_sm)
      return fmt::format("_occ{} needs {} threads on one SM, which runs {}", c.min_blocks, c.min_blocks * c.threads(),
                         dev.max_threads_per_sm);
  }
  if (c.split_k == kStreamK && c.family == 80) {  // (kernels/gemm_sm80.cuh: a run of units through one pipeline)
    if (p.m > c.tile_m)
      return fmt::format("sm80 Stream-K runs one tile row (M <= {}), M = {}", c.tile_m, p.m);
    const int stage = sm80_stage_bytes(p.bits, kernel_group(p), c.tile_n, c.tile_m, c.tile_k, false,
                                       sm80_io_in_holes(p.bits, kernel_group(p), c.tile_n, c.tile_m, c.tile_k,
                                                        c.stages, lut_row_bytes(c.lut)));
    const int epilogue = c.tile_m * sm80_stream_k_epilogue_ld(c.tile_n, c.tile_m, stage) * 4;
    if (epilogue > stage)
      return fmt::format("sm80 Stream-K stages the {}-byte epilogue tile in one {}-byte stage", epilogue, stage);
  }
  if (c.split_k == kStreamK && !stream_k_shape(c, p, dev).schedule_fits)
    return "Stream-K's 32-bit schedule: (tiles x k tiles + 1) x blocks must stay below 2^32";
  if (c.split_k == kStreamK && c.w_in_registers)
    return "Stream-K (skstream) fills each item's pipeline through the shared-memory stages, not W in registers (_wreg)";
  // (ptxas: the item loop spills on the 256 x 128 and 128 x 256 tiles, capped at 128 / 255 registers)
  if (c.split_k == kStreamK && c.tile_n * c.tile_m >= 32768)
    return fmt::format("Stream-K's item loop runs out of registers on {} x {} tiles", c.tile_n, c.tile_m);
  if (c.split_k < 0 && c.split_k != kStreamK) return "split_k must be >= 0 (or Stream-K)";
  const int k_tiles = static_cast<int>(ps.k_padded / c.tile_k);
  if (c.split_k > k_tiles) return fmt::format("split_k {} exceeds the {} k tiles", c.split_k, k_tiles);
  return {};
}

int resident_blocks_per_sm(const KernelConfig& c, const Problem& p, const DeviceInfo& dev) {
  const int smem = config_sm_shared_bytes(c, p);
  int blocks = dev.smem_per_sm > 0 ? dev.smem_per_sm / smem : 1;
  if (dev.max_threads_per_sm > 0) blocks = std::min(blocks, dev.max_threads_per_sm / c.threads());
  // The sm80 kernels use up to ~128 registers a thread at the 4-warp decode shapes and ~180 at the large
  // ones; an _occN kernel is compiled to leave room for N blocks. The sm90 ones (ptxas, session 5): 62-136
  // below 128 x rows a tile, 115-216 from 128 up.
  const int large_m_regs = c.family == 90 ? 168 : 192;
  // (The sm80 Stream-K item loop keeps ~250 registers at the 4-warp decode shapes: two blocks of 4 warps, one of 8.)
  const int regs = c.min_blocks > 1                         ? 0
                   : c.family == 80 && c.split_k == kStreamK ? 256
                   : c.tile_m >= (c.family == 90 ? 128 : 64) ? large_m_regs
                                                             : 128;
  if (dev.regs_per_sm > 0 && regs > 0) blocks = std::min(blocks, dev.regs_per_sm / (regs * c.threads()));
  return std::max(blocks, 1);
}

int resolve_split_k(const KernelConfig& c, const Problem& p, const DeviceInfo& dev) {
  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  const int k_tiles = static_cast<int>(ps.k_padded / c.tile_k);
  if (c.split_k == kStreamK) return kStreamK;
  int splits = c.split_k;
  if (splits == 0) {
    // Measured on the H200 (docs/NOTES.md, "The heuristic against the tuner"):
    //  * one 8- or 16-column tile along M (decode, memory-bound): about one block per SM, two when W is
    //    16 MB or more (filling every resident slot over-split: 1 x 4096 x 4096 ran 1.2x slower with 11
    //    splits than with 4), each split keeping two k tiles (the last may keep one; 256 of K until the
    //    split-K epilogue got cheaper in session 6: then 2 x 1280 x 320 ran 1.28x faster in three splits of
    //    64-deep tiles than unsplit, 8 x 1152 x 1152 1.07x faster in five splits than in three);
    //  * otherwise fill the resident slots, each split keeping at least two k tiles (8- and 16-column tiles)
    //    or eight and 1024 of K (wider, compute-bound tiles at M > 80: 256 x 1280 x 1280 on sm80 tiles ran
    //    1.1-1.2x faster unsplit than split to fill the slots, 1024 x 640 x 2560 on 128 x 80 tiles 1.45x
    //    faster in two splits than in four); the sm90 family keeps 512 of K a split up to M = 512 where K is
    //    short (session 16: 300 x 1152 x 1152 0.82x, 384 x 1536 x 1536 0.72x in two splits against one; its
    //    heuristic also splits grids of more than a wave in two where that fills the last wave much better).
    const int64_t tiles = ((ps.n_padded + c.tile_n - 1) / c.tile_n) * ((p.m + c.tile_m - 1) / c.tile_m);
    int64_t target;
    int max_splits;
    const int64_t m_tiles = (p.m + c.tile_m - 1) / c.tile_m;
    const int resident = resident_blocks_per_sm(c, p, dev);
    if (c.tile_m <= 16 && m_tiles == 1) {
      const bool big_weight = ps.words() * 4 >= (16ll << 20);
      target = static_cast<int64_t>(dev.sm_count) * (big_weight ? std::min(2, resident) : 1);
      max_splits = (k_tiles + 1) / 2;
      // rounded to the nearest count (72 tiles on 132 SMs -> 2) where each split keeps four k tiles, else
      // down: on short K the split-K round trip costs more than idle SMs (2 x 9216 x 1536: one split of six
      // 256-deep tiles 1.16-1.22x faster than two in three tunings, 2 x 3072 x 1536: two 1.13x faster than three)
      splits = static_cast<int>(target / tiles);
      // Not past the resident slots unless rounding down leaves 40% of them idle (session 17 on the H200's 264:
      // 1 x 5120 x 13824's 40 tiles in seven splits 18.1 us, in six 13.2; 9 x 9216 x 7168's 72 in four 20.2, in
      // three 15.7; 9 x 12288 x 4096's 96 in three 15.8, in two 14.5; but 16 x 37888 x 3584's 148 256-row tiles
      // 33.5 in two, 36.7 in one).
      const int rounded = static_cast<int>((target + tiles / 2) / tiles);
      const int64_t slots = static_cast<int64_t>(dev.sm_count) * resident;
      const bool past_slots = rounded * tiles > slots, few_blocks = 10 * splits * tiles < 6 * slots;
      if (rounded > splits && k_tiles >= 4 * rounded && (!past_slots || few_blocks)) splits = rounded;
    } else {
      target = static_cast<int64_t>(resident) * dev.sm_count;
      // (M <= 80 and K <= 2048 on wide tiles: 512 of K, 64 x 1280 x 1280 and 77 x 640 x 2048 ran 1.24-1.31x
      // faster in two and four splits than in one and two; 32 x 4096 x 4096 1.26x slower in eight than four;
      // the sm90 family up to M = 512: 256 x 1280 x 1280 on 128 x 64 x 128 tiles 1.27x faster in two splits)
      const bool short_k = p.k <= 2048 && (p.m <= 80 || (c.family == 90 && p.m <= 512));
      const int min_k_tiles = c.tile_m <= 16 ? 2 : (short_k ? std::max(4, 512 / c.tile_k) : std::max(8, 1024 / c.tile_k));
      max_splits = k_tiles >= 2 * min_k_tiles ? k_tiles / min_k_tiles : 1;
      splits = static_cast<int>(target / tiles);
    }
    splits = std::clamp(splits, 1, std::clamp(max_splits, 1, 16));
  }
  splits = std::clamp(splits, 1, k_tiles);
  const int per = (k_tiles + splits - 1) / splits;
  return (k_tiles + per - 1) / per;  // no empty split
}

StreamKShape stream_k_shape(const KernelConfig& c, const Problem& p, const DeviceInfo& dev) {
  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  StreamKShape s;
  s.k_tiles = static_cast<int>(ps.k_padded / c.tile_k);
  s.tiles = ((ps.n_padded + c.tile_n - 1) / c.tile_n) * ((p.m + c.tile_m - 1) / c.tile_m);
  const int64_t units = s.tiles * s.k_tiles;
  // one wave, every block with at least two k tiles of work (a shorter run is all pipeline fill)
  const int64_t wave = static_cast<int64_t>(std::max(1, dev.sm_count)) * resident_blocks_per_sm(c, p, dev);
  s.blocks = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(wave, units / 2), 1, wave));
  s.schedule_fits = scheduler::StreamK::schedule_fits(static_cast<uint64_t>(units), static_cast<uint64_t>(s.blocks));
  if (!s.schedule_fits) return s;
  // The kernel's own schedule (scheduler/stream_k.cuh): tile t's K range meets blocks first(t) .. last(t).
  auto block_of = [&](int64_t u) {
    return scheduler::StreamK::block_of(static_cast<uint32_t>(u), static_cast<uint32_t>(s.blocks),
                                        static_cast<uint32_t>(units));
  };
  for (int64_t t = 0; t < s.tiles; ++t) {
    const int64_t sharing = static_cast<int64_t>(block_of((t + 1) * s.k_tiles - 1)) - block_of(t * s.k_tiles) + 1;
    s.max_sharing = std::max(s.max_sharing, static_cast<int>(sharing));
  }
  return s;
}

std::vector<KernelConfig> valid_configs(const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  std::vector<KernelConfig> out;
  const int64_t m8 = (p.m + 7) / 8 * 8;
  const int64_t k_padded = packed_shape(p.n, p.k, p.bits, p.group_size).k_padded;
  std::vector<KernelConfig> shapes = sm80_kernel_shapes();
  if (dev.arch() == 90) shapes.insert(shapes.end(), sm90_kernel_shapes().begin(), sm90_kernel_shapes().end());
  for (const auto& shape : shapes) {
    if (shape.tile_m > std::max<int64_t>(8, 2 * m8)) continue;  // mostly-empty tiles: never the fastest
    if (shape.tile_n > 2 * ((p.n + 15) / 16 * 16)) continue;
    // W streamed into registers (`_wreg`) stays forcible but is not offered: measured slower on every
    // decode shape on the H200 (docs/NOTES.md, v1.4), as it keeps only one k tile of W in flight per warp.
    for (LutPlacement lut : {LutPlacement::shared, LutPlacement::shared_wide, LutPlacement::registers}) {
      // Stream-K (skstream) on the sm90 tiles stays forcible but is not offered: slower than split-K on every
      // shape measured on the H200 (docs/NOTES.md v1.9; on the sm80 decode tiles it wins where split-K leaves
      // block slots idle, v1.14); so does x multicast (_mc2): 5-25% slower on the 15 shapes of
      // M = 32..4096 measured (v1.11); and the warp-specialized kernel (_ws): 2% faster to 15% slower
      // (v1.13)
      // Splits past the k tiles become one k tile a split (short K: 2 x 320 x 1280 on 256-deep tiles ran
      // 2.31 us in five splits against 2.41 in three, docs/NOTES.md v1.18); each count once.
      const int k_tiles = static_cast<int>(k_padded / shape.tile_k);
      int offered = 1;  // (the largest count offered above one split)
      for (int split : {0, 1, 2, 4, 8, kStreamK}) {
        // (Stream-K offered on the sm80 decode tiles only: v1.14)
        if (split == kStreamK && (shape.family != 80 || shape.tile_m > 16)) continue;
        if (split > 1 && split != kStreamK) {
          split = std::min(split, k_tiles);
          if (split <= offered) continue;
          offered = split;
        }
        KernelConfig c = shape;
        c.lut = lut;
        c.split_k = split;
        if (config_invalid_reason(c, p, dev).empty()) out.push_back(c);
      }
    }
  }
  return out;
}

}  // namespace lutmm
