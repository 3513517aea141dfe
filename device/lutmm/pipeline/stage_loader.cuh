#pragma once
// One pipeline stage = the packed W, x and scales a block needs for one k tile, moved global -> shared
// with cp.async (16-byte copies, no registers involved). Shared layout of a stage:
//   [ W: tile_n / 16 strips, each kAtomsK atoms of 32 lanes x b words, exactly as in global memory ]
//   [ x: tile_m rows of tile_k values; the 16-byte chunk c of row r is stored at chunk c ^ (r % 8), so
//        the eight rows an ldmatrix reads land in eight different bank groups                          ]
//   [ scales: kScaleRows rows of tile_n values (the groups this k tile touches)                        ]
// Rows of x past M and columns past K are zero-filled by the copy itself (src-size 0); strips past the
// padded N are zero-filled too (codes 0 and scale 0 make their weights 0).
#include "lutmm/kernels/gemm_params.cuh"
#include "lutmm/layout/packed_layout.cuh"
#include "lutmm/ptx/memory.cuh"

namespace lutmm::pipeline {

template <class K>
struct StageLoader {
  const GemmParams& p;
  int n0, m0;
  int tid;
  uint64_t policy;

  LUTMM_DEVICE static uint8_t* w_smem(uint8_t* stage) { return stage; }
  LUTMM_DEVICE static uint8_t* x_smem(uint8_t* stage) { return stage + K::kWBytes; }
  LUTMM_DEVICE static uint16_t* scale_smem(uint8_t* stage) {
    return reinterpret_cast<uint16_t*>(stage + K::kWBytes + K::kXBytes);
  }
  // Byte offset of 16-byte chunk `chunk` of x row `row` inside the x area.
  LUTMM_DEVICE static int x_offset(int row, int chunk) { return row * (K::kTileK * 2) + ((chunk ^ (row & 7)) << 4); }

  LUTMM_DEVICE void load(uint8_t* stage, int kt) const {
    // W: strip s of the tile is the run of kAtomsK atoms starting at atom (n0/16 + s, kt * kAtomsK).
    constexpr int kChunksPerStrip = K::kAtomsK * layout::words_per_atom(K::kBits) / 4;
    constexpr int kWChunks = (K::kTileN / 16) * kChunksPerStrip;
    const int k_atoms = p.k_padded / layout::kAtomCols;
    uint8_t* ws = w_smem(stage);
#pragma unroll 4
    for (int i = tid; i < kWChunks; i += K::kThreads) {
      const int strip = i / kChunksPerStrip, c = i % kChunksPerStrip;
      const int atom_row = n0 / 16 + strip;
      const bool valid = atom_row * 16 < p.n_padded;
      const uint32_t* src =
          p.packed + ((static_cast<int64_t>(atom_row) * k_atoms + static_cast<int64_t>(kt) * K::kAtomsK) *
                          layout::words_per_atom(K::kBits) + c * 4);
      if (valid && p.w_evict_first) {
        ptx::cp_async_16_hint(ws + i * 16, src, policy);
      } else {
        ptx::cp_async_16(ws + i * 16, valid ? src : p.packed, valid);
      }
    }
    // x
    constexpr int kXChunksPerRow = K::kTileK / 8;
    uint8_t* xs = x_smem(stage);
    for (int i = tid; i < K::kTileM * kXChunksPerRow; i += K::kThreads) {
      const int r = i / kXChunksPerRow, c = i % kXChunksPerRow;
      const int m = m0 + r, k = kt * K::kTileK + c * 8;
      const bool valid = m < p.m && k < p.k;
      const uint16_t* src = valid ? p.x + static_cast<int64_t>(m) * p.k + k : p.x;
      ptx::cp_async_16(xs + x_offset(r, c), src, valid);
    }
    // scales of the groups this k tile touches
    constexpr int kScaleChunksPerRow = K::kTileN / 8;
    const int srow0 = K::kGroup == 0 ? 0 : (kt * K::kTileK) / K::kGroup;
    uint16_t* ss = scale_smem(stage);
    for (int i = tid; i < K::kScaleRows * kScaleChunksPerRow; i += K::kThreads) {
      const int r = i / kScaleChunksPerRow, c = i % kScaleChunksPerRow;
      const int n = n0 + c * 8;
      const bool valid = n < p.n_padded;
      const uint16_t* src = valid ? p.scales + static_cast<int64_t>(srow0 + r) * p.n_padded + n : p.scales;
      ptx::cp_async_16(ss + r * K::kTileN + c * 8, src, valid);
    }
  }
};

}  // namespace lutmm::pipeline
