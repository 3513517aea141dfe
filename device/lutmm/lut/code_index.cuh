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
  } else {
    uint32_t x = (w[s >> 1] >> (16 * (s & 1))) & 0xffffu;  // 8 two-bit fields -> 8 nibbles
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    x = (x | (x << 2)) & 0x33333333u;
    if constexpr (kBits == 3) {
      uint32_t y = (w[2] >> (8 * s)) & 0xffu;  // 8 high bits -> bit 2 of each nibble
      y = (y | (y << 12)) & 0x000f000fu;
      y = (y | (y << 6)) & 0x03030303u;
      y = (y | (y << 3)) & 0x11111111u;
      x |= y << 2;
    }
    return x;
  }
}

}  // namespace lutmm::lut

namespace lutmm::lut {

// Byte offset of pair p of slice s in the 32-copy pair table, lane copy included: index * 128 + lane4,
// where lane4 = lane * 4 and index is the pair's table index (layout/packed_layout.cuh: the byte for
// b = 4, the nibble for b = 2, low nibble | high two bits << 4 for b = 3). Written as shift-and-mask of the packed word so the compiler emits one SHF and
// one LOP3 per pair (two of each for 3-bit) and the load can use an immediate base address.
template <int kBits>
LUTMM_HOST_DEVICE uint32_t pair_offset(const uint32_t* w, int s, int p, uint32_t lane4) {
  auto shift = [](uint32_t v, int right) -> uint32_t { return right >= 0 ? v >> right : v << -right; };
  if constexpr (kBits == 4) {
    return (shift(w[s], 8 * p - 7) & 0x7f80u) | lane4;
  } else if constexpr (kBits == 2) {
    return (shift(w[s >> 1], 16 * (s & 1) + 4 * p - 7) & 0x780u) | lane4;
  } else {
    const uint32_t lo = (shift(w[s >> 1], 16 * (s & 1) + 4 * p - 7) & 0x780u) | lane4;
    return (shift(w[2], 8 * s + 2 * p - 11) & 0x1800u) | lo;
  }
}

}  // namespace lutmm::lut
