#!/usr/bin/env bash
# Issue 3 on a GPU machine in one call: warm the kernel cache, GPU tests, >2^31 tests, sanitizers on
# the small cases, the timing sweep. Each stage has its own time limit so that one slow stage cannot
# take the others' results with it. Logs and the sweep's JSON land in $OUT.
#   STAGES="tests slow memcheck synccheck sweep" SWEEP_ONLY=add,relu SWEEP_SECONDS=0.15
set -u
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/tests PYTHONUNBUFFERED=1 KERNELKIT_CACHE_DIR=${KERNELKIT_CACHE_DIR:-/tmp/kkc}
T="tests/test_add_gpu.py tests/test_relu_gpu.py tests/test_saxpy_gpu.py tests/test_invert_colors_gpu.py
   tests/test_binarize_gpu.py tests/test_normalize_image_gpu.py"
STAGES=${STAGES:-tests slow memcheck synccheck sweep}
has() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
python3 benchmarks/elementwise_tuning.py --warm; stamp warm
if has tests; then
  timeout ${TESTS_S:-120} python3 -m pytest -q -p no:cacheprovider -n 8 -m "not slow" -rf $T ${EXTRA_TESTS:-} \
    > "$OUT/tests.log" 2>&1; stamp "tests exit $?"; tail -25 "$OUT/tests.log"
fi
if has slow; then
  timeout ${SLOW_S:-60} python3 -m pytest -q -p no:cacheprovider -m slow -rf $T > "$OUT/slow.log" 2>&1
  stamp "slow exit $?"; tail -5 "$OUT/slow.log"
fi
if has memcheck; then
  timeout ${MEMCHECK_S:-70} compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider -k "small" $T > "$OUT/memcheck.log" 2>&1
  stamp "memcheck exit $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck.log" | tail -3
fi
if has synccheck; then  # the shuffle kernel: every __shfl_sync with all lanes present
  timeout ${SYNCCHECK_S:-40} compute-sanitizer --tool synccheck --report-api-errors no --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider -k "small and (shuffle or fast)" tests/test_add_gpu.py \
    > "$OUT/synccheck.log" 2>&1
  stamp "synccheck exit $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/synccheck.log" | tail -3
fi
if has sweep; then
  left=$(( ${BUDGET:-285} - ($(date +%s) - t0) )); [ $left -lt 10 ] && left=10  # whatever time is left
  timeout ${SWEEP_S:-$left} python3 benchmarks/elementwise_tuning.py --out "$OUT" --seconds ${SWEEP_SECONDS:-0.15} \
    --only "${SWEEP_ONLY:-}" > "$OUT/sweep.log" 2>&1; stamp "sweep exit $?"; cat "$OUT/sweep.log"
fi
