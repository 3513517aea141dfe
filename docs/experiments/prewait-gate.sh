#!/usr/bin/env bash
# docs/NOTES.md v1.49 (session 47): the pre-wait rule gated at run time (prewait-gate.patch: a block pre-waits only on
# a run of at least 8 k tiles, -DLUTMM_PREWAIT_MIN_K_TILES=N to move it, and outside cluster launches), prepared and
# checked here without a GPU; the device time ran out before it ran. In one call: the GPU tests that take both paths
# (the new GemmGpu.BlocksThatPrewaitAndBlocksThatDoNotShareAGrid: one grid whose two splits of 8 and 7 k tiles take
# one path each), then off / the gated rule / the rule ungated (v1.48's default) on every M <= 8 shape of both sets
# plus M = 16, through scripts/gpu-ab (2 rounds), then the llm set's runtime picks against the reference.
# `scripts/gpu-bundle`, `docs/experiments/bundle-patched.sh prewait-gate.patch pg`, then on the device (carry .gpubin):
#   LUTMM_PREBUILT=.gpubin/pg bash docs/experiments/prewait-gate.sh   (or docs/experiments/pending.sh, which runs it first)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
recipe_env prewait-gate
grep -q PREWAIT_MIN_K_TILES "$B/lutmm" ||
  { echo "prewait-gate: $B/lutmm lacks the gate: docs/experiments/bundle-patched.sh prewait-gate.patch pg, then LUTMM_PREBUILT=.gpubin/pg" >&2; exit 2; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
timeout 90 "$B/test_gpu" --gtest_filter='GemmGpu.BlocksThatPrewait*:GemmGpu.EarlyDependent*:GemmGpu.Chained*:GemmGpu.SplitKIsDeterministic' \
  >"$OUT/test_gpu.txt" 2>&1
echo "test_gpu rc $? (124: out of time) in $(($(date +%s) - t0)) s"
grep -E "^\[       OK|FAILED" "$OUT/test_gpu.txt" | head -n 20
shapes=$OUT/shapes.txt
recipe_small_shapes 16 8192 8192 16 8192 28672 >"$shapes"
echo "== $(wc -l <"$shapes") shapes"
LUTMM_PREBUILT=$B OUT=$OUT scripts/gpu-ab "$shapes" 2 off="$B/lutmm@-DLUTMM_PREWAIT_SLICES=0" "gated=$B/lutmm" \
  "ungated=$B/lutmm@-DLUTMM_PREWAIT_MIN_K_TILES=0"
timeout 150 "$B/test_gpu" --gtest_filter='Sets/EmbeddedShapes.RuntimeChoiceMatchesReference/2' >"$OUT/test_gpu_llm.txt" 2>&1
echo "test_gpu, llm set bf16: rc $? (124: out of time)"
grep -E "^\[       OK|FAILED" "$OUT/test_gpu_llm.txt" | head -n 10
