#!/usr/bin/env bash
# Session 20's first device call: GPU tests of the norms (session 19's host edits untested on a GPU) and of
# the bench (the paired same-bytes copy), a grid-size sweep of fp16 64K layer_norm's handed-out clusters,
# one layer_norm recording with the paired copy column; results under $OUT.
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kk-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader | tee $OUT/device.txt
SECONDS=0
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py tests/test_smem_rows_gpu.py tests/test_softmax_gpu.py \
  tests/test_bench.py 2>&1 | tail -4 | tee $OUT/gpu-tests.log
echo "tests $SECONDS s"
python scripts/persistent_grid.py --dynamic --clusters 0,61,59,57,56,52 --shape 1024x65536 --reps 200 2>&1 | tee $OUT/grid-64k.txt
echo "grid $SECONDS s"
rm -f $KERNELKIT_CACHE_DIR/ceilings-*.json
mkdir -p /tmp/rec1 && python benchmarks/record.py layer_norm --no-compile --out /tmp/rec1 > $OUT/record1.log 2>&1
grep -E "^\|" $OUT/record1.log | head -30
echo "record $SECONDS s"
tar -czf $OUT/rec.tar.gz -C /tmp rec1
