#pragma once
// Element types of activations, outputs, tables and scales. On the host a 16-bit value is carried as
// its bit pattern (uint16_t); these helpers convert with round-to-nearest-even, as the GPU does.
#include <cstdint>
#include <string>
#include <string_view>

namespace lutmm {

enum class DType : uint8_t { f16, bf16 };

std::string_view to_string(DType dtype);            // "fp16" / "bf16"
DType parse_dtype(std::string_view text);           // accepts fp16, f16, half, bf16; else throws Error

uint16_t float_to_bits(float value, DType dtype);    // RNE; NaN stays NaN, overflow goes to inf
float bits_to_float(uint16_t bits, DType dtype);     // exact
inline float round_to(float value, DType dtype) { return bits_to_float(float_to_bits(value, dtype), dtype); }

}  // namespace lutmm
