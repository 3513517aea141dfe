#!/usr/bin/env bash
# docs/NOTES.md v1.45 (session 42): whole-K decode tiles with no split-K end. 32 x 8 x 512, four warps each taking one
# 128-wide scale group of every k tile (w1x1x4), their partial tiles added in the block; in three stages with either
# pair table and in four with the 128-byte one (the tiles worth an H200 run: v1.45 runs 2-5 measured the others, and
# these, on H100s only). Timed against the database's picks in the same call, then one traced against the pick: the
# open question is the H200, where the split-K end is a larger share of 8192^2's period. A forced name must be a tile
# of the list: `scripts/gpu-bundle`, `docs/experiments/bundle-patched.sh whole-k-decode-tiles.patch wk`, then on the
# device (carry .gpubin):
#   LUTMM_PREBUILT=.gpubin/wk bash docs/experiments/whole-k-decode-tiles.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
recipe_setup whole-k-decode-tiles whole-k-decode-tiles.patch 1,8192,8192 sm80_n32_m8_k512_s3_w1x1x4
shapes=$OUT/r/decode.txt
printf '1 8192 8192\n2 8192 8192\n4 8192 8192\n8 8192 8192\n1 8192 28672\n8 8192 28672\n' > "$shapes"
cfgs=(sm80_n32_m8_k512_s3_w1x1x4_sk1_lutsmem256 sm80_n32_m8_k512_s3_w1x1x4_sk1_lutsmem sm80_n32_m8_k512_s4_w1x1x4_sk1_lutsmem)
for c in "${cfgs[@]}"; do "$L" verify --shape 5,8192,8192 --shape 3,8192,28672 --shape 13,4096,1024 --config $c 2>&1 | tail -n 1; done
for pass in 1 2; do
  for c in db "${cfgs[@]}"; do recipe_bench $pass "$shapes" $c 20; done
done
# Where the period goes with a whole-K tile against the split-K pick (docs/NOTES.md v1.45 run 1)
for c in db "${cfgs[0]}"; do recipe_trace "$c"; done
tar czf "$OUT/all.tgz" -C "$OUT" r
