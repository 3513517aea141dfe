#!/usr/bin/env bash
# docs/NOTES.md v1.53 (session 52): an H100 question for the H200. On the H200 the 8192^2 decode loop, not HBM, binds
# (v1.43), and an H100's compute-only runs (-DLUTMM_EXPERIMENT_NO_LOADS=1: no copies after the prologue's stages; wrong
# results by design) stand for it: the same SMs and clocks. Times the whole-K tiles of whole-k-decode-tiles.patch (no
# split-K end, half the warps an SM) against the database's picks and the H200's M = 2-8 pick, full and compute-only,
# each with the pre-wait variant off and forced (LUTMM_PREWAIT=0/1), on 1 / 2 / 8 x 8192^2 and 1 x 8192 x 28672: two
# passes for the picks and the three-stage lutsmem256 tile, one for the others; then one table, min-max over the
# passes, the database's picks, the configs the variant never applies to, and whether it was taken exactly where
# forced on the others. A whole-K tile whose compute alone undercuts the picks' can pay on an H200 (v1.53: at
# M = 2-8, not at M = 1); the forced variant's compute-only gain against its H200 gain (1 x 8192^2 11.57 -> 11.23 us,
# v1.47) says how far H100 compute-only runs stand for it (v1.53: -0.22 against -0.34 us). ~2 minutes (v1.53: 74 s,
# without the H200's pick; v1.54: 100 s with it).
# `scripts/gpu-bundle`, `docs/experiments/bundle-patched.sh whole-k-decode-tiles.patch wk`, then on the device (carry
# .gpubin; pending.sh runs it on a non-H200):
#   LUTMM_PREBUILT=.gpubin/wk bash docs/experiments/whole-k-compute-only.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source docs/experiments/recipe.sh
recipe_setup whole-k-compute-only whole-k-decode-tiles.patch 1,8192,8192 sm80_n32_m8_k512_s3_w1x1x4
shapes=$OUT/r/decode.txt
printf '1 8192 8192\n2 8192 8192\n8 8192 8192\n1 8192 28672\n' > "$shapes"
wk=sm80_n32_m8_k512_s3_w1x1x4_sk1_lutsmem256
"$L" verify --shape 5,8192,8192 --config $wk 2>&1 | tail -n 1
LUTMM_PREWAIT=1 "$L" verify --shape 1,8192,8192 --shape 3,8192,8192 --config $wk 2>&1 | tail -n 2
run() {  # run PASS CONFIG: full and compute-only, the pre-wait variant off and forced
  local pw
  for pw in 0 1; do
    LUTMM_PREWAIT=$pw recipe_bench "p${1}_full_pw$pw" "$shapes" "$2" 20
    LUTMM_PREWAIT=$pw recipe_bench "p${1}_nolo_pw$pw" "$shapes" "$2" 20 -DLUTMM_EXPERIMENT_NO_LOADS=1
  done
}
# (h200_m2_8: the H200 database's pick at M = 2-8 on 8192^2, so that its compute alone is timed in the same run; v1.53
# compared against v1.43's)
h200_m2_8=sm80_n128_m8_k256_s3_w4x1_sk4_lutsmem256
others="sm80_n32_m8_k512_s3_w1x1x4_sk1_lutsmem sm80_n32_m8_k512_s4_w1x1x4_sk1_lutsmem"
{ for c in db $wk $h200_m2_8 $others; do run 1 $c; done
  for c in db $wk $h200_m2_8; do run 2 $c; done; } > "$OUT/r/lines.txt" 2>&1
grep FAIL "$OUT/r/lines.txt"
python3 - "$OUT/r" <<'PY'
import collections, csv, glob, os, sys
times, launch = collections.defaultdict(list), {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], 'p*_*.csv'))):
    _, mode, pw, config = os.path.basename(path)[:-4].split('_', 3)  # p1 | full, nolo | pw0, pw1 | config or db
    for r in csv.DictReader(open(path)):
        key = (config, mode, pw, f"{r['m']}x{r['n']}x{r['k']}")
        times[key].append(float(r['lutmm_us']))
        launch[key] = (r['config'], r['launch'])
shapes = sorted({k[3] for k in times}, key=lambda s: tuple(int(v) for v in reversed(s.split('x'))))
print(f"{'config (us, min-max over passes)':<42} {'mode':<5} {'pw':<4}" + ''.join(f'{s:>16}' for s in shapes))
for config in sorted({k[0] for k in times}):
    for mode in ('full', 'nolo'):
        for pw in ('pw0', 'pw1'):
            v = [times.get((config, mode, pw, s)) for s in shapes]
            cells = ''.join(f"{f'{min(t):.2f}-{max(t):.2f}' if t else '':>16}" for t in v)
            print(f"{config[:42]:<42} {mode:<5} {pw:<4}{cells}")
# (kept short: pending.sh shows a step's last 60 lines) the database's picks, the configs the variant never applies
# to (forced on every run, taken on none: e.g. one strip a warp and 16 slices a k tile, v1.54), and every other run
# whose launch text disagrees with its side: the variant forced but not taken, or taken when off
picks = [(s, launch.get(('db', 'full', 'pw0', s))) for s in shapes]
print('db:', '; '.join(f"{s} {pick[0]}" for s, pick in picks if pick))
took = {k[0] for k, v in launch.items() if 'prewait' in v[1]}
never = sorted({k[0] for k in launch} - took - {'db'})  # (db: a different config per shape)
if never:
    print('the variant never applies to:', ', '.join(never))
odd = [f"{k[0][:42]} {k[1]} {k[2]} {k[3]}: {v[1]}" for k, v in sorted(launch.items())
       if k[0] not in never and ('prewait' in v[1]) != (k[2] == 'pw1')]
print(f"pre-wait taken on every other forced run and no other: {'yes' if not odd else 'no'}")
for line in odd:
    print('  ' + line)
PY
tar czf "$OUT/all.tgz" -C "$OUT" r
