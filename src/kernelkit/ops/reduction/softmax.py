"""softmax(x, dim): the ladder from three passes to rows held in registers (and clusters), the
configurations (``SoftmaxTile``, ``SoftmaxPacked``, ``Loop``) and the rule choosing one, dispatch.

The kernels work on the last dim of a contiguous tensor; another dim is moved last (a copy in, a copy
out: the correct path, not the fast one). ``config=`` launches a given configuration (tuning and tests).
A plain eager call along the last dim of a contiguous tensor records its launch as the fixed lane of
its (dtype, device, shape, dim) (runtime.lanes): later such calls of data on a 16-byte boundary replay
it in one C call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, kind_variants, register
from ...runtime import get_kernel, plain_launcher
from ...runtime.lanes import run_fixed
from .._shared.checks import check_tensor, output_for, pick_variant
from .._shared.custom_op import out_op
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import compute_capability
from .._shared.plans import plan_cache, remember, with_fixed_lane
from ._rows import (ALIGNED, CLUSTER_CTA, CLUSTER_SM, MIN_CTA, WIDE_CLUSTER, WIDE_CLUSTER_SMS, WINDOW, WINDOW_IN,
                    PackedTile, RowTile, cdiv, check_config, cluster_tile,
                    config_text, cta_tile, form_bits, needs_sm90, packed_tile, packs, parse_config, per_vec,
                    persistent_runner, row_form, row_runner, warp_tile, window_len)
from .reduce import wrap_dim

__all__ = ["softmax"]

SRC = "reduction/softmax.cu"
LOOP_BLOCK = 512  # the looping kernels (three-pass, online): one block of 512 threads per row


@dataclass(frozen=True)
class Loop:
    """softmax_three_pass or softmax_online: a block of LOOP_BLOCK threads a row, any length."""

    kind: str = "online"
    block = LOOP_BLOCK

    def __post_init__(self):
        if self.kind not in ("three_pass", "online"):
            raise ValueError(f"{self}: kind 'three_pass' or 'online'")

    def name(self, dtype: torch.dtype, form: int) -> str:
        return f"kk::softmax_{self.kind}<{CXX_TYPE[dtype]}, {LOOP_BLOCK}>"

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        bits = torch.finfo(dtype).bits
        return Kernel(SRC, self.name(dtype, form), bits, bits, block=self.block)

    def check(self, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        pass

    def runner(self, kernel, dev: int):
        """``go(rows, (x, out, rows, len))``: a block a row."""
        run = plain_launcher(kernel, dev, f"softmax_{self.kind}")

        def go(rows: int, args: tuple) -> None:
            run(rows, LOOP_BLOCK, 0, (args[0], args[1], args[3]))
        return go


@dataclass(frozen=True)
class SoftmaxTile(RowTile):
    """softmax_rows: the row held in registers (RowTile), one read and one write; clusters (sm_90)
    exchange their slices' (max, sum) through distributed shared memory. ``handout``: softmax_handout,
    persistent clusters taking their rows from a counter at run time (RowHandout) instead of a cluster
    a row; ``prefetch``: those clusters ask L2 for the next row's slices once its number is known."""

    handout: bool = False
    prefetch: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.handout and self.cluster == 1:
            raise ValueError(f"{self}: rows are handed out to clusters (cluster > 1)")
        if self.prefetch and not self.handout:
            raise ValueError(f"{self}: the next row is prefetched by handed-out clusters (handout=True)")

    def name(self, dtype: torch.dtype, form: int) -> str:
        if self.handout:
            return (f"kk::softmax_handout<{CXX_TYPE[dtype]}, kk::RowConfig<{self.threads}, {self.vecs}, "
                    f"{self.cluster}, {int(form)}, 2>, {int(self.prefetch)}>")
        return (f"kk::softmax_rows<{CXX_TYPE[dtype]}, kk::RowConfig<{self.threads}, {self.vecs}, {self.cluster}, "
                f"{int(form)}>>")

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        load, store = form_bits(dtype, form)
        # more than 32 values a thread (the longest cluster rows, exponentials recomputed) may spill a few
        # bytes at the 64-register cap; handed-out rows take their numbers by a global atomic (ATOMG), and
        # the next row's slice is asked of L2 by a bulk prefetch (UBLKPF)
        return Kernel(SRC, self.name(dtype, form), load, store, block=self.block, min_sm=self.min_sm(),
                      spills=self.vecs * per_vec(dtype) > 32,
                      sass=("ATOMG",) * self.handout + ("UBLKPF",) * self.prefetch)

    def check(self, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        check_config("softmax", self.holds(dtype, len_, form), self,
                     f"it holds {self.capacity(dtype)} elements, the row needs {window_len(len_, dtype, form)}")
        if self.cluster > 1:
            needs_sm90("softmax", self, sm, "thread-block clusters")

    def runner(self, kernel, dev: int):
        """``go(rows, (x, out, rows, len))``: a group (or cluster) a row; handed out: the resident clusters,
        the stream's handout counter appended."""
        if self.handout:
            return persistent_runner(kernel, self.block, self.cluster, 0, dev, handout=True)
        return row_runner(kernel, self, dev)


@dataclass(frozen=True)
class SoftmaxPacked(PackedTile):
    """softmax_packed: short rows, a block of whole rows at a time through shared memory (PackedTile:
    ``group`` lanes a row, ``elems`` elements a lane)."""

    def name(self, dtype: torch.dtype, form: int) -> str:
        return f"kk::softmax_packed<{CXX_TYPE[dtype]}, {self.config()}>"

    def kernel(self, dtype: torch.dtype, form: int) -> Kernel:
        # rows arrive by asynchronous 16-byte copies (LDGSTS: no global load to claim a width for)
        return Kernel(SRC, self.name(dtype, form), None, 128, block=self.block, sass=("LDGSTS",))

    def check(self, dtype: torch.dtype, len_: int, form: int, sm: int) -> None:
        check_config("softmax", self.holds(dtype, len_, form), self,
                     f"it holds rows of {self.capacity(dtype)} elements, the row has {len_}")

    def runner(self, kernel, dev: int, dtype: torch.dtype, len_: int):
        """``go(rows, (x, out, rows, len))``: a CTA a block of rows."""
        return self.runner_for(kernel, dtype, len_, dev, 4)


SoftmaxConfig = Union[Loop, SoftmaxTile, SoftmaxPacked]
CONFIG_CLASSES = (Loop, SoftmaxTile, SoftmaxPacked)


# ---- the rule: each named rung one way of holding a row, `auto` the first that holds it -------------
def _most_vecs(dtype: torch.dtype) -> int:
    """16-byte vectors a thread at 32 values (the 64-register cap of 1024-thread CTAs)."""
    return 32 // per_vec(dtype)


def _longest_vecs(dtype: torch.dtype) -> int:
    """Vectors a thread of the longest cluster rows, recomputing their exponentials at the store (softmax_rows'
    kKeep): 16-bit threads hold 64 values, fp32 ones 40 (8 x 1024 x 40 values: rows of 300K; a few bytes
    spill either way, 48 fp32 values spill 216)."""
    return 64 // per_vec(dtype) if dtype.itemsize == 2 else 10


def packed_rows(dtype: torch.dtype, len_: int, form: int, sm: int) -> Optional[SoftmaxPacked]:
    """The shortest rows: blocks of whole rows through shared memory as 16-byte vectors of one stream."""
    return SoftmaxPacked(*packed_tile(len_)) if packs(len_, dtype) else None


def warp_rows(dtype: torch.dtype, len_: int, form: int, sm: int) -> Optional[SoftmaxTile]:
    """Short rows: a power-of-two slice of a warp a row (several rows a warp), shuffles only."""
    got = warp_tile(cdiv(window_len(len_, dtype, form), per_vec(dtype)))
    return None if got is None else SoftmaxTile(*got)


# 16-bit rows on sm_90 (docs/design/row-reductions-long.md, "Long 16-bit softmax rows"): a 16-bit thread holds
# its 32 values in half the bytes of an fp32 one, so a CTA moves half the bytes a row between its fixed
# costs (start, reductions, the cluster's exchange); CTAs that fill an SM then leave it idle between
# rows. Measured (H100, bf16, % of a same-bytes copy): one CTA of 800 x 4 84.6, four of 224 x 4 99.8;
# 1024 x 4 92.5, four of 256 x 4 100.9; 2670 x 50257: four of 416 x 4 82.7, eight of 224 x 4
# handed out 92.0. So 16-bit rows take one CTA up to CTA_ROW_16 threads, then the smallest cluster of
# CTAs of at most SMALL_CTA threads, then 16 CTAs of up to CLUSTER_CTA.
CTA_ROW_16 = 512
SMALL_CTA = 256
# Clusters of this many CTAs or more are persistent, rows handed out and the next one prefetched into L2:
# a cluster a row of 8 or 16 CTAs waits for that many free CTA slots in one GPC at every row (bf16 100003
# in 16 x 224: 63.6% a cluster a row, 82.5% handed out; 2048 x 65536 in 8 x 256: 99.4 / 99.2, a tie).
HANDOUT_FROM = 8


def cta_row(dtype: torch.dtype, len_: int, form: int, sm: int) -> Optional[SoftmaxTile]:
    """A CTA a row, the row in registers: up to 1024 threads x 32 values (16-bit rows where clusters exist:
    up to CTA_ROW_16 threads x 4 vectors)."""
    most = CTA_ROW_16 if dtype.itemsize == 2 and sm >= CLUSTER_SM else 1024
    got = cta_tile(cdiv(window_len(len_, dtype, form), per_vec(dtype)), _most_vecs(dtype), max_threads=most)
    return None if got is None else SoftmaxTile(*got)


def _fit(vectors: int, vecs: int, most_threads: int, sizes: tuple[int, ...]) -> Optional[tuple[int, int, int]]:
    """(threads, vecs, cluster): the first cluster size of ``sizes`` whose CTAs hold the row at up to ``vecs``
    vectors a thread within ``most_threads`` threads (the fewest warps that hold it); None if none does."""
    for c in sizes:
        per = cdiv(vectors, c)
        threads = max(MIN_CTA, 32 * cdiv(cdiv(per, vecs), 32))
        if threads <= most_threads:
            return threads, cdiv(per, threads), c
    return None


def cluster_row(dtype: torch.dtype, len_: int, form: int, sm: int) -> Optional[SoftmaxTile]:
    """A thread-block cluster a row (sm_90): each CTA a slice in registers, (max, sum) pushed to its peers;
    rows one CTA holds stay one CTA (cta_row). 16-bit rows: the smallest cluster (up to 16 CTAs on H100 and
    H200, 8 elsewhere) of CTAs of at most SMALL_CTA threads x 4 vectors, then 16 CTAs of up to CLUSTER_CTA;
    fp32 rows: the smallest of up to 8 CTAs of at most CLUSTER_CTA threads x 32 values, then 16 such. Past
    those, 8 CTAs of up to 1024 threads (cluster_tile). Clusters of HANDOUT_FROM CTAs or more of at most
    CLUSTER_CTA threads take their rows handed out."""
    if sm < CLUSTER_SM:
        return None
    one = cta_row(dtype, len_, form, sm)
    if one is not None:
        return one
    vectors = cdiv(window_len(len_, dtype, form), per_vec(dtype))
    most = _most_vecs(dtype)
    wide = (WIDE_CLUSTER,) if sm in WIDE_CLUSTER_SMS else ()
    if dtype.itemsize == 2:
        got = _fit(vectors, most, SMALL_CTA, (2, 4, 8) + wide) or _fit(vectors, most, CLUSTER_CTA, wide)
    else:
        got = cluster_tile(vectors, most, _longest_vecs(dtype))
        if got is not None and got[0] > CLUSTER_CTA:  # 8 CTAs of over CLUSTER_CTA threads: 16 of fewer first
            got = _fit(vectors, most, CLUSTER_CTA, wide) or got
    if got is None:
        got = cluster_tile(vectors, most, _longest_vecs(dtype))
    if got is None:
        return None
    # (8 CTAs of over CLUSTER_CTA threads, one an SM, stay a cluster a row: their 40-value threads spill in
    # the persistent kernel, and a cluster a row measured best there)
    handout = got[2] >= HANDOUT_FROM and got[0] <= CLUSTER_CTA
    return SoftmaxTile(*got, handout=handout, prefetch=handout)


TILE_RUNGS = {"packed_rows": (packed_rows,), "warp_rows": (warp_rows,), "cta_row": (cta_row,),
              "cluster_row": (cluster_row,), "auto": (packed_rows, warp_rows, cta_row, cluster_row)}


def config_for(rung: str, dtype: torch.dtype, len_: int, *, sm: int, form: int = ALIGNED) -> SoftmaxConfig:
    """The configuration a rung launches for rows of ``len_`` elements of ``dtype`` in ``form`` (row_form)
    on an sm_``sm`` device: the first of the rung's holders that holds the row, else the online kernel."""
    if rung in ("three_pass", "online"):
        return Loop(rung)
    for holder in TILE_RUNGS[rung]:
        tile = holder(dtype, len_, form, sm)
        if tile is not None:
            return tile
    return Loop("online")


# Row lengths whose configurations a rung lists (its kernels for `kernelkit inspect`, warmup and the CPU
# compile test; any other length compiles its own on first use): each holder's reach, sampled.
SAMPLE_LENS = (1, 2, 3, 4, 7, 16, 31, 61, 100, 121, 257, 1000, 2049, 4097, 5120, 14336, 32001, 50257, 65536,
               151936, 300001)


def configs(dtype: torch.dtype, rung: str = "auto") -> tuple[SoftmaxConfig, ...]:
    """The configurations ``config_for`` chooses for dtype at SAMPLE_LENS on sm_80 and sm_90 (any form)."""
    found = {config_for(rung, dtype, n, sm=sm, form=f) for n in SAMPLE_LENS for sm in (80, CLUSTER_SM)
             for f in (ALIGNED, WINDOW)}
    return tuple(sorted(found, key=lambda c: (CONFIG_CLASSES.index(type(c)),
                                              0 if isinstance(c, Loop) else c.capacity(dtype), repr(c))))


def _kernels(rung: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    seen: dict[str, Kernel] = {}
    for c in configs(dtype, rung):
        for form in ((ALIGNED, WINDOW, WINDOW_IN) if isinstance(c, SoftmaxTile) else (ALIGNED,)):
            k = c.kernel(dtype, form)
            seen.setdefault(k.name, k)
    return tuple(seen.values())


_plans = plan_cache()


def _plan(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, form: int) -> tuple:
    """(configuration, loaded kernel, its runner ``go(rows, (x, out, rows, len))``) for a plan key."""
    sm = compute_capability(dev)
    if text is None:
        cfg = config_for(rung, dtype, len_, sm=sm, form=form)
    else:
        cfg = parse_config(text, CONFIG_CLASSES)
        cfg.check(dtype, len_, form, sm)
    kernel = get_kernel(SRC, cfg.name(dtype, form), device_index=dev)
    runner = cfg.runner(kernel, dev, dtype, len_) if isinstance(cfg, SoftmaxPacked) else cfg.runner(kernel, dev)
    return cfg, kernel, runner


def _runner(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, form: int):
    key = (rung, text, dtype, dev, len_, form)
    plan = _plans.get(key)
    if plan is None:
        plan = remember(_plans, key, _plan(rung, text, dtype, dev, len_, form))
    return plan[2]


def _run(rung: str, text: Optional[str], x: torch.Tensor, out: torch.Tensor, rows: int, len_: int) -> None:
    """Softmax of each row of contiguous (rows, len_) x into contiguous out."""
    xp, op = x.data_ptr(), out.data_ptr()
    go = _runner(rung, text, x.dtype, x.get_device(), len_, row_form(len_, x.dtype, xp, op))
    go(rows, (xp, op, rows, len_))


def _softmax_into(x: torch.Tensor, out: torch.Tensor, dim: int, variant: Optional[str], config: Optional[str]) -> None:
    """out <- softmax(x, dim); config: a configuration's repr (config_text)."""
    if x.numel() == 0:
        return
    v = pick_variant(OP, variant, x.dtype)
    nd = x.dim()
    last = nd <= 1 or dim == nd - 1
    xc = (x if last else x.movedim(dim, -1)).contiguous()
    len_ = xc.shape[-1] if nd else 1
    rows = xc.numel() // len_
    if last and out.is_contiguous():
        _run(v.name, config, xc, out, rows, len_)
        return
    tmp = torch.empty_like(xc)
    _run(v.name, config, xc, tmp, rows, len_)
    out.copy_(tmp if last else tmp.movedim(-1, dim))


# ---- the fixed lane: the plain call's launch, recorded per (dtype, device, shape, dim) -------------------
_lanes = plan_cache()
_Tensor = torch.Tensor
_compiling = torch.compiler.is_compiling


_softmax_out = out_op("softmax_out", _softmax_into)


def softmax(x: torch.Tensor, dim: int = -1, *, out: Optional[torch.Tensor] = None,
            variant: Optional[str] = None, config: Optional[SoftmaxConfig] = None) -> torch.Tensor:
    """``torch.softmax(x, dim)``: exp(x - max) / sum along ``dim``, fp32 statistics, in x's dtype.

    Rows holding +inf or NaN come out NaN and a row of -inf is NaN, as in torch. ``x``: a float32,
    float16 or bfloat16 CUDA tensor of any shape and layout (a dim other than the last, or a
    non-contiguous x, goes through a contiguous copy). ``dim``: an int (negative counts from the end).
    ``out``: optional result of x's shape, dtype and device, returned; may be ``x`` itself. None: a new
    contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("softmax")`` (naive first); None runs ``auto``, which picks
    the holder of the row by its length.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``SoftmaxTile``, ``SoftmaxPacked`` or ``Loop`` of kernelkit.ops.reduction.softmax; ``configs(dtype)``
    there lists those the rules choose); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, a ``dim`` that is not an int, an
    ``out`` of another dtype or a config of another class; IndexError for a dim out of range;
    ValueError for a CPU tensor, an ``out`` of another shape or device, an unknown variant, both
    ``variant`` and ``config``, or a config the input cannot take (rows longer than its tile, clusters
    before sm_90).
    """
    if out is None and variant is None and config is None and not _compiling():  # the fixed lane, if made
        got = run_fixed(_lanes, x, dim)
        if got is not None:
            return got
    check_tensor(x, "x", FLOAT_DTYPES, "softmax")
    d = wrap_dim(dim, x.dim(), "softmax")
    fresh = out is None
    out = output_for(out, x, "softmax")
    text = None
    if config is not None:
        if variant is not None:
            raise ValueError("softmax: pass variant= or config=, not both (a configuration names its kernel)")
        if not isinstance(config, CONFIG_CLASSES):
            raise TypeError(f"softmax: config must be a SoftmaxTile, SoftmaxPacked or Loop "
                            f"(kernelkit.ops.reduction.softmax), got {type(config).__name__}")
        text = config_text(config)
    elif variant is not None:
        OP.variant(variant)
    if (fresh and variant is None and text is None and type(x) is _Tensor and d == x.dim() - 1
            and x.is_contiguous() and not _compiling()):
        # a plain call along the last dim: its launch, recorded, becomes the lane of (dtype, device, shape, dim)
        return with_fixed_lane(_lanes, x, dim, lambda: _softmax_out(x, out, d, None, None) or out)
    _softmax_out(x, out, d, variant, text)
    return out


RUNGS = (
    ("three_pass", "one block per row: a read for the max, a read for the sum of exp(x - max), a read "
     "and a write for the result (3 reads + 1 write)"),
    ("online", "online softmax: running (max, sum) per thread in one read, rescaled when the max grows, "
     "merged over the block; a second read writes (2 reads + 1 write)"),
    ("packed_rows", "rows of up to 16 vectors packed: a CTA moves a block of whole rows through shared memory "
     "as 16-byte vectors of one contiguous stream (asynchronous copies in), a few lanes reducing each row by "
     "shuffles; online beyond"),
    ("warp_rows", "short rows in registers, a power-of-two slice of a warp a row (several rows a warp), "
     "shuffles only: one read, one write; 16-byte vectors of the aligned window covering each row at any "
     "alignment; online past 128 vectors"),
    ("cta_row", "a CTA a row in registers (up to 1024 threads x 32 values; 16-bit rows on sm_90 up to 512 "
     "threads x 4 vectors), 16-byte window vectors; online beyond"),
    ("cluster_row", "rows past one CTA as a thread-block cluster (sm_90), each CTA a slice in registers, "
     "(max, sum) pushed to its peers by st.async (shorter rows as cta_row); clusters of 8 and 16 CTAs "
     "persistent, taking rows handed out by a counter and prefetching the next into L2; online beyond, and "
     "before sm_90"),
    ("auto", "the first of packed_rows, warp_rows, cta_row and cluster_row that holds the row (online beyond): "
     "the lanes, threads, vectors a thread and cluster size computed from the row's length"),
)

OP = register(Op(
    name="softmax", family="reduction",
    variants=kind_variants(RUNGS, _kernels, default="auto"),
    bytes_moved=lambda x, dim=-1, **_: 2 * x.numel() * x.element_size(),
    flops=lambda x, dim=-1, **_: 5 * x.numel(),  # max, subtract, exp, add, scale
    call=softmax,
    torch_fn=lambda x, dim=-1: torch.softmax(x, dim),
    example=lambda shape, dtype: ((torch.randn(shape, dtype=dtype, device="cuda") * 3,), {}),
    doc="softmax along a dim (torch.softmax), fp32 statistics",
    bench_shapes=((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536)),
    bench_dtypes=(torch.float32, torch.float16),
))
