#!/usr/bin/env bash
# Session 19: kernelkit's fp16 norm kernel built with a macro against itself (scripts/bulk_ab.py --macros),
# layer_norm and rms_norm, at the given shapes, into $OUT/<file>.
#   session19_macro_ab.sh KK_FIRST_ROW_GLOBAL=1 first-row-global.txt "4096x4096 2048x4096 8192x4096"
#   session19_macro_ab.sh KK_STAGE_BULK=1 stage-bulk.txt "4096x4096 4096x4096 8192x4096"
# (each macro exists only with its patch applied: first-row-global.patch, stage-bulk.patch)
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
for shape in $3; do
  for op in layer_norm rms_norm; do
    python scripts/bulk_ab.py --shape $shape --dtype float16 --op $op --rotate 4 --reps 300 --macros "$1" 2>&1 | tee -a $OUT/$2
  done
done
