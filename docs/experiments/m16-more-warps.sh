#!/usr/bin/env bash
# docs/NOTES.md v1.44 (session 41): M = 16 decode with more warps an SM (16: w8x1 two-strip warps; 12: _occ3 with the
# 128-byte table, w6x1), against the database's picks, whole and compute-only. A forced name must be a tile of the
# list: `scripts/gpu-bundle`, `docs/experiments/bundle-patched.sh m16-more-warps.patch m16`, then on the device (carry
# .gpubin):
#   LUTMM_PREBUILT=.gpubin/m16 bash docs/experiments/m16-more-warps.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
recipe_setup m16-more-warps m16-more-warps.patch 16,8192,8192 sm80_n256_m16_k128_s3_w8x1
shapes=$OUT/r/m16.txt
printf '16 8192 28672\n16 28672 8192\n16 8192 8192\n' > "$shapes"
for c in sm80_n256_m16_k128_s3_w8x1_sk8_lutsmem256 sm80_n256_m16_k128_s2_w4x1_sk8_lutsmem_occ3 sm80_n384_m16_k128_s2_w6x1_sk8_lutsmem256; do
  "$L" verify --shape 16,8192,8192 --shape 13,4096,1024 --config $c 2>&1 | tail -n 4
done
"$L" verify --shape 16,28672,8192 --config sm80_n256_m16_k128_s3_w8x1_skstream_lutsmem256 2>&1 | tail -n 3
cfgs=(db sm80_n256_m16_k128_s3_w8x1_sk8_lutsmem256 sm80_n256_m16_k128_s3_w8x1_sk4_lutsmem256
  sm80_n256_m16_k128_s3_w8x1_sk2_lutsmem256 sm80_n256_m16_k128_s3_w8x1_skstream_lutsmem256
  sm80_n256_m16_k128_s2_w4x1_sk8_lutsmem_occ3 sm80_n256_m16_k128_s2_w4x1_sk4_lutsmem_occ3
  sm80_n384_m16_k128_s2_w6x1_sk8_lutsmem256 sm80_n384_m16_k128_s2_w6x1_sk4_lutsmem256)
# passes 1 and 2: whole GEMMs; nl: compute only (-DLUTMM_EXPERIMENT_NO_LOADS=1, wrong results by design)
for pass in 1 2 nl; do
  opts=; [ "$pass" = nl ] && opts=-DLUTMM_EXPERIMENT_NO_LOADS=1
  for c in "${cfgs[@]}"; do recipe_bench $pass "$shapes" $c 15 $opts; done
done
tar czf "$OUT/all.tgz" -C "$OUT" r
