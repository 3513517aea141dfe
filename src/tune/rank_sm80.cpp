// The sm80 family's ranking model: a cost estimate that needs no measurement. tune() times candidates
// in this order and leaves out the ones it calls hopeless, so that its time budget goes to configs that
// can win. It only has to order configs roughly; the measurement decides.
//
//   grid      = ceil(N_pad / tile_n) x ceil(M / tile_m) x splits blocks
//   resident  = blocks per SM (resident_blocks_per_sm: shared memory, threads, registers)
//   per block, over its K range (K_pad / splits), three SM pipes:
//     MMA      = flops / MMA rate
//     decode   = tile_n x K range x warps_m / decode rate   (every warp along M decodes the W strips it
//                multiplies: a warp tile of 8 x-columns spends one decode per MMA, one of 32 four MMAs)
//     shared   = bytes the warps read from shared memory (their W strips and x fragments) / its bandwidth
//     compute  = the largest + a quarter of the other two   (the pipes overlap, not perfectly)
//     latency  = k steps x memory latency / (stages - 1)    (a block keeps stages - 1 loads in flight)
//   SM time   = max(blocks per SM x compute, ceil(blocks per SM / resident) x latency)
//                (compute is shared by the resident blocks, latency overlaps between them)
//   DRAM time = (W + scales + x + out + 2 x split-K partial sums) / bandwidth   (L2 catches tile reuse)
//   L2 time   = bytes every block reads / L2 bandwidth                         (the re-reads across tiles)
//   estimate  = max(SM, DRAM, L2) + launch + (splits > 1: the reduction's pass over the partial sums)
//
// The rates are per SM and per architecture (public figures, rounded; the mma.sync rate is what this
// family can reach, below the wgmma/tcgen05 peak of sm_90 and sm_100). The sm90 family's candidates go
// through the same model with its two differences: wgmma at the dense rate (790 against 640 TFLOP/s
// measured on the H200) and x read by the tensor cores once per warpgroup instead of by every warp. The dequant rate is the LUT decode
// throughput; a table in registers decodes a little slower than one in shared memory but leaves more
// shared memory for residency.
#include <algorithm>
#include <cmath>
#include <set>

#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/pack.hpp"
#include "lutmm/tune.hpp"
#include "runtime/kernel_source.hpp"

namespace lutmm {

namespace {

struct Rates {
  double dram_bytes_per_us;  // per SM
  double l2_bytes_per_us;    // per SM
  double mma_flops_per_us;   // per SM, mma.sync fp16/bf16 with fp32 accumulation
  double dequant_per_us;     // W elements decoded per SM
  double smem_bytes_per_us;  // per SM: 128 bytes a clock
  double latency_us;         // one global load, issue to use
};

Rates rates_for(int arch) {
  if (arch >= 120) return {10.6e3, 40e3, 1.2e6, 60e3, 280e3, 0.9};  // RTX 5090-class: 1.8 TB/s, 170 SMs
  if (arch >= 100) return {54e3, 120e3, 5.0e6, 80e3, 240e3, 0.9};   // B200-class: 8 TB/s, 148 SMs
  if (arch >= 90) return {36e3, 90e3, 5.0e6, 80e3, 220e3, 0.8};     // H100/H200: 3.3-4.8 TB/s, 132 SMs
  if (arch >= 89) return {6.1e3, 30e3, 2.5e6, 60e3, 300e3, 0.9};    // L40S-class: 0.86 TB/s, 142 SMs
  if (arch >= 86) return {11.4e3, 30e3, 0.87e6, 50e3, 220e3, 0.9};  // RTX 3090-class: 0.94 TB/s, 82 SMs
  return {18.5e3, 50e3, 2.9e6, 60e3, 180e3, 0.8};                   // A100: 2.0 TB/s, 108 SMs
}

constexpr double kLaunchUs = 3.0;

}  // namespace

double estimate_config_us(const KernelConfig& c, const Problem& p, const DeviceInfo& dev) {
  check_problem(p);
  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  const Rates r = rates_for(dev.arch());
  const int sms = std::max(1, dev.sm_count);
  // Stream-K: one wave of blocks, each with an even share of the k tiles, and about one partial tile each
  const bool stream_k = c.split_k == kStreamK;
  const StreamKShape sk = stream_k ? stream_k_shape(c, p, dev) : StreamKShape{};
  const int splits = stream_k ? 1 : resolve_split_k(c, p, dev);
  const bool shared_lut = c.lut != LutPlacement::registers;
  const int group = kernel_group(p);

  const double n_tiles = std::ceil(static_cast<double>(ps.n_padded) / c.tile_n);
  const double m_tiles = std::ceil(static_cast<double>(p.m) / c.tile_m);
  const double blocks = stream_k ? sk.blocks : n_tiles * m_tiles * splits;

  const int resident = resident_blocks_per_sm(c, p, dev);  // the same residency split-K auto plans with
  const double k_steps = stream_k ? std::ceil(static_cast<double>(sk.tiles) * sk.k_tiles / sk.blocks)
                                  : std::ceil(static_cast<double>(ps.k_padded / c.tile_k) / splits);
  const double k_len = k_steps * c.tile_k;
  const double flops = 2.0 * c.tile_m * c.tile_n * k_len;
  const double decode_rate = r.dequant_per_us * (shared_lut ? 1.0 : 0.85);
  // the sm90 family's wgmma runs at the dense peak (~790 TFLOP/s on an H200 against ~640 for mma.sync)
  const double mma = flops / (c.family == 90 ? r.mma_flops_per_us * 790.0 / 640.0 : r.mma_flops_per_us);
  const double decode = static_cast<double>(c.tile_n) * k_len * c.warps_m / decode_rate;
  // Per k16 slice every warp reads its W strips (16 x 16 codes each) and its x fragments (8 x 16 values).
  // (With w_in_registers the W codes skip shared memory.)
  const double w_strip_bytes = c.w_in_registers ? 0.0 : 16.0 * 16.0 * p.bits / 8.0;
  // (The sm90 family's tensor cores read x once per warpgroup, a quarter of a warp's x per warp.)
  const double x_warp_bytes = c.family == 90 ? c.tile_m * 8.0 : (c.tile_m / c.warps_m / 8) * 256.0;
  const double warp_bytes = (c.tile_n / c.warps_n / 16) * w_strip_bytes + x_warp_bytes;
  const double smem_reads = warp_bytes * c.warps_n * c.warps_m * (k_len / 16.0) / r.smem_bytes_per_us;
  const double widest = std::max({mma, decode, smem_reads});
  const double compute = widest + 0.25 * (mma + decode + smem_reads - widest);
  const double latency = k_steps * r.latency_us / std::max(1, c.stages - 1);
  const double per_sm = std::ceil(blocks / sms);
  const double sm_time = std::max(per_sm * compute, std::ceil(per_sm / resident) * latency);

  const double scale_bytes = static_cast<double>(ps.scale_count()) * 2.0;
  const double w_bytes = static_cast<double>(ps.words()) * 4.0 + scale_bytes;
  const double x_bytes = static_cast<double>(p.m) * static_cast<double>(p.k) * 2.0;
  const double out_bytes = static_cast<double>(p.m) * static_cast<double>(p.n) * 2.0;
  const double partials =
      stream_k ? (sk.max_sharing > 1 ? 2.0 * sk.blocks * c.tile_m * c.tile_n * 4.0 : 0.0)
               : (splits > 1 ? 2.0 * splits * m_tiles * c.tile_m * static_cast<double>(ps.n_padded) * 4.0 : 0.0);
  const double dram_time = (w_bytes + x_bytes + out_bytes + partials) / (r.dram_bytes_per_us * sms);

  const double block_bytes = (sm80_stage_bytes(p.bits, group, c.tile_n, c.tile_m, c.tile_k, c.w_in_registers) +
                              (c.w_in_registers ? c.tile_n * c.tile_k * p.bits / 8.0 : 0.0)) * k_steps;
  const double l2_time = blocks * block_bytes / (r.l2_bytes_per_us * sms);

  const double reduce = partials > 0 ? partials / 2.0 / (r.l2_bytes_per_us * sms) : 0.0;
  return std::max({sm_time, dram_time, l2_time}) + kLaunchUs + reduce;
}

std::vector<KernelConfig> rank_configs(const Problem& p, const DeviceInfo& dev) {
  std::vector<std::pair<double, KernelConfig>> scored;
  std::set<std::string> seen;
  for (KernelConfig c : valid_configs(p, dev)) {
    c.split_k = resolve_split_k(c, p, dev);
    if (!seen.insert(c.name()).second) continue;  // split-K auto resolved to a listed count: the same run
    scored.emplace_back(estimate_config_us(c, p, dev), c);
  }
  // Ties keep valid_configs' order (smaller tiles first), so the ranking is deterministic.
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KernelConfig> out;
  out.reserve(scored.size());
  for (const auto& s : scored) out.push_back(s.second);
  return out;
}

}  // namespace lutmm
