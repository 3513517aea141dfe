#include "runtime/kernel_shapes.hpp"

namespace lutmm {

const std::vector<KernelConfig>& sm80_kernel_shapes() {
  auto make = [](int n, int m, int k, int stages, int wn, int wm, int min_blocks = 1, int wk = 1) {
    KernelConfig c;
    c.tile_n = n; c.tile_m = m; c.tile_k = k; c.stages = stages; c.warps_n = wn; c.warps_m = wm;
    c.min_blocks = min_blocks; c.warps_k = wk;
    return c;
  };
  static const std::vector<KernelConfig> shapes = {
      // decode and conditioning batches: one or two 8-column blocks, 16-row strips per warp
      make(64, 8, 128, 4, 4, 1), make(64, 8, 256, 3, 4, 1), make(64, 16, 128, 4, 4, 1),
      make(128, 8, 128, 4, 8, 1), make(128, 16, 128, 4, 8, 1), make(256, 8, 64, 6, 8, 1),
      // two and four strips per warp: one x fragment (ldmatrix) serves several dequantized strips
      make(128, 8, 128, 4, 4, 1), make(128, 8, 256, 3, 4, 1), make(256, 8, 128, 4, 8, 1),
      make(64, 16, 256, 3, 4, 1), make(128, 16, 128, 4, 4, 1), make(32, 16, 256, 4, 2, 1),
      make(256, 8, 128, 4, 4, 1), make(128, 8, 256, 2, 4, 1),
      // M = 9..16 decode batches on the 256-deep k tiles that the tuner picks for M = 1..8 on the large layers
      // (two 8-column blocks: each dequantized strip feeds two MMAs)
      make(128, 16, 256, 3, 4, 1),
      // four strips a warp in three stages: with the 256-byte table (lutsmem256) x and the scales fit into its holes
      // and two blocks share an SM, so the four-strip decode warps get the one-PRMT lookups (1 x 28672 x 8192
      // 32.7 -> 31.7 us against the four-stage shape with the 128-byte table; docs/NOTES.md v1.35)
      make(256, 8, 128, 3, 4, 1),
      // seven warps (tiles of 224 or 112 rows): the tuner picks them for a few small layers (8 x 6912 x 256 2.64 ->
      // 2.15 us, 2 x 1536 x 2048 2.95 -> 2.86; docs/NOTES.md v1.17); on the 7 x 2^k-row layers they were meant for
      // (N = 14336, 28672: 256 blocks instead of 224 or Stream-K) they lost to the four-strip warps
      make(224, 8, 128, 4, 7, 1), make(112, 8, 256, 3, 7, 1),
      // a shallower pipeline compiled for a fourth resident block per SM: 16 warps instead of 8 (docs/NOTES.md,
      // v1.5; the two 8-warp shapes for a third block were dropped in session 8: no tuning of sessions 6-8
      // picked them, and their 85-register cap spilled once the cluster epilogue kept more loads in flight)
      make(128, 8, 128, 2, 4, 1, 4),
      // K that 128 does not divide (K = 320, 448, ...): 64-wide k tiles, deeper pipelines
      make(64, 8, 64, 6, 4, 1), make(64, 16, 64, 6, 4, 1),
      // medium M
      make(64, 32, 128, 4, 4, 1), make(128, 32, 128, 4, 4, 1), make(64, 64, 64, 4, 2, 2),
      make(128, 64, 64, 4, 4, 2),
      // M = 33..80 with one warp row: every warp multiplies its dequantized strips with all of the tile's
      // columns, so W is dequantized once per block instead of once per 16- or 32-column block
      make(64, 64, 128, 3, 4, 1), make(128, 64, 64, 4, 4, 1), make(64, 80, 128, 3, 4, 1), make(128, 80, 64, 3, 4, 1),
      // four strips per warp at M = 16..64: each x fragment read from shared memory feeds four dequantized
      // strips instead of two (at M = 64 x is ~60% of the shared-memory traffic of two-strip warps)
      make(256, 16, 128, 3, 4, 1), make(256, 32, 128, 3, 4, 1), make(256, 64, 64, 3, 4, 1),
      // two warp groups splitting each k tile (the last argument): twice the warps on one output tile, for
      // grids too small to give every scheduler a warp (M = 2..80 diffusion layers, 4096 x 4096 decode)
      make(64, 8, 256, 3, 4, 1, 1, 2), make(128, 8, 256, 3, 4, 1, 1, 2), make(64, 16, 256, 3, 4, 1, 1, 2),
      make(256, 16, 128, 3, 4, 1, 1, 2), make(64, 32, 128, 4, 4, 1, 1, 2), make(128, 32, 128, 4, 4, 1, 1, 2),
      make(256, 32, 128, 3, 4, 1, 1, 2), make(64, 64, 128, 3, 4, 1, 1, 2), make(128, 64, 128, 3, 4, 1, 1, 2),
      // large M: big tiles amortise the dequantization over many MMAs
      // (256 x 128 and 128 x 256 tiles were tried: ptxas spills at 255 registers for some bit widths.)
      make(128, 128, 64, 4, 2, 4), make(128, 128, 64, 3, 4, 2),
  };
  return shapes;
}

const std::vector<KernelConfig>& sm90_kernel_shapes() {
  auto make = [](int n, int m, int k, int stages) {
    KernelConfig c;
    c.family = 90;
    c.tile_n = n; c.tile_m = m; c.tile_k = k; c.stages = stages; c.warps_n = n / 16; c.warps_m = 1;
    return c;
  };
  static const std::vector<KernelConfig> shapes = {
      // small M: one or two warpgroups, the wgmma's N is the batch
      make(128, 8, 128, 4), make(128, 16, 128, 4), make(128, 32, 128, 4),
      // M = 33..80: N = 64 or 80, deep pipelines of 64-wide k tiles
      make(64, 64, 128, 4), make(128, 64, 64, 6), make(128, 80, 64, 6), make(256, 64, 64, 4), make(256, 80, 64, 4),
      // ... and 128-deep k tiles (session 6; session 7's tuning picked them for M = 64..256 over the 64-deep
      // ones, which run four wgmmas between two block barriers): 256 x 64 also in four stages (64 x 28672 x
      // 8192: 72.5 us against 76.1 in three: the stage ahead of the wgmmas is 16 KB of W and 16 KB of x)
      // (256 x 80 x 128 was left out: its Stream-K instantiation with the register table spills)
      make(256, 64, 128, 3), make(256, 64, 128, 4), make(128, 64, 128, 4),
      // large M: N = 128 or 256 per wgmma
      make(128, 128, 64, 5), make(256, 128, 64, 4), make(128, 256, 64, 4),
      // ... and N = 96, 160 or 192 where the rows of 80, 128 or 256 leave a wave of SMs partly idle or pad M by
      // much: 4096 x 640 x 2560 runs 96 tiles of 256 x 128 (pad 640 -> 768) on 132 SMs, 130 of 128 x 160 (256 x
      // 160 spills at the 128 registers of a 16-warp block)
      make(128, 96, 64, 6), make(128, 160, 64, 5), make(128, 192, 64, 4),
  };
  return shapes;
}

}  // namespace lutmm
