#!/usr/bin/env bash
# One call on the lent GPU: install, GPU tests, benchmarks; everything lands under $OUT.
#   scripts/device_run.sh [pytest-args...]      (KK_BENCH=0 skips the benchmarks)
set -u
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/tests PYTHONUNBUFFERED=1 KERNELKIT_CACHE_DIR=${KERNELKIT_CACHE_DIR:-/tmp/kk-cache}
python3 -m pytest -q -m "gpu" -x --timeout=900 -p no:cacheprovider "$@" tests 2>&1 | tee "$OUT/gpu-tests.log" | tail -40
