"""Rearrangement (source 001): ``transpose`` and ``permute``, their ladders, dispatch and torch ops.

Both return ``y.contiguous()`` for the view ``y = x.transpose(dim0, dim1)`` / ``x.permute(dims)``,
bit for bit (no arithmetic: every dtype moves as raw 1/2/4/8-byte words). The input may be any
view (offset, non-contiguous, expanded): the kernels read through its strides, so no hidden
``.contiguous()`` copy is made. ``ops/_rearrange.py`` reduces the view to a batched 2D transpose,
a widened contiguous run or a general gather; the rung decides which tile kernel the transposes use.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel, launch
from .._shared.checks import check_out, check_tensor, pick_variant
from ._rearrange import CARRIER, IDX32, IDX64, SKINNY_MAX, Plan, idx_type, make_plan

__all__ = ["transpose", "permute"]

SOURCE = "rearrangement/transpose.cu"
DTYPES = (
    torch.uint8, torch.int8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2,
    torch.int16, torch.uint16, torch.float16, torch.bfloat16,
    torch.int32, torch.uint32, torch.float32, torch.complex32,
    torch.int64, torch.uint64, torch.float64, torch.complex64,
)
MAX_GRID = 2**31 - 1
GATHER_BLOCK = 256
# Wide-tile shapes (rows, cols, threads) per element size. WIDE_TILE is the first design: 16 KB of
# tile, 4 vectors per thread each way. BEST_TILES are the best rung's candidates, in order of
# preference from the H100 sweep (benchmarks/NOTES.md); a call takes the first that wastes the least
# of its tiles on the matrix edges (a 64-channel NCHW -> NHWC must not run 128-row tiles half empty).
# 8-byte elements have none: there the padded tile (8-byte accesses, 8 KB, 8 blocks per SM) measured
# 2911 GB/s against 2856-2862 for every wide tile (8192^2 float64).
WIDE_TILE = {1: (128, 128, 256), 2: (128, 64, 256), 4: (64, 64, 256), 8: (32, 64, 256)}
BEST_TILES = {
    1: ((128, 128, 256),),
    2: ((128, 128, 512), (64, 128, 256), (128, 64, 512)),
    4: ((64, 64, 512), (32, 64, 256)),
    8: (),
}


def best_tile(esize: int, R: int, C: int) -> tuple[int, int, int]:
    """The best rung's tile for an R x C transpose: the most useful candidate, earliest on ties."""
    def useful(cfg):
        tr, tc, _ = cfg
        return R / (-(-R // tr) * tr) * C / (-(-C // tc) * tc)

    return max(BEST_TILES[esize], key=useful)


def _tile_kernel(mode: str, esize: int, R: int = 1 << 20, C: int = 1 << 20, cfg=None) -> tuple[str, int, int, int]:
    """(name expression, block, tile rows, tile cols) of a rung's tile kernel for one element size."""
    t = CARRIER[esize]
    if mode == "naive":
        return f"kk::transpose_naive<{t}>", 256, 8, 32
    if mode in ("shared", "padded"):  # padding: one 4-byte bank word per row (1 element of >= 4 bytes)
        return f"kk::transpose_tile<{t}, {max(1, 4 // esize) if mode == 'padded' else 0}>", 256, 32, 32
    tr, tc, threads = cfg or (best_tile(esize, R, C) if mode == "best" else WIDE_TILE[esize])
    return f"kk::transpose_wide<{t}, {tr}, {tc}, {threads}>", threads, tr, tc


def _skinny_kernel(esize: int, skinny: tuple) -> tuple[str, int, int, int]:
    side, n = skinny
    return f"kk::transpose_skinny_{side}<{CARRIER[esize]}, {n}>", 256, 0, 0


def _sizes(start: int, stop: int) -> list[int]:
    return [e for e in (1, 2, 4, 8, 16) if start <= e <= stop]


def _kernels(mode: Optional[str], widen: bool, dtype: torch.dtype) -> tuple[Kernel, ...]:
    """Every instantiation a rung can launch for ``dtype``: widening may turn its elements into any
    wider carrier, so the tile kernels of each reachable size and the gathers of each are listed."""
    e0 = dtype.itemsize
    out = []
    if mode is not None:
        for e in _sizes(e0, 8 if widen else e0):
            if mode == "best":  # every candidate tile, the skinny kernels, the padded tile fallback
                cands = [_tile_kernel("best", e, cfg=c) for c in BEST_TILES[e]] + [_tile_kernel("padded", e)]
                cands += [_skinny_kernel(e, (side, n)) for side in ("rows", "cols") for n in range(2, SKINNY_MAX + 1)]
            else:
                cands = [_tile_kernel(mode, e)]
            for name, block, _, _ in cands:
                bits = 128 if "wide" in name or "skinny" in name else 8 * e  # 16-byte vectors
                out.append(Kernel(SOURCE, name, bits, bits, block=block))
    for e in _sizes(e0, 16 if widen else e0):
        for idx in (IDX32, IDX64):
            out.append(Kernel(SOURCE, f"kk::gather<{CARRIER[e]}, {idx}>", 8 * e, 8 * e, block=GATHER_BLOCK))
    return tuple(out)


def _rung(name: str, technique: str, mode: Optional[str], widen: bool = True, default: bool = False) -> Variant:
    return Variant(name=name, technique=technique, dtypes=DTYPES, default=default,
                   kernels=lambda dtype, _m=mode, _w=widen, **_: _kernels(_m, _w, dtype),
                   params={"tile": mode, "widen": widen})


TRANSPOSE_LADDER = (
    _rung("naive", "one element per thread: reads along input rows (coalesced), writes R elements apart "
          "(every warp store touches 32 sectors)", "naive"),
    _rung("shared", "32x32 tile staged in shared memory so both global accesses are coalesced; the tile's "
          "column reads conflict (32-way for 4-byte elements)", "shared"),
    _rung("padded", "the shared tile with one 4-byte bank word of padding per row (1 element of 4-8 bytes, "
          "2 or 4 of 2 or 1 byte): column reads hit 32 banks", "padded"),
    _rung("wide", "16-byte loads and stores, 16 KB XOR-swizzled tile, register transposes of 1/2-byte "
          "elements; needs rows, cols and strides multiples of 16/E bytes and aligned data", "wide"),
    _rung("best", "wide tiles (tuned per element size) where the shape allows, register transposes of "
          "16-byte vectors when one side has 2-8 elements, the padded tile otherwise; copies and row moves "
          "widened to 16-byte elements", "best", default=True),
)
PERMUTE_LADDER = (
    _rung("naive", "strided gather: one element per thread, output coordinates decomposed per element "
          "(any permutation of up to 6 dims)", None, widen=False),
    _rung("tiled", "dims merged; batched transposes (NCHW<->NHWC, last-two swap, ...) through the padded "
          "tile, contiguous inner runs moved as 16-byte elements, the gather for the rest", "padded"),
    _rung("best", "as tiled, with the transposes on the best transpose rung (wide swizzled tiles, skinny "
          "register transposes for 2-8 channels)", "best", default=True),
)

_plans: dict[tuple, Plan] = {}
_loaded: dict[tuple, object] = {}


def _kernel(op: Op, v: Variant, dtype: torch.dtype, name: str, dev: int):
    key = (op.name, v.name, dtype, name, dev)
    k = _loaded.get(key)
    if k is None:  # one NVRTC build per (rung, dtype): all of its instantiations together
        names = tuple(r.name for r in v.kernels(dtype))
        k = _loaded[key] = get_kernel(SOURCE, name, device_index=dev)
    return k


def _plan(v: Variant, y: torch.Tensor, out: torch.Tensor) -> Plan:
    yp, op_ = y.data_ptr(), out.data_ptr()
    key = (tuple(y.shape), y.stride(), y.element_size(), yp % 16, op_ % 16, v.params["widen"], v.params["tile"])
    p = _plans.get(key)
    if p is None:
        p = make_plan(y.shape, y.stride(), y.element_size(), yp, op_, widen=v.params["widen"],
                      tiles=v.params["tile"] is not None)
        if len(_plans) < 4096:
            _plans[key] = p
    return p


def _launch(op: Op, v: Variant, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
    """out (contiguous, same shape as y) <- y."""
    dev = x.get_device()
    p = _plan(v, y, out)
    if p.kind == "tile":
        mode = v.params["tile"]
        if mode == "best" and p.skinny:  # one 16-byte vector per thread and side, no tile
            B, R, C = p.args[:3]
            name, block, _, _ = _skinny_kernel(p.esize, p.skinny)
            n = B * (C if p.skinny[0] == "rows" else R) // (16 // p.esize)
            launch(_kernel(op, v, x.dtype, name, dev), min(-(-n // block), MAX_GRID), block, out.data_ptr(),
                   y.data_ptr(), *p.args, name=name, device_index=dev)
            return
        if mode == "best":
            mode = "best" if p.wide_ok and BEST_TILES[p.esize] else "padded"
        elif mode == "wide" and not p.wide_ok:
            vec = 16 // p.esize
            raise ValueError(
                f"{op.name}: variant 'wide' moves 16-byte vectors: it needs the transposed rows and columns "
                f"({p.args[1]} x {p.args[2]} elements of {p.esize} bytes) and every stride to be multiples of "
                f"{vec}, and 16-byte aligned data; the default variant handles any shape"
            )
        B, R, C = p.args[:3]
        name, block, tr, tc = _tile_kernel(mode, p.esize, R, C)
        grid = min(B * -(-R // tr) * -(-C // tc), MAX_GRID)
        launch(_kernel(op, v, x.dtype, name, dev), grid, block, out.data_ptr(), y.data_ptr(), *p.args,
               name=name, device_index=dev)
        return
    n = p.args[0]
    name = f"kk::gather<{CARRIER[p.esize]}, {idx_type(n)}>"
    grid = max(1, min(-(-n // GATHER_BLOCK), MAX_GRID))
    launch(_kernel(op, v, x.dtype, name, dev), grid, GATHER_BLOCK, out.data_ptr(), y.data_ptr(), n,
           np.int32(p.args[1]), *p.args[2:], name=name, device_index=dev)


def _into(op: Op, x: torch.Tensor, perm: list[int], out: torch.Tensor, variant: Optional[str]) -> None:
    """out <- x.permute(perm) for any layout of x and out."""
    v = pick_variant(op, variant, x.dtype)
    if out.numel() == 0:
        return
    if x.is_conj() or x.is_neg():  # lazy conjugate / negative views: the bits in memory are not the values
        x = x.resolve_conj().resolve_neg()
    y = x.permute(perm)
    if out.is_contiguous():
        _launch(op, v, x, y, out)
    else:
        tmp = torch.empty(y.shape, dtype=y.dtype, device=y.device)
        _launch(op, v, x, y, tmp)
        out.copy_(tmp)


@torch.library.custom_op("kernelkit::transpose_out", mutates_args=("out",))
def _transpose_out(x: torch.Tensor, out: torch.Tensor, perm: list[int], variant: Optional[str]) -> None:
    _into(TRANSPOSE, x, perm, out, variant)


@torch.library.custom_op("kernelkit::permute_out", mutates_args=("out",))
def _permute_out(x: torch.Tensor, out: torch.Tensor, perm: list[int], variant: Optional[str]) -> None:
    _into(PERMUTE, x, perm, out, variant)


@_transpose_out.register_fake
def _(x, out, perm, variant):
    return None


@_permute_out.register_fake
def _(x, out, perm, variant):
    return None


def _wrap(d, ndim: int, name: str, op: str) -> int:
    n = max(ndim, 1)  # torch lets a 0-d tensor name dim 0 / -1
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError(f"{op}: {name} must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"{op}: {name}={d} is out of range for a {ndim}-dim tensor (expected {-n} to {n - 1})")
    return int(d) % n


def _run(op: Op, x: torch.Tensor, perm: list[int], out, variant) -> torch.Tensor:
    if variant is not None:
        op.variant(variant)  # unknown names fail here, before any tracing
    shape = [x.shape[d] for d in perm]
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    else:
        check_out(out, x.permute(perm), op.name)
        if out.numel() and _overlaps(out, x):
            raise ValueError(f"{op.name}: out shares memory with x; a rearrangement cannot run in place")
    if torch.compiler.is_compiling():
        getattr(torch.ops.kernelkit, f"{op.name}_out")(x, out, perm, variant)
    else:  # eager: skip the dispatcher, the launch is the only work left
        _into(op, x, perm, out, variant)
    return out


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    def span(t):
        lo = t.data_ptr()
        hi = lo + (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()
        return lo, hi

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def transpose(x: torch.Tensor, dim0: int = -2, dim1: int = -1, *, out: Optional[torch.Tensor] = None,
              variant: Optional[str] = None) -> torch.Tensor:
    """``x.transpose(dim0, dim1).contiguous()``: a new contiguous tensor, bit for bit.

    ``x``: a CUDA tensor of any dtype of 1, 2, 4 or 8 bytes, any shape and layout. ``out``: optional
    result of the transposed shape and x's dtype, not overlapping x. ``variant``: a rung of
    ``kernelkit.ladder("transpose")``; None picks the fastest valid for the input.
    """
    check_tensor(x, "x", DTYPES, "transpose")
    a, b = _wrap(dim0, x.dim(), "dim0", "transpose"), _wrap(dim1, x.dim(), "dim1", "transpose")
    perm = list(range(x.dim()))
    if perm:
        perm[a], perm[b] = perm[b], perm[a]
    return _run(TRANSPOSE, x, perm, out, variant)


def permute(x: torch.Tensor, dims: Sequence[int], *, out: Optional[torch.Tensor] = None,
            variant: Optional[str] = None) -> torch.Tensor:
    """``x.permute(dims).contiguous()``: a new contiguous tensor, bit for bit.

    ``dims``: a permutation of x's dims (negative indices allowed). Fast paths: NCHW <-> NHWC,
    swapping the last two dims, moving the batch axis (any permutation that merges down to a batched
    transpose or to contiguous runs); every other permutation through a strided gather (at most 6
    dims once neighbours that stay together are merged). ``out`` / ``variant`` as in ``transpose``.
    """
    check_tensor(x, "x", DTYPES, "permute")
    if isinstance(dims, (int, np.integer)) or not isinstance(dims, Sequence):
        raise TypeError(f"permute: dims must be a sequence of ints, got {type(dims).__name__}")
    if len(dims) != x.dim():
        raise ValueError(f"permute: dims has {len(dims)} entries for a {x.dim()}-dim tensor")
    perm = [_wrap(d, x.dim(), "dims entry", "permute") for d in dims]
    if sorted(perm) != list(range(x.dim())):
        raise ValueError(f"permute: dims {list(dims)} is not a permutation of 0..{x.dim() - 1}")
    return _run(PERMUTE, x, perm, out, variant)


def _bytes(x: torch.Tensor, *args, **kwargs) -> int:
    return 2 * x.numel() * x.element_size()  # read x once, write out once


def _random(shape, dtype) -> torch.Tensor:
    if dtype.is_complex:
        return torch.randn(shape, device="cuda", dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, device="cuda").to(dtype)
    return torch.randint(0, 2 if dtype == torch.bool else 100, shape, device="cuda").to(dtype)


def _permute_dims(ndim: int) -> tuple[int, ...]:
    """The benchmark permutation for a rank: NCHW -> NHWC, batched last-two swap, 2D transpose."""
    return {4: (0, 2, 3, 1), 3: (0, 2, 1), 2: (1, 0)}.get(ndim, tuple(reversed(range(ndim))))


TRANSPOSE = register(Op(
    name="transpose", family="rearrangement", variants=TRANSPOSE_LADDER, bytes_moved=_bytes,
    flops=lambda *a, **k: 0, call=transpose,
    torch_fn=lambda x, dim0=-2, dim1=-1: x.transpose(dim0, dim1).contiguous(),
    example=lambda shape, dtype: ((_random(shape, dtype),), {}),
    doc="x.transpose(dim0, dim1).contiguous(), any dtype, batched",
    bench_shapes=((16384, 16384), (8192, 8192)), bench_dtypes=(torch.float32, torch.float16, torch.uint8),
))
PERMUTE = register(Op(
    name="permute", family="rearrangement", variants=PERMUTE_LADDER, bytes_moved=_bytes,
    flops=lambda *a, **k: 0, call=permute, torch_fn=lambda x, dims: x.permute(dims).contiguous(),
    example=lambda shape, dtype: ((_random(shape, dtype), _permute_dims(len(shape))), {}),
    doc="x.permute(dims).contiguous(), up to 6 dims, NCHW<->NHWC fast paths",
    bench_shapes=((64, 64, 224, 224),), bench_dtypes=(torch.float16, torch.float32),
))
