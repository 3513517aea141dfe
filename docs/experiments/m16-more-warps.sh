#!/usr/bin/env bash
# docs/NOTES.md v1.44 (session 41): M = 16 decode with more warps an SM (16: w8x1 two-strip warps; 12: _occ3 128-byte table, w6x1).
# Forced names must be tiles of the list (see docs/experiments/README.md for the three lines to add).
set -uo pipefail
B=$PWD/.gpubin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export LUTMM_CACHE_DIR=/tmp/lc
L=$B/lutmm
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
printf '16 8192 28672\n16 28672 8192\n16 8192 8192\n' > /tmp/m16.txt
new=(sm80_n256_m16_k128_s3_w8x1_sk8_lutsmem256 sm80_n256_m16_k128_s2_w4x1_sk8_lutsmem_occ3 sm80_n384_m16_k128_s2_w6x1_sk8_lutsmem256)
for c in "${new[@]}"; do
  $L verify --shape 16,8192,8192 --shape 13,4096,1024 --config $c 2>&1 | tail -n 4
done
$L verify --shape 16,28672,8192 --config sm80_n256_m16_k128_s3_w8x1_skstream_lutsmem256 2>&1 | tail -n 3
cfgs=(db sm80_n256_m16_k128_s3_w4x1_sk8_lutsmem256 sm80_n256_m16_k128_s3_w4x1_sk8_lutsmem256 sm80_n256_m16_k128_s3_w8x1_sk8_lutsmem256 sm80_n256_m16_k128_s3_w8x1_sk4_lutsmem256
  sm80_n256_m16_k128_s3_w8x1_sk2_lutsmem256 sm80_n256_m16_k128_s3_w8x1_skstream_lutsmem256
  sm80_n256_m16_k128_s2_w4x1_sk8_lutsmem_occ3 sm80_n256_m16_k128_s2_w4x1_sk4_lutsmem_occ3
  sm80_n384_m16_k128_s2_w6x1_sk8_lutsmem256 sm80_n384_m16_k128_s2_w6x1_sk4_lutsmem256)
for pass in 1 2; do
  for c in "${cfgs[@]}"; do
    a=(); [ "$c" = db ] || a=(--config $c)
    $L bench --shapes /tmp/m16.txt --quiet --replays 15 "${a[@]}" --csv $OUT/r/p${pass}_$c.csv > /dev/null 2>$OUT/r/err_$c.txt || { echo "FAIL $c"; tail -2 $OUT/r/err_$c.txt; }
    awk -F, -v c=$c -v p=$pass 'NR>1 {printf "p%s %-52s %3s x %5s x %5s  %7s us  %6s%%  cublas %s  %s\n",p,c,$2,$3,$4,$11,$17,$12,$9}' $OUT/r/p${pass}_$c.csv
  done
done
echo "== compute only (-DLUTMM_EXPERIMENT_NO_LOADS=1; wrong results by design)"
for c in "${cfgs[@]}"; do
  a=(); [ "$c" = db ] || a=(--config $c)
  LUTMM_NVRTC_OPTIONS=-DLUTMM_EXPERIMENT_NO_LOADS=1 $L bench --shapes /tmp/m16.txt --quiet --replays 15 "${a[@]}" --csv $OUT/r/nl_$c.csv > /dev/null 2>>$OUT/r/err_$c.txt || echo "FAIL nl $c"
  awk -F, -v c=$c 'NR>1 {printf "nl %-52s %3s x %5s x %5s  %7s us\n",c,$2,$3,$4,$12}' $OUT/r/nl_$c.csv
done
tar czf $OUT/all.tgz -C $OUT r
