#!/usr/bin/env bash
# One call on a GPU machine: install, GPU tests, sanitizer, benchmarks; results land under $OUT.
#
#   scripts/device_run.sh [ops...]          ops to record (default: every op)
#   KK_TESTS=0 / KK_BENCH=0 / KK_SANITIZE=0  skip a stage;  KK_PYTEST="-k gelu" narrows the tests
#   KK_SANITIZE_K="..."                      the -k expression of the sanitized tests (default "4097 and not 2_31")
#
# $OUT gets: build.log (the C launch shim, built in place), gpu-tests.log, sanitizer.log, bench.log,
# results.tar.gz (benchmarks/results/*.json, *.png, summary), ceilings.json, overhead.json.
set -u
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/tests PYTHONUNBUFFERED=1 KERNELKIT_CACHE_DIR=${KERNELKIT_CACHE_DIR:-/tmp/kk-cache}
RES=$(mktemp -d)
# the C launch shim (kernelkit.runtime._fastlaunch), as `pip install` builds it
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || echo "launch shim not built (see build.log)"
if [ "${KK_TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider ${KK_PYTEST:-} tests 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
fi
if [ "${KK_SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
      python3 -m pytest -q -m gpu -p no:cacheprovider -k "${KK_SANITIZE_K:-4097 and not 2_31}" tests \
      >> "$OUT/sanitizer.log" 2>&1; echo "$tool exit $?" | tee -a "$OUT/sanitizer.log"
  done
  grep -E "ERROR SUMMARY|exit" "$OUT/sanitizer.log"
fi
if [ "${KK_BENCH:-1}" = 1 ]; then
  python3 -m kernelkit.cli ceilings > "$OUT/ceilings.json" 2>&1
  python3 benchmarks/overhead.py --out "$OUT/overhead.json"
  if [ $# -gt 0 ]; then
    python3 benchmarks/record.py "$@" --out "$RES" 2>&1 | tee "$OUT/bench.log" | grep -E "^\|"
  else  # every op; torch.compile beside the GELU ladder only (compiling 50 graphs would take minutes)
    python3 benchmarks/record.py gelu --out "$RES" 2>&1 | tee "$OUT/bench.log" | grep -E "^\|"
    OTHERS=$(python3 -c "import kernelkit; print(' '.join(o for o in kernelkit.ops() if o != 'gelu'))")
    python3 benchmarks/record.py $OTHERS --no-compile --out "$RES" 2>&1 | tee -a "$OUT/bench.log" | grep -E "^\|"
  fi
  tar -czf "$OUT/results.tar.gz" -C "$RES" .
fi
