#!/usr/bin/env bash
# Session 19: the staged one-CTA rows staging weight and bias by two bulk copies from thread 0 (KK_STAGE_BULK=1).
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
for shape in 4096x4096 4096x4096 8192x4096; do
  for op in layer_norm rms_norm; do
    python scripts/bulk_ab.py --shape $shape --dtype float16 --op $op --rotate 4 --reps 300 \
      --macros "KK_STAGE_BULK=1" 2>&1 | tee -a $OUT/stage-bulk.txt
  done
done
