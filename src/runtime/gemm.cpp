// The GEMM entry point: argument checks, config choice, the kernel (JIT, cached), workspace, launch.
#include "lutmm/gemm.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "jit/jit.hpp"
#include "lutmm/device.hpp"
#include "lutmm/error.hpp"
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/ptx/tma.cuh"
#include "lutmm/scheduler/stream_k.cuh"
#include "runtime/cuda_check.hpp"
#include "lutmm/tune.hpp"
#include "runtime/kernel_shapes.hpp"
#include "runtime/kernel_source.hpp"
#include "runtime/launch_choices.hpp"
#include "runtime/trace.hpp"
#include "runtime/workspace.hpp"

namespace lutmm {

namespace {

std::string ptr_str(const void* p) { return fmt::format("{}", p); }

void check_device_pointer(const void* p, const char* name, size_t alignment, bool may_be_null = false) {
  if (p == nullptr) {
    if (may_be_null) return;
    throw_argument_error(name, "a non-null device pointer", "null");
  }
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0)
    throw_argument_error(name, fmt::format("a {}-byte aligned pointer", alignment), ptr_str(p));
}

// ---- memory owned by a DeviceWeight: one allocation, three arrays at 256-byte offsets ----
size_t align256(size_t v) { return (v + 255) / 256 * 256; }

std::shared_ptr<void> device_alloc(size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

// Byte offsets of the packed codes, the table and the scales in a DeviceWeight's one allocation.
struct WeightLayout {
  size_t table_offset, scales_offset, total;
};

WeightLayout weight_layout(const PackedShape& s) {
  const size_t packed = align256(static_cast<size_t>(s.words()) * 4);
  const size_t table = align256(sizeof(uint16_t) << s.bits);
  return {packed, packed + table, packed + table + align256(static_cast<size_t>(s.scale_count()) * 2)};
}

WeightView make_view(int64_t n, int64_t k, int bits, int group_size, DType dtype, void* base, const PackedShape& s) {
  WeightView v;
  v.n = n; v.k = k; v.bits = bits; v.group_size = group_size; v.dtype = dtype;
  auto* b = static_cast<char*>(base);
  const WeightLayout layout = weight_layout(s);
  v.packed = reinterpret_cast<const uint32_t*>(b);
  v.table = reinterpret_cast<const uint16_t*>(b + layout.table_offset);
  v.scales = reinterpret_cast<const uint16_t*>(b + layout.scales_offset);
  return v;
}

// ---- per (device, stream) split-K workspace, grown on demand, never while the stream is captured ----
struct Workspace {
  std::shared_ptr<void> floats, counters;
  size_t float_bytes = 0, counter_count = 0;
};

std::mutex g_workspace_mutex;
std::map<std::pair<int, cudaStream_t>, Workspace> g_workspaces;
std::atomic<uint64_t> g_workspace_generation{1};  // bumped whenever a workspace buffer is replaced

Workspace& workspace_for(int device, cudaStream_t stream, size_t float_bytes, size_t counters) {
  std::lock_guard lock(g_workspace_mutex);
  Workspace& w = g_workspaces[{device, stream}];
  if (w.float_bytes >= float_bytes && w.counter_count >= counters) return w;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
  if (status != cudaStreamCaptureStatusNone)
    throw_error(fmt::format(
        "the split-K workspace must grow to {} bytes while the stream is being captured into a CUDA graph; "
        "run the same GEMM once before capturing",
        float_bytes));
  const size_t fb = std::max(float_bytes, w.float_bytes), cc = std::max(counters, w.counter_count);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // no kernel may still use the old one
  w.floats = fb ? device_alloc(fb) : nullptr;
  w.counters = device_alloc(std::max<size_t>(cc, 1) * sizeof(uint32_t));
  check_cuda(cudaMemset(w.counters.get(), 0, std::max<size_t>(cc, 1) * sizeof(uint32_t)), "cudaMemset");
  w.float_bytes = fb;
  w.counter_count = cc;
  g_workspace_generation.fetch_add(1);
  return w;
}

// ---- loaded kernels, keyed by everything that changes the generated source ----
struct KernelKey {
  int device, family, stream_k, arch, bits, group, bf16, tile_n, tile_m, tile_k, stages, warps_n, warps_m, warps_k,
      lut_row_bytes, w_in_registers, min_blocks, x_multicast, warp_specialized, split_spread, prewait;
  std::vector<std::string> developer_options;  // (LUTMM_NVRTC_OPTIONS: a kernel built with others is another kernel)
  auto tie() const {
    return std::tie(device, family, stream_k, arch, bits, group, bf16, tile_n, tile_m, tile_k, stages, warps_n, warps_m,
                    warps_k, lut_row_bytes, w_in_registers, min_blocks, x_multicast, warp_specialized, split_spread,
                    prewait, developer_options);
  }
  bool operator<(const KernelKey& o) const { return tie() < o.tie(); }
};

struct ReadyKernel {
  std::shared_ptr<jit::LoadedKernel> kernel;
  int shared_bytes = 0;
};

std::mutex g_kernel_mutex;
std::map<KernelKey, ReadyKernel> g_kernels;

ReadyKernel ready_kernel(const Problem& p, const KernelConfig& c, const DeviceInfo& dev, KernelVariant variant = {}) {
  const KernelKey key{dev.index, c.family, c.split_k == kStreamK, dev.arch(), p.bits, kernel_group(p),
                      p.dtype == DType::bf16, c.tile_n, c.tile_m, c.tile_k, c.stages, c.warps_n, c.warps_m, c.warps_k,
                      lut_row_bytes(c.lut), c.w_in_registers, c.min_blocks, c.x_multicast, c.warp_specialized,
                      variant.split_spread, variant.prewait, developer_nvrtc_options()};
  {
    std::lock_guard lock(g_kernel_mutex);
    auto it = g_kernels.find(key);
    if (it != g_kernels.end()) return it->second;
  }
  ReadyKernel r;
  r.kernel = jit::get_kernel(gemm_kernel_request(p, c, dev.arch(), variant));
  r.shared_bytes = config_dynamic_shared_bytes(c, p);
  r.kernel->set_max_dynamic_shared_memory(r.shared_bytes);
  std::lock_guard lock(g_kernel_mutex);
  return g_kernels.emplace(key, r).first->second;
}

Problem problem_of(const WeightView& w, int64_t m, bool has_bias) {
  Problem p = Problem::of(m, w.n, w.k, w.bits, w.group_size, w.dtype);
  p.has_bias = has_bias;
  return p;
}

bool env_switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string_view(v) != "0";
}

// Split-K over flagged slots (epilogue/epilogue.cuh: finish_flagged): one split's block sums the tile from words that
// carry each value with its mark, the others store and go on, instead of the last arrival summing after a release, a
// counter atomic and a reload (docs/NOTES.md v1.29: 1 x 4096 x 4096 5.37 -> 5.11 us, 2 x 4096 x 4096 5.36 -> 5.21).
// On sm80 tiles, at most kFlaggedMaxSplits splits (under Stream-K: blocks sharing a tile). Under split-K the summer
// is the last split and waits for the others' stores, which end about when its own main loop does: only where the
// tile's stored values make pairs for at most a quarter of the block's threads (a pair for every thread lost: 4 and 8
// x 4096 x 4096 on 64 x 8 tiles of 256 threads 1.00x and 1.06x; 1 and 2 x 8192 x 8192 on 128 x 8 tiles of 128
// 1.02-1.03x; v1.29 run 4 against run 3's times without it, on another machine), and eight splits lost too (1 x 8192
// x 28672 1.04x, run 3). Under Stream-K the summer is the block whose run ends in the tile, and the others stored
// their part as the first item of their runs, long before: a pair a thread at most (the epilogue's own limit).
// The runtime also needs the whole grid resident at once (flagged_split_k), as the summer waits.
bool flagged_tile(const KernelConfig& c, const Problem& p, int splits) {
  const int64_t values = std::min<int64_t>(p.m, c.tile_m) * c.tile_n;
  return c.family == 80 && splits >= 2 && splits <= kFlaggedMaxSplits &&
         (c.split_k == kStreamK ? values <= 2 * c.threads() : values * 2 <= c.threads());
}
// Where the flag words start in the counter buffer, in counters: the tiles' counters, rounded up to 16 bytes (the
// summer and the others move a pair of words at a time).
size_t flag_words_offset(size_t tiles) { return (tiles + 3) & ~size_t{3}; }

// Whether the splits of each tile sum it together, each a share, once all have stored their partial tiles
// (the SplitSpread kernel variant, epilogue/epilogue.cuh), instead of the last to arrive summing all of it.
// Their blocks wait for each other, so only where every block of the grid is resident at once (one wave, no
// clusters: the promise the variant relies on; one_wave checks the variant itself, whose registers may
// differ). Measured on the H200 (docs/NOTES.md v1.15, A/B against the last-arrival sum): the 64-row tiles of
// the M = 33..128 layers gain 1-8% (64x4096x4096 11.77 -> 10.87 us, 64x4096x14336 25.4 -> 24.1, 128x4096x4096
// 16.8 -> 16.3): their last arrival reloads 4 x 32 KB in two rounds at its SM's L2 bandwidth, where each
// spread block takes one round of a quarter. The 16- and 32-row tiles lose 1-7% (32x4096x14336 19.0 -> 20.3,
// 64x1280x5120 on 128 x 32 8.9 -> 9.4: the reload was one latency-bound round either way, and the waiting
// blocks keep their SMs from the stream's next kernel), the 128-row ones 2.6% (256x8192x8192), decode tiles
// 5-10% (1x8192x8192 12.7 -> 13.7 with every split GEMM spread). So: 64-row tiles whose slots add up to >= 64
// KB (LUTMM_SPLIT_SPREAD_BYTES). At most 16 splits (the counter word's bits for the blocks that stop waiting).
// Never on a GPU shared through MPS (make_plan: a client may get part of the SMs, and each block that finds
// its siblings not resident waits ~20 us before it leaves its share to the last arrival, epilogue.cuh);
// LUTMM_SPLIT_SPREAD=0 turns it off elsewhere (green contexts that hold part of the SMs, say).
bool spread_pays(const KernelConfig& c, const Problem& p, int splits, bool clusters) {
  static const bool enabled = env_switch_on("LUTMM_SPLIT_SPREAD");
  static const int64_t min_bytes = [] {
    const char* v = std::getenv("LUTMM_SPLIT_SPREAD_BYTES");
    return v != nullptr ? std::atoll(v) : 65536ll;
  }();
  return enabled && !clusters && splits >= 2 && splits <= 16 && c.split_k != kStreamK && c.tile_m == 64 &&
         std::min<int64_t>(p.m, c.tile_m) * c.tile_n * 4 * splits >= min_bytes;
}

// The k tiles of the shortest of `splits` splits: each takes ceil(k_tiles / splits), the last what is left.
int shortest_split_k_tiles(int k_tiles, int splits) {
  const int per_split = (k_tiles + splits - 1) / splits;
  return std::min(per_split, k_tiles - (splits - 1) * per_split);
}

// The slices a warp of c's pre-wait variant dequantizes before the dependency wait (kernels/gemm_sm80_config.cuh:
// sm80_prewait_slices); 0 where c has no such variant.
int prewait_slices_of(const KernelConfig& c) {
  return c.family == 80 ? sm80_prewait_slices(c.tile_n, c.tile_m, c.tile_k, c.warps_n, c.warps_m, c.warps_k,
                                              c.split_k == kStreamK, c.w_in_registers)
                        : 0;
}
}  // namespace

SplitKWorkspace split_k_workspace(const KernelConfig& c, const Problem& p, const DeviceInfo& dev) {
  // the flagged slots (where flagged_split_k may choose them) follow the counters: two counter words per flag word
  auto counters = [&](size_t tiles, int splits) {
    const size_t flag_words = flagged_tile(c, p, splits) ? tiles * (kFlaggedMaxSplits - 1) * c.tile_m * c.tile_n : 0;
    return flag_words > 0 ? flag_words_offset(tiles) + 2 * flag_words : tiles;
  };
  if (c.split_k == kStreamK) {  // a slot per block that shares a tile, one counter per tile
    const StreamKShape sk = stream_k_shape(c, p, dev);
    if (sk.max_sharing <= 1) return {};
    const size_t tiles = static_cast<size_t>(sk.tiles);
    return {tiles * static_cast<size_t>(sk.max_sharing) * static_cast<size_t>(c.tile_m) * c.tile_n * sizeof(float),
            counters(tiles, sk.max_sharing)};
  }
  const int splits = resolve_split_k(c, p, dev);
  if (splits <= 1) return {};
  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  const size_t tiles = static_cast<size_t>((ps.n_padded + c.tile_n - 1) / c.tile_n) *
                       static_cast<size_t>((p.m + c.tile_m - 1) / c.tile_m);
  return {tiles * static_cast<size_t>(splits) * static_cast<size_t>(c.tile_m) * c.tile_n * sizeof(float),
          counters(tiles, splits)};
}

// ---------------------------------------------------------------------------------------------------
DeviceWeight DeviceWeight::upload(const QuantizedWeight& q, cudaStream_t stream) {
  q.validate();
  const PackedShape s = packed_shape(q.n, q.k, q.bits, q.group_size);
  const std::vector<uint32_t> packed = pack_codes(q.codes.data(), q.n, q.k, q.bits);
  const std::vector<uint16_t> scales = pack_scales(q.scales.data(), q.n, q.k, q.group_size);
  DeviceWeight w;
  w.memory_ = device_alloc(weight_layout(s).total);
  w.view_ = make_view(q.n, q.k, q.bits, q.group_size, q.dtype, w.memory_.get(), s);
  check_cuda(cudaMemcpyAsync(const_cast<uint32_t*>(w.view_.packed), packed.data(), packed.size() * 4,
                             cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync(packed)");
  check_cuda(cudaMemcpyAsync(const_cast<uint16_t*>(w.view_.table), q.table.data(), q.table.size() * 2,
                             cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync(table)");
  check_cuda(cudaMemcpyAsync(const_cast<uint16_t*>(w.view_.scales), scales.data(), scales.size() * 2,
                             cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync(scales)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return w;
}

DeviceWeight DeviceWeight::pack_on_device(const uint8_t* device_codes, int64_t n, int64_t k, int bits, int group_size,
                                          DType dtype, const uint16_t* host_table, const uint16_t* host_scales,
                                          cudaStream_t stream) {
  check_device_pointer(device_codes, "device_codes", 1);
  if (host_table == nullptr) throw_argument_error("host_table", "a non-null host pointer", "null");
  if (host_scales == nullptr) throw_argument_error("host_scales", "a non-null host pointer", "null");
  const PackedShape s = packed_shape(n, k, bits, group_size);
  for (int i = 0; i < (1 << bits); ++i)
    if (!std::isfinite(bits_to_float(host_table[i], dtype)))
      throw_argument_error("host_table", "finite values", fmt::format("a non-finite value at index {}", i));
  const std::vector<uint16_t> scales = pack_scales(host_scales, n, k, group_size);
  DeviceWeight w;
  w.memory_ = device_alloc(weight_layout(s).total);
  w.view_ = make_view(n, k, bits, group_size, dtype, w.memory_.get(), s);
  check_cuda(cudaMemcpyAsync(const_cast<uint16_t*>(w.view_.table), host_table, sizeof(uint16_t) << bits,
                             cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync(table)");
  check_cuda(cudaMemcpyAsync(const_cast<uint16_t*>(w.view_.scales), scales.data(), scales.size() * 2,
                             cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync(scales)");
  const DeviceInfo& dev = current_device_info();
  auto kernel = jit::get_kernel(pack_kernel_request(bits, dev.arch()));
  const unsigned char* codes = device_codes;
  int ni = static_cast<int>(n), ki = static_cast<int>(k), kp = static_cast<int>(s.k_padded);
  long long atoms = (s.n_padded / kAtomRows) * (s.k_padded / kAtomCols);
  uint32_t* packed = const_cast<uint32_t*>(w.view_.packed);
  std::shared_ptr<void> bad_memory = device_alloc(sizeof(uint32_t));
  uint32_t* bad = static_cast<uint32_t*>(bad_memory.get());
  check_cuda(cudaMemsetAsync(bad, 0, sizeof(uint32_t), stream), "cudaMemsetAsync");
  void* args[] = {&codes, &ni, &ki, &kp, &atoms, &packed, &bad};
  const long long threads = atoms * 32;
  kernel->launch(dim3(static_cast<unsigned>((threads + 255) / 256)), dim3(256), 0, stream, args);
  uint32_t bad_count = 0;
  check_cuda(cudaMemcpyAsync(&bad_count, bad, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream), "pack kernel");
  if (bad_count != 0)
    throw_argument_error("device_codes", fmt::format("codes < {}", 1 << bits),
                         fmt::format("{} codes out of range", bad_count));
  return w;
}

std::vector<uint8_t> DeviceWeight::download_codes() const {
  const PackedShape s = packed_shape(view_.n, view_.k, view_.bits, view_.group_size);
  std::vector<uint32_t> packed(static_cast<size_t>(s.words()));
  check_cuda(cudaMemcpy(packed.data(), view_.packed, packed.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return unpack_codes(packed.data(), view_.n, view_.k, view_.bits);
}

KernelConfig chosen_config(const Problem& p) { return chosen_config_with_source(p).config; }

ConfigChoice chosen_config_with_source(const Problem& p) {
  check_problem(p);
  ConfigChoice choice;
  choice.config = choose_config(p, current_device_info(), nullptr, &choice.source);
  return choice;
}

namespace {

// Everything gemm() derives from (device, problem, config choice, stream), kept per thread so a repeated
// call skips the config choice, the validity checks, the kernel lookup and the workspace lookup (the
// host-overhead budget of a call is 3 us, most of which cuLaunchKernel takes). A plan is cached only when
// its choice cannot change later: forced, from the database, tuned, or with tuning off/offline.
struct PlanKey {
  int device = -1;
  int sm_count = 0;  // the current context's SMs (context_sm_count: a green context plans for its own)
  int64_t m = 0, n = 0, k = 0;
  int bits = 0, group_size = 0;
  DType dtype = DType::bf16;
  cudaStream_t stream = nullptr;
  TuneMode mode = TuneMode::off;
  bool forced = false;
  KernelConfig forced_config;
  bool operator==(const PlanKey&) const = default;
};

struct Plan {
  PlanKey key;
  ReadyKernel kernel;
  KernelConfig config;
  dim3 grid, block;
  jit::LaunchAttributes launch;  // programmatic dependent launch, split-K clusters
  int splits = 1, k_tiles = 0, n_padded = 0, k_padded = 0;
  int tiles_n = 0, tiles_m = 0;
  scheduler::StreamKDivisors stream_k{};  // GemmParams::stream_k (Stream-K's schedule; unused by split-K)
  bool dependents_early = false;  // GemmParams::dependents_early (early_dependents)
  bool split_spread = false;      // the kernel is the SplitSpread variant (spread_pays, one_wave)
  bool prewait = false;           // ... and / or the PrewaitFirstSlices variant (prewait_first_slices)
  bool split_flagged = false;     // split-K over flagged slots (flagged_split_k)
  SplitKWorkspace workspace_need;
  uint64_t workspace_generation = 0;
  float* workspace = nullptr;
  uint32_t* counters = nullptr;
  unsigned long long* split_flags = nullptr;  // GemmParams::split_flags: after the counters where split_flagged
  // kernel_takes_x_map: x's TMA tensor map, encoded for the x this plan last ran on (a call with the same x,
  // e.g. a CUDA graph's capture and a benchmark's repeats, reuses it)
  ptx::TensorMap x_map{};
  const void* x_map_base = nullptr;
};

// sm_90+: each GEMM is launched as a programmatic dependent of the stream's previous kernel, so its
// launch, block setup, the copies of its first stages' W and scales and the table's build overlap that
// kernel's tail (the kernel waits for it before reading x or writing anything;
// GemmOptions::weights_just_written turns the overlap off for one call). LUTMM_PDL=0 turns it off (for comparisons).
bool dependent_launch(const DeviceInfo& dev) {
  static const bool enabled = env_switch_on("LUTMM_PDL");
  return enabled && dev.arch() >= 90;
}

// Whether the sm80-family kernel is launched as its pre-wait variant (PrewaitFirstSlices<K>, kernels/gemm_sm80.cuh),
// whose warps dequantize their first slices while the previous kernel drains. Only where that pays:
//  * a dependent launch (sm_90+) of a config that has the variant (prewait_slices_of), without clusters;
//  * every split at least kSm80PrewaitMinKTiles k tiles long: the measured gains were all blocks of 8+ (v1.47), and
//    blocks of 2-4 and cluster launches lost 1.02-1.29x on an H100 (v1.48-v1.49);
//  * a GPU whose HBM brings each SM at least kPrewaitBytesPerSmClock bytes a clock, where the decode loop binds and
//    not the stream (v1.43): the H200 (~18.8) gained (1 x 8192^2 0.97x, 1-2 x 8192 x 28672 0.985-0.99x), the
//    H100 (~12.8) did not (1 x 8192^2 1.015x, 2 x 8192^2 1.028x, the 8192 x 28672 layers 1.00x; v1.50).
// LUTMM_PREWAIT=0 turns it off; =1 drops the bandwidth condition (for comparisons, and the tests on any sm_90 GPU).
constexpr double kPrewaitBytesPerSmClock = 16.0;

// The device's half: whether dev takes the variant at all.
bool prewait_on(const DeviceInfo& dev) {
  const char* forced = std::getenv("LUTMM_PREWAIT");  // (read per plan: tests set it around a call)
  const std::string_view mode = forced != nullptr ? forced : "";
  if (mode == "0" || !dependent_launch(dev)) return false;
  return mode == "1" || dev.memory_bytes_per_sm_clock() >= kPrewaitBytesPerSmClock;
}

// The config's half: c has the variant and each of `splits` splits of k_tiles is long enough for it.
bool prewait_fits(const KernelConfig& c, int k_tiles, int splits) {
  return splits >= 1 && prewait_slices_of(c) > 0 && shortest_split_k_tiles(k_tiles, splits) >= kSm80PrewaitMinKTiles;
}

bool prewait_first_slices(const DeviceInfo& dev, const KernelConfig& c, int k_tiles, int splits, bool clusters) {
  return !clusters && prewait_fits(c, k_tiles, splits) && prewait_on(dev);
}

// Compiles (or loads) c's kernel for arch and its variants where a run may launch them. The split count, residency
// and clusters are only known at launch: up to 8 splits count for the spread sum where c's count is automatic, and
// the pre-wait slices count where every split of c's fixed count (or the whole K as one split) is long enough, on
// dev where it is given (lutmm::precompile without a device: on any GPU of arch).
// (p checked by the caller)
double precompile_kernels(const Problem& p, const KernelConfig& c, int arch, const DeviceInfo* dev) {
  if (arch < 80) throw_argument_error("arch", "80 or newer", std::to_string(arch));
  const bool spread = spread_pays(c, p, c.split_k > 0 ? c.split_k : 8, /*clusters=*/false);
  const int k_tiles = packed_shape(p.n, p.k, p.bits, p.group_size).k_padded / c.tile_k;
  const bool prewait =
      arch >= 90 && prewait_fits(c, k_tiles, std::max(c.split_k, 1)) && (dev == nullptr || prewait_on(*dev));
  double slowest_ms = 0;  // (per kernel: the JIT's budget is per kernel)
  for (const KernelVariant v : {KernelVariant{}, KernelVariant{.split_spread = true}, KernelVariant{.prewait = true},
                                KernelVariant{.split_spread = true, .prewait = true}})
    if ((!v.split_spread || spread) && (!v.prewait || prewait))
      slowest_ms = std::max(slowest_ms, jit::compile_cached(gemm_kernel_request(p, c, arch, v)).compile_ms);
  return slowest_ms;
}

// sm_90+: the splits of an output tile run as one thread-block cluster and add up their partial tiles
// through distributed shared memory (epilogue::finish_in_cluster) instead of a workspace in global memory.
// At most 8 splits (the portable cluster size), and only where the clusters cannot cost the grid SMs: a
// cluster's blocks are placed together (in one GPC), which on the H200 packed larger grids onto fewer SMs
// (1x8192x28672: 39.4 -> 60.7 us, 1x4096x4096: 8.6 -> 9.5) while small ones gained 0.5-0.9 us (8x1152x1152:
// 4.17 -> 3.64, 2x3072x1536: 5.51 -> 4.62; docs/NOTES.md, v1.6). So either
//  * W of at most 2.5 MB and at most two blocks per SM, or
//  * the driver says every cluster of the grid is resident at once (40 clusters of three 130 KB blocks did
//    not fit on the H200: 256 x 1280 x 5120 ran 1.8x slower under a rule on size alone), the spread split-K
//    sum does not pay (measured good there, v1.15), and the clusters cannot crowd the grid onto fewer SMs
//    than its plain launch: either the plain grid has more blocks than SMs (some SMs hold two anyway:
//    1 x 14336 x 4096, 224 blocks of two splits, 11.69 -> 11.36 us, v1.18), or it has at most one block per
//    SM and the kernel holds only one (W up to 4 MB there, v1.17: 1024 x 1152 x 4608 34.2 -> 30.9 us, 1024 x
//    1280 x 5120 37.3 -> 34.0, 64 x 1280 x 5120 8.30 -> 8.12). Not a grid of at most one block per SM of a
//    kernel that holds more: 16 x 4096 x 4096, 128 blocks in clusters of four, ran 1.22x slower (v1.18).
// LUTMM_CLUSTER_SPLITK=0 turns it off (for comparisons).
bool cluster_split_k(const Problem& p, const KernelConfig& c, const DeviceInfo& dev, const PackedShape& ps,
                     int64_t blocks, int splits) {
  static const bool enabled = env_switch_on("LUTMM_CLUSTER_SPLITK");
  if (!enabled || dev.arch() < 90 || splits < 2 || splits > 8) return false;
  const int64_t w_bytes = ps.words() * 4;
  if (w_bytes <= (5ll << 19) && blocks <= 2ll * dev.sm_count) return true;
  if (spread_pays(c, p, splits, /*clusters=*/false)) return false;
  const ReadyKernel k = ready_kernel(p, c, dev);  // (the kernel a cluster launch runs)
  const bool doubled_anyway = blocks > dev.sm_count;
  if (!doubled_anyway &&
      (w_bytes > (4ll << 20) || k.kernel->max_active_blocks_per_sm(c.threads(), k.shared_bytes) != 1))
    return false;
  const int fit = k.kernel->max_active_clusters(dim3(static_cast<unsigned>(c.threads())), k.shared_bytes,
                                                static_cast<unsigned>(splits));
  return static_cast<int64_t>(fit) * splits >= blocks;
}

// Whether the stream's next kernel may launch at the start of this grid (GemmParams::dependents_early)
// rather than after its main loop. Early, the next kernel's blocks wait in whatever room this grid leaves,
// so only where that room cannot pack them onto a few SMs (v1.5: 64x1280x1280 2x slower, launched early):
//  * the grid takes >= 80% of the GPU's resident slots and its blocks leave < 40 KB of each SM's shared
//    memory (room for one of the smallest blocks at most): the next kernel's blocks enter SMs mostly as
//    this grid's blocks leave them, and their W copies overlap this grid's tail (1x8192x28672: 36.2 -> 35.4
//    us, 16x14336x4096 16.7 -> 16.3, 1x8192x8192 14.1 -> 13.9);
//  * a decode grid (one row of tiles of at most 16 x rows) that takes >= 80% of the slots, whatever room
//    its blocks leave (1..8 x 4096 x 4096, 256 blocks of 90 KB: 0.977-0.981x; none of 55 decode and small
//    diffusion shapes slower, v1.25). Without the tile condition the M > 16 shapes came out mixed (0.96-1.06x);
//  * a grid without clusters on at most a quarter of the SMs: the next kernel's blocks get idle SMs
//    (2x1536x256: 2.22 -> 1.83 us).
// Mid-sized grids lost up to 2.4x (77x1280x768 3.9 -> 9.0 us) and stay late (docs/NOTES.md, v1.12).
// (Developers: LUTMM_DEPENDENTS_EARLY=1 or 0 overrides the rule for every grid, for comparisons.)
bool early_dependents(const DeviceInfo& dev, const KernelConfig& c, const Problem& p, const ReadyKernel& kernel,
                      int64_t blocks, bool clusters) {
  if (!dependent_launch(dev) || dev.sm_count <= 0) return false;
  static const char* const forced = std::getenv("LUTMM_DEPENDENTS_EARLY");
  if (forced != nullptr && (std::string_view(forced) == "0" || std::string_view(forced) == "1"))
    return std::string_view(forced) == "1";
  if (!clusters && 4 * blocks <= dev.sm_count) return true;
  const int resident = kernel.kernel->max_active_blocks_per_sm(c.threads(), kernel.shared_bytes);
  const int64_t slots = static_cast<int64_t>(resident) * dev.sm_count;
  if (resident <= 0 || 5 * blocks < 4 * slots) return false;
  const bool decode_grid = c.tile_m <= 16 && p.m <= c.tile_m;
  return decode_grid || (dev.smem_per_sm > 0 &&
                         resident * static_cast<int64_t>(config_sm_shared_bytes(c, p)) > dev.smem_per_sm - 40 * 1024);
}

bool one_wave(const DeviceInfo& dev, const KernelConfig& c, const ReadyKernel& kernel, int64_t blocks) {
  const int resident = kernel.kernel->max_active_blocks_per_sm(c.threads(), kernel.shared_bytes);
  return dev.sm_count > 0 && resident > 0 && blocks <= static_cast<int64_t>(resident) * dev.sm_count;
}

// Split-K over flagged slots (flagged_tile) where the summer's wait is safe: every block of the grid resident at
// once (one wave of the kernel launched, no clusters), on a GPU not shared through MPS (a client may get part of
// the SMs). LUTMM_SPLIT_FLAGGED=0 turns it off (for comparisons).
bool flagged_split_k(const DeviceInfo& dev, const KernelConfig& c, const Problem& p, const ReadyKernel& kernel,
                     int splits, int64_t blocks, bool clusters) {
  static const bool enabled = env_switch_on("LUTMM_SPLIT_FLAGGED");
  return enabled && !clusters && !dev.shared_via_mps && flagged_tile(c, p, splits) && one_wave(dev, c, kernel, blocks);
}

constexpr int kPlanSlots = 8;
thread_local std::array<Plan, kPlanSlots> t_plans;
thread_local int t_next_plan = 0;

Plan make_plan(const PlanKey& key, const Problem& p, const DeviceInfo& dev, const GemmOptions& options,
               bool& cacheable) {
  ConfigSource source = ConfigSource::forced;
  KernelConfig c = options.config ? *options.config : choose_config(p, dev, options.stream, &source);
  if (const std::string why = config_invalid_reason(c, p, dev); !why.empty())
    throw_argument_error("config", "a config valid for " + p.str(), c.name() + ": " + why);
  // (in first_use a key without its own entry is tuned by a later call that can measure: a graph capture's)
  cacheable = (source != ConfigSource::heuristic && source != ConfigSource::similar) || key.mode != TuneMode::first_use;

  Plan plan;
  plan.key = key;
  plan.config = c;
  const PackedShape ps = packed_shape(p.n, p.k, p.bits, p.group_size);
  plan.splits = resolve_split_k(c, p, dev);
  plan.k_tiles = static_cast<int>(ps.k_padded / c.tile_k);
  plan.n_padded = static_cast<int>(ps.n_padded);
  plan.k_padded = static_cast<int>(ps.k_padded);
  const unsigned n_tiles = static_cast<unsigned>((ps.n_padded + c.tile_n - 1) / c.tile_n);
  const unsigned m_tiles = static_cast<unsigned>((p.m + c.tile_m - 1) / c.tile_m);
  if (m_tiles > 65535u)
    throw_argument_error("m", fmt::format("at most {} rows for {}", 65535ll * c.tile_m, c.name()), std::to_string(p.m));
  plan.tiles_n = static_cast<int>(n_tiles);
  plan.tiles_m = static_cast<int>(m_tiles);
  plan.block = dim3(static_cast<unsigned>(c.threads()));
  plan.launch.overlap_previous = dependent_launch(dev);
  if (c.split_k == kStreamK) {  // one wave of blocks; splits = the most blocks sharing a tile (slot stride)
    const StreamKShape sk = stream_k_shape(c, p, dev);
    plan.splits = sk.max_sharing;
    plan.grid = dim3(static_cast<unsigned>(sk.blocks));
    plan.stream_k = scheduler::stream_k_divisors(plan.tiles_n, plan.tiles_m, plan.k_tiles, plan.grid.x);
  } else {
    plan.grid = dim3(n_tiles, m_tiles, static_cast<unsigned>(plan.splits));
    if (c.x_multicast > 1)  // (config_invalid_reason: n_tiles is a multiple; splits reduce through the workspace)
      plan.launch.cluster_x = static_cast<unsigned>(c.x_multicast);
    else if (cluster_split_k(p, c, dev, ps, static_cast<int64_t>(n_tiles) * m_tiles * plan.splits, plan.splits))
      plan.launch.cluster_z = static_cast<unsigned>(plan.splits);
  }
  plan.workspace_need = split_k_workspace(c, p, dev);
  const int64_t blocks = static_cast<int64_t>(plan.grid.x) * plan.grid.y * plan.grid.z;
  const bool clusters = plan.launch.cluster_x > 1 || plan.launch.cluster_z > 1;
  // Under split-K every split but the last has k_tiles_per_split (launch); Stream-K configs have no pre-wait variant
  // (prewait_slices_of is 0 for them).
  plan.prewait = prewait_first_slices(dev, c, plan.k_tiles, plan.splits, clusters);
  // The spread variant where it pays and the grid is one wave of it, else the plain kernel (loaded only
  // then: a first call compiles just the kernel it launches). (An MPS client may get only part of the SMs:
  // fewer resident blocks than the SM count promises.)
  if (!dev.shared_via_mps && spread_pays(c, p, plan.splits, clusters)) {
    ReadyKernel spread = ready_kernel(p, c, dev, {.split_spread = true, .prewait = plan.prewait});
    if (one_wave(dev, c, spread, blocks)) {
      plan.kernel = spread;
      plan.split_spread = true;
    }
  }
  if (!plan.split_spread) plan.kernel = ready_kernel(p, c, dev, {.prewait = plan.prewait});
  plan.dependents_early = early_dependents(dev, c, p, plan.kernel, blocks, clusters);  // (the kernel launched)
  plan.split_flagged = !plan.split_spread && flagged_split_k(dev, c, p, plan.kernel, plan.splits, blocks, clusters);
  return plan;
}

}  // namespace

std::string LaunchChoices::str() const {
  std::string text;
  for (const auto& [on, name] : {std::pair{cluster_split, "cluster"}, std::pair{split_spread, "spread"},
                                 std::pair{split_flagged, "flagged"}, std::pair{dependents_early, "early"},
                                 std::pair{prewait, "prewait"}}) {
    if (on) text += (text.empty() ? "" : "+") + std::string(name);
  }
  return text;
}

LaunchChoices launch_choices(const Problem& p, const KernelConfig& c) {
  check_problem(p);
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  GemmOptions options;
  options.config = c;
  PlanKey key;
  key.device = device;
  key.sm_count = context_sm_count();
  bool cacheable = false;
  const Plan plan = make_plan(key, p, device_info(device, key.sm_count), options, cacheable);
  return {plan.launch.overlap_previous, plan.dependents_early, plan.split_spread, plan.launch.cluster_z > 1,
          plan.split_flagged, plan.prewait};
}

double precompile(const Problem& p, const KernelConfig& c, int arch_override) {
  check_problem(p);  // (before asking for a GPU)
  return precompile_kernels(p, c, arch_override != 0 ? arch_override : current_device_info().arch(), nullptr);
}

double precompile(const Problem& p, const KernelConfig& c, const DeviceInfo& dev) {
  check_problem(p);
  return precompile_kernels(p, c, dev.arch(), &dev);
}

void gemm(const void* x, int64_t m, const WeightView& w, const void* bias, void* out, const GemmOptions& options) {
  check_device_pointer(x, "x", 16);
  check_device_pointer(out, "out", 16);
  check_device_pointer(bias, "bias", 2, /*may_be_null=*/true);
  check_device_pointer(w.packed, "w.packed", 16);
  check_device_pointer(w.table, "w.table", 2);
  check_device_pointer(w.scales, "w.scales", 16);
  const Problem p = problem_of(w, m, bias != nullptr);
  check_problem(p);

  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  PlanKey key;
  key.device = device;
  key.sm_count = context_sm_count();
  key.m = p.m; key.n = p.n; key.k = p.k;
  key.bits = p.bits; key.group_size = p.group_size; key.dtype = p.dtype;
  key.stream = options.stream;
  key.mode = tune_mode();
  key.forced = options.config.has_value();
  if (key.forced) key.forced_config = *options.config;

  Plan* plan = nullptr;
  for (Plan& candidate : t_plans)
    if (candidate.key == key && candidate.kernel.kernel) {
      plan = &candidate;
      break;
    }
  Plan uncached;
  if (plan == nullptr) {
    const DeviceInfo& dev = device_info(device, key.sm_count);
    if (dev.arch() < 80) throw_error(fmt::format("{} is sm_{}; lutmm needs sm_80 or newer", dev.name, dev.arch()));
    bool cacheable = false;
    uncached = make_plan(key, p, dev, options, cacheable);
    if (cacheable) {
      t_plans[t_next_plan] = uncached;
      plan = &t_plans[t_next_plan];
      t_next_plan = (t_next_plan + 1) % kPlanSlots;
    } else {
      plan = &uncached;
    }
  }
  if (plan->splits > 1 && plan->launch.cluster_z == 1) {
    const uint64_t generation = g_workspace_generation.load(std::memory_order_acquire);
    if (plan->workspace_generation != generation) {  // first use, or some workspace was replaced since
      Workspace& ws = workspace_for(device, options.stream, plan->workspace_need.float_bytes,
                                    plan->workspace_need.counters);
      std::lock_guard lock(g_workspace_mutex);
      plan->workspace = static_cast<float*>(ws.floats.get());
      plan->counters = static_cast<uint32_t*>(ws.counters.get());
      if (plan->split_flagged)
        plan->split_flags = reinterpret_cast<unsigned long long*>(
            plan->counters + flag_words_offset(static_cast<size_t>(plan->tiles_n) * plan->tiles_m));
      plan->workspace_generation = generation;  // a replacement after the load above forces one more refresh
    }
  }

  GemmParams params{};
  params.x = static_cast<const uint16_t*>(x);
  params.out = static_cast<uint16_t*>(out);
  params.bias = static_cast<const uint16_t*>(bias);
  params.packed = w.packed;
  params.table = w.table;
  params.scales = w.scales;
  params.m = static_cast<int>(p.m);
  params.n = static_cast<int>(p.n);
  params.k = static_cast<int>(p.k);
  params.n_padded = plan->n_padded;
  params.k_padded = plan->k_padded;
  params.k_tiles = plan->k_tiles;
  params.k_tiles_per_split = (plan->k_tiles + plan->splits - 1) / plan->splits;  // (unused by Stream-K)
  params.splits = plan->splits;
  params.cluster_splits = plan->launch.cluster_z > 1 ? 1 : 0;
  params.tiles_n = plan->tiles_n;
  params.tiles_m = plan->tiles_m;
  params.stream_k = plan->stream_k;
  params.workspace = plan->workspace;
  params.tile_counters = plan->counters;
  params.dependents_early = plan->dependents_early ? 1 : 0;
  params.split_flags = plan->split_flags;
  params.trace = trace::buffer();
  void* args[] = {&params, &plan->x_map};  // (the tensor map: only where kernel_takes_x_map)
  if (kernel_takes_x_map(plan->config) && plan->x_map_base != x) {
    jit::encode_tensor_map_2d_u16(&plan->x_map, x, static_cast<uint64_t>(p.k), static_cast<uint64_t>(p.m), 64,
                                  static_cast<uint32_t>(plan->config.tile_m / plan->config.x_multicast));
    plan->x_map_base = x;
  }
  jit::LaunchAttributes launch = plan->launch;
  if (options.weights_just_written) launch.overlap_previous = false;  // (W and the table are read before the wait)
  plan->kernel.kernel->launch(plan->grid, plan->block, plan->kernel.shared_bytes, options.stream, args, launch);
}

}  // namespace lutmm
