#pragma once
// Bit manipulation from a lane's packed words to what the table lookups index with. Host-callable, so the
// CPU tests check it against the layout definition without a GPU.
#include "lutmm/layout/packed_layout.cuh"

namespace lutmm::lut {

// The 8 codes of slice s (pairs 0..3, first then second) as 8 nibbles in element order.
template <int kBits>
LUTMM_HOST_DEVICE uint32_t slice_nibbles(const uint32_t* w, int s) {
  if constexpr (kBits == 4) {
    return w[s];
  } else if constexpr (kBits == 3) {
    uint32_t x = layout::lane_bits(w, 3, layout::field_bit3(s, 0)) & 0xffffffu;  // 8 three-bit codes
    x = (x & 0x000fffu) | ((x << 4) & 0x0fff0000u);  // 4 codes in each half word
    x = (x & 0x003f003fu) | ((x << 2) & 0x3f003f00u);  // 2 in each byte
    return (x & 0x07070707u) | ((x << 1) & 0x70707070u);  // 1 in each nibble
  } else {
    uint32_t x = (w[s >> 1] >> (16 * (s & 1))) & 0xffffu;  // 8 two-bit fields -> 8 nibbles
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    return (x | (x << 2)) & 0x33333333u;
  }
}

}  // namespace lutmm::lut

namespace lutmm::lut {

// Byte offset of pair p of slice s in the 32-copy pair table, lane copy included: index * 128 + lane4,
// where lane4 = lane * 4 and index is the pair's table index (layout/packed_layout.cuh: the byte for
// b = 4, the nibble for b = 2, the six-bit field for b = 3). Written as shift-and-mask of the packed words so the
// compiler emits one shift (a funnel shift for the 3-bit fields that straddle two words) and one LOP3 per pair and
// the load can use an immediate base address.
template <int kBits>
LUTMM_HOST_DEVICE uint32_t pair_offset(const uint32_t* w, int s, int p, uint32_t lane4) {
  auto shift = [](uint32_t v, int right) -> uint32_t { return right >= 0 ? v >> right : v << -right; };
  if constexpr (kBits == 4) {
    return (shift(w[s], 8 * p - 7) & 0x7f80u) | lane4;
  } else if constexpr (kBits == 2) {
    return (shift(w[s >> 1], 16 * (s & 1) + 4 * p - 7) & 0x780u) | lane4;
  } else {
    const int bit = layout::field_bit3(s, p);
    const uint32_t bits = (bit & 31) < 7 ? shift(w[bit >> 5], (bit & 31) - 7) : layout::lane_bits(w, 3, bit - 7);
    return (bits & 0x1f80u) | lane4;
  }
}

}  // namespace lutmm::lut
