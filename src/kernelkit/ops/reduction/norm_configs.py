"""layer_norm's and rms_norm's launch configurations: the typed configs, the rules choosing one, the rungs.

Each configuration is a frozen dataclass that knows its kernel (norm.cu), block, shared memory and
launch: ``Welford`` (a looping block a row), ``NormPacked`` (short rows: blocks of whole rows through
shared memory), ``NormTile`` (the row in registers: warp-packed rows, a CTA or a cluster a row;
``staged``: persistent CTAs with their slice of weight and bias staged in shared memory; ``handout``:
persistent clusters taking rows from a counter), ``BulkRing`` (row slices reaching shared memory by bulk
copies) and ``SmemRows`` (rows kept whole in shared memory). Each rung is one technique, its configuration
sized by a rule: a short function of the row's length, its element size and the device (compute
capability, shared memory per block). ``auto`` takes the first of packed_rows, warp_rows, cta_row and
cluster_row that holds the row. The numbers behind the rules are in docs/design/row-reductions.md.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional, Union

import torch

from ...ladder import Kernel
from ...runtime import plain_launcher
from .._shared.cxx import CXX_TYPE, cxx_bool
from ._rows import (ALIGNED, CLUSTER_SM, WINDOW, WINDOW_IN, PackedTile, RowTile, cdiv, check_config, cta_tile,
                    form_bits, needs_sm90, packed_tile, packs, per_vec, persistent_runner, row_runner,
                    WIDE_CLUSTER, wide_cluster_tile, warp_tile, window_len)

SRC = "reduction/norm.cu"
LOOP_BLOCK = 512  # norm_welford's block
STATIC_SHARED = 1024  # a row kernel's own shared memory (reductions, slots, mbarriers) beside the dynamic


def shared_per_block(sm: int) -> int:
    """Bytes of shared memory a block may opt into, by compute capability (the rules' device limit where the
    device is not at hand): 227 KB on sm_90, 163 KB on sm_80 and sm_87, 99 KB on sm_86 and sm_89."""
    return 227 * 1024 if sm >= 90 else 163 * 1024 if sm in (80, 87) else 99 * 1024


# Every configuration's ``runner(kernel, shmem, dev, len_)`` gives ``go(rows, args)``, its launch of ``rows``
# rows with args = (x, out, weight, bias, rows, len, eps, rms): pointers (0 for an absent weight or bias),
# two ints, np.float32 eps, np.int32 rms.


@dataclass(frozen=True)
class Welford:
    """norm_welford: a block of LOOP_BLOCK threads a row, any length (two reads and a write)."""

    block = LOOP_BLOCK

    def name(self, dtype: torch.dtype, form: int) -> str:
        return f"kk::norm_welford<{CXX_TYPE[dtype]}, {LOOP_BLOCK}>"

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        bits = torch.finfo(dtype).bits
        return Kernel(SRC, self.name(dtype, form), bits, bits, block=self.block)

    def check(self, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        pass

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        return 0

    def runner(self, kernel, shmem: int, dev: int, len_: int, dtype: torch.dtype):
        run = plain_launcher(kernel, dev, "norm_welford")

        def go(rows: int, args: tuple) -> None:
            run(rows, LOOP_BLOCK, 0, args[:4] + args[5:])  # a block a row; the kernel takes no row count
        return go


@dataclass(frozen=True)
class NormPacked(PackedTile):
    """norm_packed: short rows, a block of whole rows at a time through shared memory (PackedTile: ``group``
    lanes a row, ``elems`` elements a lane), weight and bias staged there once a CTA."""

    def name(self, dtype: torch.dtype, form: int) -> str:
        return f"kk::norm_packed<{CXX_TYPE[dtype]}, {self.config()}>"

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        # rows arrive by asynchronous 16-byte copies (LDGSTS: the only global loads are the staged weight's)
        return Kernel(SRC, self.name(dtype, form), None, 128, block=self.block, sass=("LDGSTS",))

    def check(self, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        check_config(op, self.holds(dtype, len_, form), self,
                     f"it holds rows of {self.capacity(dtype)} elements, the row has {len_}")

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        return 0

    def runner(self, kernel, shmem: int, dev: int, len_: int, dtype: torch.dtype):
        return self.runner_for(kernel, dtype, len_, dev, 8)


@dataclass(frozen=True)
class NormTile(RowTile):
    """norm_rows (C++: a ``kk::RowConfig``): the row held in registers (RowTile) at any alignment.
    ``staged``: persistent CTAs (only resident ones, looping over rows) copy their slice of weight and bias
    into shared memory once; cluster rows always do. ``handout``: persistent clusters take their rows from
    a counter at run time (RowHandout); without it they go in a fixed stride."""

    staged: bool = False
    handout: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.cluster > 1 and not self.staged:
            raise ValueError(f"{self}: cluster rows are persistent and stage weight and bias (staged=True)")
        if self.staged and self.threads <= 32:
            raise ValueError(f"{self}: weight and bias are staged by CTA rows (threads > 32)")
        if self.handout and self.cluster == 1:
            raise ValueError(f"{self}: rows are handed out to clusters (cluster > 1)")

    @property
    def rows_mode(self) -> int:
        """RowConfig's kRows: a group a row (0), persistent in a fixed stride (1), handed out (2)."""
        return 2 if self.handout else 1 if self.staged else 0

    def name(self, dtype: torch.dtype, form: int) -> str:
        return (f"kk::norm_rows<{CXX_TYPE[dtype]}, kk::RowConfig<{self.threads}, {self.vecs}, {self.cluster}, "
                f"{int(form)}, {self.rows_mode}, {int(self.staged)}>>")

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        load, store = form_bits(dtype, form)
        # staged slices arrive by asynchronous copies (LDGSTS); handed-out rows by a global atomic (ATOMG)
        sass = ("LDGSTS",) * self.staged + ("ATOMG",) * self.handout
        # cluster rows of 32 values a thread with out at another phase than x (stored word by word), or in a
        # window form in clusters of 16, may spill a few bytes at the 64-register cap (fp32 512 x 8: 12; bf16
        # 320 x 4 in 16: 8, measured with it at 82-93% of the copy)
        spills = (self.cluster > 1 and self.vecs * per_vec(dtype) >= 32
                  and (form == WINDOW_IN or form == WINDOW and self.cluster == WIDE_CLUSTER))
        return Kernel(SRC, self.name(dtype, form), load, store, block=self.block, min_sm=self.min_sm(), sass=sass,
                      spills=spills, dyn_shared=self.shared_bytes(True, True))

    def check(self, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        need = window_len(len_, dtype, form)
        check_config(op, form in (ALIGNED, WINDOW, WINDOW_IN), self, "norm rows move as 16-byte vectors")
        check_config(op, self.capacity(dtype) >= need, self, f"it holds {self.capacity(dtype)} elements, "
                     f"the row needs {need}")
        if self.cluster > 1:
            needs_sm90(op, self, sm, "thread-block clusters")

    def staged_chunks(self) -> int:
        """16-byte chunks of each staged array: the slice's and one more each side (rows at any phase)."""
        return self.threads * self.vecs + 2

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        """The staged weight chunks, then the bias chunks (placed after the weight's room)."""
        return self.staged_chunks() * 16 * (2 if bias else 1) if self.staged else 0

    def runner(self, kernel, shmem: int, dev: int, len_: int, dtype: torch.dtype):
        if not self.staged:
            return row_runner(kernel, self, dev, tail=(0,))  # no row-handout counter
        if self.handout:
            return persistent_runner(kernel, self.block, self.cluster, shmem, dev, handout=True)
        go_persistent = persistent_runner(kernel, self.block, self.cluster, shmem, dev)
        return lambda rows, args: go_persistent(rows, args + (0,))


def _check_bulk_rows(cfg, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
    """The checks of the configurations whose rows arrive by bulk copies (BulkRing, SmemRows): sm_90,
    aligned rows of whole vectors, the row within the configuration's capacity."""
    needs_sm90(op, cfg, sm, "bulk copies")
    check_config(op, form == ALIGNED, cfg, "bulk copies need 16-byte aligned rows of whole vectors")
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

    def name(self, dtype: torch.dtype, form: int = ALIGNED) -> str:
        t, g, v = CXX_TYPE[dtype], self.threads, self.vecs
        tail = f"{self.stages}, {cxx_bool(self.staged)}, {self.chunks}>"
        if self.cluster == 1:
            return f"kk::norm_bulk_dyn<{t}, {g}, {v}, {tail}"
        return f"kk::norm_bulk<{t}, {g}, {v}, {self.cluster}, {tail}"

    def kernel(self, dtype: torch.dtype, form: int = ALIGNED) -> Kernel:
        # the handed-out rings take their rows by a global atomic (ATOMG); 32 values a thread at 1024
        # threads (64 registers) may spill a few bytes (bf16)
        sass = ("UBLKCP", "ATOMG") if self.cluster == 1 else ("UBLKCP",)
        return Kernel(SRC, self.name(dtype), 128, 128, block=self.block, min_sm=CLUSTER_SM, sass=sass,
                      spills=self.threads == 1024 and self.vecs * per_vec(dtype) > 16,
                      dyn_shared=self.shared_bytes(True, True))

    def check(self, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        _check_bulk_rows(self, op, dtype, len_, form, sm)

    def shared_bytes(self, weight: bool, bias: bool) -> int:
        """The ring, then the staged weight and bias slices (those present)."""
        slice_bytes = self.threads * self.vecs * 16
        return self.stages * slice_bytes // self.chunks + ((weight + bias) * slice_bytes if self.staged else 0)

    def runner(self, kernel, shmem: int, dev: int, len_: int, dtype: torch.dtype):
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

    def name(self, dtype: torch.dtype, form: int = ALIGNED) -> str:
        return (f"kk::norm_smem<{CXX_TYPE[dtype]}, {self.threads}, {self.per}, {self.chunks}, {self.stages}, "
                f"{self.cluster}>")

    def kernel(self, dtype: torch.dtype, form: int = ALIGNED) -> Kernel:
        # the row arrives by bulk copies (UBLKCP: no global load of it to claim a width for)
        return Kernel(SRC, self.name(dtype), None, 128, block=self.block, min_sm=CLUSTER_SM, sass=("UBLKCP",),
                      dyn_shared=self.shared_bytes(True, True))

    def check(self, op: str, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        _check_bulk_rows(self, op, dtype, len_, form, sm)

    def shared_bytes(self, weight: bool = True, bias: bool = True) -> int:
        """The ring of chunk stages."""
        return self.stages * self.threads * self.per * 16

    def runner(self, kernel, shmem: int, dev: int, len_: int, dtype: torch.dtype):
        return persistent_runner(kernel, self.block, self.cluster, shmem, dev)


NormConfig = Union[Welford, NormPacked, NormTile, BulkRing, SmemRows]
CONFIG_CLASSES = (Welford, NormPacked, NormTile, BulkRing, SmemRows)
WELFORD = Welford()


# ---- the rules: each rung's holder of a row, None where the row is beyond it ---------------------------
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


def packed_rows(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormPacked]:
    """The shortest rows (their window at most _rows.PACKED_VECTORS vectors): blocks of whole rows through
    shared memory as 16-byte vectors of one stream."""
    return NormPacked(*packed_tile(len_)) if packs(len_, dtype) else None


def warp_rows(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormTile]:
    """Rows of up to 128 vectors: a power-of-two slice of a warp a row, several rows a warp, shuffles only."""
    got = warp_tile(_vectors(dtype, len_, form))
    return None if got is None else NormTile(*got)


def cta_row(dtype: torch.dtype, len_: int, form: int, sm: int, smem: int) -> Optional[NormTile]:
    """A CTA a row in registers: 4 vectors a thread over up to CTA_ROW threads where clusters exist (1024
    otherwise), then up to 32 values a thread."""
    got = cta_tile(_vectors(dtype, len_, form), most_vecs(dtype), max_threads=CTA_ROW if sm >= CLUSTER_SM else 1024)
    return None if got is None else NormTile(*got)


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


BULK_THREADS, BULK_STAGES = 1024, 3  # docs/design/row-reductions.md: 3 stages (90.9 / 92.6 / 91.6 / 90.6 for 2-5)


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
               smem: Optional[int] = None) -> NormConfig:
    """The configuration a rung launches for rows of ``len_`` elements of ``dtype`` in ``form`` (_rows.row_form)
    on a device of compute capability ``sm`` with ``smem`` bytes of shared memory a block (default: that of
    shared_per_block): the first of the rung's holders that holds the row, else welford."""
    if rung == "welford":
        return WELFORD
    smem = shared_per_block(sm) if smem is None else smem
    for rule in RUNG_RULES[rung]:
        cfg = rule(dtype, len_, int(form), sm, smem)
        if cfg is not None:
            return cfg
    return WELFORD


def config_order(cfg) -> tuple:
    """A stable listing order: by kind, then capacity."""
    return (CONFIG_CLASSES.index(type(cfg)), cfg.capacity(torch.float32) if hasattr(cfg, "capacity") else 0,
            repr(cfg))


# Row lengths whose configurations a rung lists (its kernels for `kernelkit inspect`, warmup and the CPU
# compile test; another length compiles its own on first use): each holder's reach, sampled.
SAMPLE_LENS = (1, 3, 7, 31, 100, 257, 1000, 4096, 8191, 16385, 32001, 65536, 151936, 262144, 300001)


@functools.cache
def configs(dtype: torch.dtype, *, form: int, rung: str = "auto") -> tuple[NormConfig, ...]:
    """The configurations ``config_for`` chooses for rows of ``dtype`` in ``form`` on sm_80 and sm_90 at
    SAMPLE_LENS."""
    found = {config_for(rung, dtype, len_, form=form, sm=sm) for len_ in SAMPLE_LENS for sm in (80, CLUSTER_SM)}
    return tuple(sorted(found, key=config_order))
