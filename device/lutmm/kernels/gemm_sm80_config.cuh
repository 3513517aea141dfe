#pragma once
// Compile-time shape of one sm80-family kernel. The host runtime uses the same arithmetic (smem_bytes)
// through sm80_shared_bytes(), so the launch always asks for what the kernel lays out.
#include "lutmm/common.cuh"

namespace lutmm {

LUTMM_HOST_DEVICE constexpr int sm80_scale_rows_per_stage(int group, int tile_k) {
  return group == 0 ? 1 : (tile_k >= group ? tile_k / group : 1);
}
// The pair table (lut/lut_dequant.cuh): 2^(2b) rows of lut_row_bytes (0: the table lives in registers).
// 128-byte rows are static shared memory; 256-byte rows (4-bit only, 64 KB: over the 48 KB static limit)
// sit at the start of the dynamic shared memory, before the stages.
LUTMM_HOST_DEVICE constexpr int sm80_lut_bytes(int bits, int lut_row_bytes) { return (1 << (2 * bits)) * lut_row_bytes; }

// The second half of every 256-byte table row is free: 256 "holes" of 128 bytes (32 KB). Where the x tiles
// and scales of all stages fit into them, they live there and a stage in the stage area holds W alone
// (pipeline/stage_loader.cuh lays them out). That is what lets two blocks with the 64 KB table and three
// 256-deep stages share an SM (decode, 128 x 8 x 256 tiles: 113 KB a block instead of 125).
LUTMM_HOST_DEVICE constexpr int sm80_x_holes(int tile_m, int tile_k) { return tile_m * tile_k * 2 / 128; }
LUTMM_HOST_DEVICE constexpr int sm80_scale_holes(int group, int tile_n, int tile_k) {
  return (sm80_scale_rows_per_stage(group, tile_k) * tile_n * 2 + 127) / 128;
}
LUTMM_HOST_DEVICE constexpr bool sm80_io_in_holes(int bits, int group, int tile_n, int tile_m, int tile_k, int stages,
                                                  int lut_row_bytes) {
  return lut_row_bytes == 256 &&
         stages * (sm80_x_holes(tile_m, tile_k) + sm80_scale_holes(group, tile_n, tile_k)) <= (1 << (2 * bits));
}

// Bytes of one stage in the stage area. w_in_registers: W goes global -> registers directly and takes no
// room in the stages; io_in_holes: x and the scales live in the table's holes.
LUTMM_HOST_DEVICE constexpr int sm80_stage_bytes(int bits, int group, int tile_n, int tile_m, int tile_k,
                                                 bool w_in_registers = false, bool io_in_holes = false) {
  return (w_in_registers ? 0 : tile_n * tile_k * bits / 8)                            // packed W
         + (io_in_holes ? 0 : tile_m * tile_k * 2)                                    // x
         + (io_in_holes ? 0 : sm80_scale_rows_per_stage(group, tile_k) * tile_n * 2);  // scales
}
LUTMM_HOST_DEVICE constexpr int sm80_epilogue_bytes(int tile_n, int tile_m) { return tile_m * (tile_n + 4) * 4; }
// Under Stream-K the epilogue tile is staged in one pipeline stage (kernels/gemm_sm80.cuh). Its rows are padded by 4
// floats (conflict-free fragment stores) where that fits; where only the unpadded rows fit (256 x 16 tiles in the
// 16 KB W-only stages of the 256-byte table), the rows are tile_n floats, swizzled (epilogue_tile_index).
LUTMM_HOST_DEVICE constexpr int sm80_stream_k_epilogue_ld(int tile_n, int tile_m, int stage_bytes) {
  return tile_m * (tile_n + 4) * 4 <= stage_bytes ? tile_n + 4 : tile_n;
}
// Where value (r, c) of the staged float tile lies (epilogue/epilogue.cuh, every kernel family): row r is x's column
// m0 + r, c the tile's W row n0 + c, rows `ld` floats apart. Padded rows (ld = tile_n + 4) make the accumulator
// fragment stores conflict-free as they are. Unpadded ones (ld = tile_n) XOR bits 3-4 of c with bits 1-2 of r: a
// fragment store's four t4 lanes (rows 2 t4 and 2 t4 + 1, the same W rows) then land 8 banks apart instead of on one
// (4-way conflicts; 16 x 28672 x 8192 38.81 -> 38.56 us, docs/NOTES.md v1.38). The swizzle keeps every aligned run
// of 8 floats of a row together, so the readers' float2 / float4 / 8-float runs stay contiguous (tile_n is a
// multiple of 32).
LUTMM_HOST_DEVICE constexpr int epilogue_tile_index(int ld, int tile_n, int r, int c) {
  return ld == tile_n ? r * tile_n + (c ^ (((r >> 1) & 3) << 3)) : r * ld + c;
}
// Dynamic shared memory (the launch asks for this).
LUTMM_HOST_DEVICE constexpr int sm80_dynamic_shared_bytes(int bits, int group, int tile_n, int tile_m, int tile_k,
                                                          int stages, int lut_row_bytes, bool w_in_registers = false) {
  const bool holes = sm80_io_in_holes(bits, group, tile_n, tile_m, tile_k, stages, lut_row_bytes);
  const int pipe = stages * sm80_stage_bytes(bits, group, tile_n, tile_m, tile_k, w_in_registers, holes);
  const int epi = sm80_epilogue_bytes(tile_n, tile_m);
  return (lut_row_bytes == 256 ? sm80_lut_bytes(bits, lut_row_bytes) : 0) + (pipe > epi ? pipe : epi);
}
// All shared memory of a block (static + dynamic): what must fit the GPU's per-block limit.
LUTMM_HOST_DEVICE constexpr int sm80_shared_bytes(int bits, int group, int tile_n, int tile_m, int tile_k, int stages,
                                                  int lut_row_bytes, bool w_in_registers = false) {
  return (lut_row_bytes == 128 ? sm80_lut_bytes(bits, lut_row_bytes) : 0) +
         sm80_dynamic_shared_bytes(bits, group, tile_n, tile_m, tile_k, stages, lut_row_bytes, w_in_registers);
}

// Slices of its first k tile a warp of the PrewaitFirstSlices<K> variant dequantizes before the dependency wait
// (kernels/gemm_sm80.cuh): one x block a warp (frags_m 1), a warp's run of a k tile at most 8 slices (two atoms),
// at most 64 registers held through the first k tile (8 slices of one strip, 4 of two, ...); never Stream-K (its
// runs start mid-tile: up to 1.27x slower, docs/NOTES.md v1.47) nor W in registers. 0: the config has no variant.
LUTMM_HOST_DEVICE constexpr int sm80_prewait_slices(int tile_n, int tile_m, int tile_k, int warps_n, int warps_m,
                                                    int warps_k, bool stream_k, bool w_in_registers) {
  const int frags_n = tile_n / warps_n / 16, frags_m = tile_m / warps_m / 8, group_slices = tile_k / 16 / warps_k;
  if (stream_k || w_in_registers || frags_m != 1 || group_slices > 8 || frags_n < 1) return 0;
  const int wanted = 16 / frags_n < 8 ? 16 / frags_n : 8;
  return wanted < group_slices ? wanted : group_slices;
}
// The shortest run of k tiles a block of the variant may have (runtime/gemm.cpp launches it only where every split
// has at least this many): every measured gain was a block of 8 or more (v1.47), and blocks of 2-4 lost (v1.48).
inline constexpr int kSm80PrewaitMinKTiles = 8;

// kGroup = 0 means one scale per row (group_size == K).
// kWInRegisters: each warp loads its W strips global -> registers one k tile ahead instead of through the
// shared-memory stages (saves the shared-memory write and read of every W byte).
// kLutRowBytes: 0 = table in registers, 128 or 256 = pair table in shared memory with rows that long.
// kWarpsK: warp groups that split each k tile between them (group g takes the g-th run of kSlices / kWarpsK
// slices, whole atoms) and add their accumulators in shared memory, in group order, at the end: more warps
// on one output tile where the grid is small (a block of a 64 x 1280 x 1280 GEMM otherwise has one warp per
// scheduler), without the global round trip of split-K.
// kStreamK: the block takes a run of (tile, K range) items (scheduler/stream_k.cuh) instead of one split-K item:
// for decode grids whose tiles do not fill the SMs' block slots evenly (a decode block streams W at a rate of
// its own, so the busiest slot sets the time: docs/NOTES.md, v1.14).
template <int kBits_, int kGroup_, bool kBf16_, int kTileN_, int kTileM_, int kTileK_, int kStages_, int kWarpsN_,
          int kWarpsM_, int kLutRowBytes_, bool kWInRegisters_ = false, int kWarpsK_ = 1, bool kStreamK_ = false>
struct Sm80Kernel {
  static constexpr int kBits = kBits_, kGroup = kGroup_, kTileN = kTileN_, kTileM = kTileM_, kTileK = kTileK_;
  static constexpr int kStages = kStages_, kWarpsN = kWarpsN_, kWarpsM = kWarpsM_, kWarpsK = kWarpsK_;
  static constexpr bool kBf16 = kBf16_, kWInRegisters = kWInRegisters_;
  static constexpr bool kWgmmaLayout = false;  // x in the ldmatrix layout (the sm90 family's differs)
  static constexpr bool kStreamK = kStreamK_;  // a run of items per block, or one split-K item
  static constexpr bool kSplitSpread = false;  // (epilogue/epilogue.cuh: SplitSpread<K>)
  static constexpr bool kPrewait = false;      // (PrewaitFirstSlices<K>, below)
  static constexpr bool kFlaggedSums = true;   // split-K and Stream-K tiles may be summed from flagged slots
  // Cluster split-K pulls the splits' shares (epilogue::finish_in_cluster): pushing them by bulk copies made
  // the small sm80 cluster GEMMs 1-14% slower (2 x 1536 x 1536 2.90 -> 3.30 us; docs/NOTES.md v1.27).
  static constexpr bool kClusterPush = false;
  static constexpr int kXMulticast = 1;        // every block copies its own x (cp.async)
  static constexpr int kLutRowBytes = kLutRowBytes_;
  static constexpr bool kSharedLut = kLutRowBytes != 0;

  static constexpr int kThreads = 32 * kWarpsN * kWarpsM * kWarpsK;
  static constexpr int kBlockThreads = kThreads;  // (the launch's block: no warp besides the MMA warps)
  static constexpr int kWarpTileN = kTileN / kWarpsN, kFragsN = kWarpTileN / 16;
  static constexpr int kWarpTileM = kTileM / kWarpsM, kFragsM = kWarpTileM / 8;
  static constexpr int kAtomsK = kTileK / 64;          // atoms per strip per stage
  static constexpr int kSlices = kTileK / 16;          // k16 steps per stage
  static constexpr int kGroupSlices = kSlices / kWarpsK;  // the run of them one warp group takes
  static constexpr int kWBytes = kWInRegisters ? 0 : kTileN * kTileK * kBits / 8;  // W bytes in a stage
  static constexpr int kXBytes = kTileM * kTileK * 2;
  static constexpr int kScaleRows = sm80_scale_rows_per_stage(kGroup, kTileK);
  static constexpr bool kIoInHoles = sm80_io_in_holes(kBits, kGroup, kTileN, kTileM, kTileK, kStages, kLutRowBytes);
  static constexpr int kXHoles = sm80_x_holes(kTileM, kTileK);
  static constexpr int kHolesPerStage = kXHoles + sm80_scale_holes(kGroup, kTileN, kTileK);
  static constexpr int kStageBytes =
      sm80_stage_bytes(kBits, kGroup, kTileN, kTileM, kTileK, kWInRegisters, kIoInHoles);
  static constexpr int kLutBytes = sm80_lut_bytes(kBits, kLutRowBytes);
  static constexpr int kDynamicLutBytes = kLutRowBytes == 256 ? kLutBytes : 0;  // before the stages
  static constexpr int kSharedBytes =
      sm80_shared_bytes(kBits, kGroup, kTileN, kTileM, kTileK, kStages, kLutRowBytes, kWInRegisters);
  static constexpr int kDynamicSharedBytes =
      sm80_dynamic_shared_bytes(kBits, kGroup, kTileN, kTileM, kTileK, kStages, kLutRowBytes, kWInRegisters);
  // floats a staged row; +4 keeps the fragment stores conflict-free (Stream-K: where the stage has room)
  static constexpr int kEpilogueLd = kStreamK ? sm80_stream_k_epilogue_ld(kTileN, kTileM, kStageBytes) : kTileN + 4;

  static_assert(kBits >= 2 && kBits <= 4, "2, 3 or 4-bit codes");
  static_assert(kTileN % (16 * kWarpsN) == 0, "each warp owns whole 16-row strips");
  static_assert(kTileM % (8 * kWarpsM) == 0, "each warp owns whole 8-column blocks");
  static_assert(kTileK % 64 == 0, "a stage holds whole atoms");
  static_assert(kGroup == 0 || kGroup % 16 == 0, "a k16 slice never straddles two groups");
  static_assert(kGroup == 0 || kGroup <= kTileK || kGroup % kTileK == 0, "a stage never straddles two groups");
  static_assert(kStages >= 2, "double buffering at least");
  static_assert(kWarpsK >= 1 && kGroupSlices * kWarpsK == kSlices && kGroupSlices % 4 == 0,
                "each warp group takes whole atoms of every k tile");
  static_assert(kWarpsK == 1 || !kWInRegisters, "W in registers is loaded per warp for the whole k tile");
  static_assert(!kStreamK || !kWInRegisters, "W in registers is loaded one k tile ahead within one item");
  static_assert(kLutRowBytes == 0 || kLutRowBytes == 128 || (kLutRowBytes == 256 && kBits == 4),
                "pair-table rows of 128 bytes, or 256 for 4-bit codes");
  static_assert(kWBytes % 16 == 0 && kXBytes % 16 == 0 && (kScaleRows * kTileN * 2) % 16 == 0, "16-byte copies");
};

// The variant of an sm80-family kernel whose warps dequantize their first sm80_prewait_slices slices before the
// dependency wait (kernels/gemm_sm80.cuh). A variant of its own rather than a run-time branch: compiled into a kernel,
// the pre-wait code cost blocks that never take it up to 1.2x (H100, docs/NOTES.md v1.50: the peeled first k tile and
// the per-stage commits change the whole kernel's code), so the runtime launches it only where it pays.
template <class K>
struct PrewaitFirstSlices : K {
  static constexpr bool kPrewait = true;
};

}  // namespace lutmm
