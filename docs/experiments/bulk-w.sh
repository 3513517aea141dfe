#!/usr/bin/env bash
# docs/NOTES.md v1.48 (session 46): W's stages by bulk copies (-DLUTMM_BULK_W=1, pipeline/stage_loader.cuh) against
# the same binary without, and the upper bound of a loop with no block barrier (-DLUTMM_EXPERIMENT_NO_BLOCK_BARRIER
# with bulk W: wrong results by design, timing only), on twelve decode shapes through scripts/gpu-ab (2 rounds); first
# the GPU tests that cover the decode and split-K kernels with the switch on. v1.48 ran it on an H100 (not faster); the
# question is the H200, where the decode loop, not the stream, binds 8192^2.
# `scripts/gpu-bundle`, then on the device (carry .gpubin): bash docs/experiments/bulk-w.sh [TEST_SECONDS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
recipe_env bulk-w
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
LUTMM_NVRTC_OPTIONS=-DLUTMM_BULK_W=1 LUTMM_CACHE_DIR=/tmp/lutmm-bulk-w-test timeout "${1:-240}" "$B/test_gpu" \
  --gtest_filter='GemmGpu.EveryConfigOnDecode:GemmGpu.EveryBitsGroupDtypeCombination:GemmGpu.SplitKIsDeterministic:GemmGpu.SmallSplitK*:GemmGpu.ClusterSplitK*:GemmGpu.Chained*:GemmGpu.EarlyDependent*:GemmGpu.WeightsJustWritten*' \
  >"$OUT/test_gpu.txt" 2>&1
echo "test_gpu with -DLUTMM_BULK_W=1: rc $? (124: out of time)"
grep -E "^\[       OK|FAILED" "$OUT/test_gpu.txt" | tail -n 12
shapes=$OUT/shapes.txt
printf '%s\n' "1 8192 8192" "2 8192 8192" "4 8192 8192" "8 8192 8192" "16 8192 8192" "1 8192 28672" "1 28672 8192" \
  "8 28672 8192" "16 28672 8192" "1 4096 4096" "4 14336 4096" "1 4096 14336" >"$shapes"
LUTMM_AB_TIMING_ONLY=nobar LUTMM_PREBUILT=$B OUT=$OUT scripts/gpu-ab "$shapes" 2 off="$B/lutmm" bulk="$B/lutmm@-DLUTMM_BULK_W=1" \
  "nobar=$B/lutmm@-DLUTMM_BULK_W=1 -DLUTMM_EXPERIMENT_NO_BLOCK_BARRIER=1"
