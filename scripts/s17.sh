#!/usr/bin/env bash
# session 17 experiments
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,serial,clocks.max.sm --format=csv,noheader
PG="python scripts/persistent_grid.py --clusters 0 --dynamic --cfg 256x4x8 --shape 1024x65536"
$PG --no-bias 2>&1 | tee $OUT/64k-nobias.txt
$PG --no-weight 2>&1 | tee $OUT/64k-noweight.txt
python scripts/staged_rms_ab.py --shapes 3072x4096,4096x4096,5120x4096,6144x4096 2>&1 | tee $OUT/staged-rms-ab2.txt
