// Argument checks of the logical format and QuantizedWeight::validate().
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "lutmm/error.hpp"
#include "lutmm/format.hpp"

namespace lutmm {

void check_bits(int bits) {
  if (bits < 2 || bits > 4) throw_argument_error("bits", "2, 3 or 4", std::to_string(bits));
}

void check_group_size(int group_size, int64_t k) {
  if (k <= 0) throw_argument_error("k", "a positive size", std::to_string(k));
  const std::string kk = "K (=" + std::to_string(k) + ")";
  if (group_size == k) {
    // One scale per row: the kernels step along K in k16 mma slices.
    if (k % 16 != 0) {
      throw_argument_error("k", "a multiple of 16 when group_size == K", std::to_string(k));
    }
    return;
  }
  const bool listed = group_size == 32 || group_size == 64 || group_size == 128 || group_size == 256;
  if (!listed) {
    throw_argument_error("group_size", "one of 32, 64, 128, 256 or " + kk, std::to_string(group_size));
  }
  if (k % group_size != 0) {
    throw_argument_error("group_size", "a divisor of " + kk + " among 32, 64, 128, 256, or K itself",
                         std::to_string(group_size));
  }
}

void QuantizedWeight::validate() const {
  if (n <= 0) throw_argument_error("QuantizedWeight.n", "a positive row count", std::to_string(n));
  if (k <= 0) throw_argument_error("QuantizedWeight.k", "a positive column count", std::to_string(k));
  if (n > std::numeric_limits<int64_t>::max() / k) {
    throw_argument_error("QuantizedWeight.n", "n * k to fit in int64",
                         std::to_string(n) + " x " + std::to_string(k));
  }
  if (bits < 2 || bits > 4) throw_argument_error("QuantizedWeight.bits", "2, 3 or 4", std::to_string(bits));
  if (group_size == k) {
    if (k % 16 != 0) {
      throw_argument_error("QuantizedWeight.k", "a multiple of 16 when group_size == K", std::to_string(k));
    }
  } else if (!(group_size == 32 || group_size == 64 || group_size == 128 || group_size == 256) ||
             k % group_size != 0) {
    throw_argument_error("QuantizedWeight.group_size",
                         "a divisor of K (=" + std::to_string(k) + ") among 32, 64, 128, 256, or K itself",
                         std::to_string(group_size));
  }
  if (dtype != DType::f16 && dtype != DType::bf16) {
    throw_argument_error("QuantizedWeight.dtype", "fp16 or bf16",
                         "enum value " + std::to_string(static_cast<int>(dtype)));
  }
  const uint64_t entries = uint64_t{1} << bits;
  if (table.size() != entries) {
    throw_argument_error("QuantizedWeight.table", std::to_string(entries) + " entries (2^bits)",
                         std::to_string(table.size()));
  }
  if (static_cast<uint64_t>(codes.size()) != static_cast<uint64_t>(n * k)) {
    throw_argument_error("QuantizedWeight.codes", std::to_string(n * k) + " codes (n * k)",
                         std::to_string(codes.size()));
  }
  if (static_cast<uint64_t>(scales.size()) != static_cast<uint64_t>(n * groups())) {
    throw_argument_error("QuantizedWeight.scales",
                         std::to_string(n * groups()) + " scales (n * k / group_size)",
                         std::to_string(scales.size()));
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const float v = bits_to_float(table[i], dtype);
    if (!std::isfinite(v)) {
      throw_argument_error("QuantizedWeight.table", "finite values",
                           std::to_string(v) + " at index " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < scales.size(); ++i) {
    const float v = bits_to_float(scales[i], dtype);
    if (!std::isfinite(v)) {
      throw_argument_error("QuantizedWeight.scales", "finite values",
                           std::to_string(v) + " at row " + std::to_string(i / groups()) + ", group " +
                               std::to_string(i % groups()));
    }
  }
  // Codes are bytes; any bit at or above `bits` is out of range. OR-reduce first (fast, vectorizes),
  // then locate the first bad one only when there is one.
  const uint8_t high = static_cast<uint8_t>(0xff << bits);
  uint8_t any = 0;
  for (uint8_t c : codes) any |= c;
  if (any & high) {
    for (size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] & high) {
        throw_argument_error("QuantizedWeight.codes", "codes below 2^bits (=" + std::to_string(entries) + ")",
                             std::to_string(codes[i]) + " at row " + std::to_string(i / k) + ", column " +
                                 std::to_string(i % k));
      }
    }
  }
}

}  // namespace lutmm
