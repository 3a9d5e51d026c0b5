#!/usr/bin/env bash
# One device call for the row reductions (softmax, layer_norm, rms_norm): tuning rows and alternatives
# (benchmarks/reduction_tuning.py), then their GPU tests and sanitizers; results under $OUT.
#   KK_SHAPES=1024x65536,... KK_OPS=softmax,... (tuning);  KK_TESTS=0;  KK_SANITIZE_TOOLS=" " (none)
#   KK_COPYCHECK=1 (copy ceilings in two processes);  KK_PROBE=1 (resident clusters + ncu of fp16 64K
#   layer_norm);  KK_RACE_SMALL=1 (racecheck on scripts/race_small.py)
set -u
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src:$PWD/tests PYTHONUNBUFFERED=1 KERNELKIT_CACHE_DIR=/tmp/kk-cache KK_ARCH=sm_90
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
timeout 200 python3 benchmarks/reduction_tuning.py --warm 2>&1 | tail -3
timeout ${KK_TUNE_TIMEOUT:-200} python3 benchmarks/reduction_tuning.py --sections rows,alts --shapes ${KK_SHAPES:-1024x65536} --ops ${KK_OPS:-softmax,layer_norm,rms_norm} \
  --out "$OUT/rows.json" 2>&1 | tee "$OUT/rows.log" | grep -E "rows|alt|copy"
if [ "${KK_COPYCHECK:-0}" = 1 ]; then
for i in 1 2; do  # two processes, each with a fresh ceilings cache: do 2^28 / 2^29-byte copies agree?
  KERNELKIT_CACHE_DIR=/tmp/kk-copy$i timeout 30 python3 -c "
from kernelkit.bench import copy_bandwidth
print([(nb, round(copy_bandwidth(nb))) for nb in (1 << 28, 1 << 29, 1 << 30)])" 2>&1 | tee -a "$OUT/copycheck.txt"
done
fi
[ "${KK_TESTS:-1}" = 1 ] && timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -x -k "norm or softmax" tests 2>&1 | tail -8 | tee "$OUT/norm-tests.log"
# our kernels only (racecheck reports a hazard inside torch's own reduce kernel of the float64 reference)
for tool in ${KK_SANITIZE_TOOLS:-memcheck racecheck}; do
  timeout 150 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
    --kernel-name kns=norm_ --kernel-name kns=softmax_ \
    python3 -m pytest -q -m gpu -p no:cacheprovider -k "${KK_SANITIZE_K:-(test_every_bulk_configuration and dtype1) or (test_long and fast-float16)}" tests/test_norm_gpu.py tests/test_softmax_gpu.py \
    > "$OUT/san-$tool.log" 2>&1; echo "$tool exit $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/san-$tool.log" | tail -3
done
if [ "${KK_PROBE:-0}" = 1 ]; then
  timeout 60 python3 scripts/probe_bulk.py 2>&1 | tee "$OUT/probe.txt"
  timeout 120 ncu --kernel-name regex:norm_bulk --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
    python3 scripts/probe_bulk.py --profile > "$OUT/ncu.txt" 2>&1; tail -80 "$OUT/ncu.txt"
fi
if [ "${KK_RACE_SMALL:-0}" = 1 ]; then
  timeout ${KK_RACE_TIMEOUT:-120} compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9 \
    --kernel-name kns=norm_ --kernel-name kns=softmax_ python3 scripts/race_small.py > "$OUT/race-small.log" 2>&1
  echo "racecheck small exit $?"; tail -4 "$OUT/race-small.log"
fi
