#!/usr/bin/env bash
# One call on a GPU machine: build, GPU tests, sanitizer, host overhead, recordings; results under $OUT.
#
#   scripts/device_run.sh [ops...]    ops to record with benchmarks/record.py (default: none; KK_RECORD=all: every op)
#
# Stages (1 runs, 0 skips): KK_TESTS=1  KK_SANITIZE=1  KK_OVERHEAD=1  KK_RECORD=0
#   KK_PYTEST="-k gelu"                narrows the GPU tests
#   KK_SANITIZE_K="..."                the -k expression of the tests run under memcheck (default "4097 and not 2_31")
#   KK_RACE="race_small race_bulk ..."  the racecheck workloads of scripts/ (default: every scripts/race_*.py)
#
# $OUT gets: build.log (the C launch shim, built in place), warmup.log, gpu-tests.log, sanitizer.log,
# overhead.json, bench.log and results.tar.gz (benchmarks/record.py's JSON and PNGs).
set -u
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/tests PYTHONUNBUFFERED=1 KERNELKIT_CACHE_DIR=${KERNELKIT_CACHE_DIR:-/tmp/kk-cache}
# the C launch shim (kernelkit.runtime._fastlaunch), as `pip install` builds it
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || echo "launch shim not built (see build.log)"
# every kernel built once, in parallel, before the tests (a test then never waits on NVRTC)
python3 -m kernelkit.cli warmup > "$OUT/warmup.log" 2>&1; tail -1 "$OUT/warmup.log"
if [ "${KK_TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider ${KK_PYTEST:-} tests 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
fi
if [ "${KK_SANITIZE:-1}" = 1 ]; then
  compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 -m pytest -q -m gpu -p no:cacheprovider -k "${KK_SANITIZE_K:-4097 and not 2_31}" tests \
    >> "$OUT/sanitizer.log" 2>&1; echo "memcheck (GPU tests: -k ${KK_SANITIZE_K:-4097 and not 2_31}) exit $?" | tee -a "$OUT/sanitizer.log"
  for w in ${KK_RACE:-$(cd scripts && ls race_*.py | sed 's/\.py$//')}; do
    compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9 python3 "scripts/$w.py" \
      >> "$OUT/sanitizer.log" 2>&1; echo "racecheck $w exit $?" | tee -a "$OUT/sanitizer.log"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitizer.log" | sort | uniq -c
fi
if [ "${KK_OVERHEAD:-1}" = 1 ]; then
  python3 benchmarks/overhead.py --out "$OUT/overhead.json"
fi
if [ "${KK_RECORD:-0}" != 0 ] || [ $# -gt 0 ]; then
  RES=$(mktemp -d)
  python3 -m kernelkit.cli ceilings > "$OUT/ceilings.json" 2>&1
  OPS=${*:-$(python3 -c "import kernelkit; print(' '.join(kernelkit.ops()))")}
  python3 benchmarks/record.py $OPS --no-compile --out "$RES" 2>&1 | tee "$OUT/bench.log" | grep -E "^\|"
  tar -czf "$OUT/results.tar.gz" -C "$RES" .
fi
