#pragma once
// GPU packer: codes [n][k] (one per byte) -> packed layout (layout/packed_layout.cuh). One thread per
// (atom, lane) writes that lane's b words; rows past n and columns past k pack as code 0. Codes >= 2^b
// are counted in *bad_codes (each is seen by exactly one lane).
#include "lutmm/layout/packed_layout.cuh"

namespace lutmm {

template <int kBits>
LUTMM_DEVICE void pack_codes_kernel(const uint8_t* codes, int n, int k, int k_padded, int64_t atoms,
                                    uint32_t* packed, uint32_t* bad_codes) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= atoms * layout::kLanes) return;
  const int64_t atom = i / layout::kLanes;
  const int lane = static_cast<int>(i % layout::kLanes);
  const int k_atoms = k_padded / layout::kAtomCols;
  const int64_t row0 = (atom / k_atoms) * layout::kAtomRows;
  const int64_t col0 = (atom % k_atoms) * layout::kAtomCols;
  uint32_t words[kBits];
  layout::pack_lane(kBits, lane, [&](int r, int c) -> uint32_t {
    const int64_t row = row0 + r, col = col0 + c;
    if (row >= n || col >= k) return 0u;
    const uint32_t code = codes[row * k + col];
    if (code >> kBits) {  // counted, so the host can refuse the weight instead of packing garbage
      atomicAdd(bad_codes, 1u);
      return 0u;
    }
    return code;
  }, words);
  uint32_t* dst = packed + atom * layout::words_per_atom(kBits) + lane * kBits;
#pragma unroll
  for (int w = 0; w < kBits; ++w) dst[w] = words[w];
}

}  // namespace lutmm
