#!/usr/bin/env bash
# Session 20's last device call: softmax, layer_norm and rms_norm recorded twice on one machine (each rung timed
# in turn with torch and a clone of its own input); the bench GPU tests first; results under $OUT.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
python -m pytest -q -p no:cacheprovider tests/test_bench.py 2>&1 | tail -1 | tee $OUT/gpu-bench-tests.log
for i in 1 2; do
  rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
  mkdir -p /tmp/rowsb$i && python benchmarks/record.py softmax layer_norm rms_norm --no-compile --out /tmp/rowsb$i \
    > $OUT/record-rowsb$i.log 2>&1
  grep -E "^\|" $OUT/record-rowsb$i.log | grep -v "^| op\|^|---" | awk -F'|' '{print $2,$3,$4,$9,$10}'
done
tar -czf $OUT/rowsb.tar.gz -C /tmp rowsb1 rowsb2
