#include "verify.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <fmt/core.h>

#include "cuda_util.hpp"
#include "dense_gemm.hpp"
#include "lutmm/error.hpp"
#include "lutmm/gemm.hpp"
#include "lutmm/reference.hpp"
#include "runtime/launch_choices.hpp"

namespace lutmm::bench {
namespace {

// Poisoned bands before and after the output. 256 bytes keeps `out` itself 256-byte aligned (gemm asks
// for 16) and is more than any vector store of a tile edge could overrun by.
constexpr size_t kGuardBytes = 256;
constexpr unsigned char kPoisonByte = 0xff;  // 0xffff: NaN in fp16 (exponent 31, mantissa != 0) and bf16

// Seeds of x and bias: derived from the case seed so each array has its own streams.
uint64_t x_seed(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ull + 0x1; }
uint64_t bias_seed(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ull + 0x2; }

Problem effective_problem(const VerifyCase& c) {
  Problem p = c.problem;
  p.has_bias = c.with_bias;
  return p;
}

KernelConfig config_for(const VerifyCase& c) { return c.config ? *c.config : chosen_config(effective_problem(c)); }

// One upload of the inputs, then `runs` runs of lutmm::gemm, each into a freshly poisoned output.
struct GpuOutputs {
  std::vector<std::vector<uint16_t>> outs;  // [run][m*n]
  int64_t guard_overwritten = 0;            // summed over runs
};

GpuOutputs run_on_gpu(const VerifyCase& c, const VerifyInputs& in, int runs) {
  const Problem p = effective_problem(c);
  const size_t out_bytes = static_cast<size_t>(p.m * p.n) * sizeof(uint16_t);
  const size_t total = out_bytes + 2 * kGuardBytes;

  Stream stream;
  const DeviceWeight weight = DeviceWeight::upload(in.weight, stream.get());
  DeviceBuffer x(in.x.size() * sizeof(uint16_t));
  copy_to_device(x.get(), in.x.data(), x.bytes(), stream.get());
  DeviceBuffer bias(in.bias.size() * sizeof(uint16_t));
  copy_to_device(bias.get(), in.bias.data(), bias.bytes(), stream.get());
  DeviceBuffer out(total);
  auto* out_ptr = out.as<unsigned char>() + kGuardBytes;

  GemmOptions options;
  options.config = c.config;
  options.stream = stream.get();

  GpuOutputs result;
  std::vector<unsigned char> host(total);
  for (int r = 0; r < runs; ++r) {
    LUTMM_CUDA(cudaMemsetAsync(out.get(), kPoisonByte, total, stream.get()));
    gemm(x.get(), p.m, weight.view(), c.with_bias ? bias.get() : nullptr, out_ptr, options);
    LUTMM_CUDA(cudaGetLastError());
    stream.synchronize();
    copy_to_host(host.data(), out.get(), total, stream.get());
    for (size_t i = 0; i < kGuardBytes; ++i) {
      result.guard_overwritten += host[i] != kPoisonByte;
      result.guard_overwritten += host[total - 1 - i] != kPoisonByte;
    }
    std::vector<uint16_t> values(static_cast<size_t>(p.m * p.n));
    std::memcpy(values.data(), host.data() + kGuardBytes, out_bytes);
    result.outs.push_back(std::move(values));
  }
  return result;
}

// cublasDgemm on x and W converted exactly to double, then bias on the host.
std::vector<double> gpu_reference(const VerifyInputs& in, const Problem& p) {
  const QuantizedWeight& w = in.weight;
  std::vector<double> xd(in.x.size());
  for (size_t i = 0; i < xd.size(); ++i) xd[i] = bits_to_float(in.x[i], w.dtype);
  const std::vector<double> wd = dequantize_f64(w);

  Stream stream;
  CublasHandle handle(stream.get());
  DeviceBuffer dx(xd.size() * sizeof(double)), dw(wd.size() * sizeof(double));
  DeviceBuffer dout(static_cast<size_t>(p.m * p.n) * sizeof(double));
  copy_to_device(dx.get(), xd.data(), dx.bytes(), stream.get());
  copy_to_device(dw.get(), wd.data(), dw.bytes(), stream.get());
  dense_gemm_f64(handle.get(), dx.as<double>(), dw.as<double>(), dout.as<double>(), p.m, p.n, p.k);
  stream.synchronize();
  std::vector<double> ref(static_cast<size_t>(p.m * p.n));
  copy_to_host(ref.data(), dout.get(), dout.bytes(), stream.get());
  if (!in.bias.empty()) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) ref[i * p.n + j] += bits_to_float(in.bias[j], w.dtype);
    }
  }
  return ref;
}

}  // namespace

double verify_tolerance(DType dtype) { return dtype == DType::f16 ? 2e-3 : 1e-2; }

std::string VerifyResult::str() const {
  return fmt::format("config={} launch={} rel_fro={:.3e} (tol {:.0e}) max_abs={:.3e} unwritten={} "
                     "guard_overwritten={} ref={} {}",
                     config_name, launch.empty() ? "plain" : launch, rel_fro_error, tolerance, max_abs_error, unwritten,
                     guard_overwritten, reference, passed ? "PASS" : "FAIL");
}

VerifyInputs make_verify_inputs(const VerifyCase& c) {
  const Problem& p = c.problem;
  if (p.m < 1) throw_argument_error("problem.m", "at least 1", std::to_string(p.m));
  if (p.n < 1) throw_argument_error("problem.n", "at least 1", std::to_string(p.n));
  if (p.k < 1) throw_argument_error("problem.k", "at least 1", std::to_string(p.k));
  if (p.m > std::numeric_limits<int64_t>::max() / p.k || p.m > std::numeric_limits<int64_t>::max() / p.n) {
    throw_argument_error("problem", "m * k and m * n to fit in int64", p.str());
  }
  VerifyInputs in;
  in.weight = random_quantized_weight(p.n, p.k, p.bits, p.group_size, p.dtype, c.seed, c.table);
  in.x = random_values(p.m * p.k, p.dtype, x_seed(c.seed));
  if (c.with_bias) in.bias = random_values(p.n, p.dtype, bias_seed(c.seed));
  return in;
}

int64_t count_unwritten(const uint16_t* out, int64_t count, DType dtype) {
  if (count < 0) throw_argument_error("count", "a non-negative count", std::to_string(count));
  if (out == nullptr && count > 0) throw_argument_error("out", "a pointer to count values", "null");
  int64_t nan = 0;
  for (int64_t i = 0; i < count; ++i) nan += std::isnan(bits_to_float(out[i], dtype));
  return nan;
}

OutputComparison compare_output(const uint16_t* out, const double* reference, int64_t count, DType dtype) {
  if (count < 0) throw_argument_error("count", "a non-negative count", std::to_string(count));
  if (count > 0 && out == nullptr) throw_argument_error("out", "a pointer to count values", "null");
  if (count > 0 && reference == nullptr) throw_argument_error("reference", "a pointer to count values", "null");
  OutputComparison r;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double v = bits_to_float(out[i], dtype);
    if (std::isnan(v)) {
      ++r.unwritten;
      continue;
    }
    const double d = std::fabs(v - reference[i]);
    diff2 += d * d;
    ref2 += reference[i] * reference[i];
    if (d > r.max_abs_error) r.max_abs_error = d;
  }
  if (ref2 > 0) {
    r.rel_fro_error = std::sqrt(diff2 / ref2);
  } else {
    r.rel_fro_error = diff2 == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return r;
}

VerifyResult verify_gemm(const VerifyCase& c) {
  const VerifyInputs in = make_verify_inputs(c);  // argument checks before touching the GPU
  require_device("verify_gemm");
  const Problem p = effective_problem(c);
  check_problem(p);

  VerifyResult result;
  const KernelConfig config = config_for(c);
  result.config_name = config.name();
  result.launch = launch_choices(p, config).str();
  result.tolerance = verify_tolerance(p.dtype);
  const GpuOutputs gpu = run_on_gpu(c, in, 1);
  result.guard_overwritten = gpu.guard_overwritten;

  std::vector<double> ref;
  if (static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) <= kCpuReferenceLimit) {
    result.reference = "reference_gemm_f64";
    ref.resize(static_cast<size_t>(p.m * p.n));
    reference_gemm_f64(in.x.data(), p.m, in.weight, c.with_bias ? in.bias.data() : nullptr, ref.data());
  } else {
    result.reference = "cublasDgemm";
    ref = gpu_reference(in, p);
  }
  const OutputComparison cmp = compare_output(gpu.outs[0].data(), ref.data(), p.m * p.n, p.dtype);
  result.rel_fro_error = cmp.rel_fro_error;
  result.max_abs_error = cmp.max_abs_error;
  result.unwritten = cmp.unwritten;
  result.passed = result.unwritten == 0 && result.guard_overwritten == 0 && result.rel_fro_error <= result.tolerance;
  return result;
}

DeterminismResult check_determinism(const VerifyCase& c, int runs) {
  if (runs < 2) throw_argument_error("runs", "at least 2", std::to_string(runs));
  const VerifyInputs in = make_verify_inputs(c);
  require_device("check_determinism");
  check_problem(effective_problem(c));

  DeterminismResult result;
  result.runs = runs;
  result.config_name = config_for(c).name();
  const GpuOutputs gpu = run_on_gpu(c, in, runs);
  const std::vector<uint16_t>& first = gpu.outs[0];
  result.unwritten = count_unwritten(first.data(), static_cast<int64_t>(first.size()), c.problem.dtype);
  for (int r = 1; r < runs; ++r) {
    for (size_t i = 0; i < first.size(); ++i) result.differing += gpu.outs[r][i] != first[i];
  }
  result.identical = result.differing == 0;
  return result;
}

}  // namespace lutmm::bench
