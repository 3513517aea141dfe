#pragma once
// The one exception type every public lutmm entry point throws. Its message always names the argument
// (or the resource), what was expected and what came, e.g.
//   lutmm: argument 'group_size': expected one of 32, 64, 128, 256 or K (=320), got 48
#include <stdexcept>
#include <string>
#include <string_view>

namespace lutmm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error("lutmm: argument '<argument>': expected <expected>, got <got>").
[[noreturn]] void throw_argument_error(std::string_view argument, std::string_view expected,
                                       std::string_view got);

// Throws Error("lutmm: <what>") for failures that are not a bad argument (CUDA, NVRTC, files).
[[noreturn]] void throw_error(std::string_view what);

}  // namespace lutmm
