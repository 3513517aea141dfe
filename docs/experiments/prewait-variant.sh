#!/usr/bin/env bash
# docs/NOTES.md v1.50 (session 48): the pre-wait slices as a kernel variant of their own (PrewaitFirstSlices<K>),
# launched only on runs of 8+ k tiles outside cluster launches, on GPUs whose HBM brings an SM >= 16 bytes a clock
# (runtime/gemm.cpp: prewait_first_slices). In one call: the GPU tests that cover it (GemmGpu.PrewaitVariant*: forced
# on with LUTMM_PREWAIT=1, any sm_90 GPU) and the dependent-launch tests, then four sides through scripts/gpu-ab on
# every M <= 8 shape plus M = 16 (2 rounds): head (the build before, $B/lutmm_base, where bundled: the pre-wait code
# compiled into every eligible kernel), pw0 (LUTMM_PREWAIT=0: never), new (the runtime's rule) and pw1
# (LUTMM_PREWAIT=1: every long run, whatever the bandwidth); then the llm set's runtime picks against the reference.
# TESTS (a gtest filter) replaces the first step's tests; ROUNDS (default 2) sets the A/B's rounds; SHAPES (a file of
# "M N K" lines, e.g. docs/experiments/prewait-short-shapes.txt) replaces the A/B's shapes; LLM=0 skips the last step.
# `scripts/gpu-bundle` (`LUTMM_BASELINE=2a82179 scripts/gpu-bundle` for the head side too); on the device (carry
# .gpubin): bash docs/experiments/prewait-variant.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
recipe_env prewait-variant
head=()  # the build before the variant, where it was bundled (optional: the other three sides need none)
if [ -x "$B/lutmm_base" ]; then head=(head="$B/lutmm_base"); else echo "prewait-variant: no $B/lutmm_base, no head side"; fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
timeout 120 "$B/test_gpu" --gtest_filter="${TESTS:-GemmGpu.PrewaitVariant*:GemmGpu.EarlyDependent*:GemmGpu.Chained*:GemmGpu.SplitKIsDeterministic:GemmGpu.SmallSplitK*}" \
  >"$OUT/test_gpu.txt" 2>&1
echo "test_gpu rc $? (124: out of time) in $(($(date +%s) - t0)) s"
grep -E "^\[       OK|FAILED|Failure|Expected|Which is" "$OUT/test_gpu.txt" | head -n 30
# the two forced sides: the same binary under LUTMM_PREWAIT (gpu-ab's sides take a binary and NVRTC options)
wrappers=$(mktemp -d)
for v in 0 1; do
  printf '#!/bin/sh\nLUTMM_PREWAIT=%s exec "%s" "$@"\n' "$v" "$PWD/$B/lutmm" >"$wrappers/lutmm_pw$v"
  chmod +x "$wrappers/lutmm_pw$v"
done
shapes=$OUT/shapes.txt
if [ -n "${SHAPES:-}" ]; then cp "$SHAPES" "$shapes"; else recipe_small_shapes 16 8192 8192 16 8192 28672 >"$shapes"; fi
echo "== $(wc -l <"$shapes") shapes"
# (the first side is the baseline: pw0 without the head side)
LUTMM_PREBUILT=$B OUT=$OUT scripts/gpu-ab "$shapes" "${ROUNDS:-2}" "${head[@]}" pw0="$wrappers/lutmm_pw0" new="$B/lutmm" \
  pw1="$wrappers/lutmm_pw1"
[ "${LLM:-1}" = 0 ] && exit 0
timeout 150 "$B/test_gpu" --gtest_filter='Sets/EmbeddedShapes.RuntimeChoiceMatchesReference/2' >"$OUT/test_gpu_llm.txt" 2>&1
echo "test_gpu, llm set bf16: rc $? (124: out of time)"
grep -E "^\[       OK|FAILED" "$OUT/test_gpu_llm.txt" | head -n 10
