#!/usr/bin/env bash
# Session 19: the staged one-CTA rows with the next rows asked of L2 (KK_ROW_L2_PREFETCH), interleaved.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
for shape in 4096x4096 2048x4096 8192x4096; do
  python scripts/persistent_grid.py --staged --cfg 128x4x1 --shape $shape --clusters 0 --reps 300 \
    --macros "KK_ROW_L2_PREFETCH=1;KK_ROW_L2_PREFETCH=2" 2>&1 | tee -a $OUT/l2-prefetch.txt
done
