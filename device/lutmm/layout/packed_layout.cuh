#pragma once
// Packed weight layout, version 2 (docs/FORMAT.md draws it; version 1 stored 3-bit codes as two bit planes).
// Shared by the CPU packer, the GPU packer and the kernels, so the three can never disagree.
//
// W[N,K] is cut into atoms of 16 rows x 64 columns, stored atom-row-major: atom (an, ak) starts at word
//   (an * k_atoms + ak) * words_per_atom,   words_per_atom = 32 lanes * b words = 32 * b.
// A warp that streams one 16-row strip of W therefore reads one contiguous run of memory along K.
//
// Inside an atom, lane l (g = l / 4, t4 = l % 4) owns, for each of the four k16 slices s = 0..3, the
// eight codes of its mma.m16n8k16 A-fragment (row-major A = W rows x K):
//   pair p = 0..3 -> registers a[2p], a[2p+1]: row = g + 8 * (p & 1), cols = 16 s + 2 t4 + 8 * (p >> 1) + {0, 1}
// Each pair's two codes sit next to each other, so one table lookup can return both halves of a register.
//
//   b = 4: lane words w[0..3] (one uint4): w[s] byte p = code(first) | code(second) << 4
//          bits of w[s]:  31..28  27..24 | ... |  7..4    3..0
//                         p3.snd  p3.fst | ... | p0.snd  p0.fst
//   b = 2: lane words w[0..1] (one uint2): slice s uses bits 16 (s & 1) .. +15 of w[s >> 1];
//          nibble p of those 16 bits = code(first) | code(second) << 2
//   b = 3: lane words w[0..2] read as one 96-bit little-endian string (bit 32 j + i = bit i of w[j]); pair
//          f = 4 s + p is the six bits from 6 f: code(first) | code(second) << 3. Pairs 5 and 10 straddle a
//          word boundary (bits 30..35 and 60..65). (Version 1 stored the low two bits as b = 2 does and the
//          high bits in w[2]: a pair's index then took four instructions to gather, one shift and one mask now.)
// A pair's table index (what the shared-memory pair table is indexed by) is therefore
//   b = 4: the byte;  b = 2: the nibble;  b = 3: the six-bit field.
#include "lutmm/common.cuh"

namespace lutmm::layout {

constexpr int kAtomRows = 16;
constexpr int kAtomCols = 64;
constexpr int kLanes = 32;

LUTMM_HOST_DEVICE constexpr int words_per_lane(int bits) { return bits; }

// Bits [bit, bit + 32) of a lane's words read as one little-endian string (bits past the last word read as 0).
LUTMM_HOST_DEVICE uint32_t lane_bits(const uint32_t* words, int count, int bit) {
  const int word = bit >> 5, shift = bit & 31;
  const uint64_t hi = word + 1 < count ? words[word + 1] : 0u;
  return static_cast<uint32_t>(((hi << 32) | words[word]) >> shift);
}

// Where pair p of slice s starts in a 3-bit lane's 96 bits.
LUTMM_HOST_DEVICE constexpr int field_bit3(int s, int p) { return 6 * (4 * s + p); }
LUTMM_HOST_DEVICE constexpr int words_per_atom(int bits) { return kLanes * bits; }

// Row and column inside the atom of lane `lane`, slice `s`, pair `p`, element `e` (0 first, 1 second).
LUTMM_HOST_DEVICE constexpr int atom_row(int lane, int p) { return (lane >> 2) + 8 * (p & 1); }
LUTMM_HOST_DEVICE constexpr int atom_col(int lane, int s, int p, int e) {
  return 16 * s + 2 * (lane & 3) + 8 * (p >> 1) + e;
}

// Packs the 32 * bits codes a lane owns in one atom. code(r, c) returns the code at atom row r, col c.
template <typename CodeAt>
LUTMM_HOST_DEVICE void pack_lane(int bits, int lane, CodeAt code, uint32_t* words) {
  for (int w = 0; w < bits; ++w) words[w] = 0;
  for (int s = 0; s < 4; ++s) {
    for (int p = 0; p < 4; ++p) {
      const int r = atom_row(lane, p);
      const uint32_t c0 = code(r, atom_col(lane, s, p, 0));
      const uint32_t c1 = code(r, atom_col(lane, s, p, 1));
      if (bits == 4) {
        words[s] |= (c0 | (c1 << 4)) << (8 * p);
      } else if (bits == 3) {
        const uint32_t field = (c0 & 7u) | ((c1 & 7u) << 3);
        const int bit = field_bit3(s, p), word = bit >> 5, shift = bit & 31;
        words[word] |= field << shift;
        if (shift > 26) words[word + 1] |= field >> (32 - shift);
      } else {
        words[s >> 1] |= ((c0 & 3u) | ((c1 & 3u) << 2)) << (16 * (s & 1) + 4 * p);
      }
    }
  }
}

// The inverse: the code of (slice s, pair p, element e) from a lane's words.
LUTMM_HOST_DEVICE uint32_t unpack_code(int bits, const uint32_t* words, int s, int p, int e) {
  if (bits == 4) return (words[s] >> (8 * p + 4 * e)) & 15u;
  if (bits == 3) return lane_bits(words, 3, field_bit3(s, p) + 3 * e) & 7u;
  return (words[s >> 1] >> (16 * (s & 1) + 4 * p + 2 * e)) & 3u;
}

// The two codes a pair-table index stands for (see the header comment).
LUTMM_HOST_DEVICE void pair_codes(int bits, uint32_t index, uint32_t& c0, uint32_t& c1) {
  if (bits == 4) {
    c0 = index & 15u;
    c1 = index >> 4;
  } else if (bits == 2) {
    c0 = index & 3u;
    c1 = (index >> 2) & 3u;
  } else {
    c0 = index & 7u;
    c1 = (index >> 3) & 7u;
  }
}

}  // namespace lutmm::layout
