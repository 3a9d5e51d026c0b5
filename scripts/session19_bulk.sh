#!/usr/bin/env bash
# Session 19: norm_bulk's one-CTA rings with rows handed out (norm_bulk_dyn): GPU tests, trace, A/B.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py -k "bulk" 2>&1 | tail -4 | tee $OUT/gpu-bulk-tests.log
python scripts/trace_rows.py --bulk --bulk-dyn --shape 32768x32768 --dtype float16 2>&1 | tee $OUT/trace-bulk-dyn.txt
for i in 1 2; do
  python scripts/bulk_ab.py --shape 32768x32768 --dtype float16 --op layer_norm --patch "BULK_HANDOUT=True" --reps 60 2>&1 | tee -a $OUT/bulk-handout-ab.txt
done
python scripts/bulk_ab.py --shape 16384x32768 --dtype float16 --op layer_norm --patch "BULK_HANDOUT=True" --reps 100 2>&1 | tee -a $OUT/bulk-handout-ab.txt
