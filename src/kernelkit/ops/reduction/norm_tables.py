"""The norms' launch configurations (ops/norm.py dispatches on them), each table with what measured it.

Data only: norm.py imports every name, and its functions read them as its own globals (tests and
scripts set them there, e.g. norm.BULK_FROM).
"""
from __future__ import annotations

import torch

from ._rows import RowTables, flat

# (group, vecs, cluster) by capacity. Rows up to 32K take a CTA each, weight and bias read at the
# output (from L1, or L2 for 32K fp32 rows); longer rows a cluster (sm_90), persistent, weight and
# bias staged in shared memory (32 KB a CTA, 64 KB for 64K fp32 rows, 128 KB for 64K 16-bit rows).
# Measured on an H100 (benchmarks/reduction_tuning.py; results/reduction-run5.json, -run6.json):
#  * run 5: 32K rows as one 1024-thread CTA of 32 values a thread beat the persistent clusters
#    (256 x 4 x 8 fp32, 512 x 2 x 4 16-bit): fp32 layer_norm 2910 vs 2527 GB/s, rms_norm 3011 vs
#    2568; fp16 2468 vs 1732 and 2789 vs 1983.
#  * run 6 (values converted to float once, per-vector bounds): 16-bit rows now do best at 32 values
#    a thread (4 vectors) where 16 won before: 16384 x 8192 fp16 layer_norm 2840 vs 2385 GB/s as
#    256 x 4 (rms_norm 2933 vs 2563), 4096^2 2131 vs 2023 as 128 x 4, 1024 x 65536 1854 vs 1533 as a
#    1024 x 4 x 2 cluster (rms_norm 1958 vs 1732).
_FAST = {
    4: {128: (32, 1, 1), 256: (32, 2, 1), 512: (32, 4, 1), 1024: (64, 4, 1), 2048: (128, 4, 1),
        4096: (256, 4, 1), 8192: (512, 4, 1), 16384: (1024, 4, 1), 32768: (1024, 8, 1), 65536: (512, 4, 8)},
    8: {256: (32, 1, 1), 512: (32, 2, 1), 1024: (64, 2, 1), 2048: (128, 2, 1), 4096: (128, 4, 1),
        8192: (256, 4, 1), 16384: (1024, 2, 1), 32768: (1024, 4, 1), 65536: (1024, 4, 2)},
}
TABLES = RowTables(
    fast=_FAST,
    fast_flat=flat(_FAST, {}),  # longer rows: welford
    # measured alternatives, compiled and tested with the rung (run 4: layer_norm 4096^2 fp32 as
    # 512 x 2 read 2673 GB/s against 2635; 16-bit 32K / 64K rows as 512 x 4 x 2 / 4 with prefetch 1746
    # / 1326); and the configurations runs 5-6 replaced (256 x 4 x 8 fp32, 16-bit 256 x 2, 512 x 2 x 4 / 8)
    # and (session 12) 64K rows as softmax takes them since its cluster start stopped waiting on a
    # release barrier: one cluster of 4 x 512 (fp32) or 8 x 256 (16-bit) CTAs per row, not persistent
    spares={4: [(512, 2, 1), (256, 4, 8), (512, 8, 4)],
            8: [(512, 4, 2), (512, 4, 4), (512, 2, 4), (256, 2, 1), (512, 2, 8),
                (256, 4, 8)]},  # (256, 4, 8): also CLUSTER_ROWS' fp16 64K rows (below)
    registers={
        4: {512: (128, 1, 1), 1024: (128, 2, 1), 2048: (128, 4, 1), 4096: (256, 4, 1), 8192: (512, 4, 1),
            16384: (1024, 4, 1)},
        8: {1024: (128, 1, 1), 2048: (128, 2, 1), 4096: (256, 2, 1), 8192: (512, 2, 1), 16384: (1024, 2, 1)},
    },
)


# Rows that cannot move as 16-byte vectors (unaligned, or a length not a multiple of 16 bytes) read
# element by element, which costs registers: at 32K the one-CTA form would spill, so they keep the
# persistent clusters (sm_90) or fall back to welford (sm_80).
_UNALIGNED = {4: (256, 4, 8), 8: (512, 2, 4)}
_VEC_ONLY = {4: frozenset({(1024, 8, 1)}), 8: frozenset({(1024, 4, 1)})}
# 32 values a thread at 1024 threads (the 64-register cap): ptxas spills a few bytes for some
# (arch, dtype) pairs (bf16 on sm_90: 16-24 bytes; fp32 on sm_80), none for fp16 / fp32 on sm_90;
# measured the fastest on an H100 all the same (run 6), so these are allowed local memory.
_SPILLING = {4: frozenset({(1024, 8, 1)}), 8: frozenset({(1024, 4, 1), (1024, 4, 2)})}


# Long aligned rows on sm_90 (norm_bulk): (threads, vectors a thread, CTAs per cluster, stages, weight
# and bias staged in shared memory, copies a slice) by capacity. Each CTA's slice of a row is copied
# into a ring of shared-memory stages by bulk copies issued `stages` copies ahead (csrc/bulk.cuh); the
# cluster's statistics are pushed into each CTA's shared memory (ClusterShare), no cluster barrier per
# row. Measured on an H100 (benchmarks/reduction_tuning.py, results/reduction-run7*.json, -run9.json):
# benchmarks/NOTES.md. fp32 64K rows: 3 stages since session 18 (scripts/bulk_ab.py --bulk, H100,
# interleaved; results/session18/bulk-stages.txt), 1024 x 65536 layer_norm 91.6% of a same-bytes copy with
# 4 stages, 92.6% with 3, 90.9% with 2, 90.6% with 5; at 120 rows 30.4 / 29.1 / 29.5 / 31.7 us: the deeper
# ring's last rows wait on the CTA's compute, one row at a time, after every read has landed.
BULK = {
    4: {65536: (1024, 2, 8, 3, True, 1), 131072: (1024, 4, 8, 3, False, 1)},
    8: {65536: (1024, 4, 2, 3, True, 2), 131072: (1024, 4, 4, 3, False, 1)},
}
BULK_FROM = 32768  # rows longer than this take norm_bulk where it applies (shorter: one CTA a row)
# layer_norm's 16-bit rows of 16K-32K: one persistent CTA a row by bulk copies with weight and bias
# staged in shared memory. Session 9 (results/reduction-run10.json), 32768^2 fp16: layer_norm 2683 ->
# 2832 GB/s (88.8% -> 93.7% of copy); rms_norm, with no bias to read, stays faster as a register tile
# (2939 vs 2887), so this table is layer_norm's alone.
BULK_LAYER_NORM = {8: {32768: (1024, 4, 1, 3, True, 4)}}
BULK_LAYER_NORM_FROM = 16384
# measured alternatives, compiled and tested with the rung
BULK_SPARES = {
    4: [(1024, 4, 4, 3, False, 1), (512, 4, 8, 4, True, 1), (256, 8, 8, 4, True, 1), (1024, 8, 2, 6, False, 4),
        (1024, 2, 8, 4, True, 1)],
    8: [(512, 4, 4, 4, True, 1), (256, 8, 4, 4, True, 1), (512, 2, 8, 3, True, 1), (512, 2, 8, 4, True, 1),
        (1024, 4, 2, 3, False, 1), (1024, 4, 2, 4, False, 2),
        # 32K 16-bit rows (one 1024-thread CTA a row today, 1 CTA an SM: layer_norm 88.6% of copy,
        # rms_norm 97.3%): clusters of 2 or 4 whose CTAs fit twice an SM, or weight and bias staged
        (512, 4, 2, 3, True, 1), (512, 2, 4, 2, False, 1), (512, 2, 4, 3, True, 1),
        # ... or one persistent 1024-thread CTA a row with weight and bias staged (128 KB) and the row
        # arriving in chunks (the register-tile CTA reads both from L1/L2 at every row)
        (1024, 4, 1, 2, True, 2), (1024, 4, 1, 3, True, 4)],
}


# Long aligned rows on sm_90 kept whole in shared memory (norm_smem, csrc/smemrows.cuh): (threads,
# vectors a thread per chunk, chunks a slice, ring stages, CTAs per cluster) by op and capacity, for rows
# longer than SMEM_FROM. Session 12 (scripts/smem_rows_tune.py, H100, 1024 x 65536, interleaved with the
# bulk-copy default; results/smem-rows-h100.txt), % of a same-bytes copy:
#  * rms_norm fp32 as clusters of 2 x 1024 threads: 94.4-94.5% against 90.7-91.3% (bulk, 8 x 1024);
#    fp16 as one 1024-thread CTA a row (128 KB of a 224 KB ring): 90.4-90.6% against 88.1-88.2%.
#  * layer_norm fp16 as clusters of 2 x 512 threads, two CTAs an SM: 87.5% against 86.0-86.3%; fp32
#    keeps the bulk copies (93.8% against 91.3%). layer_norm reads weight and bias from L2 at every row
#    (the ring leaves L1 no room): with the row's own bytes that is ~5 TB/s of L2 traffic at 64K 16-bit
#    rows, near what L2 delivers, which is where the one-CTA forms (72%) stop.
# Since session 14 fp16 rows of 32K-64K take CLUSTER_ROWS (below) first: the 16-bit entries serve bf16;
# since session 16 fp32 rms_norm rows take CLUSTER_ROWS_RMS first (its entry here: compiled, tested, compared).
SMEM = {
    "rms_norm": {4: {65536: (1024, 2, 4, 7, 2)}, 8: {65536: (1024, 2, 4, 7, 1)}},
    "layer_norm": {4: {}, 8: {65536: (512, 2, 4, 6, 2)}},
}
SMEM_FROM = 32768
# measured alternatives, compiled and GPU-tested with the rung (the one-CTA forms for both dtypes)
SMEM_SPARES = {4: [(512, 4, 4, 7, 2), (512, 2, 4, 6, 4)], 8: [(512, 4, 4, 7, 1), (512, 2, 4, 13, 1)]}


# fp16 rows longer than CLUSTER_ROWS_FROM on sm_90, before the shared-memory and bulk-copy forms: the
# register-tile clusters (norm_rows, persistent, weight and bias staged once a CTA) in their tight form
# (64 registers, 4 CTAs an SM; norm.cu's norm_tight_blocks). Session 14 (scripts/smem_rows_tune.py --rows
# 256x4x8, H100, 1024 x 65536; results/session14/tune-tight-staged.txt): layer_norm 90.4% of a same-bytes
# copy against 85.7% for norm_smem's clusters of 2 x 512, rms_norm 92.5% against 89.6% for its one-CTA
# rows. bf16 spills in that form and keeps the others.
CLUSTER_ROWS = {torch.float16: {65536: (256, 4, 8)}}
CLUSTER_ROWS_FROM = 32768
# ... and fp32 rms_norm rows of 32K-64K, as clusters of 4 x 512 threads of 8 vectors (norm.cu's
# norm_tight_blocks: 64 registers; with the weight slice alone staged, 64 KB, 2 CTAs an SM), rows handed
# out. Session 16 (scripts/persistent_grid.py --dtype float32 --cfg 512x8x4 --dynamic --shmem 65536, H100;
# results/session16/fp32-512x8x4.txt): 1024 x 65536 94.4% of a same-bytes copy against 93.5% for the
# shared-memory rows in the same run, 2048 x 65536 97.2% against 96.1%. layer_norm's weight and bias take
# 128 KB, one CTA an SM: 83-84%, so it keeps norm_bulk. Session 18: with 6 (or 4) of a thread's 8 bias vectors
# staged, the rest read from L2 at the output (2 CTAs an SM), 85.4% (85.5%) against norm_bulk's 92.7% at 1024
# rows, 89.1% against 95.0% at 2048 (results/session18/fp32-ln-clusters.txt, fp32-ln-partial-bias.patch).
CLUSTER_ROWS_RMS = {torch.float32: {65536: (512, 8, 4)}}
# ... and fp32 layer_norm rows of 31K-32K, as clusters of 2 x 512 threads of 8 vectors (the same tight form,
# weight and bias slices staged: 128 KB, one CTA an SM, 66 clusters), rows handed out, where the one-CTA
# tile reads weight and bias from L2 at every row (256 KB a row beside the row's 128 KB; L1 cannot hold
# them). Session 20 (H100, interleaved with a same-bytes copy; results/session20/): 32768 x 32768 96.8% against
# 94.7% for the one-CTA tile (1024 x 8) in the same run (scripts/persistent_grid.py --dtype float32 --shape
# 32768x32768 --cfg 512x8x2 --dynamic; fp32-32k-clusters.txt); clusters of 2 x 1024 x 4 (not tight) 80.3%
# handed out, 89.1% in a fixed stride. By row length at 1 GB of input (scripts/ln_cluster_lengths.py;
# ln-cluster-lengths*.txt), clusters / tile: 16400 55.0 / 89.9%, 24576 77.8 / 95.0%, 28672 88.3 / 94.9%, 30720
# 93.1 / 95.3%, 31744 94.2 / 94.4%, 32764 92.8 / 86.4%, 32768 95.7 / 84.1-92.8%: a cluster's CTAs wait on the one
# holding the fuller slice, so the clusters win only where both slices are nearly full. rms_norm, reading its
# weight alone (128 KB: L1 keeps it), stays a CTA a row (99.5% against 98.6% as these clusters).
CLUSTER_ROWS_LN = {torch.float32: {32768: (512, 8, 2)}}
CLUSTER_ROWS_LN_FROM = 31744


# One-CTA-a-row configurations that layer_norm launches persistent (resident CTAs looping over rows),
# each CTA staging weight and bias in shared memory once (norm_rows' kStage) instead of reading them
# at every row. Session 12 (scripts/norm_parts.py, H100, 4096 x 4096 fp16, interleaved): the bias
# alone cost 8% (weight and bias 26.4 us, weight only 23.9); staged and persistent 23.9 us, +10.4%
# (2539 -> 2804 GB/s). Without persistence (a CTA per row staging its own) +6%; with the next row
# prefetched 25.6 us (96 registers: 5 CTAs an SM against 7). fp32 4096-element rows gained 1.8% per row
# and lost persistent, and rms_norm reads its weight at no cost (22.7 us with it, 22.9 without), so
# this is 16-bit layer_norm's alone.
STAGED_ROWS = {8: frozenset({(128, 4, 1)})}
# ... up to this many rows for fp16, whose staged kernel is norm.cu's tight form (48 registers, 10 CTAs
# an SM); more rows run the tight form a CTA a row, weight and bias read from L1 at the output. Session 13
# (scripts/norm_forms.py, H100, 4096-element fp16 rows, results/norm-forms-session13-h100.txt): staged /
# a CTA a row 14.7 / 15.8 us at 2048 rows, 23.5 / 24.2 at 4096, 46.9 / 46.6 at 8192, 94.2 / 91.2 at
# 16384, 188.5 / 179.6 at 32768 (98.0% of a same-bytes copy).
STAGED_MAX_ROWS = {torch.float16: 8192}
# rms_norm takes the staged form too for this many rows (a range, inclusive, by dtype); elsewhere it keeps
# its early weight reads a CTA a row (norm_early_wb: 89 registers, 5 CTAs an SM, against 48 and 10). Session
# 17 (scripts/staged_rms_ab.py, H100, fp16 4096-element rows, interleaved, each form launched twice; results/
# session17/staged-rms-ab*.txt), % of a same-bytes copy, staged / early: 2048 rows 88.0 / 91.6, 3072 93.8 /
# 94.0, 4096 95.0-97.0 / 92.4-94.3 (two runs), 5120 96.2 / 95.5, 6144 95.7 / 97.0, 8192 95.1 / 97.2. The range
# runs halfway to the neighbouring measured sizes.
STAGED_RMS_ROWS = {torch.float16: (3584, 5632)}
