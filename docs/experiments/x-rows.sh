#!/usr/bin/env bash
# docs/NOTES.md v1.46 (session 43): whole-K decode tiles (32 x 8 x 512, w1x1x4, sk1) whose stages hold x for one row
# instead of the tile's eight (x-rows.patch: LUTMM_X_ROWS=1, M = 1 only), so that five or six stages of 8 KB of W fit
# two blocks an SM (v1.45: three stages keep half the pick's bytes in flight and its loop is ~20% slower). Against the
# database's picks of the unpatched binary (.gpubin/lutmm) in the same call. The patch carries the whole-K tiles too
# (apply it alone, in a worktree of main); build its lutmm (`cmake --build BUILD --target lutmm`) and copy it with
# .gpubin's libfmt into .gpubin/xr, then on the device (carry .gpubin):
#   bash docs/experiments/x-rows.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
LUTMM_PREBUILT=.gpubin/xr recipe_setup x-rows x-rows.patch 1,8192,8192 sm80_n32_m8_k512_s6_w1x1x4
XR=$L
BASE=$PWD/.gpubin/lutmm
shapes=$OUT/r/m1.txt
printf '1 8192 8192\n1 8192 28672\n1 28672 8192\n1 4096 4096\n' > "$shapes"
cfgs=(sm80_n32_m8_k512_s6_w1x1x4_sk1_lutsmem256 sm80_n32_m8_k512_s5_w1x1x4_sk1_lutsmem256
      sm80_n32_m8_k512_s6_w1x1x4_sk1_lutsmem sm80_n32_m8_k512_s6_w1x1x4_sk2_lutsmem256)
for c in "${cfgs[@]}"; do "$XR" verify --shape 1,8192,8192 --shape 1,8192,28672 --shape 1,4096,1024 --config $c 2>&1 | tail -n 1; done
"$XR" verify --shape 1,8192,8192 --shape 1,28672,8192 2>&1 | tail -n 1
for pass in 1 2; do
  L=$BASE LUTMM_CACHE_DIR=/tmp/lutmm-x-rows-base recipe_bench base$pass "$shapes" db 20
  for c in db "${cfgs[@]}"; do L=$XR recipe_bench xr$pass "$shapes" $c 20; done
done
L=$XR recipe_trace "${cfgs[0]}"
tar czf "$OUT/all.tgz" -C "$OUT" r
