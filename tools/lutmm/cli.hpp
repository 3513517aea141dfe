#pragma once
// Shared pieces of the `lutmm` command: how a subcommand is registered, the option parsers every
// subcommand uses, and the what-if devices for GPU-less listings.
//
// Exit codes (main.cpp): 0 ok, 1 a lutmm::Error (the library rejected an argument or failed), 2 a usage
// error (CLI11 parse/validation errors and UsageError thrown by a subcommand).
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "lutmm/lutmm.hpp"

namespace lutmm::cli {

// A command line that is well-formed for CLI11 but makes no sense (e.g. no GPU and no --arch).
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// A registered subcommand: CLI11 fills the options while parsing, `run` is called afterwards (only for
// the subcommand that was given) and returns the process exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_info(CLI::App& parent);
Command add_quantize(CLI::App& parent);
Command add_shapes(CLI::App& parent);
Command add_configs(CLI::App& parent);
Command add_precompile(CLI::App& parent);
Command add_bench(CLI::App& parent);
Command add_verify(CLI::App& parent);
Command add_demo(CLI::App& parent);
Command add_compare(CLI::App& parent);

// "M,N,K" (also "MxNxK" or "M N K") -> a shape with positive sizes; throws UsageError naming `option`.
Shape parse_shape_arg(std::string_view text, std::string_view option);
// A CLI11 check that accepts what parse_shape_arg accepts.
CLI::Validator shape_validator();
// A CLI11 check that accepts what lutmm::parse_dtype accepts.
CLI::Validator dtype_validator();
// --group of the commands that take a problem per shape (bench, precompile, tune, verify, configs): 0, 32, 64, 128
// or 256 into `group`, which each command resolves per K with bench::choose_group (64 where it does not divide K,
// else K), so that every command runs the shape sets' K = 320 layers at the group bench does.
CLI::Option* add_group_option(CLI::App* app, int& group);

// An invented but realistic DeviceInfo for a compute capability (80 A100, 86 RTX 3090, 89 L40S, 90 H200,
// 100 B200, 120 RTX 5090): what `configs --arch` and `precompile --arch` plan against without a GPU.
// It is a what-if: a real GPU of that arch may have other SM counts, caches or shared memory.
DeviceInfo what_if_device(int arch);
std::vector<int> what_if_archs();
// A CLI11 check for --arch values: one of what_if_archs().
CLI::Validator arch_validator();

// The device to plan for: the what-if device of `arch` when arch != 0, else the current GPU; throws
// UsageError when there is neither.
DeviceInfo planning_device(int arch);

std::string format_bytes(int64_t bytes);  // "50.0 MiB"
std::string join_ints(const std::vector<int>& values, std::string_view separator = ", ");

// Quantizes w [n][k] with every (bit width, table) pair, also with a learned table when learn_too, and
// prints one row each: relative Frobenius error, SQNR, max error, bits per weight with scales, time.
// A table that does not exist at a width ("fp4" at 2 bits) gets a row saying so; an unknown name throws.
void print_quantization_table(const std::vector<float>& w, int64_t n, int64_t k, const std::vector<int>& bit_widths,
                              const std::vector<std::string>& tables, const QuantizeOptions& base, bool learn_too);

// Prints lutmm/CUDA/NVRTC versions, every GPU and the kernel cache (`lutmm info`, `lutmm demo`).
void print_environment();

}  // namespace lutmm::cli
