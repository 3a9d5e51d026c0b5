#!/usr/bin/env bash
# Session 21's device call: norm_grid's GPU tests (each under a time limit: a kernel whose CTAs wait for one
# another hangs rather than fails when wrong), then A/Bs of its forms at 64K rows (scripts/grid_ab.py).
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
SECONDS=0
if [ "${KK_TESTS:-1}" = 1 ]; then
  timeout 300 python -m pytest -x -q -p no:cacheprovider tests/test_norm_grid_gpu.py 2>&1 | tail -15 | tee $OUT/grid-tests.log
  echo "tests $SECONDS s"
fi
ab() {  # name, then grid_ab.py's arguments
  local name=$1; shift
  timeout 150 python scripts/grid_ab.py "$@" 2>&1 | tee $OUT/$name.txt
  echo "$name $SECONDS s"
}
ab ln-fp32-1024 --shape 1024x65536 --dtype float32 --op layer_norm --cfgs "${KK_CFGS:-16,4,6,3;16,4,6,4}" \
  --macros "${KK_MACROS-KK_GRID_SLEEP=0;KK_GRID_SLEEP=400;KK_GRID_COMBINE_FIRST=1}" --probes "${KK_PROBES-}"
if [ -n "${KK_SHAPE2:-}" ]; then
  ab ln-fp32-shape2 --shape $KK_SHAPE2 --dtype float32 --op layer_norm --cfgs "${KK_CFGS:-16,4,6,3}" \
    --macros "${KK_MACROS-}" --probes "${KK_PROBES-}"
fi
