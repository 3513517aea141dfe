#include "bench.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cuda_util.hpp"
#include "dense_gemm.hpp"
#include "device_kernels.hpp"
#include "lutmm/device.hpp"
#include "lutmm/error.hpp"
#include "lutmm/format.hpp"
#include "lutmm/gemm.hpp"
#include "lutmm/pack.hpp"
#include "progress.hpp"
#include "random_inputs.hpp"
#include "runtime/cuda_graph.hpp"
#include "runtime/kernel_source.hpp"
#include "runtime/launch_choices.hpp"
#include "runtime/trace.hpp"
#include "verify.hpp"

namespace lutmm::bench {
namespace {

constexpr int64_t kBandwidthBytes = int64_t{2} << 30;  // 2 GiB: 35x an H200's L2, nothing of it stays cached
constexpr int64_t kDenseRateSize = 8192;                // 8192^3: large enough for cuBLAS' peak tiles
constexpr int kCeilingRuns = 10;
constexpr uint64_t kSeed = 0x6c75746d6d;               // "lutmm"
constexpr size_t kSlotAlign = 256;                      // every copy starts 256-byte aligned
constexpr double kHostTimingUs = 20000;                 // GPU work queued by the host-overhead loop, about

size_t align_up(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }

double ms_to_us(double ms) { return ms * 1000.0; }

// Median of `runs` event-timed executions of `enqueue` (after two untimed ones), in milliseconds. Every
// run is enqueued behind the previous one without waiting for it, so when the GPU reaches a start event
// the work it times is already queued: host launch latency never shows up as idle time inside a
// measurement.
template <typename Enqueue>
double median_event_ms(cudaStream_t stream, int runs, Enqueue&& enqueue) {
  std::vector<Event> starts(static_cast<size_t>(runs)), stops(static_cast<size_t>(runs));
  enqueue();
  enqueue();
  for (int r = 0; r < runs; ++r) {
    LUTMM_CUDA(cudaEventRecord(starts[r].get(), stream));
    enqueue();
    LUTMM_CUDA(cudaEventRecord(stops[r].get(), stream));
  }
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) ms.push_back(elapsed_ms(starts[r], stops[r]));
  return median(ms);
}

// Per-call microseconds of `calls` back-to-back calls between two events: the estimate that sizes graphs.
template <typename Call>
double estimate_call_us(cudaStream_t stream, int calls, Call&& call) {
  Event start, stop;
  LUTMM_CUDA(cudaEventRecord(start.get(), stream));
  for (int i = 0; i < calls; ++i) call(i);
  LUTMM_CUDA(cudaEventRecord(stop.get(), stream));
  return std::max(ms_to_us(elapsed_ms(start, stop)) / calls, 1e-3);
}

void require_free_memory(size_t bytes, const std::string& what) {
  size_t free_bytes = 0, total_bytes = 0;
  LUTMM_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > free_bytes) {
    throw_error(fmt::format("not enough GPU memory for {}: needs {:.1f} MiB, {:.1f} MiB free", what,
                            static_cast<double>(bytes) / (1 << 20), static_cast<double>(free_bytes) / (1 << 20)));
  }
}

// The weights of one (N, K, G), kept while consecutive shapes share them (the LLM set varies only M).
//   lutmm:  copy 0 is the DeviceWeight itself; copies 1.. live in one slab, each slot laid out as
//           [packed words | scales | table], every part 256-byte aligned, filled by device-to-device copies.
//   dense:  copies of the dequantized weight rounded to the dtype, [N][K] row-major, one slab, 256-aligned
//           slots; copy 0 is uploaded, the rest are device-to-device copies.
struct WeightSet {
  int64_t n = 0, k = 0;
  int group = 0;
  std::optional<DeviceWeight> weight;
  DeviceBuffer lutmm_slab;
  std::vector<WeightView> views;
  CopyCount lutmm_copies;
  size_t lutmm_stride = 0;
  size_t read_bytes = 0;  // a slab slot's packed words and scales (with the padding between), a multiple of 16
  DeviceBuffer dense_slab;
  size_t dense_stride = 0;
  CopyCount dense_copies;

  const void* dense(int i) const { return dense_slab.as<char>() + static_cast<size_t>(i) * dense_stride; }
  // What the plain read of call i reads: the slab's copies in turn (copy 0 lives elsewhere, its scales apart
  // from its codes; copies >= 2, so the slab holds at least one). Still L2-cold with one copy fewer: where the
  // slab holds a single copy, that copy alone is over twice the L2 (rotation_copies).
  const void* read_span(int i) const {
    return lutmm_slab.as<char>() + lutmm_stride * static_cast<size_t>(i % (lutmm_copies.copies - 1));
  }
};

std::unique_ptr<WeightSet> make_weight_set(int64_t n, int64_t k, int bits, int group, DType dtype, int64_t l2_bytes,
                                           cudaStream_t stream) {
  auto set = std::make_unique<WeightSet>();
  set->n = n;
  set->k = k;
  set->group = group;
  const QuantizedWeight q =
      random_quantized_weight(n, k, bits, group, dtype, kSeed ^ (static_cast<uint64_t>(n) << 32) ^ static_cast<uint64_t>(k));

  const PackedShape ps = packed_shape(n, k, bits, group);
  const size_t packed_bytes = static_cast<size_t>(ps.words()) * sizeof(uint32_t);
  const size_t scale_bytes = static_cast<size_t>(ps.scale_count()) * sizeof(uint16_t);
  const size_t table_bytes = (size_t{1} << bits) * sizeof(uint16_t);
  const size_t scales_at = align_up(packed_bytes, kSlotAlign);
  const size_t table_at = scales_at + align_up(scale_bytes, kSlotAlign);
  const size_t lutmm_stride = table_at + align_up(table_bytes, kSlotAlign);
  set->lutmm_copies = rotation_copies(static_cast<int64_t>(lutmm_stride), l2_bytes);
  set->lutmm_stride = lutmm_stride;
  set->read_bytes = align_up(scales_at + scale_bytes, 16);
  const size_t dense_bytes = static_cast<size_t>(n * k) * sizeof(uint16_t);
  set->dense_stride = align_up(dense_bytes, kSlotAlign);
  set->dense_copies = rotation_copies(static_cast<int64_t>(set->dense_stride), l2_bytes);

  const size_t lutmm_total = lutmm_stride * static_cast<size_t>(set->lutmm_copies.copies);
  const size_t dense_total = set->dense_stride * static_cast<size_t>(set->dense_copies.copies);
  require_free_memory(lutmm_total + dense_total,
                      fmt::format("the weight copies of N={} K={}", n, k));

  set->weight = DeviceWeight::upload(q, stream);
  const WeightView& first = set->weight->view();
  set->views.push_back(first);
  set->lutmm_slab = DeviceBuffer(lutmm_stride * static_cast<size_t>(set->lutmm_copies.copies - 1));
  for (int c = 1; c < set->lutmm_copies.copies; ++c) {
    char* slot = set->lutmm_slab.as<char>() + lutmm_stride * static_cast<size_t>(c - 1);
    WeightView v = first;
    v.packed = reinterpret_cast<const uint32_t*>(slot);
    v.scales = reinterpret_cast<const uint16_t*>(slot + scales_at);
    v.table = reinterpret_cast<const uint16_t*>(slot + table_at);
    LUTMM_CUDA(cudaMemcpyAsync(slot, first.packed, packed_bytes, cudaMemcpyDeviceToDevice, stream));
    LUTMM_CUDA(cudaMemcpyAsync(slot + scales_at, first.scales, scale_bytes, cudaMemcpyDeviceToDevice, stream));
    LUTMM_CUDA(cudaMemcpyAsync(slot + table_at, first.table, table_bytes, cudaMemcpyDeviceToDevice, stream));
    set->views.push_back(v);
  }

  const std::vector<uint16_t> dense = dequantize_to_dtype(q);
  set->dense_slab = DeviceBuffer(dense_total);
  LUTMM_CUDA(cudaMemcpyAsync(set->dense_slab.get(), dense.data(), dense_bytes, cudaMemcpyHostToDevice, stream));
  for (int c = 1; c < set->dense_copies.copies; ++c) {
    LUTMM_CUDA(cudaMemcpyAsync(const_cast<void*>(set->dense(c)), set->dense_slab.get(), dense_bytes,
                               cudaMemcpyDeviceToDevice, stream));
  }
  // The host vector must outlive the asynchronous upload.
  LUTMM_CUDA(cudaStreamSynchronize(stream));
  return set;
}

std::string shape_text(const Shape& s) { return fmt::format("M={} N={} K={}", s.m, s.n, s.k); }

struct Context {
  const BenchOptions& options;
  const DeviceInfo& device;
  const Ceilings& ceilings;
  Stream& stream;
  CublasHandle& cublas;
  std::unique_ptr<WeightSet>& weights;
};

BenchRow bench_shape(const Shape& shape, const Context& ctx) {
  const BenchOptions& o = ctx.options;
  BenchRow row;
  row.shape = shape;
  row.bits = o.bits;
  row.dtype = o.dtype;
  row.group = choose_group(shape.k, o.group);
  const Traffic t = traffic(shape.m, shape.n, shape.k, o.bits, row.group);
  row.bytes = t.total();
  row.flops = gemm_flops(shape.m, shape.n, shape.k);
  row.floor_us = floor_us(static_cast<double>(row.bytes), row.flops, ctx.ceilings.read_bytes_per_s,
                          ctx.ceilings.dense_flops_per_s);

  const Problem p = Problem::of(shape.m, shape.n, shape.k, o.bits, row.group, o.dtype);
  KernelConfig cfg;
  // A shape the library cannot run (or a forced config cannot run) is reported and skipped, not fatal.
  try {
    check_problem(p);
    const ConfigChoice choice = o.config ? ConfigChoice{*o.config, ConfigSource::forced} : chosen_config_with_source(p);
    cfg = choice.config;
    row.config_source = std::string(to_string(choice.source));
    if (o.config) {
      const std::string why = config_invalid_reason(cfg, p, ctx.device);
      if (!why.empty()) throw_argument_error("config", "a config valid for " + p.str(), cfg.name() + ": " + why);
    }
  } catch (const Error& e) {
    row.config = o.config ? o.config->name() : "";
    row.status = std::string("skipped: ") + e.what();
    return row;
  }
  row.config = cfg.name();
  row.compile_ms = precompile(p, cfg);
  row.launch = launch_choices(p, cfg).str();

  if (!ctx.weights || ctx.weights->n != shape.n || ctx.weights->k != shape.k || ctx.weights->group != row.group) {
    ctx.weights.reset();  // free the previous copies before allocating the next
    ctx.weights = make_weight_set(shape.n, shape.k, o.bits, row.group, o.dtype, ctx.device.l2_bytes, ctx.stream.get());
  }
  const WeightSet& w = *ctx.weights;
  row.lutmm_copies = w.lutmm_copies.copies;
  row.dense_copies = w.dense_copies.copies;
  row.l2_cold = !w.lutmm_copies.capped && !w.dense_copies.capped;

  const cudaStream_t s = ctx.stream.get();
  const int64_t out_count = shape.m * shape.n;
  require_free_memory(static_cast<size_t>(shape.m * shape.k + 2 * out_count) * sizeof(uint16_t),
                      "x and the outputs of " + shape_text(shape));
  DeviceBuffer x(static_cast<size_t>(shape.m * shape.k) * sizeof(uint16_t));
  DeviceBuffer out_lutmm(static_cast<size_t>(out_count) * sizeof(uint16_t));
  DeviceBuffer out_dense(static_cast<size_t>(out_count) * sizeof(uint16_t));
  fill_random(x.get(), shape.m * shape.k, o.dtype, kSeed + static_cast<uint64_t>(shape.m * 131 + shape.k), s);

  GemmOptions go;
  go.config = cfg;
  go.stream = s;
  auto lutmm_call = [&](int i) {
    gemm(x.get(), shape.m, w.views[static_cast<size_t>(i % w.lutmm_copies.copies)], nullptr, out_lutmm.get(), go);
  };
  auto dense_call = [&](int i) {
    dense_gemm(ctx.cublas.get(), o.dtype, x.get(), w.dense(i % w.dense_copies.copies), out_dense.get(), shape.m,
               shape.n, shape.k);
  };

  // Warm-up and check, outside any capture: the first call loads the kernel and sizes any workspace. The
  // output is poisoned (0xffff is NaN in both dtypes) so an unwritten value shows.
  LUTMM_CUDA(cudaMemsetAsync(out_lutmm.get(), 0xff, out_lutmm.bytes(), s));
  lutmm_call(0);
  dense_call(0);
  ctx.stream.synchronize();
  {
    std::vector<uint16_t> lut(static_cast<size_t>(out_count)), dense(static_cast<size_t>(out_count));
    copy_to_host(lut.data(), out_lutmm.get(), out_lutmm.bytes(), s);
    copy_to_host(dense.data(), out_dense.get(), out_dense.bytes(), s);
    std::vector<double> reference(dense.size());
    for (size_t i = 0; i < dense.size(); ++i) reference[i] = bits_to_float(dense[i], o.dtype);
    const OutputComparison cmp = compare_output(lut.data(), reference.data(), out_count, o.dtype);
    row.rel_err_vs_cublas = cmp.rel_fro_error;
    if (cmp.unwritten > 0) {
      row.status = fmt::format("wrong: {} of {} outputs unwritten", cmp.unwritten, out_count);
    } else if (!(cmp.rel_fro_error <= verify_tolerance(o.dtype))) {
      row.status = fmt::format("wrong: differs from cuBLAS, relative error {:.3e} > {:.0e}", cmp.rel_fro_error,
                               verify_tolerance(o.dtype));
    }
  }

  const int probe = std::min(4, std::max(w.lutmm_copies.copies, w.dense_copies.copies));
  const double lutmm_est = estimate_call_us(s, probe, lutmm_call);
  const double dense_est = estimate_call_us(s, probe, dense_call);
  row.lutmm_calls = calls_per_graph(w.lutmm_copies.copies, lutmm_est);
  row.dense_calls = calls_per_graph(w.dense_copies.copies, dense_est);

  const CudaGraph lutmm_graph = CudaGraph::capture(s, [&](cudaStream_t) {
    for (int i = 0; i < row.lutmm_calls; ++i) lutmm_call(i);
  });
  const CudaGraph dense_graph = CudaGraph::capture(s, [&](cudaStream_t) {
    for (int i = 0; i < row.dense_calls; ++i) dense_call(i);
  });
  row.lutmm_us = ms_to_us(median_event_ms(s, o.replays, [&] { lutmm_graph.launch(s); })) / row.lutmm_calls;
  row.cublas_us = ms_to_us(median_event_ms(s, o.replays, [&] { dense_graph.launch(s); })) / row.dense_calls;
  {  // the plain read of the same bytes, as many launches a graph
    DeviceBuffer sink(kReadSinkWords * sizeof(uint32_t));
    LUTMM_CUDA(cudaMemsetAsync(sink.get(), 0, sink.bytes(), s));
    const CudaGraph read_graph = CudaGraph::capture(s, [&](cudaStream_t) {
      for (int i = 0; i < row.lutmm_calls; ++i)
        read_reduce(w.read_span(i), static_cast<int64_t>(w.read_bytes), sink.as<uint32_t>(), s);
    });
    row.read_us = ms_to_us(median_event_ms(s, o.replays, [&] { read_graph.launch(s); })) / row.lutmm_calls;
  }

  // Host overhead: enqueue-only time of one call, the kernel already loaded, no synchronisation inside the
  // loop. Few enough calls that the launch queue never fills (a full queue would time the GPU instead).
  const int host_calls = static_cast<int>(std::clamp(std::ceil(kHostTimingUs / lutmm_est), 20.0, 200.0));
  ctx.stream.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < host_calls; ++i) lutmm_call(i);
  const auto t1 = std::chrono::steady_clock::now();
  ctx.stream.synchronize();
  LUTMM_CUDA(cudaGetLastError());
  row.host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / host_calls;
  return row;
}

std::string group_cell(const BenchRow& r, int requested) {
  const bool changed = requested == 0 ? r.group != r.shape.k : r.group != requested;
  return std::to_string(r.group) + (changed ? "*" : "");
}

void print_table(const std::vector<BenchRow>& rows, const BenchOptions& o) {
  size_t config_width = 6;
  for (const BenchRow& r : rows) config_width = std::max(config_width, r.config.size());
  const int cw = static_cast<int>(config_width);
  fmt::print("{:>6} {:>6} {:>6} {:>5}  {:<{}} {:<9}  {:>9} {:>9} {:>8} {:>6} {:>8} {:>7} {:>8} {:>6}\n", "M", "N", "K",
             "G", "config", cw, "source", "lutmm us", "cuBLAS us", "speedup", "TB/s", "TFLOP/s", "%floor", "read us",
             "%read");
  bool any_changed_group = false;
  for (const BenchRow& r : rows) {
    const std::string g = group_cell(r, o.group);
    any_changed_group |= g.back() == '*';
    fmt::print("{:>6} {:>6} {:>6} {:>5}  {:<{}} {:<9}", r.shape.m, r.shape.n, r.shape.k, g, r.config, cw,
               r.config_source);
    if (r.timed()) {
      fmt::print("  {:>9.2f} {:>9.2f} {:>7.2f}x {:>6.2f} {:>8.1f} {:>7.1f} {:>8.2f} {:>6.1f}", r.lutmm_us, r.cublas_us,
                 r.speedup(), r.tbps(), r.tflops(), r.pct_floor(), r.read_us, r.pct_read());
    }
    if (r.status != "ok") fmt::print("  {}", r.status);
    if (r.timed() && !r.l2_cold) fmt::print("  (L2-warm: copies capped at {})", kMaxCopies);
    fmt::print("\n");
  }
  if (any_changed_group) {
    fmt::print("G*: K is not a multiple of the requested group {}, so G = 64 when 64 divides K, else K "
               "(one scale per row)\n",
               o.group);
  }
}

void print_summary(const std::vector<BenchRow>& rows, const BenchOptions& o) {
  std::vector<double> speedups, host;
  int skipped = 0, wrong = 0, compiled = 0, cached = 0;
  double compile_ms = 0;
  for (const BenchRow& r : rows) {
    if (r.status.rfind("skipped", 0) == 0) {
      ++skipped;
      continue;
    }
    if (r.status != "ok") ++wrong;
    if (r.status == "ok") speedups.push_back(r.speedup());
    host.push_back(r.host_us);
    if (r.compile_ms > 0) {
      ++compiled;
      compile_ms += r.compile_ms;
    } else {
      ++cached;
    }
  }
  if (!speedups.empty()) {
    fmt::print("geometric mean speedup over cuBLAS {}: {:.3f}x over {} shapes", to_string(o.dtype),
               geometric_mean(speedups), speedups.size());
  } else {
    fmt::print("geometric mean speedup: no shape timed with a correct result");
  }
  fmt::print(" ({} skipped, {} wrong)\n", skipped, wrong);
  // Where the configs came from: how much of the run the tuning database covered.
  std::string sources;
  for (const ConfigSource kind : {ConfigSource::forced, ConfigSource::database, ConfigSource::similar, ConfigSource::tuned,
                                   ConfigSource::heuristic}) {
    const std::string_view source = to_string(kind);
    const auto n = std::count_if(rows.begin(), rows.end(), [&](const BenchRow& r) { return r.config_source == source; });
    if (n > 0) sources += fmt::format("{}{} {}", sources.empty() ? "" : ", ", n, source);
  }
  if (!sources.empty()) fmt::print("configs: {} (tuning mode {}, docs/TUNING.md)\n", sources, to_string(tune_mode()));
  if (!host.empty()) {
    fmt::print("host overhead of one lutmm::gemm call: median {:.2f} us (min {:.2f}, max {:.2f}); an empty kernel's "
               "launch through the same path: {:.2f} us\n",
               median(host), *std::min_element(host.begin(), host.end()), *std::max_element(host.begin(), host.end()),
               empty_launch_host_us(nullptr));
    fmt::print("JIT: {} kernel builds compiled in {:.0f} ms, {} from the cache\n", compiled, compile_ms, cached);
  }
}

std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

void plot(const std::string& csv, const std::string& png, const std::string& title) {
  const std::string script = plot_script_path();
  if (script.empty()) {
    fmt::print("plot skipped: scripts/plot_bench.py not found (set LUTMM_PLOT_SCRIPT to its path)\n");
    return;
  }
  if (std::system("python3 --version >/dev/null 2>&1") != 0) {
    fmt::print("plot skipped: python3 is not available (the CSV has every figure)\n");
    return;
  }
  std::fflush(stdout);
  const std::string command =
      "python3 " + shell_quote(script) + " " + shell_quote(csv) + " " + shell_quote(png) + " " + shell_quote(title);
  const int status = std::system(command.c_str());
  if (status != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    fmt::print("plot skipped: {} exited with status {} (its message is above; plotting needs matplotlib)\n", script,
               code);
    return;
  }
  fmt::print("plot: {}\n", png);
}

void check_output_path(const std::string& path, const char* field) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    throw_argument_error(field, "a path in an existing folder", "'" + path + "' (no folder '" + parent.string() + "')");
  }
  if (std::filesystem::is_directory(path, ec)) throw_argument_error(field, "a file path", "the folder '" + path + "'");
}

}  // namespace

void check_bench_options(const BenchOptions& o) {
  if (o.shapes.empty()) throw_argument_error("shapes", "at least one shape", "none");
  for (size_t i = 0; i < o.shapes.size(); ++i) {
    const Shape& s = o.shapes[i];
    if (s.m < 1 || s.n < 1 || s.k < 1) {
      throw_argument_error("shapes", "M, N, K >= 1",
                           fmt::format("{} {} {} (shape {})", s.m, s.n, s.k, i + 1));
    }
  }
  check_bits(o.bits);
  if (!(o.group == 0 || o.group == 32 || o.group == 64 || o.group == 128 || o.group == 256)) {
    throw_argument_error("group", "one of 32, 64, 128, 256, or 0 for one scale per row", std::to_string(o.group));
  }
  if (o.dtype != DType::f16 && o.dtype != DType::bf16) {
    throw_argument_error("dtype", "fp16 or bf16", "enum value " + std::to_string(static_cast<int>(o.dtype)));
  }
  if (o.replays < 1 || o.replays > 1000) throw_argument_error("replays", "1 to 1000", std::to_string(o.replays));
  check_output_path(o.csv_path, "csv_path");
  check_output_path(o.png_path, "png_path");
  check_output_path(o.trace_path, "trace_path");
  if (!o.trace_path.empty()) {  // (only kernels built with the option record; without it the trace would be empty)
    const std::vector<std::string> options = developer_nvrtc_options();
    if (std::find(options.begin(), options.end(), "-DLUTMM_TIMELINE=3") == options.end()) {
      const char* set = std::getenv("LUTMM_NVRTC_OPTIONS");
      throw_argument_error("trace_path", "kernels built with LUTMM_NVRTC_OPTIONS containing -DLUTMM_TIMELINE=3",
                           set == nullptr ? "LUTMM_NVRTC_OPTIONS unset" : fmt::format("LUTMM_NVRTC_OPTIONS='{}'", set));
    }
  }
}

std::string plot_script_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("LUTMM_PLOT_SCRIPT"); env != nullptr && *env != '\0') {
    return fs::is_regular_file(env, ec) ? std::string(env) : std::string();
  }
  std::vector<fs::path> candidates;
  // This file is bench/bench.cpp of the source tree the library was built from.
  candidates.push_back(fs::path(__FILE__).parent_path().parent_path() / "scripts" / "plot_bench.py");
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "scripts" / "plot_bench.py");
    candidates.push_back(exe.parent_path().parent_path() / "share" / "lutmm" / "plot_bench.py");
  }
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

Ceilings measure_ceilings() {
  require_device("measuring the ceilings");
  Stream stream;
  const cudaStream_t s = stream.get();
  Ceilings c;
  {
    require_free_memory(static_cast<size_t>(kBandwidthBytes), "the 2 GiB bandwidth probe");
    DeviceBuffer data(static_cast<size_t>(kBandwidthBytes));
    DeviceBuffer sink(kReadSinkWords * sizeof(uint32_t));
    fill_random(data.get(), kBandwidthBytes / 2, DType::bf16, kSeed, s);
    LUTMM_CUDA(cudaMemsetAsync(sink.get(), 0, sink.bytes(), s));
    const double ms = median_event_ms(s, kCeilingRuns,
                                      [&] { read_reduce(data.get(), kBandwidthBytes, sink.as<uint32_t>(), s); });
    c.read_bytes_per_s = static_cast<double>(kBandwidthBytes) / (ms * 1e-3);
  }
  {
    CublasHandle cublas(s);
    const int64_t n = kDenseRateSize;
    const size_t bytes = static_cast<size_t>(n * n) * sizeof(uint16_t);
    require_free_memory(3 * bytes, "the 8192^3 dense rate probe");
    DeviceBuffer a(bytes), b(bytes), out(bytes);
    fill_random(a.get(), n * n, DType::bf16, kSeed + 1, s);
    fill_random(b.get(), n * n, DType::bf16, kSeed + 2, s);
    const double ms = median_event_ms(
        s, kCeilingRuns, [&] { dense_gemm(cublas.get(), DType::bf16, a.get(), b.get(), out.get(), n, n, n); });
    c.dense_flops_per_s = gemm_flops(n, n, n) / (ms * 1e-3);
  }
  stream.synchronize();
  return c;
}

int run_bench(const BenchOptions& o) {
  check_bench_options(o);
  if (device_count() == 0) {
    fmt::print(stderr, "lutmm bench: no CUDA device: the benchmark needs an NVIDIA GPU (driver {}, none found)\n",
               cuda_driver_version());
    return 1;
  }
  const DeviceInfo& dev = current_device_info();
  fmt::print("lutmm bench on {} (sm_{}, {} SMs, L2 {:.1f} MiB, {:.1f} GiB), CUDA runtime {}, driver {}\n", dev.name,
             dev.arch(), dev.sm_count, static_cast<double>(dev.l2_bytes) / (1 << 20),
             static_cast<double>(dev.memory_bytes) / (1 << 30), cuda_runtime_version(), cuda_driver_version());
  std::fflush(stdout);

  const Ceilings ceilings = measure_ceilings();
  fmt::print("ceilings: HBM read {:.2f} TB/s (2 GiB read-only reduction), dense bf16 {:.0f} TFLOP/s (cublasGemmEx "
             "8192^3)\n",
             ceilings.read_bytes_per_s / 1e12, ceilings.dense_flops_per_s / 1e12);
  fmt::print("weights: {}-bit, random table, {}, {} graph replays per time, weights rotated over > 4x L2\n\n", o.bits,
             to_string(o.dtype), o.replays);
  std::fflush(stdout);

  if (!o.trace_path.empty()) trace::start();
  Stream stream;
  CublasHandle cublas(stream.get());
  std::unique_ptr<WeightSet> weights;
  const Context ctx{o, dev, ceilings, stream, cublas, weights};
  std::vector<BenchRow> rows;
  {
    Progress progress(static_cast<int>(o.shapes.size()), o.progress);
    for (const Shape& shape : o.shapes) {
      rows.push_back(bench_shape(shape, ctx));
      progress.step(shape_text(shape));
    }
  }
  weights.reset();

  print_table(rows, o);
  print_summary(rows, o);
  if (!o.trace_path.empty()) {
    size_t dropped = 0;
    const size_t records = trace::write_csv(o.trace_path, &dropped);
    fmt::print("trace: {} block records{} -> {} (scripts/timeline.py --trace)\n", records,
               dropped > 0 ? fmt::format(" ({} past the buffer's capacity dropped)", dropped) : "", o.trace_path);
  }

  if (!o.csv_path.empty()) {
    write_bench_csv(o.csv_path, rows, ceilings, dev.name);
    fmt::print("CSV: {}\n", o.csv_path);
  }
  if (!o.png_path.empty()) {
    std::string csv = o.csv_path;
    std::filesystem::path tmp;
    if (csv.empty()) {
      tmp = std::filesystem::temp_directory_path() / fmt::format("lutmm_bench_{}.csv", getpid());
      write_bench_csv(tmp.string(), rows, ceilings, dev.name);
      csv = tmp.string();
    }
    plot(csv, o.png_path,
         fmt::format("lutmm {}-bit {} vs cuBLAS on {}", o.bits, to_string(o.dtype), dev.name));
    if (!tmp.empty()) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
    }
  }
  const bool all_right = std::none_of(rows.begin(), rows.end(),
                                      [](const BenchRow& r) { return r.status.rfind("wrong", 0) == 0; });
  return all_right ? 0 : 1;
}

}  // namespace lutmm::bench
