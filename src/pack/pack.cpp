// CPU side of the packed layout (device/lutmm/layout/packed_layout.cuh holds the bit-level definition,
// shared with the GPU packer and the kernels).
#include "lutmm/pack.hpp"

#include <string>

#include "lutmm/error.hpp"
#include "lutmm/layout/packed_layout.cuh"
#include "util/parallel.hpp"

namespace lutmm {

static_assert(kAtomRows == layout::kAtomRows && kAtomCols == layout::kAtomCols);

int64_t PackedShape::scale_rows() const {
  return group_size >= k ? 1 : (k_padded + group_size - 1) / group_size;
}

PackedShape packed_shape(int64_t n, int64_t k, int bits, int group_size) {
  check_bits(bits);
  if (n <= 0 || n % 8 != 0) throw_argument_error("n", "a positive multiple of 8", std::to_string(n));
  if (k <= 0 || k % 16 != 0) throw_argument_error("k", "a positive multiple of 16", std::to_string(k));
  check_group_size(group_size, k);
  PackedShape s;
  s.n = n;
  s.k = k;
  s.bits = bits;
  s.group_size = group_size;
  s.n_padded = (n + kAtomRows - 1) / kAtomRows * kAtomRows;
  s.k_padded = (k + kAtomCols - 1) / kAtomCols * kAtomCols;
  return s;
}

std::vector<uint32_t> pack_codes(const uint8_t* codes, int64_t n, int64_t k, int bits) {
  if (codes == nullptr) throw_argument_error("codes", "a non-null pointer", "null");
  const PackedShape s = packed_shape(n, k, bits, static_cast<int>(k));
  const int max_code = (1 << bits) - 1;
  for (int64_t i = 0; i < n * k; ++i)
    if (codes[i] > max_code)
      throw_argument_error("codes", "values < " + std::to_string(max_code + 1),
                           std::to_string(codes[i]) + " at index " + std::to_string(i));
  std::vector<uint32_t> packed(static_cast<size_t>(s.words()));
  const int64_t k_atoms = s.k_padded / kAtomCols;
  detail::parallel_for(s.n_padded / kAtomRows, 0, [&](int, int64_t an) {
    for (int64_t ak = 0; ak < k_atoms; ++ak) {
      uint32_t* atom = packed.data() + (an * k_atoms + ak) * layout::words_per_atom(bits);
      for (int lane = 0; lane < layout::kLanes; ++lane) {
        layout::pack_lane(bits, lane, [&](int r, int c) -> uint32_t {
          const int64_t row = an * kAtomRows + r, col = ak * kAtomCols + c;
          return row < n && col < k ? codes[row * k + col] : 0u;
        }, atom + lane * bits);
      }
    }
  });
  return packed;
}

std::vector<uint8_t> unpack_codes(const uint32_t* packed, int64_t n, int64_t k, int bits) {
  if (packed == nullptr) throw_argument_error("packed", "a non-null pointer", "null");
  const PackedShape s = packed_shape(n, k, bits, static_cast<int>(k));
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  const int64_t k_atoms = s.k_padded / kAtomCols;
  detail::parallel_for(s.n_padded / kAtomRows, 0, [&](int, int64_t an) {
    for (int64_t ak = 0; ak < k_atoms; ++ak) {
      const uint32_t* atom = packed + (an * k_atoms + ak) * layout::words_per_atom(bits);
      for (int lane = 0; lane < layout::kLanes; ++lane)
        for (int sl = 0; sl < 4; ++sl)
          for (int p = 0; p < 4; ++p)
            for (int e = 0; e < 2; ++e) {
              const int64_t row = an * kAtomRows + layout::atom_row(lane, p);
              const int64_t col = ak * kAtomCols + layout::atom_col(lane, sl, p, e);
              if (row < n && col < k)
                codes[row * k + col] = static_cast<uint8_t>(layout::unpack_code(bits, atom + lane * bits, sl, p, e));
            }
    }
  });
  return codes;
}

std::vector<uint16_t> pack_scales(const uint16_t* scales, int64_t n, int64_t k, int group_size) {
  if (scales == nullptr) throw_argument_error("scales", "a non-null pointer", "null");
  const PackedShape s = packed_shape(n, k, 4, group_size);
  const int64_t groups = k / group_size;
  std::vector<uint16_t> out(static_cast<size_t>(s.scale_count()), 0);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t gi = 0; gi < groups; ++gi) out[gi * s.n_padded + row] = scales[row * groups + gi];
  return out;
}

}  // namespace lutmm
