#!/usr/bin/env bash
# Session 21's device call: norm_grid's GPU tests (each under a time limit: a kernel whose CTAs wait for one
# another hangs rather than fails when wrong), then A/Bs at 64K rows against the dispatch without it.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
SECONDS=0
timeout 300 python -m pytest -x -q -p no:cacheprovider tests/test_norm_grid_gpu.py 2>&1 | tail -15 | tee $OUT/grid-tests.log
echo "tests $SECONDS s"
ALL="GRID_FROM={'layer_norm': {4: 32768, 8: 32768}, 'rms_norm': {4: 32768, 8: 32768}}"
ab() {  # name, then bulk_ab.py's arguments
  local name=$1; shift
  timeout 120 python scripts/bulk_ab.py --rotate 2 --reps 200 "$@" 2>&1 | tee $OUT/$name.txt
  echo "$name $SECONDS s"
}
ab ln-fp32-1024 --shape 1024x65536 --dtype float32 --op layer_norm --patch "GRID=False"
ab rms-fp32-1024 --shape 1024x65536 --dtype float32 --op rms_norm --patch "$ALL"
ab ln-fp16-1024 --shape 1024x65536 --dtype float16 --op layer_norm --patch "$ALL"
ab ln-fp32-2048 --shape 2048x65536 --dtype float32 --op layer_norm --patch "GRID=False"
ab ln-fp32-32k --shape 4096x32768 --dtype float32 --op layer_norm --patch "GRID_FROM={'layer_norm': {4: 16384}, 'rms_norm': {}}"
