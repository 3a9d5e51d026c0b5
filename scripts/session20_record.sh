#!/usr/bin/env bash
# Session 20's recordings: the bench GPU tests, then softmax, layer_norm and rms_norm recorded twice on one machine
# (each rung timed in turn with torch and a same-bytes copy); results under $OUT as NAME1, NAME2.
#   scripts/session20_record.sh [NAME]   (default rows; session 20 ran it as rows, then as rowsb)
NAME=${1:-rows}
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
python -m pytest -q -p no:cacheprovider tests/test_bench.py 2>&1 | tail -1 | tee $OUT/gpu-bench-tests.log
for i in 1 2; do
  rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
  mkdir -p /tmp/$NAME$i && python benchmarks/record.py softmax layer_norm rms_norm --no-compile --out /tmp/$NAME$i \
    > $OUT/record-$NAME$i.log 2>&1
  grep -E "^\|" $OUT/record-$NAME$i.log | grep -v "^| op\|^|---" | awk -F'|' '{print $2,$3,$4,$9,$10}'
done
tar -czf $OUT/$NAME.tar.gz -C /tmp ${NAME}1 ${NAME}2
