#!/usr/bin/env bash
# Session 19's final device call: GPU tests of the norms (and softmax, smem rows), compute-sanitizer over the
# handed-out bulk rings and the staged kernels' small workload, two recordings of layer_norm; results under $OUT.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py tests/test_smem_rows_gpu.py tests/test_softmax_gpu.py 2>&1 | tail -4 | tee $OUT/gpu-tests.log
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool --report-api-errors no python scripts/race_bulk.py > $OUT/$tool-bulk.log 2>&1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool-bulk.log | tail -2
done
for i in 1 2; do
  rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
  mkdir -p /tmp/rec$i && python benchmarks/record.py layer_norm --no-compile --out /tmp/rec$i > $OUT/record$i.log 2>&1
  grep -E "^\|" $OUT/record$i.log | grep -E "fast|best" | head -30
done
tar -czf $OUT/rec.tar.gz -C /tmp rec1 rec2
