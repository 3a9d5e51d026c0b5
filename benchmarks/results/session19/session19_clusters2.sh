#!/usr/bin/env bash
# Session 19: norm_bulk_dyn for fp32's 64K clusters with two takes in flight: A/B, GPU tests, sanitizer, recording.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
python scripts/bulk_ab.py --shape 1024x65536 --dtype float32 --op layer_norm --patch "BULK_HANDOUT_CLUSTERS=False" --reps 200 2>&1 | tee -a $OUT/clusters2-ab.txt
python scripts/bulk_ab.py --shape 32768x32768 --dtype float16 --op layer_norm --patch "BULK_HANDOUT=False" --reps 30 2>&1 | tee -a $OUT/clusters2-ab.txt
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py -k "bulk" 2>&1 | tail -2 | tee $OUT/gpu-bulk-tests3.log
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --report-api-errors no python scripts/race_bulk.py > $OUT/$tool-bulk2.log 2>&1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool-bulk2.log | tail -2
done
rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
mkdir -p /tmp/rec3 && python benchmarks/record.py layer_norm --no-compile --out /tmp/rec3 > $OUT/record3.log 2>&1
grep -E "^\|" $OUT/record3.log | grep -E "fast" | head -12
tar -czf $OUT/rec3.tar.gz -C /tmp rec3
