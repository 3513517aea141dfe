#pragma once
// One pipeline stage = the packed W, x and scales a block needs for one k tile, moved global -> shared
// with cp.async (pipeline/stage_loader.cuh). Where it lives in dynamic shared memory:
//   [ the 256-byte-row pair table, if the kernel has one ][ stage 0 ][ stage 1 ] ... (StageLayout)
// and a stage:
//   [ W: tile_n / 16 strips, each kAtomsK atoms of 32 lanes x b words, exactly as in global memory ]
//   [ x: tile_m rows of tile_k values; the 16-byte chunk c of row r is stored at chunk c ^ (r % 8), so
//        the eight rows an ldmatrix reads land in eight different bank groups                          ]
//   [ scales: kScaleRows rows of tile_n values (the groups this k tile touches)                        ]
// With a 256-byte-row table whose free row halves ("holes", 128 bytes each) hold every stage's x and
// scales (K::kIoInHoles, kernels/gemm_sm80_config.cuh), a stage is W alone and stage s's x and scales
// take holes s * kHolesPerStage onwards: x row r in holes r * (tile_k / 64) ..., 8 chunks per hole (the
// same chunk swizzle), then the scales, 64 values per hole.
// The sm90 family (K::kWgmmaLayout) orders a stage [x][W][scales] instead, x in the wgmma B layout
// (mma/wgmma_sm90.cuh): kTileK / 64 blocks of tile_m rows x 128 bytes, chunk c of a row at c ^ (row % 8)
// within its block; stages are whole 1024-byte multiples from a 1024-byte-aligned start.
// Plain arithmetic, host-callable: the CPU tests check that every chunk lands in its own place, inside
// the holes where it should, and that an ldmatrix's eight rows fall in eight different bank groups.
#include "lutmm/common.cuh"

namespace lutmm::pipeline {

template <class K>
struct StageLayout {
  static constexpr int kHoleStride = 256, kHoleStart = 128;  // hole h: bytes [h * 256 + 128, h * 256 + 256)
  static constexpr int kHolesPerXRow = K::kTileK / 64;

  // Byte offsets from the start of dynamic shared memory.
  LUTMM_HOST_DEVICE static int stage_offset(int s) { return K::kDynamicLutBytes + s * K::kStageBytes; }
  LUTMM_HOST_DEVICE static int x_base(int s) {
    if constexpr (K::kWgmmaLayout) return stage_offset(s);
    return K::kIoInHoles ? kHoleStart + s * K::kHolesPerStage * kHoleStride : stage_offset(s) + K::kWBytes;
  }
  LUTMM_HOST_DEVICE static int scale_base(int s) {
    if constexpr (K::kWgmmaLayout) return stage_offset(s) + K::kXBytes + K::kWBytes;
    return K::kIoInHoles ? kHoleStart + (s * K::kHolesPerStage + K::kXHoles) * kHoleStride
                         : stage_offset(s) + K::kWBytes + K::kXBytes;
  }
  LUTMM_HOST_DEVICE static uint8_t* stage(uint8_t* smem, int s) { return smem + stage_offset(s); }
  LUTMM_HOST_DEVICE static uint8_t* w(uint8_t* smem, int s) {  // W opens an sm80 stage, follows x in sm90's
    return stage(smem, s) + (K::kWgmmaLayout ? K::kXBytes : 0);
  }
  LUTMM_HOST_DEVICE static uint8_t* x(uint8_t* smem, int s) { return smem + x_base(s); }
  LUTMM_HOST_DEVICE static uint8_t* scales(uint8_t* smem, int s) { return smem + scale_base(s); }

  // Offset from x() of 16-byte chunk `chunk` of row `row`, stored at chunk ^ (row % 8) of the row.
  LUTMM_HOST_DEVICE static int x_offset(int row, int chunk) {
    if constexpr (K::kWgmmaLayout) return (chunk >> 3) * (K::kTileM * 128) + row * 128 + (((chunk & 7) ^ (row & 7)) << 4);
    return x_row_chunk(row, chunk ^ (row & 7));
  }
  // The same for a chunk already swizzled.
  LUTMM_HOST_DEVICE static int x_row_chunk(int row, int swizzled_chunk) {
    return K::kIoInHoles ? (row * kHolesPerXRow + (swizzled_chunk >> 3)) * kHoleStride + ((swizzled_chunk & 7) << 4)
                         : row * (K::kTileK * 2) + (swizzled_chunk << 4);
  }
  // The same for swizzled chunk even ^ key, where even is a multiple of 2 known at compile time in
  // the unrolled main loop and key = (row % 8) ^ (0 or 1) < 8: the hole is even / 8 with no arithmetic.
  LUTMM_HOST_DEVICE static int x_even_chunk(int row, int even, int key) {
    return K::kIoInHoles ? (row * kHolesPerXRow + (even >> 3)) * kHoleStride + (((even & 7) ^ key) << 4)
                         : row * (K::kTileK * 2) + ((even ^ key) << 4);
  }
  // The same split as the main loop adds it up: for slice t (even = 2t), a per-lane base for each t % 4 plus
  // immediates, x_slice_lane(row, key, t % 4) + (t / 4) * kXQuadStep, and 8-row block f of the tile at
  // f * kXBlockStep further (the key is the same for rows r and r + 8). Spelled out because the compiler
  // kept a register per slice otherwise: 16 adds per 256-deep k tile in the decode loop (docs/NOTES.md v1.19).
  static constexpr int kXQuadStep = K::kIoInHoles ? kHoleStride : 128;  // 8 chunks further
  static constexpr int kXBlockStep = 8 * (K::kIoInHoles ? kHolesPerXRow * kHoleStride : K::kTileK * 2);
  LUTMM_HOST_DEVICE static int x_slice_lane(int row, int key, int quarter) { return x_even_chunk(row, 2 * quarter, key); }
  // Offset from scales() of 16-byte chunk i, and of value e.
  LUTMM_HOST_DEVICE static int scale_chunk(int i) { return K::kIoInHoles ? (i >> 3) * kHoleStride + ((i & 7) << 4) : i << 4; }
  LUTMM_HOST_DEVICE static int scale_value(int e) { return K::kIoInHoles ? (e >> 6) * kHoleStride + ((e & 63) << 1) : e << 1; }
  // A warp's scale values are e = e_lane + c, with e_lane = the warp's first row + the lane's (g) and c = group row
  // x tile_n + fragment rows (compile-time in the unrolled loop). Where the holes' 64-value runs never split a
  // warp's kWarpRows rows (they start on a multiple of kWarpRows) and every group row starts a run,
  // scale_value(e_lane + c) = scale_value(e_lane) + scale_value(c): one base a lane, the rest immediates.
  // The decode warps read a group row's scales with one transposed ldmatrix (kernels/gemm_sm80.cuh): lane l gives the
  // address of row l % 8 of matrix l / 8, the run of 8 rows 2 (l / 8) + l % 2 of the warp's (first row warp_row0), so
  // matrix f's rows alternate rows 16 f .. + 7 and 16 f + 8 .. + 15 and lane (g, t) receives rows 16 f + g and + 8.
  // Add scale_value(group row x tile_n) where kScaleValuesAdd holds.
  LUTMM_HOST_DEVICE static int scale_run_lane(int warp_row0, int lane) {
    return scale_value(warp_row0 + (2 * (lane >> 3) + (lane & 1)) * 8);
  }
  template <int kWarpRows>
  static constexpr bool kScaleValuesAdd = !K::kIoInHoles || (K::kTileN % 64 == 0 && 64 % kWarpRows == 0);
};

}  // namespace lutmm::pipeline
