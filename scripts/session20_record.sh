#!/usr/bin/env bash
# Session 20's final device call: softmax, layer_norm and rms_norm recorded twice on one machine (each rung timed
# in turn with torch and a same-bytes copy); results under $OUT.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
for i in 1 2; do
  rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
  mkdir -p /tmp/rows$i && python benchmarks/record.py softmax layer_norm rms_norm --no-compile --out /tmp/rows$i \
    > $OUT/record-rows$i.log 2>&1
  grep -E "^\|" $OUT/record-rows$i.log | grep -v "^| op\|^|---" | awk -F'|' '{print $2,$3,$4,$9,$10}'
done
tar -czf $OUT/rows.tar.gz -C /tmp rows1 rows2
