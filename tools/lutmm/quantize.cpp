// `lutmm quantize`: how well each table reconstructs a weight (random Gaussian or a .npy file).
#include <chrono>
#include <memory>
#include <optional>
#include <random>

#include <fmt/core.h>

#include "cli.hpp"
#include "npy.hpp"

namespace lutmm::cli {
namespace {

struct QuantizeArgs {
  std::vector<int> bits = {2, 3, 4};
  int group = 128;
  std::string dtype = "bf16";
  std::vector<std::string> tables = {"nf", "int", "int_asym", "fp4"};
  std::string search = "absmax";
  bool learn = false;
  int64_t rows = 1024;
  int64_t cols = 4096;
  std::string input;
  uint64_t seed = 0;
  int threads = 0;
};

// Storage per weight, everything counted: the codes, one 16-bit scale per group and the 16-bit table
// (which matters only for tiny matrices).
double bits_per_weight(const QuantizedWeight& q) {
  const double weights = static_cast<double>(q.n) * static_cast<double>(q.k);
  const double total = weights * q.bits + static_cast<double>(q.scales.size()) * 16.0 + q.table.size() * 16.0;
  return total / weights;
}

// Whether `name` names a table at some bit width; rethrows the library's error for the first requested
// width otherwise (a misspelt name is an error, "fp4" at 2 bits is just a combination that does not exist).
void check_table_name(const std::string& name, const std::vector<int>& bits) {
  for (int b : {2, 3, 4}) {
    try {
      table_by_name(name, b);
      return;
    } catch (const Error&) {
    }
  }
  table_by_name(name, bits.front());
}

}  // namespace

void print_quantization_table(const std::vector<float>& w, int64_t n, int64_t k, const std::vector<int>& bit_widths,
                              const std::vector<std::string>& tables, const QuantizeOptions& base, bool learn_too) {
  for (const std::string& name : tables) check_table_name(name, bit_widths);
  fmt::print("{:>4}  {:<16} {:>14} {:>9} {:>11} {:>11} {:>9}\n", "bits", "table", "rel. Frobenius", "SQNR dB",
             "max |err|", "bits/weight", "time ms");
  for (int bits : bit_widths) {
    for (const std::string& name : tables) {
      std::optional<Table> table;
      try {
        table = table_by_name(name, bits);
      } catch (const Error&) {
      }
      if (!table || table->bits != bits) {
        fmt::print("{:>4}  {:<16} {:>14}\n", bits, name, "(no such table at this width)");
        continue;
      }
      for (bool learn : {false, true}) {
        if (learn && !learn_too) continue;
        QuantizeOptions o = base;
        o.bits = bits;
        o.table = name;
        o.learn_table = learn;
        const auto start = std::chrono::steady_clock::now();
        const QuantizedWeight q = quantize(w.data(), n, k, o);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const QuantizationError e = reconstruction_error(w.data(), q);
        const std::string label = learn ? table->name + " learned" : table->name;
        fmt::print("{:>4}  {:<16} {:>14.5f} {:>9.2f} {:>11.3e} {:>11.3f} {:>9.1f}\n", bits, label,
                   e.relative_frobenius, e.sqnr_db, e.max_abs, bits_per_weight(q), ms);
      }
    }
  }
}

namespace {

int run_quantize(const QuantizeArgs& a) {
  std::vector<float> w;
  int64_t n = a.rows, k = a.cols;
  std::string source;
  if (!a.input.empty()) {
    NpyMatrix m = read_npy_matrix(a.input);
    n = m.rows;
    k = m.cols;
    w = std::move(m.data);
    source = fmt::format("{} ({}, {} x {})", a.input, m.descr, n, k);
  } else {
    if (n * k > (int64_t{1} << 30)) {
      throw UsageError(fmt::format("--rows {} --cols {}: expected at most 2^30 weights", n, k));
    }
    w.resize(static_cast<size_t>(n * k));
    std::mt19937_64 rng(a.seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);  // the spread of a typical trained linear layer
    for (float& v : w) v = normal(rng);
    source = fmt::format("{} x {} Gaussian, std 0.02, seed {}", n, k, a.seed);
  }

  QuantizeOptions base;
  base.group_size = a.group;
  base.dtype = parse_dtype(a.dtype);
  base.scale_search = a.search == "mse" ? ScaleSearch::mse : ScaleSearch::absmax;
  base.threads = a.threads;

  fmt::print("weights: {}\n", source);
  fmt::print("group {}, {} table and scales, {} scale search\n\n",
             a.group == 0 ? fmt::format("{} (one scale per row)", k) : std::to_string(a.group), a.dtype, a.search);
  print_quantization_table(w, n, k, a.bits, a.tables, base, a.learn);
  return 0;
}

}  // namespace

Command add_quantize(CLI::App& parent) {
  auto a = std::make_shared<QuantizeArgs>();
  CLI::App* app = parent.add_subcommand(
      "quantize", "Quantize a weight with each table and print the reconstruction error of each");
  app->add_option("--bits", a->bits, "Bit widths, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({2, 3, 4}))
      ->capture_default_str();
  app->add_option("--group", a->group, "Weights per scale along K: 32, 64, 128, 256, or 0 for one per row")
      ->check(CLI::IsMember({0, 32, 64, 128, 256}))
      ->capture_default_str();
  app->add_option("--dtype", a->dtype, "Table and scale type: bf16 or fp16")
      ->check(dtype_validator())
      ->capture_default_str();
  app->add_option("--tables", a->tables, "Tables, comma-separated (nf, int, int_asym, fp4, nf4, ...)")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--search", a->search, "Scale search per group")
      ->check(CLI::IsMember({"absmax", "mse"}))
      ->capture_default_str();
  app->add_flag("--learn", a->learn, "Also learn each table's values for the whole tensor (Lloyd)");
  CLI::Option* rows = app->add_option("--rows", a->rows, "Rows (N) of the random weight")
                          ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
                          ->capture_default_str();
  CLI::Option* cols = app->add_option("--cols", a->cols, "Columns (K) of the random weight")
                          ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
                          ->capture_default_str();
  app->add_option("--input", a->input, "A 2-D float32/float16 .npy weight [N][K] instead of random weights")
      ->check(CLI::ExistingFile)
      ->excludes(rows)
      ->excludes(cols);
  app->add_option("--seed", a->seed, "Seed of the random weight")->capture_default_str();
  app->add_option("--threads", a->threads, "Quantizer threads (0: all)")->check(CLI::NonNegativeNumber);
  return {app, [a] { return run_quantize(*a); }};
}

}  // namespace lutmm::cli
