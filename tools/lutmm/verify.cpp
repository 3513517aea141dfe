// `lutmm verify`: runs lutmm::gemm on the GPU for one or more problems and checks it against the float64
// reference (bench/verify.hpp says what is checked and with which tolerance).
#include <memory>
#include <optional>

#include <fmt/core.h>

#include "cli.hpp"
#include "metrics.hpp"  // bench/metrics.hpp
#include "verify.hpp"

namespace lutmm::cli {
namespace {

struct VerifyArgs {
  std::vector<std::string> shapes;
  std::string shape_set;
  int bits = 4;
  int group = 128;
  std::string dtype = "bf16";
  std::string config;
  uint64_t seed = 1;
  bool bias = false;
  std::string table = "random";
};

int run_verify(const VerifyArgs& a) {
  std::vector<Shape> shapes;
  for (const std::string& s : a.shapes) shapes.push_back(parse_shape_arg(s, "--shape"));
  if (!a.shape_set.empty()) {
    const std::vector<Shape> set = load_shapes(a.shape_set);
    shapes.insert(shapes.end(), set.begin(), set.end());
  }
  std::optional<KernelConfig> config;
  if (!a.config.empty()) config = KernelConfig::parse(a.config);

  // Every problem first, so a bad argument stops the command before any GPU work. The group is the one `lutmm
  // bench` runs for the shape's K (--group where it divides K, else 64, else K: the shape sets' K = 320 layers
  // run at G = 64).
  std::vector<bench::VerifyCase> cases;
  for (const Shape& s : shapes) {
    bench::VerifyCase c;
    c.problem = Problem::of(s.m, s.n, s.k, a.bits, bench::choose_group(s.k, a.group), parse_dtype(a.dtype));
    check_problem(c.problem);
    c.config = config;
    c.seed = a.seed;
    c.with_bias = a.bias;
    c.problem.has_bias = a.bias;  // only for the printed label: with_bias decides
    c.table = a.table == "nf" ? bench::TableKind::nf : bench::TableKind::random;
    cases.push_back(c);
  }
  int failed = 0;
  for (const bench::VerifyCase& c : cases) {
    const bench::VerifyResult r = bench::verify_gemm(c);
    fmt::print("{}: {}\n", c.problem.str(), r.str());
    failed += r.passed ? 0 : 1;
  }
  if (failed > 0) {
    fmt::print(stderr, "lutmm verify: {} of {} problem{} FAILED\n", failed, cases.size(), cases.size() == 1 ? "" : "s");
    return 1;
  }
  fmt::print("all {} passed\n", cases.size());
  return 0;
}

}  // namespace

Command add_verify(CLI::App& parent) {
  auto a = std::make_shared<VerifyArgs>();
  CLI::App* app = parent.add_subcommand("verify", "Check lutmm::gemm on the GPU against the float64 reference");
  app->add_option("--shape", a->shapes, "A problem M,N,K (repeatable)")->check(shape_validator());
  app->add_option("--shapes", a->shape_set, "Every shape of a set: diffusion, llm or a file");
  app->add_option("--bits", a->bits, "Bits per weight code")->check(CLI::IsMember({2, 3, 4}))->capture_default_str();
  add_group_option(app, a->group);
  app->add_option("--dtype", a->dtype, "Activation type: bf16 or fp16")->check(dtype_validator())->capture_default_str();
  app->add_option("--config", a->config, "Force a kernel config, e.g. sm80_n64_m16_k128_s4_w4x1_sk1_lutsmem");
  app->add_option("--seed", a->seed, "Seed of the random inputs")->capture_default_str();
  app->add_flag("--bias", a->bias, "Add a bias");
  app->add_option("--table", a->table, "Table: random distinct values, or the NF table")
      ->check(CLI::IsMember({"random", "nf"}))
      ->capture_default_str();
  return {app, [a] {
            if (a->shapes.empty() && a->shape_set.empty()) throw UsageError("give --shape M,N,K or --shapes SET");
            return run_verify(*a);
          }};
}

}  // namespace lutmm::cli
