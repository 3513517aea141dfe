#!/usr/bin/env bash
# docs/NOTES.md v1.47 (session 45): the landed pre-wait dequantization (kernels/gemm_sm80.cuh, kPrewaitRule) against
# the same binary with it off (-DLUTMM_PREWAIT_SLICES=0), all sides in one call through scripts/gpu-ab (2 rounds):
#   small (the default): the rule against off on every M <= 8 shape of both sets (data/shapes), where the rule can
#     apply; the A/B that v1.47 could not run;
#   forced: v1.47 runs 1-2, P = 2, 4 and 8 forced on every config (Stream-K excepted since the review) of eleven
#     decode shapes.
# `scripts/gpu-bundle`, then on the device (carry .gpubin): bash docs/experiments/prewait.sh [small|forced]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
mode=${1:-small}
recipe_env prewait
shapes=$OUT/shapes.txt
off=off=$B/lutmm@-DLUTMM_PREWAIT_SLICES=0
case "$mode" in
  small)
    recipe_small_shapes >"$shapes"
    sides=("$off" "rule=$B/lutmm") ;;
  forced)
    printf '%s\n' "1 4096 4096" "1 8192 8192" "2 8192 8192" "4 8192 8192" "8 8192 8192" "16 8192 8192" "1 8192 28672" \
      "2 8192 28672" "16 8192 28672" "1 28672 8192" "16 28672 8192" >"$shapes"
    sides=("$off")
    for p in 2 4 8; do sides+=("p$p=$B/lutmm@-DLUTMM_PREWAIT_SLICES=$p"); done ;;
  *) echo "docs/experiments/prewait.sh: the mode must be small or forced, not '$mode'" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
echo "== $(wc -l <"$shapes") shapes: $mode"
LUTMM_PREBUILT=$B OUT=$OUT scripts/gpu-ab "$shapes" 2 "${sides[@]}"
