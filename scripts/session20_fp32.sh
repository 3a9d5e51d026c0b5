#!/usr/bin/env bash
# Session 20: fp32 layer_norm's 32K rows as handed-out clusters of 2 x 512 (norm.CLUSTER_ROWS_LN): GPU tests,
# compute-sanitizer over race_staged.py, two layer_norm recordings; results under $OUT.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
SECONDS=0
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py tests/test_smem_rows_gpu.py tests/test_softmax_gpu.py \
  2>&1 | tail -4 | tee $OUT/gpu-tests.log
echo "tests $SECONDS s"
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --report-api-errors no python scripts/race_staged.py > $OUT/$tool-staged.log 2>&1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool-staged.log | tail -2
done
echo "sanitizer $SECONDS s"
for i in 1 2; do
  rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
  mkdir -p /tmp/rec$i && python benchmarks/record.py layer_norm --no-compile --out /tmp/rec$i > $OUT/record$i.log 2>&1
  grep -E "^\|" $OUT/record$i.log | head -30
done
echo "record $SECONDS s"
tar -czf $OUT/rec.tar.gz -C /tmp rec1 rec2
