#pragma once
// Compile-time shape of one sm90-family kernel (warpgroup MMA, sm_90a). The runtime uses the same arithmetic
// (sm90_shared_bytes) so the launch asks for exactly what the kernel lays out.
//
// Shared memory: [pair table with 256-byte rows, if any][up to 1 KB to reach a 1024-byte boundary][stages]
// and a stage is [x: kTileK / 64 blocks of kTileM rows x 128 bytes, the wgmma B layout][W][scales], padded
// to a multiple of 1024 bytes so every stage's x starts on a swizzle atom (pipeline/stage_layout.cuh).
#include "lutmm/kernels/gemm_sm80_config.cuh"
#include "lutmm/mma/wgmma_sm90_shapes.cuh"

namespace lutmm {

LUTMM_HOST_DEVICE constexpr int sm90_stage_bytes(int bits, int group, int tile_n, int tile_m, int tile_k) {
  const int bytes = sm80_stage_bytes(bits, group, tile_n, tile_m, tile_k);
  return (bytes + 1023) / 1024 * 1024;
}
LUTMM_HOST_DEVICE constexpr int sm90_dynamic_shared_bytes(int bits, int group, int tile_n, int tile_m, int tile_k,
                                                          int stages, int lut_row_bytes) {
  const int pipe = stages * sm90_stage_bytes(bits, group, tile_n, tile_m, tile_k);
  const int epi = sm80_epilogue_bytes(tile_n, tile_m);
  return (lut_row_bytes == 256 ? sm80_lut_bytes(bits, lut_row_bytes) : 0) + 1024 + (pipe > epi ? pipe : epi);
}
LUTMM_HOST_DEVICE constexpr int sm90_shared_bytes(int bits, int group, int tile_n, int tile_m, int tile_k, int stages,
                                                  int lut_row_bytes) {
  return (lut_row_bytes == 128 ? sm80_lut_bytes(bits, lut_row_bytes) : 0) +
         sm90_dynamic_shared_bytes(bits, group, tile_n, tile_m, tile_k, stages, lut_row_bytes);
}
// wgmma's N (the tile's x rows): the values mma/wgmma_sm90_shapes.cuh provides (scripts/gen-wgmma.py).
LUTMM_HOST_DEVICE constexpr bool sm90_tile_m_supported(int tile_m) { return mma::detail::wgmma_n_supported(tile_m); }

// kWarpsN warps, in warpgroups of four; warp w owns the 16-row strip w of the tile (warpgroup g's wgmma
// covers rows 64g .. 64g + 63) and every one of the tile's kTileM x rows. The members the shared pipeline,
// table and epilogue code read have the sm80 meaning (one strip per warp, one warp row, no k groups).
// kStreamK: the block runs a Stream-K run of (tile, K range) items (scheduler/stream_k.cuh) instead of one
// split-K item; a separate instantiation, so the split-K kernel keeps its straight-line registers.
// kXMulticast > 1: kXMulticast neighbouring column tiles form a cluster; x comes by TMA, each block loading
// kTileM / kXMulticast of the tile's rows into every block of the cluster (ptx/tma.cuh).
// kWarpSpecialized: the kernel of kernels/gemm_sm90_ws.cuh, whose block has one more warp (the producer,
// kBlockThreads) filling the stages; kThreads stays the warps that dequantize and multiply.
template <int kBits_, int kGroup_, bool kBf16_, int kTileN_, int kTileM_, int kTileK_, int kStages_, int kWarpsN_,
          int kLutRowBytes_, bool kStreamK_ = false, int kXMulticast_ = 1, bool kWarpSpecialized_ = false>
struct Sm90Kernel {
  static constexpr int kBits = kBits_, kGroup = kGroup_, kTileN = kTileN_, kTileM = kTileM_, kTileK = kTileK_;
  static constexpr int kStages = kStages_, kWarpsN = kWarpsN_, kWarpsM = 1, kWarpsK = 1;
  static constexpr bool kBf16 = kBf16_, kWInRegisters = false, kWgmmaLayout = true, kStreamK = kStreamK_;
  static constexpr bool kSplitSpread = false;  // (epilogue/epilogue.cuh: SplitSpread<K>)
  static constexpr bool kFlaggedSums = false;  // (the runtime's flagged_tile: sm80 tiles only)
  // Cluster split-K pushes the splits' shares by bulk copies (epilogue::finish_in_cluster): 64 x 1280 x 5120
  // 8.12 -> 7.87 us, 77 x 1280 x 2048 5.43 -> 4.74 (docs/NOTES.md v1.27).
  static constexpr bool kClusterPush = true;
  static constexpr int kLutRowBytes = kLutRowBytes_;
  static constexpr bool kSharedLut = kLutRowBytes != 0;
  static constexpr int kXMulticast = kXMulticast_;
  static constexpr bool kWarpSpecialized = kWarpSpecialized_;

  static constexpr int kThreads = 32 * kWarpsN;
  static constexpr int kBlockThreads = kThreads + (kWarpSpecialized ? 32 : 0);
  static constexpr int kWarpTileN = 16, kFragsN = 1;
  static constexpr int kWarpTileM = kTileM, kFragsM = kTileM / 8;
  static constexpr int kAtomsK = kTileK / 64;
  static constexpr int kSlices = kTileK / 16;
  static constexpr int kWBytes = kTileN * kTileK * kBits / 8;
  static constexpr int kXBytes = kTileM * kTileK * 2;
  static constexpr int kScaleRows = sm80_scale_rows_per_stage(kGroup, kTileK);
  static constexpr bool kIoInHoles = false;
  static constexpr int kXHoles = 0, kHolesPerStage = 0;
  static constexpr int kStageBytes = sm90_stage_bytes(kBits, kGroup, kTileN, kTileM, kTileK);
  static constexpr int kLutBytes = sm80_lut_bytes(kBits, kLutRowBytes);
  static constexpr int kDynamicLutBytes = kLutRowBytes == 256 ? kLutBytes : 0;
  static constexpr int kSharedBytes = sm90_shared_bytes(kBits, kGroup, kTileN, kTileM, kTileK, kStages, kLutRowBytes);
  static constexpr int kDynamicSharedBytes =
      sm90_dynamic_shared_bytes(kBits, kGroup, kTileN, kTileM, kTileK, kStages, kLutRowBytes);
  static constexpr int kEpilogueLd = kTileN + 4;

  static_assert(kBits >= 2 && kBits <= 4, "2, 3 or 4-bit codes");
  static_assert(kWarpsN % 4 == 0 && kTileN == 16 * kWarpsN, "whole warpgroups, one 16-row strip per warp");
  static_assert(sm90_tile_m_supported(kTileM), "a wgmma N that mma/wgmma_sm90_shapes.cuh provides");
  static_assert(kTileK % 64 == 0, "a stage holds whole atoms and whole 128-byte x rows");
  static_assert(kGroup == 0 || kGroup % 16 == 0, "a k16 slice never straddles two groups");
  static_assert(kGroup == 0 || kGroup <= kTileK || kGroup % kTileK == 0, "a stage never straddles two groups");
  static_assert(kStages >= 3, "the copy into a stage trails its last wgmma by one k tile");
  static_assert(kLutRowBytes == 0 || kLutRowBytes == 128 || (kLutRowBytes == 256 && kBits == 4),
                "pair-table rows of 128 bytes, or 256 for 4-bit codes");
  static_assert(kWBytes % 16 == 0 && (kScaleRows * kTileN * 2) % 16 == 0, "16-byte copies");
  static_assert(kXMulticast == 1 || ((kXMulticast == 2 || kXMulticast == 4) && !kStreamK &&
                                     kTileM % (8 * kXMulticast) == 0),
                "x multicast: clusters of 2 or 4 split-K blocks, each loading whole 8-row swizzle atoms");
  static_assert(!kWarpSpecialized || (!kStreamK && kXMulticast == 1),
                "the warp-specialized kernel runs one split-K item per block, x by its own TMA copies");
};

}  // namespace lutmm
