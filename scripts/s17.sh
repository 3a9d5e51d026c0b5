#!/usr/bin/env bash
# session 17: weight and bias copies issued after the first row's loads (KK_STAGE_LATE) against before them
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,serial,clocks.max.sm --format=csv,noheader
for i in 1 2; do
python scripts/persistent_grid.py --clusters 0 --dynamic --cfg 256x4x8 --shape 1024x65536 --macros "KK_STAGE_LATE=0" 2>&1 | tee -a $OUT/late-async-64k.txt
python scripts/persistent_grid.py --clusters 0 --staged --cfg 128x4x1 --shape 4096x4096 --macros "KK_STAGE_LATE=0" 2>&1 | tee -a $OUT/late-async-4096.txt
done
python scripts/bulk_ab.py --dtype float32 --op rms_norm --macros "KK_STAGE_LATE=0" 2>&1 | tee -a $OUT/late-async-fp32.txt
