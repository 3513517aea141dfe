#include "lutmm/dtype.hpp"

#include <bit>
#include <cmath>
#include <string>

#include "lutmm/error.hpp"

namespace lutmm {

std::string_view to_string(DType dtype) { return dtype == DType::f16 ? "fp16" : "bf16"; }

DType parse_dtype(std::string_view text) {
  if (text == "fp16" || text == "f16" || text == "half" || text == "float16") return DType::f16;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  throw_argument_error("dtype", "fp16 or bf16", std::string("'").append(text).append("'"));
}

namespace {

uint16_t float_to_bf16(float value) {
  uint32_t u = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep it a (quiet) NaN
  u += 0x7fff + ((u >> 16) & 1);                                          // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

// IEEE binary16 from binary32 with round-to-nearest-even, subnormals included.
uint16_t float_to_f16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (u >> 16) & 0x8000;
  const uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds past 65504: inf
  if (abs < 0x38800000) {                                             // below 2^-14: subnormal or zero
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;      // * 2^24: value in units of 2^-24
    const uint32_t q = static_cast<uint32_t>(std::nearbyint(scaled));  // default mode is RNE
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t mant = abs & 0x7fffff;
  uint32_t exp = (abs >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

}  // namespace

uint16_t float_to_bits(float value, DType dtype) {
  return dtype == DType::f16 ? float_to_f16(value) : float_to_bf16(value);
}

float bits_to_float(uint16_t bits, DType dtype) {
  return dtype == DType::f16 ? f16_to_float(bits) : std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace lutmm
