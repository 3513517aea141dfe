#pragma once
// Problem shapes "M N K" (out[M,N] = x[M,K] . W[N,K]^T) as in ../shared/shapes/*.txt. The two sets
// "diffusion" and "llm" are embedded in the library.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lutmm {

struct Shape {
  int64_t m = 0, n = 0, k = 0;
  std::string label;  // the comment heading it stood under ("SD1.5", ...), may be empty
};

std::vector<Shape> parse_shapes(std::string_view text, std::string_view source_name);  // throws Error with line number
std::vector<Shape> load_shapes(std::string_view name_or_path);  // "diffusion", "llm" or a file path
std::vector<std::string> builtin_shape_set_names();

}  // namespace lutmm
