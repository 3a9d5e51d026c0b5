#!/usr/bin/env bash
# Session 19: fp32 layer_norm rows of 32K as one-CTA bulk-copy rings with rows handed out, against the
# register-tile CTA a row; and where the layer_norm cells stand, interleaved with a copy.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
P3="BULK_LAYER_NORM={4: {32768: (1024, 8, 1, 3, False, 4)}, 8: BULK_LAYER_NORM[8]}"
P4="BULK_LAYER_NORM={4: {32768: (1024, 8, 1, 4, False, 4)}, 8: BULK_LAYER_NORM[8]}"
for shape in 32768x32768 8192x32768; do
  python scripts/bulk_ab.py --shape $shape --dtype float32 --op layer_norm --patch "$P3;$P4" --reps 60 2>&1 | tee -a $OUT/fp32-32k-rings.txt
done
