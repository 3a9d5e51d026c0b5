"""What softmax and the norms share: the row tile, the row forms, the rules sizing a tile from a row's
length, the packed short rows, launches, the handout counters.

A row kernel (softmax_rows, norm_rows) is instantiated per tile (C++: one ``kk::RowConfig``):
``threads`` threads (a warp slice when <= 32, several rows to a block of ROW_BLOCK; else a whole CTA)
hold ``vecs`` 16-byte vectors each, and ``cluster`` CTAs (sm_90 thread-block clusters) split one row;
and per row form (how rows move: ``ALIGNED`` 16-byte vectors, ``WINDOW`` the vectors of the aligned
window covering a row at any alignment, ``WINDOW_IN`` the same loads with element-wise stores).
``warp_tile``, ``cta_tile`` and ``cluster_tile`` size a tile from the row's vectors; ``packed_tile``
the lanes of a packed short row (softmax_packed, norm_packed: blocks of whole rows through shared
memory). Each op's configurations are typed frozen dataclasses that know their kernel, block, shared
memory and launch; rules in the op's module choose one per input, and the public functions take one
through ``config=`` (tuning and tests).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Callable, Iterable

import torch

from ...runtime import allow_shared, launch, plain_launcher, resident_blocks, stream_handle

ROW_BLOCK = 128  # the block size of kernels packing several rows per block (threads <= 32)
CLUSTER_SM = 90  # thread-block clusters, bulk copies and mbarriers: sm_90 and later


def per_vec(dtype: torch.dtype) -> int:
    return 16 // dtype.itemsize  # elements per 16-byte vector


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pow2_at_least(v: int) -> int:
    return 1 << max(0, v - 1).bit_length()


# Row forms (RowTile's kForm in row_tile.cuh): how a row's slice moves between global memory and the tile.
ELEMS, ALIGNED, WINDOW, WINDOW_IN = 0, 1, 2, 3
FORMS = (ELEMS, ALIGNED, WINDOW, WINDOW_IN)


def row_form(len_: int, dtype: torch.dtype, x: int, out: int, *others: int) -> int:
    """The form of rows of ``len_`` elements at addresses x and out (others: weight, bias; 0 if absent):
    ALIGNED where every pointer is 16-byte aligned and rows are whole vectors, else WINDOW where x and out
    share their phase (every row then starts equally misaligned in both), else WINDOW_IN."""
    p = x | out
    for q in others:
        p |= q
    if p & 15 == 0 and len_ % per_vec(dtype) == 0:
        return ALIGNED
    return WINDOW if (x ^ out) & 15 == 0 else WINDOW_IN


def window_len(len_: int, dtype: torch.dtype, form: int) -> int:
    """Elements a tile must hold for rows of ``len_`` in ``form``: a window form adds up to N - 1 elements
    of the row before (the head of its first vector)."""
    return len_ + per_vec(dtype) - 1 if form >= WINDOW else len_


def form_bits(dtype: torch.dtype, form: int) -> tuple[int, int]:
    """(load bits, store bits) of the main body of a form: 16-byte vectors; out at another phase than x
    (WINDOW_IN) stored a 32-bit word (a pair of 16-bit elements) at a time where it can; element by element."""
    e = torch.finfo(dtype).bits
    return (128 if form != ELEMS else e), (128 if form in (ALIGNED, WINDOW) else 32 if form == WINDOW_IN else e)


@dataclass(frozen=True)
class RowTile:
    """A row in registers: ``threads`` threads x ``vecs`` 16-byte vectors a thread x ``cluster`` CTAs.
    ``threads`` <= 32 (a power of two): a warp slice a row, several rows a block; else a CTA of a
    multiple of 32 threads a row (slice)."""

    threads: int
    vecs: int
    cluster: int = 1

    def __post_init__(self):
        ok = _pow2(self.threads) if self.threads <= 32 else self.threads % 32 == 0 and self.threads <= 1024
        if not (ok and self.vecs >= 1 and self.cluster in (1, 2, 4, 8, WIDE_CLUSTER)):
            raise ValueError(f"{self}: threads a power of two <= 32 or a multiple of 32 <= 1024, vecs >= 1, "
                             f"cluster 1, 2, 4, 8 or {WIDE_CLUSTER}")
        if self.cluster > 1 and self.threads <= 32:
            raise ValueError(f"{self}: a cluster splits rows held by whole CTAs (threads > 32)")

    @property
    def block(self) -> int:
        return self.threads if self.threads > 32 else ROW_BLOCK

    def capacity(self, dtype: torch.dtype) -> int:
        """Elements of the longest row the tile holds (aligned rows; a window form holds N - 1 fewer)."""
        return self.threads * self.vecs * per_vec(dtype) * self.cluster

    def holds(self, dtype: torch.dtype, len_: int, form: int) -> bool:
        return self.capacity(dtype) >= window_len(len_, dtype, form)

    def grid(self, rows: int) -> int:
        """CTAs of a launch with one group (or cluster) per row."""
        if self.threads <= 32:
            return -(-rows // (ROW_BLOCK // self.threads))
        return rows * self.cluster

    def min_sm(self) -> int:
        return CLUSTER_SM if self.cluster > 1 else 0


# ---- the rule sizing a register tile ------------------------------------------------------------------
# A row is held once in registers: as few threads as hold it with VECS_A_THREAD 16-byte vectors each
# (64 bytes in flight a thread), from a power-of-two slice of a warp (short rows, several to a warp) to a
# CTA of up to 1024 threads; then more vectors a thread, up to 32 values (the 64-register cap at 1024
# threads); then (sm_90) a cluster of CTAs of at most CLUSTER_CTA threads (clusters of CTAs that fill an
# SM are placed fewer: docs/design/row-reductions-long.md), up to MAX_CLUSTER CTAs of 1024 threads.
VECS_A_THREAD = 4
MIN_CTA = 64  # a CTA row has at least two warps (a row of fewer threads is a warp slice)
CLUSTER_CTA = 512
MAX_CLUSTER = 8  # the portable cluster size
# Clusters of 16 CTAs are a non-portable size (the kernel opts in at launch): sm_90 (H100, H200) runs them,
# within a GPC. The norms take them past 8 CTAs of CLUSTER_CTA threads (wide_cluster_tile).
WIDE_CLUSTER = 16
WIDE_CLUSTER_SMS = (90,)


def warp_tile(vectors: int):
    """(lanes, vecs) for rows of up to 32 x VECS_A_THREAD vectors: a power-of-two slice of a warp, the
    fewest lanes holding VECS_A_THREAD vectors each; None for longer rows."""
    if vectors > 32 * VECS_A_THREAD:
        return None
    lanes = min(32, pow2_at_least(cdiv(vectors, VECS_A_THREAD)))
    return lanes, cdiv(vectors, lanes)


def cta_tile(vectors: int, most_vecs: int, min_threads: int = MIN_CTA, max_threads: int = 1024):
    """(threads, vecs) of one CTA holding ``vectors`` vectors: VECS_A_THREAD a thread over a multiple of 32
    threads; past ``max_threads`` threads, more vectors a thread up to ``most_vecs`` (None beyond), spread
    over the fewest warps that hold the row at that many."""
    if vectors > max_threads * VECS_A_THREAD:
        vecs = max(VECS_A_THREAD, cdiv(vectors, max_threads))
    else:
        vecs = VECS_A_THREAD
    if vecs > most_vecs:
        return None
    threads = max(min_threads, 32 * cdiv(cdiv(vectors, vecs), 32))
    return threads, cdiv(vectors, threads)


def cluster_tile(vectors: int, most_vecs: int, longest_vecs: int, max_cluster: int = MAX_CLUSTER):
    """(threads, vecs, cluster): the smallest cluster whose CTAs of at most CLUSTER_CTA threads hold the row
    at up to ``most_vecs`` vectors a thread; else ``max_cluster`` CTAs of up to 1024 threads and
    ``longest_vecs`` vectors a thread; None beyond."""
    c = 2
    while c <= max_cluster:
        per = cdiv(vectors, c)
        if per <= CLUSTER_CTA * most_vecs:
            vecs = min(most_vecs, max(VECS_A_THREAD, cdiv(per, CLUSTER_CTA)))
            threads = max(MIN_CTA, 32 * cdiv(cdiv(per, vecs), 32))
            return threads, cdiv(per, threads), c
        c *= 2
    per = cdiv(vectors, max_cluster)
    vecs = cdiv(per, 1024)
    if vecs > longest_vecs:
        return None
    threads = 32 * cdiv(cdiv(per, vecs), 32)
    return threads, cdiv(per, threads), max_cluster


def wide_cluster_tile(vectors: int, most_vecs: int, longest_vecs: int, sm: int):
    """cluster_tile up to WIDE_CLUSTER CTAs where the device runs them (WIDE_CLUSTER_SMS), else up to the
    portable size. Past 8 CTAs of CLUSTER_CTA threads, 16 such CTAs (several to an SM) measured faster than 8
    of up to 1024 (one to an SM) on every row tried: layer_norm / rms_norm bf16 883 x 151936 61% / 67% of the
    copy with 8 x 800 threads, 82% / 93% with 16 x 320; fp32 640 x 200003 70% / 95% against 76% / 98%
    (docs/design/row-reductions-long.md)."""
    return cluster_tile(vectors, most_vecs, longest_vecs, WIDE_CLUSTER if sm in WIDE_CLUSTER_SMS else MAX_CLUSTER)


# ---- packed short rows ---------------------------------------------------------------------------
# Rows whose window spans at most PACKED_VECTORS 16-byte vectors (a slice of 4 lanes x 4 vectors) move as
# blocks of whole rows through shared memory (rows_packed.cuh): a block is one contiguous run of the
# tensor, so only its first and last vectors are partial, where a row held by its own lanes has a partial
# vector at each end (and rows of a few elements share their vectors with their neighbours).
PACKED_VECTORS = 16
PACKED_BLOCK, PACKED_BLOCK_VECS = 256, 4  # PackedConfig's kBlock and kVecs (rows_packed.cuh)
PACKED_ELEMS = 4  # elements a lane of a packed row takes (its statistics: kE values, then shuffles)


def packs(len_: int, dtype: torch.dtype) -> bool:
    """Whether rows of ``len_`` elements are short enough to pack: their window (any alignment) spans at most
    PACKED_VECTORS vectors."""
    return 1 <= len_ and len_ + per_vec(dtype) - 1 <= PACKED_VECTORS * per_vec(dtype)


def packed_tile(len_: int) -> tuple[int, int]:
    """(lanes, elements a lane) of a packed row: the fewest power-of-two lanes taking PACKED_ELEMS elements
    each (rows of fewer elements: one lane, the row's elements)."""
    lanes = min(32, pow2_at_least(cdiv(len_, PACKED_ELEMS)))
    return lanes, cdiv(len_, lanes)


def packed_rows_per_block(len_: int, dtype: torch.dtype) -> int:
    """Rows a packed block holds: its window (the rows and up to N - 1 elements before them) fits the CTA's
    buffer of PACKED_BLOCK x PACKED_BLOCK_VECS vectors (PackedRows::rows_per_block)."""
    n = per_vec(dtype)
    return (PACKED_BLOCK * PACKED_BLOCK_VECS * n - (n - 1)) // len_


@dataclass(frozen=True)
class PackedTile:
    """A packed short-row kernel's configuration (C++: ``kk::PackedConfig<group, elems>``): ``group`` lanes
    a row (a power of two <= 32), ``elems`` elements a lane; CTAs of PACKED_BLOCK threads move blocks of
    whole rows through shared memory."""

    group: int
    elems: int
    block = PACKED_BLOCK

    def __post_init__(self):
        if not (_pow2(self.group) and self.group <= 32 and 1 <= self.elems <= 2 * PACKED_ELEMS):
            raise ValueError(f"{self}: group a power of two <= 32, elems 1 .. {2 * PACKED_ELEMS}")

    def capacity(self, dtype: torch.dtype) -> int:
        return self.group * self.elems

    def holds(self, dtype: torch.dtype, len_: int, form: int) -> bool:
        return len_ <= self.capacity(dtype) and packed_rows_per_block(len_, dtype) >= 1

    def config(self) -> str:
        return f"kk::PackedConfig<{self.group}, {self.elems}>"

    def min_sm(self) -> int:
        return 0

    def runner_for(self, kernel, dtype: torch.dtype, len_: int, dev: int, n_args: int):
        """``go(rows, args)``: a CTA a block of rows (grid-stride past the grid's limit), the block's row count
        appended to the first ``n_args`` of args."""
        per = packed_rows_per_block(len_, dtype)
        run = plain_launcher(kernel, dev, "packed row kernel")

        def go(rows: int, args: tuple) -> None:
            run(min(MAX_GRID, -(-rows // per)), PACKED_BLOCK, 0, args[:n_args] + (per,))
        return go


MAX_GRID = 2**31 - 1


def vec_ok(len_: int, dtype: torch.dtype, *ptrs: int) -> bool:
    """Rows can move as 16-byte vectors: every pointer (0 for an absent tensor) aligned and the row a
    whole number of vectors."""
    p = 0
    for q in ptrs:
        p |= q
    return p & 15 == 0 and len_ % per_vec(dtype) == 0


def check_config(op: str, ok: bool, config, why: str) -> None:
    """Raise the ValueError of a ``config=`` that cannot run the input."""
    if not ok:
        raise ValueError(f"{op}: config={config} cannot run this input: {why}")


def needs_sm90(op: str, config, sm: int, what: str) -> None:
    check_config(op, sm >= CLUSTER_SM, config, f"{what} need sm_90 or later, the device is sm_{sm}")


# ---- configurations through the custom op: torch.library passes strings, not dataclasses ----------
_FIELD = re.compile(r"\s*(\w+)=(-?\d+|True|False|'[^']*')\s*")


def config_text(config) -> str | None:
    """The text a configuration travels as (its repr), None for None."""
    return None if config is None else repr(config)


def parse_config(text: str, classes: Iterable[type]) -> object:
    """The configuration whose repr is ``text``, of one of ``classes`` (their fields ints, bools, strs)."""
    by_name = {c.__name__: c for c in classes}
    m = re.fullmatch(r"(\w+)\((.*)\)", text.strip())
    if m is None or m.group(1) not in by_name:
        raise ValueError(f"not a configuration of {sorted(by_name)}: {text!r}")
    cls, kwargs = by_name[m.group(1)], {}
    for part in filter(None, m.group(2).split(",")):
        f = _FIELD.fullmatch(part)
        if f is None:
            raise ValueError(f"cannot read {part!r} of {text!r}")
        k, v = f.groups()
        kwargs[k] = v == "True" if v in ("True", "False") else v[1:-1] if v.startswith("'") else int(v)
    if set(kwargs) - {f.name for f in fields(cls)}:
        raise ValueError(f"unknown fields in {text!r}")
    return cls(**kwargs)


# ---- launches ------------------------------------------------------------------------------------
# A plan holds a runner ``go(rows, args)`` made once from its configuration and loaded kernel; the
# checked path and an op's lane both launch through it, so they launch the same thing.

def row_runner(kernel, tile: RowTile, dev: int, tail: tuple = ()):
    """``go(rows, args)``: one group (or cluster) a row, the whole grid at once (``tile.grid(rows)``
    CTAs of ``tile.block`` threads), ``tail`` appended to the arguments. Without clusters, one C call
    (runtime.plain_launcher)."""
    if tile.cluster > 1:
        cluster, block = tile.cluster, tile.block

        def go(rows: int, args: tuple) -> None:
            launch(kernel, rows * cluster, block, *args, *tail, cluster=cluster, name="row kernel", device_index=dev)
        return go
    run = plain_launcher(kernel, dev, "row kernel")
    if tile.threads <= 32:
        per_block = ROW_BLOCK // tile.threads

        def go(rows: int, args: tuple) -> None:
            run(-(-rows // per_block), ROW_BLOCK, 0, args + tail)
    else:
        block = tile.block

        def go(rows: int, args: tuple) -> None:
            run(rows, block, 0, args + tail)
    return go


def launch_persistent(kernel, rows: int, block: int, cluster: int, shmem: int, *args, dev: int) -> None:
    """A persistent row launch: only the CTAs (whole clusters) that fit the device at once, at most a
    cluster per row, ``shmem`` bytes of dynamic shared memory each; the kernel loops over rows."""
    allow_shared(kernel, shmem, dev)
    blocks = min(rows * cluster, resident_blocks(kernel, block, cluster, dev, shmem))
    launch(kernel, blocks, block, *args, shmem=shmem, cluster=cluster, name="persistent row kernel",
           device_index=dev)


def persistent_runner(kernel, block: int, cluster: int, shmem: int, dev: int, handout: bool = False):
    """``go(rows, args)``: launch_persistent with these arguments; ``handout``: the kernel takes the
    address of a row-handout counter after ``args`` (that of torch's current stream, read per call)."""
    if handout:
        def go(rows: int, args: tuple) -> None:
            launch_persistent(kernel, rows, block, cluster, shmem, *args, handout_counters(dev), dev=dev)
    else:
        def go(rows: int, args: tuple) -> None:
            launch_persistent(kernel, rows, block, cluster, shmem, *args, dev=dev)
    return go


class HandoutCounters:
    """The counters of kernels that hand rows out at run time (RowHandout in reduce.cuh, norm_bulk_dyn).

    A launch needs a counter reading zero: the CTA that takes a launch's last number sets it back, so
    launches in stream order can share one, and a replayed CUDA graph finds it zero too. Launches on
    different streams could overlap, so each (device, stream) has its own, allocated (zeroed) on that
    device; the key holds the device because every device's default stream is handle 0. The buffers
    live as long as the process: a captured graph keeps the address it was given.
    """

    def __init__(self, alloc: Callable[[int], torch.Tensor] | None = None,
                 stream: Callable[[int], int] = stream_handle):
        self._alloc = alloc or (lambda dev: torch.zeros(1, dtype=torch.int32, device=f"cuda:{dev}"))
        self._stream = stream
        self.buffers: dict[tuple[int, int], torch.Tensor] = {}
        self._ptrs: dict[tuple[int, int], int] = {}

    def __call__(self, dev: int) -> int:
        """The address of the counter for torch's current stream on ``dev``."""
        key = (dev, self._stream(dev))
        ptr = self._ptrs.get(key)
        if ptr is None:
            buf = self.buffers[key] = self._alloc(dev)
            ptr = self._ptrs[key] = buf.data_ptr()
        return ptr


handout_counters = HandoutCounters()
