#pragma once
// The NormalFloat (NF) level construction of QLoRA (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of
// Quantized LLMs", and bitsandbytes' create_normal_map), generalised from 4 to b bits. Internal to the
// format module; exposed as a header so the tests can check the construction against the published NF4.
#include <vector>

namespace lutmm::detail {

// The inverse CDF of N(0, 1) for p in (0, 1), accurate to a few ulp (rational start + Halley steps).
double normal_quantile(double p);

// The probability at which the outermost level sits:
//   offset(b) = 1 - (1 / (2 (2^b - 1)) + 1 / (2 * 2^b)) / 2
// i.e. halfway between the centres of the last of 2^b - 1 and of 2^b equal-probability bins. For b = 4
// it is 0.96770833..., the constant 0.9677083 of bitsandbytes.
double normal_float_offset(int bits);

// The 2^bits NF levels, ascending, in double: 2^(b-1) positive levels Phi^-1 of
// linspace(offset, 1/2, 2^(b-1) + 1) without its last point, 2^(b-1) - 1 negative levels -Phi^-1 of
// linspace(offset, 1/2, 2^(b-1)) without its last point, and an exact 0; all divided by the largest,
// so the table spans exactly [-1, 1]. bits in 2..4 (not checked here).
std::vector<double> normal_float_levels(int bits);

}  // namespace lutmm::detail
