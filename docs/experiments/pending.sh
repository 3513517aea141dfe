#!/usr/bin/env bash
# The open H200 measurements of docs/NOTES.md v1.48, in one device call, in order of need, each under the time the call
# has left (BUDGET seconds from the start, default 560; a step that does not fit is skipped and says so):
#   1. prewait.sh after: the pre-wait rule, the same slices after the wait, and off, over every M <= 8 shape;
#   2. bulk-w.sh: W by bulk copies, its GPU tests and A/B;
#   3. whole-k-decode-tiles.sh, where .gpubin/wk holds a lutmm built with whole-k-decode-tiles.patch applied.
# Results go to $OUT/NAME/ and $OUT/all.tgz. `scripts/gpu-bundle`, then on the device (carry .gpubin):
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
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
step prewait-after 150 bash docs/experiments/prewait.sh after
step bulk-w 200 bash docs/experiments/bulk-w.sh 150
[ -x .gpubin/wk/lutmm ] && step whole-k 90 env LUTMM_PREBUILT=.gpubin/wk bash docs/experiments/whole-k-decode-tiles.sh
tar czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz .
