# Sourced by the one-call experiment scripts of this folder (after they cd to the repository root).
#
# recipe_env NAME: B, the carried binaries' folder as given ($LUTMM_PREBUILT, default .gpubin; relative, as
# scripts/gpu-ab takes it), OUT (default out/NAME, created) and LD_LIBRARY_PATH (B's libfmt, CUDA's libraries).
recipe_env() {
  B=${LUTMM_PREBUILT:-.gpubin}
  OUT=${OUT:-out/$1}
  mkdir -p "$OUT"
  export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
}

# recipe_small_shapes [M N K ...]: every M <= 8 shape of both sets (data/shapes), then the extra shapes given (three
# numbers each), one "M N K" line each, without repeats: the shapes where the pre-wait rule can apply.
recipe_small_shapes() {
  { awk '!/^#/ && NF >= 3 && $1 <= 8 {print $1, $2, $3}' data/shapes/llm.txt data/shapes/diffusion.txt
    if [ $# -gt 0 ]; then printf '%s %s %s\n' "$@"; fi; } | sort -u
}

# recipe_setup NAME PATCH SHAPE CONFIG: the environment of the carried binaries ($LUTMM_PREBUILT, default .gpubin: B,
# L = its lutmm, LD_LIBRARY_PATH, LUTMM_CACHE_DIR), OUT (default out/NAME) with $OUT/r; exits 2 unless `lutmm configs
# --shape SHAPE` lists CONFIG (a forced name must be a tile of the list, which PATCH adds); prints the GPU.
recipe_setup() {
  local name=$1 patch=$2 shape=$3 config=$4
  recipe_env "$name"
  B=$PWD/$B
  export LUTMM_CACHE_DIR=${LUTMM_CACHE_DIR:-/tmp/lutmm-$name}
  L=$B/lutmm
  mkdir -p "$OUT/r"
  # (grep reads the whole list: with -q it would stop early, and pipefail would see lutmm's SIGPIPE as a failure)
  "$L" configs --shape "$shape" --arch 90 --no-time 2>/dev/null | grep "$config" >/dev/null ||
    { echo "$name: $L lacks the tiles: docs/experiments/bundle-patched.sh $patch DIR, then LUTMM_PREBUILT=.gpubin/DIR" >&2; exit 2; }
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
}

# show TAG CSV: one line per shape of a `lutmm bench` CSV, its columns read by name (a wrong result's status holds a
# comma).
show() {
  python3 - "$@" <<'PY'
import csv, sys
tag, path = sys.argv[1], sys.argv[2]
for r in csv.DictReader(open(path)):
    print(f"{tag:<56} {r['m']:>3} x {r['n']:>5} x {r['k']:>5}  {r['lutmm_us']:>8} us  {r['pct_floor']:>6}%  "
          f"{r['config']} {r['launch']}")
PY
}

# recipe_bench TAG SHAPES CONFIG REPLAYS [NVRTC_OPTIONS]: `lutmm bench` of the SHAPES file with CONFIG forced (db: the
# database's picks) into $OUT/r/TAG_CONFIG.csv, then its lines (show). A failed run prints its last error line, except
# with NVRTC_OPTIONS (the diagnostic builds, e.g. -DLUTMM_EXPERIMENT_NO_LOADS=1, are wrong by design).
recipe_bench() {
  local tag=$1 shapes=$2 config=$3 replays=$4 options=${5:-}
  local args=() csv=$OUT/r/${1}_$3.csv err=$OUT/r/err_$3.txt
  [ "$config" = db ] || args=(--config "$config")
  LUTMM_NVRTC_OPTIONS=$options "$L" bench --shapes "$shapes" --quiet --replays "$replays" "${args[@]}" --csv "$csv" \
    >/dev/null 2>>"$err" || [ -n "$options" ] || echo "FAIL $config: $(tail -n 1 "$err")"
  [ -f "$csv" ] && show "$tag $config" "$csv"
}

# recipe_trace CONFIG: one traced `lutmm bench` of 1 x 8192^2 with CONFIG forced (db: the database's pick;
# -DLUTMM_TIMELINE=3, three replays) into $OUT/r/trace_CONFIG.csv, then the lines of `scripts/timeline.py --trace`
# that say where the launch's period goes.
recipe_trace() {
  local config=$1 args=() csv=$OUT/r/trace_$1.csv
  [ "$config" = db ] || args=(--config "$config")
  printf '1 8192 8192\n' > "$OUT/r/one.txt"
  LUTMM_NVRTC_OPTIONS=-DLUTMM_TIMELINE=3 "$L" bench --shapes "$OUT/r/one.txt" --replays 3 --quiet "${args[@]}" \
    --trace "$csv" >/dev/null 2>&1
  echo "== trace, $config"
  python3 scripts/timeline.py --trace "$csv" 2>&1 | grep -E "period|next launch|launch:|  main loop  "
}
