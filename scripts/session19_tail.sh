#!/usr/bin/env bash
# Session 19: the staged one-CTA rows' tail: row counts at and between multiples of the resident grid (1320 CTAs).
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
for rows in 2640 2776 3960 4096 5280; do
  python scripts/persistent_grid.py --staged --cfg 128x4x1 --shape ${rows}x4096 --clusters 0 --reps 300 2>&1 | tee -a $OUT/tail-rows.txt
done
