export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=serial --format=csv,noheader
python scripts/persistent_grid.py --ahead --cfg 256x4x8 --clusters 0,48,40,31 --shape 1024x65536 2>&1 | tee $OUT/ahead-grid.txt
python scripts/persistent_grid.py --dynamic --cfg 256x4x8 --clusters 0,48,40 --shape 1024x65536 2>&1 | tee -a $OUT/ahead-grid.txt
