#include "lutmm/error.hpp"

#include <string>

namespace lutmm {

void throw_argument_error(std::string_view argument, std::string_view expected, std::string_view got) {
  std::string msg = "lutmm: argument '";
  msg.append(argument).append("': expected ").append(expected).append(", got ").append(got);
  throw Error(msg);
}

void throw_error(std::string_view what) { throw Error(std::string("lutmm: ").append(what)); }

}  // namespace lutmm
