#!/usr/bin/env bash
# Session 19: norm_bulk_dyn for clusters (fp32 layer_norm 64K rows): GPU tests, sanitizer, trace, A/B.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py -k "bulk" 2>&1 | tail -4 | tee $OUT/gpu-bulk-tests2.log
for tool in memcheck racecheck; do
  timeout 240 compute-sanitizer --tool $tool --report-api-errors no python scripts/race_staged.py > $OUT/$tool.log 2>&1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool.log | tail -2
done
python scripts/trace_rows.py --bulk --bulk-dyn --shape 1024x65536 --dtype float32 2>&1 | tee $OUT/trace-bulk-dyn-fp32.txt
for i in 1 2; do
  python scripts/bulk_ab.py --shape 1024x65536 --dtype float32 --op layer_norm --patch "BULK_HANDOUT_CLUSTERS=True" --reps 200 2>&1 | tee -a $OUT/bulk-handout-clusters-ab.txt
done
python scripts/bulk_ab.py --shape 2048x65536 --dtype float32 --op layer_norm --patch "BULK_HANDOUT_CLUSTERS=True" --reps 100 2>&1 | tee -a $OUT/bulk-handout-clusters-ab.txt
