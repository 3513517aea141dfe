#pragma once
// GPU correctness checks of lutmm::gemm against a float64 reference, on fresh random inputs.
//
// What a check does: draw inputs from the seed (random codes; a table of 2^b distinct values; scales
// ~ N(0, 0.05) of both signs; x ~ N(0, 1) and bias ~ N(0, 1) rounded to the dtype; nothing is zero), pack
// and upload W, fill the output and a guard band around it with 0xFFFF (a NaN in fp16 and in bf16), run
// lutmm::gemm, then compare. An output still NaN was never written; a guard byte that changed was
// written out of bounds.
//
// The reference is exact up to float64 summation: reference_gemm_f64 on the CPU for M*N*K up to
// kCpuReferenceLimit, above it W is dequantized to double on the CPU and multiplied by cublasDgemm.
//
// Tolerances (relative Frobenius error ||out - ref||_F / ||ref||_F):
//   bf16 1e-2, fp16 2e-3.
// Why: the reference uses table*scale exactly; the kernel rounds each dequantized weight to the dtype and
// each output once more. Round-to-nearest has a relative error of at most u = 2^-8 (bf16) / 2^-11 (fp16)
// and, over values spread across a binade, an RMS of about 0.4u; the two roundings are independent, so the
// expected relative Frobenius error is about 0.6u = 2.3e-3 (bf16) / 2.9e-4 (fp16). fp32 accumulation
// adds ~K * 2^-24 at worst, far less. The limits leave a 4x (bf16) / 7x (fp16) margin, while a single
// wrong code, scale or tile (an error of order 1 on a 1/(tile count) share of the outputs) lands well
// above them; tests/bench (Tolerance.SeparatesRoundingFromAWrongTile) checks both sides on the CPU.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lutmm/config.hpp"
#include "lutmm/format.hpp"
#include "random_inputs.hpp"

namespace lutmm::bench {

struct VerifyCase {
  Problem problem;                      // problem.has_bias is ignored: with_bias decides
  std::optional<KernelConfig> config;   // force a config; otherwise the runtime's choice
  uint64_t seed = 1;
  bool with_bias = false;
  TableKind table = TableKind::random;  // random distinct N(0,1) values, or the NF table
};

struct VerifyResult {
  double rel_fro_error = 0;     // over the written outputs
  double max_abs_error = 0;     // over the written outputs
  int64_t unwritten = 0;        // outputs still NaN after the run
  std::string config_name;      // the config that ran
  std::string launch;           // how gemm() launched it (LaunchChoices::str(): "early+prewait"; "" plain)
  double tolerance = 0;         // the limit on rel_fro_error for this dtype
  bool passed = false;          // rel_fro_error <= tolerance, every output written, no guard byte touched
  std::string reference;        // "reference_gemm_f64" or "cublasDgemm"
  int64_t guard_overwritten = 0;  // bytes of the poisoned bands before and after `out` that changed
  std::string str() const;      // one line: problem, config, errors, verdict
};

// M*N*K above which the reference runs on the GPU (cublasDgemm) instead of reference_gemm_f64.
inline constexpr double kCpuReferenceLimit = 2e9;
// The limit on the relative Frobenius error for outputs in `dtype` (see the top of this file).
double verify_tolerance(DType dtype);

// The inputs of a case: weight, x [m][k] and bias [n] (empty without bias), all dtype bits.
struct VerifyInputs {
  QuantizedWeight weight;
  std::vector<uint16_t> x;
  std::vector<uint16_t> bias;
};
// Checks the problem's sizes, bits and group size (throws Error naming the argument); CPU only.
VerifyInputs make_verify_inputs(const VerifyCase& c);

// Comparison of a dtype output against a float64 reference. NaN outputs count as unwritten and are left
// out of both error measures; an infinite output makes the errors infinite.
struct OutputComparison {
  double rel_fro_error = 0;
  double max_abs_error = 0;
  int64_t unwritten = 0;
};
OutputComparison compare_output(const uint16_t* out, const double* reference, int64_t count, DType dtype);
int64_t count_unwritten(const uint16_t* out, int64_t count, DType dtype);

// Runs the case on the current GPU and checks it. Throws Error on a bad case or a CUDA failure (and
// "no CUDA device" without a GPU); a wrong result is not an exception but passed == false.
VerifyResult verify_gemm(const VerifyCase& c);

struct DeterminismResult {
  int runs = 0;
  bool identical = false;  // every run's output equal bit for bit to the first's
  int64_t differing = 0;   // outputs of later runs that differ from the first run (summed over runs)
  int64_t unwritten = 0;   // NaN outputs of the first run (a run that writes nothing is trivially identical)
  std::string config_name;
};
// Runs the same inputs `runs` (>= 2) times, each into a freshly poisoned output, and compares bitwise.
DeterminismResult check_determinism(const VerifyCase& c, int runs = 2);

}  // namespace lutmm::bench
