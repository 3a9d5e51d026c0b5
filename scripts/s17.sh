#!/usr/bin/env bash
# session 17, final tree: GPU tests of the norms (and smem rows, softmax), compute-sanitizer over the staged
# kernels, then the recording of layer_norm and rms_norm (results under $OUT/rec)
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,serial,clocks.max.sm,driver_version --format=csv,noheader | tee $OUT/device.txt
python -m pytest -q -m gpu -p no:cacheprovider tests/test_norm_gpu.py tests/test_smem_rows_gpu.py tests/test_softmax_gpu.py 2>&1 | tail -3 | tee $OUT/gpu-tests.log
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python scripts/race_staged.py > $OUT/$tool.log 2>&1
  echo "$tool exit $?" | tee -a $OUT/$tool.log; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool.log
done
rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
python benchmarks/record.py layer_norm rms_norm --no-compile --out $OUT/rec > $OUT/record.log 2>&1
grep -E "^\|" $OUT/record.log
