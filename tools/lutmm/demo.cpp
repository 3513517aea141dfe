// `lutmm demo`: the main job (scripts/main). With a GPU: quantize a 4096x4096 layer to NF4, run it through
// lutmm::gemm and check it against the float64 reference, run the GPU checks, then benchmark both embedded
// shape sets. Without one: the same format on the CPU path (quantizer, cpu_gemm checked against the
// reference, the table comparison) and an NVRTC compile for a what-if GPU, which needs no device.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>

#include <fmt/core.h>

#include "bench.hpp"
#include "cli.hpp"
#include "cuda_util.hpp"
#include "jit/jit.hpp"
#include "random_inputs.hpp"
#include "verify.hpp"

namespace lutmm::cli {
namespace {

struct DemoArgs {
  std::string out_dir = "out";
  std::vector<std::string> sets = {"diffusion", "llm"};
  uint64_t seed = 0;
};

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<float> gaussian_weight(int64_t n, int64_t k, uint64_t seed) {
  std::vector<float> w(static_cast<size_t>(n * k));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& v : w) v = normal(rng);
  return w;
}

// Quantizes a Gaussian layer and prints its reconstruction error.
QuantizedWeight quantize_layer(const std::vector<float>& w, int64_t n, int64_t k, const QuantizeOptions& o) {
  const auto start = Clock::now();
  QuantizedWeight q = quantize(w.data(), n, k, o);
  const double ms = ms_since(start);
  const QuantizationError e = reconstruction_error(w.data(), q);
  fmt::print("  {} x {} Gaussian weight -> {}, group {}, {}: relative error {:.4f}, SQNR {:.2f} dB ({:.0f} ms)\n", n,
             k, q.table_name, q.group_size, to_string(q.dtype), e.relative_frobenius, e.sqnr_db, ms);
  return q;
}

void section(int number, std::string_view title) { fmt::print("\n{}. {}\n", number, title); }

// --- the GPU path ---------------------------------------------------------------------------------------

bool gpu_layer(const DemoArgs& a) {
  constexpr int64_t n = 4096, k = 4096, m = 77;
  section(1, "quantize one 4096 x 4096 layer (NF4, group 128, bf16)");
  QuantizeOptions o;  // bits 4, group 128, bf16, table nf
  const QuantizedWeight q = quantize_layer(gaussian_weight(n, k, a.seed), n, k, o);

  section(2, "run it on the GPU and check against the float64 reference");
  const std::vector<uint16_t> x = bench::random_values(m * k, q.dtype, a.seed + 1);
  const DeviceWeight weight = DeviceWeight::upload(q);
  bench::DeviceBuffer dx(x.size() * sizeof(uint16_t));
  bench::DeviceBuffer dout(static_cast<size_t>(m * n) * sizeof(uint16_t));
  bench::copy_to_device(dx.get(), x.data(), dx.bytes());
  Problem p{m, n, k, q.bits, q.group_size, q.dtype, false};
  const std::string config = chosen_config(p).name();
  const auto start = Clock::now();
  gemm(dx.get(), m, weight.view(), nullptr, dout.get());
  bench::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double first_ms = ms_since(start);
  std::vector<uint16_t> out(static_cast<size_t>(m * n));
  bench::copy_to_host(out.data(), dout.get(), dout.bytes());
  std::vector<double> ref(out.size());
  reference_gemm_f64(x.data(), m, q, nullptr, ref.data());
  const bench::OutputComparison cmp = bench::compare_output(out.data(), ref.data(), m * n, q.dtype);
  const double tolerance = bench::verify_tolerance(q.dtype);
  const bool ok = cmp.unwritten == 0 && cmp.rel_fro_error <= tolerance;
  fmt::print("  {} with {} (first call, JIT compile included: {:.0f} ms)\n", p.str(), config, first_ms);
  fmt::print("  relative error {:.2e} (limit {:.0e}), max |error| {:.3e}, unwritten {}: {}\n", cmp.rel_fro_error,
             tolerance, cmp.max_abs_error, cmp.unwritten, ok ? "ok" : "FAILED");

  section(3, "GPU checks on random formats (bench/verify.hpp: guard bands, every output written)");
  bool all = ok;
  for (int64_t rows : {int64_t{1}, int64_t{16}, int64_t{77}, int64_t{1024}}) {
    for (int bits : {2, 3, 4}) {
      bench::VerifyCase c;
      c.problem = Problem{rows, n, k, bits, 128, DType::bf16, false};
      c.seed = a.seed + 2;
      c.with_bias = rows == 77;
      c.problem.has_bias = c.with_bias;  // only for the printed label
      const bench::VerifyResult r = bench::verify_gemm(c);
      fmt::print("  {}: {}\n", c.problem.str(), r.str());
      all &= r.passed;
    }
  }
  return all;
}

// Returns whether every shape ran with a correct-looking result (run_bench's verdict).
bool gpu_benchmarks(const DemoArgs& a, const std::vector<std::vector<Shape>>& shape_sets, int first_section) {
  std::filesystem::create_directories(a.out_dir);
  int number = first_section;
  bool all = true;
  for (size_t i = 0; i < a.sets.size(); ++i) {
    const std::string& set = a.sets[i];
    section(number++, fmt::format("benchmark the '{}' shapes (4-bit, group 128, bf16) against cuBLAS", set));
    bench::BenchOptions b;
    b.shapes = shape_sets[i];
    b.bits = 4;
    b.group = 128;
    b.dtype = DType::bf16;
    // "diffusion" -> bench_diffusion.csv; a shape file's stem names the files the same way.
    const std::string stem = std::filesystem::path(set).stem().string();
    b.csv_path = (std::filesystem::path(a.out_dir) / fmt::format("bench_{}.csv", stem)).string();
    b.png_path = (std::filesystem::path(a.out_dir) / fmt::format("bench_{}.png", stem)).string();
    all &= bench::run_bench(b) == 0;
  }
  return all;
}

// --- the CPU path ---------------------------------------------------------------------------------------

// Checks a cpu_gemm output element by element against what float32 summation and one final rounding
// can explain: |out - ref| <= u |ref| + (1 + u) (K + 2) 2^-24 sum_k |x w|, where u is the unit roundoff of
// the output type (2^-8 bf16, 2^-11 fp16) and the second term is the classic bound on a float32 sum of K
// exact products. sum_k |x w| is the reference GEMM of |x| and |W| (sign bits cleared).
struct CpuCheck {
  double rel_fro_error = 0;
  double max_abs_error = 0;
  double worst_ratio = 0;  // max over outputs of |out - ref| / bound; <= 1 passes
};

CpuCheck check_cpu_output(const std::vector<uint16_t>& x, int64_t m, const QuantizedWeight& q,
                          const std::vector<uint16_t>& out, const std::vector<double>& ref) {
  QuantizedWeight abs_q = q;
  for (uint16_t& t : abs_q.table) t &= 0x7fff;
  for (uint16_t& s : abs_q.scales) s &= 0x7fff;
  std::vector<uint16_t> abs_x = x;
  for (uint16_t& v : abs_x) v &= 0x7fff;
  std::vector<double> abs_sum(ref.size());
  reference_gemm_f64(abs_x.data(), m, abs_q, nullptr, abs_sum.data());

  const double u = q.dtype == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  const double gamma = (static_cast<double>(q.k) + 2) * std::ldexp(1.0, -24);
  CpuCheck c;
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double e = std::abs(static_cast<double>(bits_to_float(out[i], q.dtype)) - ref[i]);
    const double bound = u * std::abs(ref[i]) + (1 + u) * gamma * abs_sum[i];
    c.max_abs_error = std::max(c.max_abs_error, e);
    c.worst_ratio = std::max(c.worst_ratio, bound > 0 ? e / bound : (e > 0 ? INFINITY : 0.0));
    if (std::isnan(e)) c.worst_ratio = INFINITY;
    err2 += e * e;
    ref2 += ref[i] * ref[i];
  }
  c.rel_fro_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return c;
}

bool cpu_path(const DemoArgs& a) {
  constexpr int64_t m = 77, n = 1280, k = 768;  // an SD1.5 cross-attention projection
  section(1, "quantize one 1280 x 768 layer (NF4, group 128, bf16)");
  const std::vector<float> w = gaussian_weight(n, k, a.seed);
  QuantizeOptions o;
  const QuantizedWeight q = quantize_layer(w, n, k, o);

  section(2, "CPU GEMM (cpu_gemm, float32 accumulation) against the float64 reference, 77 x 1280 x 768");
  const std::vector<uint16_t> x = bench::random_values(m * k, q.dtype, a.seed + 1);
  std::vector<uint16_t> out(static_cast<size_t>(m * n));
  std::vector<double> ref(out.size());
  cpu_gemm(x.data(), m, q, nullptr, out.data());  // warm-up: threads, pages
  auto start = Clock::now();
  cpu_gemm(x.data(), m, q, nullptr, out.data());
  const double cpu_ms = ms_since(start);
  start = Clock::now();
  reference_gemm_f64(x.data(), m, q, nullptr, ref.data());
  const double ref_ms = ms_since(start);
  const CpuCheck c = check_cpu_output(x, m, q, out, ref);
  const bool ok = c.worst_ratio <= 1.0;
  const double gflops = 2.0 * m * n * k / (cpu_ms * 1e6);
  fmt::print("  cpu_gemm {:.2f} ms ({:.1f} GFLOP/s), reference_gemm_f64 {:.2f} ms\n", cpu_ms, gflops, ref_ms);
  fmt::print("  relative error {:.2e}, max |error| {:.3e}, worst error / rounding bound {:.3f}: {}\n",
             c.rel_fro_error, c.max_abs_error, c.worst_ratio, ok ? "ok" : "FAILED");

  section(3, "quantization error of each table on that layer (absmax scales)");
  print_quantization_table(w, n, k, {2, 3, 4}, {"nf", "int", "int_asym", "fp4"}, o, false);

  section(4, "JIT-compile the GEMM kernel with NVRTC for a what-if sm_90 GPU (no device needed)");
  const DeviceInfo dev = what_if_device(90);
  const Problem p{m, n, k, q.bits, q.group_size, q.dtype, false};
  const KernelConfig cfg = heuristic_config(p, dev);
  const double compile_ms = precompile(p, cfg, 90);
  fmt::print("  {} on {}: {}\n", p.str(), dev.name, cfg.name());
  fmt::print("  {} into {}\n",
             compile_ms > 0 ? fmt::format("compiled in {:.0f} ms", compile_ms) : std::string("already in the cache"),
             jit::cache_directory());
  return ok;
}

int run_demo(const DemoArgs& a) {
  std::vector<std::vector<Shape>> shape_sets;  // read before any work, so a bad name fails at once
  for (const std::string& set : a.sets) shape_sets.push_back(load_shapes(set));
  print_environment();
  if (device_count() == 0) {
    fmt::print("\nNo CUDA GPU on this machine: lutmm::gemm cannot run here. Running the CPU path instead:\n"
               "the same quantizer and format, the CPU GEMM checked against the reference, and a kernel compile.\n");
    const bool ok = cpu_path(a);
    fmt::print("\ndemo {} (CPU path; run on a machine with an sm_80+ GPU for the GEMM and the benchmarks)\n",
               ok ? "done" : "FAILED");
    return ok ? 0 : 1;
  }
  const bool ok = gpu_layer(a);
  if (!ok) {
    fmt::print(stderr, "\ndemo FAILED: the GPU result does not match the reference; not benchmarking\n");
    return 1;
  }
  const bool bench_ok = gpu_benchmarks(a, shape_sets, 4);
  fmt::print("\ndemo {}\n", bench_ok ? "done" : "FAILED: a benchmarked shape gave a wrong-looking result (see above)");
  return bench_ok ? 0 : 1;
}

}  // namespace

Command add_demo(CLI::App& parent) {
  auto a = std::make_shared<DemoArgs>();
  CLI::App* app = parent.add_subcommand(
      "demo", "The main job: quantize, run and check a layer, then benchmark both shape sets (CPU path without a GPU)");
  app->add_option("--out", a->out_dir, "Folder for the benchmark CSV and PNG files")->capture_default_str();
  app->add_option("--sets", a->sets, "Shape sets (or shape files) to benchmark, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--seed", a->seed, "Seed of the random weights and inputs")->capture_default_str();
  return {app, [a] { return run_demo(*a); }};
}

}  // namespace lutmm::cli
