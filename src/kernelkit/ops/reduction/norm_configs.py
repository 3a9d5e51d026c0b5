"""layer_norm's and rms_norm's launch configurations: one typed config for each way of holding a row.

Each configuration is a frozen dataclass that knows its kernel (norm.cu), block, shared memory and
launch: ``Welford`` (a looping block a row), ``NormPacked`` (short rows: blocks of whole rows through
shared memory), ``NormTile`` (the row in registers: warp-packed rows, a CTA or a cluster a row;
``staged``: persistent CTAs with their slice of weight and bias staged in shared memory; ``handout``:
persistent clusters taking rows from a counter; ``phased``: persistent groups keeping weight and bias shifted
to their rows' phase), ``BulkRing`` (row slices reaching shared memory by bulk
copies) and ``SmemRows`` (rows kept whole in shared memory). The rules that size one for a row, and the
rungs they make, are in norm_rules.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import torch

from ...ladder import Kernel
from ...runtime import allow_shared, plain_launcher
from ...runtime.launch import resident_blocks
from .._shared.cxx import CXX_TYPE, cxx_bool
from ._rows import (ALIGNED, CLUSTER_SM, WIDE_CLUSTER, WINDOW, WINDOW_IN, PackedTile, RowTile, check_config, form_bits,
                    needs_sm90, per_vec, persistent_runner, row_runner, window_len)

SRC = "reduction/norm.cu"
LOOP_BLOCK = 512  # norm_welford's block


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
    a counter at run time (RowHandout); without it they go in a fixed stride. ``phased`` (rows at any
    alignment, one CTA or warp slice a row): persistent groups in a fixed stride that keeps each group's row
    phase, each thread keeping its weight and bias vectors shifted to that phase in shared memory."""

    staged: bool = False
    handout: bool = False
    phased: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.cluster > 1 and not self.staged:
            raise ValueError(f"{self}: cluster rows are persistent and stage weight and bias (staged=True)")
        if self.staged and self.threads <= 32:
            raise ValueError(f"{self}: weight and bias are staged by CTA rows (threads > 32)")
        if self.handout and self.cluster == 1:
            raise ValueError(f"{self}: rows are handed out to clusters (cluster > 1)")
        if self.phased and (self.staged or self.cluster > 1):
            raise ValueError(f"{self}: phased weights are a CTA's or warp slice's own (no staging, no cluster)")

    @property
    def rows_mode(self) -> int:
        """RowConfig's kRows: a group a row (0), persistent in a fixed stride (1), handed out (2)."""
        return 2 if self.handout else 1 if self.staged or self.phased else 0

    @property
    def weights_mode(self) -> int:
        """RowConfig's kWeights: from global memory (0), staged slices (1), phased per-thread slots (2)."""
        return 2 if self.phased else int(self.staged)

    def name(self, dtype: torch.dtype, form: int) -> str:
        return (f"kk::norm_rows<{CXX_TYPE[dtype]}, kk::RowConfig<{self.threads}, {self.vecs}, {self.cluster}, "
                f"{int(form)}, {self.rows_mode}, {self.weights_mode}>>")

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
        """The staged weight chunks, then the bias chunks (placed after the weight's room); phased: a 16-byte
        slot a thread and vector of each (the bias after the weight's)."""
        if self.phased:
            return self.block * self.vecs * 16 * (2 if bias else 1)
        return self.staged_chunks() * 16 * (2 if bias else 1) if self.staged else 0

    def runner(self, kernel, shmem: int, dev: int, len_: int, dtype: torch.dtype):
        if self.phased:
            return phased_runner(kernel, self, shmem, dev, per_vec(dtype))
        if not self.staged:
            return row_runner(kernel, self, dev, tail=(0,))  # no row-handout counter
        if self.handout:
            return persistent_runner(kernel, self.block, self.cluster, shmem, dev, handout=True)
        go_persistent = persistent_runner(kernel, self.block, self.cluster, shmem, dev)
        return lambda rows, args: go_persistent(rows, args + (0,))


def phased_grid(rows: int, units: int, resident: int, phases: int) -> int:
    """CTAs of a phased launch: a CTA for every ``units`` rows where the resident CTAs take them at once, else
    the resident CTAs rounded down so that their row stride (CTAs x ``units``) is a multiple of ``phases``
    (elements a vector): every group then meets rows of one phase and shifts its weight and bias once."""
    need = -(-rows // units)
    if need <= resident:
        return need
    step = phases // math.gcd(phases, units)
    return max(step, resident // step * step)


def phased_runner(kernel, tile: NormTile, shmem: int, dev: int, phases: int):
    """``go(rows, args)`` of a phased tile: persistent CTAs (phased_grid) looping over rows in a fixed stride."""
    allow_shared(kernel, shmem, dev)
    units = 1 if tile.threads > 32 else tile.block // tile.threads
    resident = resident_blocks(kernel, tile.block, 1, dev, shmem)
    run = plain_launcher(kernel, dev, "phased row kernel")

    def go(rows: int, args: tuple) -> None:
        run(phased_grid(rows, units, resident, phases), tile.block, shmem, args + (0,))  # no handout counter
    return go


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


def config_order(cfg) -> tuple:
    """A stable listing order: by kind, then capacity."""
    return (CONFIG_CLASSES.index(type(cfg)), cfg.capacity(torch.float32) if hasattr(cfg, "capacity") else 0,
            repr(cfg))
