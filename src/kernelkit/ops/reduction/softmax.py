"""softmax(x, dim): the ladder from three passes to rows held in registers (and clusters), the
configurations (``SoftmaxTile``, ``Loop``) and the rule choosing one, dispatch.

The kernels work on the last dim of a contiguous tensor; another dim is moved last (a copy in, a copy
out: the correct path, not the fast one). ``config=`` launches a given configuration (tuning and tests).
A plain eager call along the last dim of a contiguous tensor, once accepted by the checked path, makes
a lane for its (dtype, device, row length): later such calls allocate, test alignment and launch the
same plan's runner.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, kind_variants, register
from ...runtime import get_kernel, plain_launcher
from .._shared.checks import check_tensor, output_for, pick_variant
from .._shared.custom_op import out_op
from .._shared.cxx import CXX_TYPE, cxx_bool
from .._shared.launch_rules import compute_capability
from .._shared.plans import plan_cache, remember
from ._rows import (CLUSTER_SM, RowTile, check_config, config_text, needs_sm90, parse_config, per_vec, pick,
                    row_runner, vec_ok, without_clusters)
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

    def name(self, dtype: torch.dtype, vec: bool) -> str:
        return f"kk::softmax_{self.kind}<{CXX_TYPE[dtype]}, {LOOP_BLOCK}>"

    def kernel(self, dtype: torch.dtype, vec: bool) -> Kernel:
        bits = torch.finfo(dtype).bits
        return Kernel(SRC, self.name(dtype, vec), bits, bits, block=self.block)

    def check(self, dtype: torch.dtype, len_: int, vec: bool, sm: int) -> None:
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
    exchange their slices' (max, sum) through distributed shared memory."""

    def name(self, dtype: torch.dtype, vec: bool) -> str:
        return f"kk::softmax_rows<{CXX_TYPE[dtype]}, {self.threads}, {self.vecs}, {self.cluster}, {cxx_bool(vec)}>"

    def kernel(self, dtype: torch.dtype, vec: bool) -> Kernel:
        bits = 128 if vec else torch.finfo(dtype).bits
        return Kernel(SRC, self.name(dtype, vec), bits, bits, block=self.block, min_sm=self.min_sm())

    def check(self, dtype: torch.dtype, len_: int, vec: bool, sm: int) -> None:
        check_config("softmax", self.capacity(dtype) >= len_, self,
                     f"it holds {self.capacity(dtype)} elements, the row has {len_}")
        if self.cluster > 1:
            needs_sm90("softmax", self, sm, "thread-block clusters")

    def runner(self, kernel, dev: int):
        """``go(rows, (x, out, rows, len))``: a group (or cluster) a row."""
        return row_runner(kernel, self, dev)


SoftmaxConfig = Union[Loop, SoftmaxTile]
CONFIG_CLASSES = (Loop, SoftmaxTile)
T = SoftmaxTile  # short, for the tables

# By capacity, per elements per 16-byte vector (4: fp32, 8: 16-bit): small rows pack into warps, then a
# CTA a row up to 1024 threads x 32 values, then a cluster a row (sm_90, statistics pushed by st.async,
# no cluster barrier); the online kernel past the table (docs/design/row-reductions.md, "Who holds a
# row, by length").
FAST = {
    4: {128: T(32, 1), 256: T(32, 2), 512: T(32, 4), 1024: T(32, 8), 2048: T(128, 4), 4096: T(256, 4),
        8192: T(256, 8), 16384: T(512, 8), 32768: T(1024, 8), 65536: T(512, 8, 4), 131072: T(512, 8, 8),
        262144: T(1024, 8, 8)},
    8: {256: T(32, 1), 512: T(32, 2), 1024: T(128, 1), 2048: T(128, 2), 4096: T(128, 4), 8192: T(256, 4),
        16384: T(512, 4), 32768: T(1024, 4), 65536: T(256, 4, 8), 131072: T(512, 4, 8), 262144: T(1024, 4, 8)},
}
FAST_FLAT = {n: without_clusters(t) for n, t in FAST.items()}  # sm_80: longer rows take the online kernel
REGISTERS = {  # the registers rung: one CTA a row, the online kernel past 32K elements
    4: {512: T(128, 1), 1024: T(128, 2), 2048: T(128, 4), 4096: T(256, 4), 8192: T(256, 8), 16384: T(512, 8),
        32768: T(1024, 8)},
    8: {1024: T(128, 1), 2048: T(128, 2), 4096: T(128, 4), 8192: T(256, 4), 16384: T(512, 4), 32768: T(1024, 4)},
}


def config_for(rung: str, dtype: torch.dtype, len_: int, *, sm: int) -> SoftmaxConfig:
    """The configuration a rung launches for rows of ``len_`` elements of ``dtype`` on an sm_``sm`` device
    (aligned rows or not: the same configuration, in its vector or element-wise form)."""
    if rung in ("three_pass", "online"):
        return Loop(rung)
    n = per_vec(dtype)
    tile = pick(len_, REGISTERS[n] if rung == "registers" else FAST[n] if sm >= CLUSTER_SM else FAST_FLAT[n])
    return Loop("online") if tile is None else tile


def configs(dtype: torch.dtype, rung: str = "fast") -> tuple[SoftmaxConfig, ...]:
    """Every configuration ``config_for`` can choose for dtype on any device (each in both forms)."""
    n = per_vec(dtype)
    lens = {1} | set(FAST[n]) | set(REGISTERS[n])
    found = {config_for(rung, dtype, len_ + d, sm=sm) for len_ in lens for d in (0, 1) for sm in (80, CLUSTER_SM)}
    return tuple(sorted(found, key=lambda c: (isinstance(c, T), c.capacity(dtype) if isinstance(c, T) else 0, repr(c))))


def _kernels(rung: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    seen: dict[str, Kernel] = {}
    for c in configs(dtype, rung):
        for vec in (True, False):
            k = c.kernel(dtype, vec)
            seen.setdefault(k.name, k)
    return tuple(seen.values())


_plans = plan_cache()


def _plan(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, vec: bool) -> tuple:
    """(configuration, loaded kernel, its runner ``go(rows, (x, out, rows, len))``) for a plan key."""
    sm = compute_capability(dev)
    if text is None:
        cfg = config_for(rung, dtype, len_, sm=sm)
    else:
        cfg = parse_config(text, CONFIG_CLASSES)
        cfg.check(dtype, len_, vec, sm)
    kernel = get_kernel(SRC, cfg.name(dtype, vec), device_index=dev)
    return cfg, kernel, cfg.runner(kernel, dev)


def _runner(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, vec: bool):
    key = (rung, text, dtype, dev, len_, vec)
    plan = _plans.get(key)
    if plan is None:
        plan = remember(_plans, key, _plan(rung, text, dtype, dev, len_, vec))
    return plan[2]


def _run(rung: str, text: Optional[str], x: torch.Tensor, out: torch.Tensor, rows: int, len_: int) -> None:
    """Softmax of each row of contiguous (rows, len_) x into contiguous out."""
    xp, op = x.data_ptr(), out.data_ptr()
    go = _runner(rung, text, x.dtype, x.get_device(), len_, vec_ok(len_, x.dtype, xp, op))
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


# ---- the lane: softmax(x) of a contiguous CUDA tensor along its last dim, checks made once ---------
_lanes = plan_cache()
_Tensor = torch.Tensor
_compiling = torch.compiler.is_compiling
_empty_like = torch.empty_like
_CONTIGUOUS = torch.contiguous_format


def build_lane(dtype: torch.dtype, len_: int, form):
    """``lane(x)``: the checked path's launch for a contiguous x of rows of ``len_`` elements of ``dtype``
    (its device that of the lane's key): the allocation, the alignment test and one runner, or None
    for inputs it does not take (empty or not contiguous). ``form(vec)`` gives the runner of the
    16-byte (vec) or element-wise form, asked once each."""
    forms = [None, None]
    whole = len_ % per_vec(dtype) == 0

    def lane(x: torch.Tensor) -> Optional[torch.Tensor]:
        n = x.numel()
        if not n or not x.is_contiguous():
            return None
        out = _empty_like(x, memory_format=_CONTIGUOUS)
        xp, op = x.data_ptr(), out.data_ptr()
        vec = whole and not (xp | op) & 15
        go = forms[vec]
        if go is None:
            go = forms[vec] = form(vec)
        rows = n // len_
        go(rows, (xp, op, rows, len_))
        return out
    return lane


def _make_lane(x: torch.Tensor) -> None:
    """The lane of x's (dtype, device, row length): made once the checked path has accepted such an input."""
    dtype, dev, len_ = x.dtype, x.get_device(), x.shape[-1]
    key = (dtype, x.device, len_)
    if key not in _lanes:
        rung = OP.default_variant.name
        remember(_lanes, key, build_lane(dtype, len_, lambda vec: _runner(rung, None, dtype, dev, len_, vec)))


_softmax_out = out_op("softmax_out", _softmax_into)


def softmax(x: torch.Tensor, dim: int = -1, *, out: Optional[torch.Tensor] = None,
            variant: Optional[str] = None, config: Optional[SoftmaxConfig] = None) -> torch.Tensor:
    """``torch.softmax(x, dim)``: exp(x - max) / sum along ``dim``, fp32 statistics, in x's dtype.

    Rows holding +inf or NaN come out NaN and a row of -inf is NaN, as in torch. ``x``: a float32,
    float16 or bfloat16 CUDA tensor of any shape and layout (a dim other than the last, or a
    non-contiguous x, goes through a contiguous copy). ``dim``: an int (negative counts from the end).
    ``out``: optional result of x's shape, dtype and device, returned; may be ``x`` itself. None: a new
    contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("softmax")`` (naive first); None picks the fastest for the
    row length.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``SoftmaxTile`` or ``Loop`` of kernelkit.ops.reduction.softmax; ``configs(dtype)`` there lists
    those the rules choose); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, a ``dim`` that is not an int, an
    ``out`` of another dtype or a config of another class; IndexError for a dim out of range;
    ValueError for a CPU tensor, an ``out`` of another shape or device, an unknown variant, both
    ``variant`` and ``config``, or a config the input cannot take (rows longer than its tile, clusters
    before sm_90).
    """
    # The lane: x a plain CUDA tensor (contiguous: the lane checks), dim its last, and a lane for (dtype,
    # device, row length), made by an earlier call of the checked path; else the checked path.
    if (out is None and variant is None and config is None and type(x) is _Tensor and type(dim) is int
            and not _compiling()):
        shape = x.shape
        if shape and (dim == -1 or dim == len(shape) - 1):
            lane = _lanes.get((x.dtype, x.device, shape[-1]))
            if lane is not None:
                got = lane(x)
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
            raise TypeError(f"softmax: config must be a SoftmaxTile or Loop (kernelkit.ops.reduction.softmax), "
                            f"got {type(config).__name__}")
        text = config_text(config)
    elif variant is not None:
        OP.variant(variant)
    _softmax_out(x, out, d, variant, text)
    if (fresh and variant is None and text is None and type(x) is _Tensor and d == x.dim() - 1 and x.numel()
            and x.is_contiguous() and not _compiling()):
        _make_lane(x)
    return out


RUNGS = (
    ("three_pass", "one block per row: a read for the max, a read for the sum of exp(x - max), a read "
     "and a write for the result (3 reads + 1 write)"),
    ("online", "online softmax: running (max, sum) per thread in one read, rescaled when the max grows, "
     "merged over the block; a second read writes (2 reads + 1 write)"),
    ("registers", "one CTA per row holding it in registers (16-byte loads): one read, one write; rows "
     "over 32K elements fall back to online"),
    ("fast", "per row length: rows packed into warps (fp32 <= 1K), a CTA per row up to 1024 threads x 32 "
     "values, a thread-block cluster per row exchanging (max, sum) through distributed shared memory "
     "(sm_90, <= 256K); online beyond"),
)

OP = register(Op(
    name="softmax", family="reduction",
    variants=kind_variants(RUNGS, _kernels),
    bytes_moved=lambda x, dim=-1, **_: 2 * x.numel() * x.element_size(),
    flops=lambda x, dim=-1, **_: 5 * x.numel(),  # max, subtract, exp, add, scale
    call=softmax,
    torch_fn=lambda x, dim=-1: torch.softmax(x, dim),
    example=lambda shape, dtype: ((torch.randn(shape, dtype=dtype, device="cuda") * 3,), {}),
    doc="softmax along a dim (torch.softmax), fp32 statistics",
    bench_shapes=((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536)),
    bench_dtypes=(torch.float32, torch.float16),
))
