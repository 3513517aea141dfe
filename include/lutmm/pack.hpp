#pragma once
// The packed weight layout (version 2, docs/FORMAT.md draws it). One layout per bit width serves every
// kernel config: W is cut into atoms of 16 rows x 64 columns; inside an atom each of the 32 lanes of a
// warp holds, in b 32-bit words, exactly the codes of its mma.m16n8k16 A-fragments for the atom's four
// k16 slices. Atoms are stored row-major over (n/16, k/64), so a warp streams a 16-row strip of W
// contiguously along K. N is padded to 16 and K to 64 (codes 0, scales 0).
#include <cstdint>
#include <vector>

#include "lutmm/format.hpp"

namespace lutmm {

inline constexpr int kPackedLayoutVersion = 2;
inline constexpr int kAtomRows = 16;
inline constexpr int kAtomCols = 64;

struct PackedShape {
  int64_t n = 0, k = 0;          // logical
  int64_t n_padded = 0, k_padded = 0;
  int bits = 4;
  int group_size = 128;
  int64_t words() const { return n_padded * k_padded * bits / 32; }  // uint32 words of packed codes
  int64_t scale_rows() const;    // groups along the padded K: ceil(k_padded / group_size)
  int64_t scale_count() const { return scale_rows() * n_padded; }
};

PackedShape packed_shape(int64_t n, int64_t k, int bits, int group_size);

// codes [n][k] (one code per byte) -> packed words (CPU).
std::vector<uint32_t> pack_codes(const uint8_t* codes, int64_t n, int64_t k, int bits);
std::vector<uint8_t> unpack_codes(const uint32_t* packed, int64_t n, int64_t k, int bits);
// scales [n][k/g] -> the kernel's [scale_rows][n_padded] (padding 0).
std::vector<uint16_t> pack_scales(const uint16_t* scales, int64_t n, int64_t k, int group_size);

}  // namespace lutmm
