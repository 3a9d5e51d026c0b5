export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=serial --format=csv,noheader
for s in 1024x65536 2048x65536 120x65536; do
  python scripts/bulk_ab.py --dtype float32 --op layer_norm --shape $s --macros "KK_BIAS_EARLY=1;KK_BIAS_STAGED_VECS=4;KK_BIAS_STAGED_VECS=4+KK_BIAS_EARLY=1" --patch "CLUSTER_ROWS_LN={}" 2>&1 | grep -E "^  |: kk|Error|error"
done | tee $OUT/fp32-ln-clusters.txt
python -m pytest -q -p no:cacheprovider tests/test_norm_gpu.py -k "handed_out or cluster or persistent" 2>&1 | tail -5 | tee $OUT/gpu-tests.log
