#!/usr/bin/env bash
# session 17: ncu of rms_norm, layer_norm and layer_norm with rms_norm's statistics after the lane-parallel merges
export PYTHONPATH=$PWD/src:$PWD/tests:$PWD/scripts KERNELKIT_CACHE_DIR=/tmp/kkc PYTHONUNBUFFERED=1
python scripts/ncu_ln_rms.py > /dev/null 2>&1   # compile first
ncu --section WarpStateStats --section SpeedOfLight --section InstructionStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_xu.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_global_ld.sum,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_membar.ratio \
  -k regex:norm_rows --launch-skip 3 python scripts/ncu_ln_rms.py > $OUT/ncu-ln-rms-2.txt 2>&1
grep -E "norm_rows|inst_executed|issue_active|Duration|DRAM Through|stalled" $OUT/ncu-ln-rms-2.txt | head -80
