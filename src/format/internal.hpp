#pragma once
// Helpers shared by the format module's sources; not part of the public API.
#include <string_view>
#include <vector>

#include "util/parallel.hpp"

namespace lutmm::detail {

// Validates table values (4, 8 or 16 finite values, not all zero) and returns their bit width.
// Errors name `argument`, the name the caller's user knows the values by.
int check_table_values(const std::vector<float>& values, std::string_view argument);

}  // namespace lutmm::detail
