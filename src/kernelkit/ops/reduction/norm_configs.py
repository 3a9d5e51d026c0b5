"""layer_norm's and rms_norm's launch configurations: the typed configs, their tables, the rules.

Each configuration is a frozen dataclass that knows its kernel (norm.cu), block, shared memory and
launch: ``Welford`` (a looping block a row), ``NormTile`` (the row in registers: warp-packed rows, a
CTA or a cluster a row, optionally persistent with weight and bias staged in shared memory, optionally
taking rows handed out at run time), ``BulkRing`` (row slices reaching shared memory by bulk copies)
and ``SmemRows`` (rows kept whole in shared memory). ``config_for`` is the rule choosing one per
input; ``configs`` lists every configuration it can choose. The numbers behind the tables are in
docs/design/row-reductions.md.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Union

import torch

from ...ladder import Kernel
from .._shared.cxx import CXX_TYPE, cxx_bool
from ...runtime import plain_launcher
from ._rows import (ALIGNED, CLUSTER_SM, ELEMS, VECS_A_THREAD, WINDOW, WINDOW_IN, RowTile, cdiv, check_config,
                    cta_tile, form_bits, needs_sm90, per_vec, persistent_runner, pick, row_runner, warp_tile,
                    window_len)

SRC = "reduction/norm.cu"
LOOP_BLOCK = 512  # norm_welford's block


# Every configuration's ``runner(kernel, shmem, dev)`` gives ``go(rows, args)``, its launch of ``rows`` rows
# with args = (x, out, weight, bias, rows, len, eps, rms): pointers (0 for an absent weight or bias),
# two ints, np.float32 eps, np.int32 rms.


@dataclass(frozen=True)
class Welford:
    """norm_welford: a block of LOOP_BLOCK threads a row, any length (two reads and a write)."""

    block = LOOP_BLOCK

    def name(self, dtype: torch.dtype, form: int) -> str:
        return f"kk::norm_welford<{CXX_TYPE[dtype]}, {LOOP_BLOCK}>"

    def kernel(self, dtype: torch.dtype, vec: bool) -> Kernel:
        bits = torch.finfo(dtype).bits
        return Kernel(SRC, self.name(dtype, vec), bits, bits, block=self.block)

    def check(self, op: str, dtype: torch.dtype, len_: int, vec: bool, sm: int) -> None:
        pass

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        return 0

    def runner(self, kernel, shmem: int, dev: int):
        run = plain_launcher(kernel, dev, "norm_welford")

        def go(rows: int, args: tuple) -> None:
            run(rows, LOOP_BLOCK, 0, args[:4] + args[5:])  # a block a row; the kernel takes no row count
        return go


@dataclass(frozen=True)
class NormTile(RowTile):
    """norm_rows: the row held in registers (RowTile). ``staged``: persistent CTAs (resident ones only,
    looping over rows) stage their slice of weight and bias in shared memory once; clusters always do.
    ``early``: one-CTA aligned rows request weight and bias before the row. ``handout``: persistent
    clusters take rows handed out at run time by a counter (norm_rows_dyn; aligned rows)."""

    staged: bool = False
    early: bool = False
    handout: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.cluster > 1 and not self.staged:
            raise ValueError(f"{self}: cluster rows are persistent and stage weight and bias (staged=True)")
        if self.early and (self.staged or self.cluster > 1):
            raise ValueError(f"{self}: early weight reads are for unstaged one-CTA rows")
        if self.handout and self.cluster == 1:
            raise ValueError(f"{self}: rows are handed out to clusters (cluster > 1)")

    def form(self, form: int) -> int:
        """The form this tile runs rows of ``form`` in: the window forms are for one-CTA (or warp) rows
        that stage nothing; staged and cluster rows at any other alignment move element by element."""
        return ELEMS if form >= WINDOW and (self.staged or self.cluster > 1) else int(form)

    def name(self, dtype: torch.dtype, form: int) -> str:
        t, g, v, c = CXX_TYPE[dtype], self.threads, self.vecs, self.cluster
        if self.handout:
            return f"kk::norm_rows_dyn<{t}, {g}, {v}, {c}>"
        return (f"kk::norm_rows<{t}, {g}, {v}, {c}, {self.form(form)}, {cxx_bool(self.early)}, "
                f"{cxx_bool(self.staged)}>")

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        form = self.form(form)
        load, store = form_bits(dtype, form)
        # aligned staged slices arrive by asynchronous copies (LDGSTS: cp.async)
        sass = ("LDGSTS",) if self.staged and form == ALIGNED else ()
        # window rows of 32 values a thread past 512 threads (bf16: ~36 bytes) may spill a few bytes too
        spills = self in SPILLING.get(per_vec(dtype), ()) or (form >= WINDOW and self.vecs * per_vec(dtype) >= 32
                                                             and self.threads > 512)
        return Kernel(SRC, self.name(dtype, form), load, store, block=self.block, min_sm=self.min_sm(), sass=sass,
                      spills=spills, dyn_shared=self.shared_bytes(True, True))

    def check(self, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        need = window_len(len_, dtype, self.form(form))
        check_config(op, self.capacity(dtype) >= need, self, f"it holds {self.capacity(dtype)} elements, "
                     f"the row needs {need}")
        if self.cluster > 1:
            needs_sm90(op, self, sm, "thread-block clusters")
        check_config(op, form == ALIGNED or not (self.early or self.handout), self,
                     "early weight reads and handed-out rows need 16-byte aligned rows of whole vectors")

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        """The staged weight and bias slices (handed-out clusters: the bias slice only with a bias)."""
        if not self.staged:
            return 0
        slice_bytes = self.threads * self.vecs * 16
        return slice_bytes * (1 + bias) if self.handout else 2 * slice_bytes

    def runner(self, kernel, shmem: int, dev: int):
        if not self.staged:
            return row_runner(kernel, self, dev)
        return persistent_runner(kernel, self.block, self.cluster, shmem, dev, handout=self.handout)


def _check_bulk_rows(cfg, op: str, dtype: torch.dtype, len_: int, vec: bool, sm: int) -> None:
    """The checks of the configurations whose rows arrive by bulk copies (BulkRing, SmemRows): sm_90,
    aligned rows of whole vectors, the row within the configuration's capacity."""
    needs_sm90(op, cfg, sm, "bulk copies")
    check_config(op, vec == ALIGNED, cfg, "bulk copies need 16-byte aligned rows of whole vectors")
    check_config(op, cfg.capacity(dtype) >= len_, cfg, f"it holds {cfg.capacity(dtype)} elements, "
                 f"the row has {len_}")


@dataclass(frozen=True)
class BulkRing:
    """norm_bulk (sm_90): persistent clusters of ``cluster`` CTAs of ``threads`` threads, each CTA's row
    slice (``vecs`` 16-byte vectors a thread) arriving in ``chunks`` bulk copies into a ring of ``stages``
    chunk stages in shared memory; ``staged``: weight and bias staged there too. One-CTA rings
    (cluster 1) take their rows handed out at run time (norm_bulk_dyn), clusters in a fixed stride.
    Aligned rows only."""

    threads: int
    vecs: int
    cluster: int
    stages: int
    staged: bool
    chunks: int = 1

    def __post_init__(self):
        if not (self.threads % 32 == 0 and 32 <= self.threads <= 1024 and self.cluster in (1, 2, 4, 8)
                and self.vecs % self.chunks == 0 and self.stages >= 1):
            raise ValueError(f"{self}: threads a multiple of 32 <= 1024, cluster 1, 2, 4 or 8, whole vectors a chunk")

    @property
    def block(self) -> int:
        return self.threads

    def capacity(self, dtype: torch.dtype) -> int:
        return self.threads * self.vecs * per_vec(dtype) * self.cluster

    def name(self, dtype: torch.dtype, vec: bool = True) -> str:
        t, g, v = CXX_TYPE[dtype], self.threads, self.vecs
        tail = f"{self.stages}, {cxx_bool(self.staged)}, {self.chunks}>"
        if self.cluster == 1:
            return f"kk::norm_bulk_dyn<{t}, {g}, {v}, {tail}"
        return f"kk::norm_bulk<{t}, {g}, {v}, {self.cluster}, {tail}"

    def kernel(self, dtype: torch.dtype, vec: bool = True) -> Kernel:
        # the handed-out rings take their rows by a global atomic (ATOMG); 32 values a thread at 1024
        # threads (64 registers) may spill a few bytes (bf16)
        sass = ("UBLKCP", "ATOMG") if self.cluster == 1 else ("UBLKCP",)
        return Kernel(SRC, self.name(dtype), 128, 128, block=self.block, min_sm=CLUSTER_SM, sass=sass,
                      spills=self.threads == 1024 and self.vecs * per_vec(dtype) > 16,
                      dyn_shared=self.shared_bytes(True, True))

    def check(self, op: str, dtype: torch.dtype, len_: int, vec: bool, sm: int) -> None:
        _check_bulk_rows(self, op, dtype, len_, vec, sm)

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        """The ring, then the staged weight and bias slices (those present)."""
        slice_bytes = self.threads * self.vecs * 16
        return self.stages * slice_bytes // self.chunks + ((weight + bias) * slice_bytes if self.staged else 0)

    def runner(self, kernel, shmem: int, dev: int):
        return persistent_runner(kernel, self.block, self.cluster, shmem, dev, handout=self.cluster == 1)


@dataclass(frozen=True)
class SmemRows:
    """norm_smem (sm_90, rows_smem.cuh): rows kept whole in shared memory, a persistent CTA (or cluster)
    a row. A CTA's slice is ``chunks`` chunks of ``threads`` x ``per`` 16-byte vectors, landing by bulk
    copies in a ring of ``stages`` chunk stages. Aligned rows only."""

    threads: int
    per: int
    chunks: int
    stages: int
    cluster: int = 1

    def __post_init__(self):
        if not (self.threads % 32 == 0 and self.threads <= 1024 and self.stages > self.chunks
                and self.cluster in (1, 2, 4, 8)):
            raise ValueError(f"{self}: threads a multiple of 32 <= 1024, more stages than chunks, cluster 1-8")

    @property
    def block(self) -> int:
        return self.threads

    def capacity(self, dtype: torch.dtype) -> int:
        return self.threads * self.per * per_vec(dtype) * self.chunks * self.cluster

    def name(self, dtype: torch.dtype, vec: bool = True) -> str:
        return (f"kk::norm_smem<{CXX_TYPE[dtype]}, {self.threads}, {self.per}, {self.chunks}, {self.stages}, "
                f"{self.cluster}>")

    def kernel(self, dtype: torch.dtype, vec: bool = True) -> Kernel:
        # the row arrives by bulk copies (UBLKCP: no global load of it to claim a width for)
        return Kernel(SRC, self.name(dtype), None, 128, block=self.block, min_sm=CLUSTER_SM, sass=("UBLKCP",),
                      dyn_shared=self.shared_bytes(True, True))

    def check(self, op: str, dtype: torch.dtype, len_: int, vec: bool, sm: int) -> None:
        _check_bulk_rows(self, op, dtype, len_, vec, sm)

    def shared_bytes(self, weight: bool = True, bias: bool = True) -> int:
        """The ring of chunk stages."""
        return self.stages * self.threads * self.per * 16

    def runner(self, kernel, shmem: int, dev: int):
        return persistent_runner(kernel, self.block, self.cluster, shmem, dev)


NormConfig = Union[Welford, NormTile, BulkRing, SmemRows]
CONFIG_CLASSES = (Welford, NormTile, BulkRing, SmemRows)
WELFORD = Welford()
T = NormTile  # short, for the tables

# ---- the rule -------------------------------------------------------------------------------------
# The row in registers: warp-packed rows, then a CTA a row (_rows.warp_tile, cta_tile: up to 1024 threads x
# 32 values); the registers rung holds VECS_A_THREAD vectors a thread at most (welford beyond); on sm_90
# the tuned persistent forms below take over for their rows.
def register_tile(rung: str, dtype: torch.dtype, len_: int, form: int) -> "NormTile | None":
    """The register tile of a rung for rows of ``len_`` in ``form`` (None: the row needs more)."""
    vectors = cdiv(window_len(len_, dtype, form), per_vec(dtype))
    got = None if rung == "registers" else warp_tile(vectors)
    if got is None:
        got = cta_tile(vectors, VECS_A_THREAD if rung == "registers" else 32 // per_vec(dtype),
                       min_threads=128 if rung == "registers" else 64)
    return None if got is None else NormTile(*got)


# Rows that cannot move as 16-byte vectors read element by element, which costs registers: the 32K
# tiles would spill, so those rows take these clusters (sm_90) or welford (sm_80).
VEC_ONLY = {4: frozenset({T(1024, 8)}), 8: frozenset({T(1024, 4)})}
REGISTER_ROWS = {4: 32768, 8: 32768}  # the longest rows of a one-CTA register tile (1024 threads x 32 values)
UNALIGNED = {4: T(256, 4, 8, staged=True), 8: T(512, 2, 4, staged=True)}
UNALIGNED_LONG = {4: {32768: UNALIGNED[4], 65536: T(512, 4, 8, staged=True)},
                  8: {32768: UNALIGNED[8], 65536: T(1024, 4, 2, staged=True)}}
# 32 values a thread at 1024 threads (64 registers): ptxas spills a few bytes for some (arch, dtype)
# pairs; still the fastest for their rows, so these may use local memory.
SPILLING = {4: frozenset({T(1024, 8)}), 8: frozenset({T(1024, 4), T(1024, 4, 2, staged=True)})}

# 16-bit layer_norm rows of 2K-4K elements: persistent CTAs staging weight and bias once (+10% at
# 4096 x 4096 fp16), for fp16 up to STAGED_MAX_ROWS rows (more: a CTA a row, weight and bias read at the
# output) and for fp16 rms_norm within STAGED_RMS_ROWS (elsewhere its early weight reads win).
STAGED_ROWS = {8: T(128, 4)}
STAGED_MAX_ROWS = {torch.float16: 8192}
STAGED_RMS_ROWS = {torch.float16: (3584, 5632)}  # inclusive

# Aligned rows on sm_90 past the register tiles, tried in this order (docs/design/row-reductions.md):
# the tight register-tile clusters (64 registers, weight and bias staged, rows handed out) for fp16 rows
# of 32K-64K, fp32 rms_norm rows of 32K-64K and fp32 layer_norm rows of 31K-32K (where both slices of
# the cluster are nearly full; shorter rows keep the one-CTA tile) ...
CLUSTER_ROWS = {torch.float16: {65536: T(256, 4, 8, staged=True, handout=True)}}
CLUSTER_ROWS_FROM = 32768
CLUSTER_ROWS_RMS = {torch.float32: {65536: T(512, 8, 4, staged=True, handout=True)}}
CLUSTER_ROWS_LN = {torch.float32: {32768: T(512, 8, 2, staged=True, handout=True)}}
CLUSTER_ROWS_LN_FROM = 31744
# ... bf16 rows of 32K-64K kept whole in shared memory (bf16 spills in the tight clusters) ...
SMEM = {"rms_norm": {torch.bfloat16: {65536: SmemRows(1024, 2, 4, 7, 1)}},
        "layer_norm": {torch.bfloat16: {65536: SmemRows(512, 2, 4, 6, 2)}}}
SMEM_FROM = 32768
# ... and bulk-copy rings: the rest past 32K elements (fp32 layer_norm's 64K rows, every dtype's 128K
# rows; 3 stages for fp32 64K rows), and 16-bit layer_norm rows of 16K-32K as one-CTA rings with weight
# and bias staged (93.7% of a same-bytes copy against 88.8% for the register tile at 32768^2 fp16).
BULK = {4: {65536: BulkRing(1024, 2, 8, 3, True), 131072: BulkRing(1024, 4, 8, 3, False)},
        8: {131072: BulkRing(1024, 4, 4, 3, False)}}
BULK_FROM = 32768
BULK_LAYER_NORM = {8: {32768: BulkRing(1024, 4, 1, 3, True, 4)}}
BULK_LAYER_NORM_FROM = 16384


# ---- the rule ------------------------------------------------------------------------------------
def _early(dtype: torch.dtype, tile: NormTile, aligned: bool) -> bool:
    """Weight and bias requested before the row: fp16 rows of 128 x 4 only, where it costs no CTA an SM
    (+4-7% for rms_norm at 4096-element rows; elsewhere the registers it takes cost more)."""
    return dtype == torch.float16 and aligned and tile == T(128, 4)


def _cluster_rows(dtype: torch.dtype, len_: int, rms: bool):
    if len_ <= CLUSTER_ROWS_FROM:
        return pick(len_, CLUSTER_ROWS_LN.get(dtype, {})) if not rms and len_ > CLUSTER_ROWS_LN_FROM else None
    cfg = pick(len_, CLUSTER_ROWS.get(dtype, {}))
    return pick(len_, CLUSTER_ROWS_RMS.get(dtype, {})) if cfg is None and rms else cfg


def _smem(dtype: torch.dtype, len_: int, rms: bool):
    return pick(len_, SMEM["rms_norm" if rms else "layer_norm"].get(dtype, {})) if len_ > SMEM_FROM else None


def _bulk(dtype: torch.dtype, len_: int, rms: bool):
    if len_ > BULK_FROM:
        return pick(len_, BULK[per_vec(dtype)])
    if not rms and len_ > BULK_LAYER_NORM_FROM:
        return pick(len_, BULK_LAYER_NORM.get(per_vec(dtype), {}))
    return None


def config_for(rung: str, dtype: torch.dtype, len_: int, *, aligned: int, rms: bool, rows: int,
               sm: int) -> NormConfig:
    """The configuration a rung launches for ``rows`` rows of ``len_`` elements of ``dtype`` on an sm_``sm``
    device; ``aligned``: the row form (_rows.row_form; True: ALIGNED, every pointer 16-byte aligned and the
    row a whole number of vectors; False: ELEMS; WINDOW, WINDOW_IN: rows at any alignment)."""
    if rung == "welford":
        return WELFORD
    form = int(aligned)
    clusters = sm >= CLUSTER_SM
    fast = rung == "fast"
    if fast and form == ALIGNED and clusters:
        for rule in (_cluster_rows, _smem, _bulk):
            cfg = rule(dtype, len_, rms)
            if cfg is not None:
                return cfg
    tile = register_tile(rung, dtype, len_, form)
    if tile is None:
        n = per_vec(dtype)
        # rows past a CTA's registers at another alignment: clusters element by element (sm_90)
        long = pick(len_, UNALIGNED_LONG[n]) if fast and clusters and form != ALIGNED else None
        return WELFORD if long is None else long
    n = per_vec(dtype)
    if fast and form == ALIGNED and n in STAGED_ROWS and tile.cluster == 1 and 64 < tile.threads <= 128:
        tile = STAGED_ROWS[n]  # 16-bit CTAs of up to 4 warps: the tight 128 x 4 tile (10 CTAs an SM)
    if fast and form == ALIGNED and tile == STAGED_ROWS.get(n):
        lo, hi = STAGED_RMS_ROWS.get(dtype, (1, 0))
        if not rms or lo <= rows <= hi:
            return replace(tile, staged=True) if rows <= STAGED_MAX_ROWS.get(dtype, rows) else tile
    if fast and form == ELEMS and tile in VEC_ONLY[n]:
        return UNALIGNED[n] if clusters else WELFORD
    return replace(tile, early=True) if _early(dtype, tile, form == ALIGNED) else tile


def rows_class(dtype: torch.dtype, rows: int, rms: bool) -> tuple[bool, bool]:
    """What of the row count config_for reads: past STAGED_MAX_ROWS, inside STAGED_RMS_ROWS (a plan key)."""
    lo, hi = STAGED_RMS_ROWS.get(dtype, (1, 0))
    return rows > STAGED_MAX_ROWS.get(dtype, rows), rms and lo <= rows <= hi


def rows_matter(dtype: torch.dtype, rms: bool) -> bool:
    """Whether rows_class depends on the row count for this dtype and op (else it is (False, False))."""
    return dtype in STAGED_MAX_ROWS or (rms and dtype in STAGED_RMS_ROWS)


def config_order(cfg) -> tuple:
    """A stable listing order: by kind, then capacity."""
    return (CONFIG_CLASSES.index(type(cfg)), cfg.capacity(torch.float32) if hasattr(cfg, "capacity") else 0,
            repr(cfg))


# Row lengths whose configurations a rung lists (its kernels for `kernelkit inspect`, warmup and the CPU
# compile test; another length compiles its own on first use): the rule's thresholds, sampled.
SAMPLE_LENS = (1, 7, 100, 257, 512, 1000, 2049, 4096, 5120, 8191, 14336, 16385, 24576, 31745, 32001, 32768,
               40000, 65536, 131072, 151936, 300000)


@functools.cache
def configs(dtype: torch.dtype, *, aligned: int, rung: str = "fast") -> tuple[NormConfig, ...]:
    """The configurations ``config_for`` chooses for rows of ``dtype`` in form ``aligned`` on sm_80 and sm_90,
    at SAMPLE_LENS, the lengths of the tuned tables and around the row-count thresholds."""
    n = per_vec(dtype)
    lens = set(SAMPLE_LENS)
    for table in (BULK[n], BULK_LAYER_NORM.get(n, {}), CLUSTER_ROWS.get(dtype, {}),
                  CLUSTER_ROWS_RMS.get(dtype, {}), CLUSTER_ROWS_LN.get(dtype, {}),
                  *(t.get(dtype, {}) for t in SMEM.values())):
        lens |= set(table)
    rows = {1, STAGED_MAX_ROWS.get(dtype, 1), *STAGED_RMS_ROWS.get(dtype, (1, 1))}
    found = {config_for(rung, dtype, len_, aligned=aligned, rms=rms, rows=r + e, sm=sm)
             for len_ in lens for r in rows for e in (-1, 0, 1) if r + e >= 1
             for rms in (False, True) for sm in (80, CLUSTER_SM)}
    return tuple(sorted(found, key=config_order))
