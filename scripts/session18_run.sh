export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=serial --format=csv,noheader
for r in 1 2; do for op in layer_norm rms_norm; do
python scripts/bulk_ab.py --dtype float16 --op $op --shape 4096x4096 --rotate 4 --reps 400 --macros "KK_STAGE_CA=1" 2>&1 | grep -E "^  |: kk"
done; done | tee $OUT/stage-ca-4096.txt
