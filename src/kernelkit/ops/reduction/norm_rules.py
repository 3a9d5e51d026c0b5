"""The rules of layer_norm's and rms_norm's rungs: each a short function of the row's length, its element
size and the device (compute capability, shared memory per block) that sizes a configuration of
norm_configs.py to hold the row, or gives None where the row is beyond the rung. ``config_for`` runs a
rung's rules and falls back to welford; ``auto`` takes the first of packed_rows, warp_rows, cta_row and
cluster_row that holds the row. The numbers behind the rules are in docs/design/row-reductions.md.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

import torch

from ._rows import (ALIGNED, CLUSTER_SM, WINDOW, cdiv, cta_tile, packed_tile, packs, per_vec, warp_tile,
                    wide_cluster_tile, window_len)
from .norm_configs import WELFORD, BulkRing, NormConfig, NormPacked, NormTile, SmemRows, config_order

STATIC_SHARED = 1024  # a row kernel's own shared memory (reductions, slots, mbarriers) beside the dynamic


def shared_per_block(sm: int) -> int:
    """Bytes of shared memory a block may opt into, by compute capability (the rules' device limit where the
    device is not at hand): 227 KB on sm_90, 163 KB on sm_80 and sm_87, 99 KB on sm_86 and sm_89."""
    return 227 * 1024 if sm >= 90 else 163 * 1024 if sm in (80, 87) else 99 * 1024


# A thread holds at most 32 values (fp32 8 vectors, 16-bit 4) within its 64-register budget (norm.cu:
# row_registers); 16-bit threads at 64 values spill hundreds of bytes.
def most_vecs(dtype: torch.dtype) -> int:
    return 32 // per_vec(dtype)


def _vectors(dtype: torch.dtype, len_: int, form: int) -> int:
    return cdiv(window_len(len_, dtype, form), per_vec(dtype))


# One-CTA rows are held to CTA_ROW threads where clusters can take longer rows: two rows an SM then keep
# its loads in flight across the gaps of a row (its reductions, its weight and bias reads, its stores),
# where a 1024-thread row leaves the SM without loads in flight between rows.
CTA_ROW = 512


# 16-bit rows at any alignment (the window forms) held by one group (a warp slice or a CTA) go persistent with
# their weight and bias shifted once a thread (NormTile.phased): the shifted reads at every row (a funnel shift
# a word for 16-bit values) cost layer_norm 8-25% at 127-10007 elements; fp32 rows (word selects only) ran
# rms_norm 6-9% slower phased (docs/design/row-reductions.md). rms_norm keeps the shifted reads (config_for).
def _phased(dtype: torch.dtype, form: int) -> bool:
    return form >= WINDOW and dtype.itemsize == 2


def _tile(got: tuple, dtype: torch.dtype, form: int, smem: int) -> NormTile:
    """A group's tile, phased (_phased) where two CTAs an SM keep room for their slots (1024 threads x 4
    vectors take 128 KB)."""
    tile = NormTile(*got, phased=_phased(dtype, form))
    if tile.phased and 2 * (tile.shared_bytes(True, True) + STATIC_SHARED) > smem:
        return NormTile(*got)
    return tile


def packed_rows(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormPacked]:
    """The shortest rows (their window at most _rows.PACKED_VECTORS vectors): blocks of whole rows through
    shared memory as 16-byte vectors of one stream."""
    return NormPacked(*packed_tile(len_)) if packs(len_, dtype) else None


def warp_rows(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormTile]:
    """Rows of up to 128 vectors: a power-of-two slice of a warp a row, several rows a warp, shuffles only."""
    got = warp_tile(_vectors(dtype, len_, form))
    return None if got is None else _tile(got, dtype, form, smem)


def cta_row(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormTile]:
    """A CTA a row in registers: 4 vectors a thread over up to CTA_ROW threads where clusters exist (1024
    otherwise), then up to 32 values a thread."""
    got = cta_tile(_vectors(dtype, len_, form), most_vecs(dtype), max_threads=CTA_ROW if sm >= CLUSTER_SM else 1024)
    return None if got is None else _tile(got, dtype, form, smem)


def _fits(tile: NormTile, smem: int) -> bool:
    return tile.shared_bytes(True, True) + STATIC_SHARED <= smem


def cluster_row(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormTile]:
    """Rows past a CTA (sm_90): the smallest thread-block cluster (up to 16 CTAs on H100 and H200, 8
    elsewhere: wide_cluster_tile) of CTAs of at most CLUSTER_CTA threads x 32 values, else the largest of CTAs
    of up to 1024 threads at as many vectors a thread as their staged weight and bias leave shared memory
    for; persistent, each CTA staging its slice of weight and bias once, rows handed out. Rows one CTA holds
    stay cta_row."""
    one = cta_row(dtype, len_, form, sm, smem)
    if one is not None or sm < CLUSTER_SM:
        return one
    longest = min(most_vecs(dtype), ((smem - STATIC_SHARED) // 32 - 2) // 1024)  # 1024 threads' staged slices
    got = wide_cluster_tile(_vectors(dtype, len_, form), most_vecs(dtype), longest, sm)
    if got is None:
        return None
    tile = NormTile(*got, staged=True, handout=True)
    return tile if _fits(tile, smem) else None


def staged(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormTile]:
    """Weight and bias staged: persistent CTAs a row (at least two warps) copying their weight and bias into
    shared memory once, in a fixed stride; rows past a CTA as cluster_row."""
    got = cta_tile(_vectors(dtype, len_, form), most_vecs(dtype), max_threads=CTA_ROW if sm >= CLUSTER_SM else 1024)
    if got is None:
        return cluster_row(dtype, len_, form, sm, smem)
    tile = NormTile(*got, staged=True)
    return tile if _fits(tile, smem) else None


BULK_THREADS, BULK_STAGES = 1024, 3  # docs/design/row-reductions-long.md: 3 stages (90.9 / 92.6 / 91.6 / 90.6 for 2-5)


def bulk_ring(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[BulkRing]:
    """Aligned rows on sm_90 reaching shared memory by bulk copies into a ring of BULK_STAGES stages: a CTA of
    BULK_THREADS threads up to 4 vectors a thread, its ring a vector a thread a stage; then clusters of 2-8
    such CTAs at 2 vectors a thread, 8 CTAs at up to 4; weight and bias staged where shared memory has room."""
    if form != ALIGNED or sm < CLUSTER_SM:
        return None
    vectors = cdiv(len_, per_vec(dtype))
    if vectors <= BULK_THREADS * 4:
        vecs = cdiv(vectors, BULK_THREADS)
        ring = BulkRing(BULK_THREADS, vecs, 1, BULK_STAGES, True, vecs)
    else:
        cluster = next((c for c in (2, 4, 8) if vectors <= c * BULK_THREADS * 2), 8)
        vecs = cdiv(vectors, cluster * BULK_THREADS)
        if vecs > 4:
            return None
        ring = BulkRing(BULK_THREADS, vecs, cluster, BULK_STAGES, True)
    if ring.shared_bytes(True, True) + STATIC_SHARED > smem:
        ring = BulkRing(ring.threads, ring.vecs, ring.cluster, ring.stages, False, ring.chunks)
    return ring if ring.shared_bytes(False, False) + STATIC_SHARED <= smem else None


SMEM_THREADS, SMEM_PER = 1024, 2  # a chunk: 2 vectors a thread (32 KB of 16-bit rows)


def smem_rows(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[SmemRows]:
    """Aligned rows on sm_90 kept whole in shared memory: CTAs of SMEM_THREADS threads, chunks of SMEM_PER
    vectors a thread, the slice in as many chunks as a ring of 3 more stages leaves room for, one CTA a row
    or a cluster of two."""
    if form != ALIGNED or sm < CLUSTER_SM:
        return None
    chunk = SMEM_THREADS * SMEM_PER
    most_chunks = (smem - STATIC_SHARED) // (chunk * 16) - 3
    chunks = cdiv(cdiv(len_, per_vec(dtype)), chunk)
    cluster = next((c for c in (1, 2) if chunks <= c * most_chunks), None)  # larger clusters spill at 64 registers
    if cluster is None or most_chunks < 1:
        return None
    per_cta = cdiv(chunks, cluster)
    return SmemRows(SMEM_THREADS, SMEM_PER, per_cta, per_cta + 3, cluster)


Rule = Callable[[torch.dtype, int, int, int, int], Optional[object]]
RUNG_RULES: dict[str, tuple[Rule, ...]] = {
    "packed_rows": (packed_rows,), "warp_rows": (warp_rows,), "cta_row": (cta_row,), "cluster_row": (cluster_row,),
    "staged": (staged,), "bulk_ring": (bulk_ring,), "smem_rows": (smem_rows,),
    "auto": (packed_rows, warp_rows, cta_row, cluster_row),
}


def config_for(rung: str, dtype: torch.dtype, len_: int, *, form: int, sm: int,
               smem: Optional[int] = None, rms: bool = False) -> NormConfig:
    """The configuration a rung launches for rows of ``len_`` elements of ``dtype`` in ``form`` (_rows.row_form)
    on a device of compute capability ``sm`` with ``smem`` bytes of shared memory a block (default: that of
    shared_per_block): the first of the rung's holders that holds the row, else welford. ``rms``: for
    rms_norm, which reads no bias and keeps the shifted reads: phased, the H100 sweep (`python
    benchmarks/sweep.py --ops rms_norm`) ran its 16-bit rows of 127 at 68.6% of the copy against 77.5-80.5% and
    of 2053-10007 at 90.1-93.3% against 95.9-100.5%, where layer_norm gained 5-10 points on the same rows."""
    if rung == "welford":
        return WELFORD
    smem = shared_per_block(sm) if smem is None else smem
    for rule in RUNG_RULES[rung]:
        cfg = rule(dtype, len_, int(form), sm, smem)
        if cfg is not None:
            if rms and isinstance(cfg, NormTile) and cfg.phased:
                cfg = dataclasses.replace(cfg, phased=False)
            return cfg
    return WELFORD


# Row lengths whose configurations a rung lists (its kernels for `kernelkit inspect`, warmup and the CPU
# compile test; another length compiles its own on first use): each holder's reach, sampled.
SAMPLE_LENS = (1, 3, 7, 31, 100, 257, 1000, 4096, 8191, 16385, 32001, 65536, 151936, 262144, 300001)


@functools.cache
def configs(dtype: torch.dtype, *, form: int, rung: str = "auto") -> tuple[NormConfig, ...]:
    """The configurations ``config_for`` chooses for rows of ``dtype`` in ``form`` on sm_80 and sm_90 at
    SAMPLE_LENS."""
    found = {config_for(rung, dtype, len_, form=form, sm=sm, rms=rms) for len_ in SAMPLE_LENS
             for sm in (80, CLUSTER_SM) for rms in (False, True)}
    return tuple(sorted(found, key=config_order))
