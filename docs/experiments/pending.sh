#!/usr/bin/env bash
# The open measurements of docs/NOTES.md v1.53, in one device call, each under the time the call has left (BUDGET
# seconds from the start, default 560; a step that does not fit is skipped and says so):
#   on an H200:
#   0. prewait-variant.sh: its tests and its A/B (new against pw0 is the variant's gain there; new against head, the
#      build before where .gpubin/lutmm_base holds it, v1.47's gains kept and v1.48-v1.50's small-shape losses gone);
#   1. whole-k-decode-tiles.sh, where .gpubin/wk holds the build with whole-k-decode-tiles.patch (v1.53: a case at
#      M = 2-8);
#   2. bulk-w.sh: W by bulk copies, its GPU tests and A/B.
#   on any other GPU (an H100 ran step 0 in v1.51, steps 1-2 in v1.45 / v1.48, and every test and the sanitizer on
#   v1.51's code in v1.52): whole-k-compute-only.sh (run in v1.53; again, it times the H200's M = 2-8 pick in the same
#   run), where .gpubin/wk holds the build with whole-k-decode-tiles.patch; without that build it prints the GPU and
#   stops.
# Results go to $OUT/NAME/ and $OUT/all.tgz. `LUTMM_BASELINE=2a82179 scripts/gpu-bundle` (2a82179: before the
# variant), `docs/experiments/bundle-patched.sh whole-k-decode-tiles.patch wk`, then on the device (carry .gpubin; name
# nvidia-h200, an H100 may come instead):
#   bash docs/experiments/pending.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-out/pending}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((${BUDGET:-560} - ($(date +%s) - start))); }
step() {  # step NAME NEEDED_SECONDS COMMAND...: runs COMMAND under what is left, its output in $OUT/NAME.txt
  local name=$1 need=$2 l
  shift 2
  l=$(left)
  if [ "$l" -lt "$need" ]; then echo "== $name: skipped ($l s left, needs ~$need)"; return; fi
  echo "== $name ($l s left)"
  OUT=$OUT/$name timeout $((l - 10)) "$@" >"$OUT/$name.txt" 2>&1
  echo "   rc $?"
  tail -n 60 "$OUT/$name.txt"
}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
if [[ $gpu == *H200* ]]; then
  step prewait-variant 280 bash docs/experiments/prewait-variant.sh
  # (the whole-K tiles before bulk-w: v1.53 gave them a case at M = 2-8; bulk-w was not faster on an H100, v1.48)
  [ -x .gpubin/wk/lutmm ] && step whole-k 90 env LUTMM_PREBUILT=.gpubin/wk bash docs/experiments/whole-k-decode-tiles.sh
  step bulk-w 200 bash docs/experiments/bulk-w.sh 150
elif [ -x .gpubin/wk/lutmm ]; then
  step whole-k-compute-only 200 env LUTMM_PREBUILT=.gpubin/wk bash docs/experiments/whole-k-compute-only.sh
else
  echo "== $gpu: nothing pending for it without .gpubin/wk (the H200 steps need an H200)"
  exit 0
fi
tar czf "$OUT.tgz" -C "$OUT" --exclude all.tgz . && mv "$OUT.tgz" "$OUT/all.tgz"
