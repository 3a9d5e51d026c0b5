"""filter2d: one 2-D kernel correlated with every plane of an image (OpenCV's filter2D, torch's conv2d
without the flip), its ladder, launch rules, torch.library op and public function.

The kernels (csrc/window/filter2d.cu) are shared with the depthwise convolution: a call names a weight
set per plane (``groups``) and an optional bias.
"""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.cxx import cxx_bool
from .._shared.launch_rules import sm_count
from .._shared.plans import plan_cache, remember
from ._common import (CXX, DTYPES, PIPE_MAX_TILES, SRC_FILTER, Planes, WindowConfig, check_border, check_config,
                      device_weights, pipe_geometry, pipe_tile_bytes, pipe_tiles, planes_of, random_image, round4,
                      rows_aligned, rows_rule, run_pipelined, run_tiled)

__all__ = ["filter2d"]

REG_K = (3, 5, 7)  # kernel sizes compiled with the weights in registers
VECTOR_ROWS = (1, 4)  # rows per thread of the vector rung


def reg_shape(dtype: torch.dtype) -> tuple[int, int]:
    """(V, RY) of the register rung: a 16-byte vector of outputs a row, about 16 outputs a thread."""
    v = 16 // dtype.itemsize
    return v, max(1, 16 // v)


def reg_channels(dtype: torch.dtype) -> tuple[int, ...]:
    """Interleaved channel counts the register rung is compiled for (HWC images are uint8)."""
    return (1, 3, 4) if dtype == torch.uint8 else (1,)


def pipe_rows(dtype: torch.dtype, k: int) -> int:
    """Output rows a thread of the pipelined rung: 4 (16-64 accumulators beside the K*K weights), uint8 2,
    and 1 at 7x7, where 49 weights and a window of up to 40 floats leave room for one row of 16."""
    if dtype.itemsize > 1:
        return 4
    return 2 if k <= 5 else 1


# Wide tiles: blocks of 64 x 4 threads, 8 rows a thread (tiles of 256 floats x 32 rows, rows of the tile 1 KB
# runs of the image), one block an SM. On an H100 (docs/design/window.md, "Wide tiles") fp32 3x3 and 5x5 on
# 8192^2 and 4096x16384 planes ran at 84-86% of the copy against 79-80% on the 32 x 8 tiles, but only where
# each SM walks many tiles: with 6 a block (3x1080x1920) 57% against 76%, with 4 (2048^2) 68% against 72%;
# 7x7 was slower (70% against 76%).
WIDE_K = (3, 5)
WIDE_BX, WIDE_ROWS = 64, 8
WIDE_TILES_PER_SM = 32


def wide_tiles(dtype: torch.dtype, p: Planes, k: int, sms: int) -> bool:
    """Whether the pipelined rung takes the wide tiles: fp32 planes (one channel), 3x3 or 5x5, and at least
    WIDE_TILES_PER_SM tiles for each SM to walk (one block an SM keeps one tile in flight a block)."""
    if dtype != torch.float32 or p.C != 1 or k not in WIDE_K:
        return False
    tw, th, _ = pipe_geometry(4, k // 2, 1, WIDE_ROWS, True, WIDE_BX)
    return pipe_tiles(p, tw, th) >= WIDE_TILES_PER_SM * sms


def pipe_name(dtype: torch.dtype, k: int, c: int, aligned: bool, wide: bool = False) -> str:
    if wide:
        return f"kk::f2d_pipelined<{CXX[dtype]}, {k}, {c}, {WIDE_ROWS}, {cxx_bool(aligned)}, {WIDE_BX}>"
    return f"kk::f2d_pipelined<{CXX[dtype]}, {k}, {c}, {pipe_rows(dtype, k)}, {cxx_bool(aligned)}>"


def _pipelined(dtype):
    names = [pipe_name(dtype, k, c, a) for k in REG_K for c in reg_channels(dtype) for a in (True, False)]
    if dtype == torch.float32:
        names += [pipe_name(dtype, k, 1, a, True) for k in WIDE_K for a in (True, False)]
    return tuple(Kernel(SRC_FILTER, n, store_bits=128, sass=("LDGSTS.E.BYPASS.128",), block=256) for n in names)


def _naive(dtype):
    return (Kernel(SRC_FILTER, f"kk::f2d_naive<{CXX[dtype]}>", block=256),)


def _shared(dtype):
    return (Kernel(SRC_FILTER, f"kk::f2d_shared<{CXX[dtype]}>", block=256, dyn_shared=38 * 152 * 4),)


def vector_name(tin: torch.dtype, tout: torch.dtype, ry: int) -> str:
    return f"kk::f2d_vector<{CXX[tin]}, {CXX[tout]}, 4, {ry}>"


def _vector(dtype):
    return tuple(Kernel(SRC_FILTER, vector_name(dtype, dtype, ry), load_bits=128, block=256) for ry in VECTOR_ROWS)


def reg_name(dtype: torch.dtype, k: int, c: int) -> str:
    v, ry = reg_shape(dtype)
    return f"kk::f2d_registers<{CXX[dtype]}, {k}, {c}, {v}, {ry}>"


def _registers(dtype):
    return tuple(Kernel(SRC_FILTER, reg_name(dtype, k, c), load_bits=128, store_bits=128, block=256)
                 for k in REG_K for c in reg_channels(dtype))


VARIANTS = (
    Variant("naive", "one output per thread, every tap read from global memory through the border rule",
            DTYPES, lambda dtype, **_: _naive(dtype)),
    Variant("shared", "32x8 outputs per block staged with their halo in a shared-memory tile (element by "
            "element); one output per thread", DTYPES, lambda dtype, **_: _shared(dtype)),
    Variant("vector", "the tile loaded by 16-byte vectors (head and tail peeled), 4 outputs x 1-4 rows per "
            "thread, weights staged in shared memory; any odd KH x KW", DTYPES, lambda dtype, **_: _vector(dtype)),
    Variant("registers", "compile-time 3x3, 5x5 or 7x7: weights in registers, register windows of the tile "
            "(128-bit shared loads), a 16-byte vector of outputs per row; other kernels run the vector rung",
            DTYPES, lambda dtype, **_: _registers(dtype)),
    Variant("pipelined", "the register rung's windows on persistent blocks: the next tile's raw elements "
            "arrive by cp.async in a second shared buffer while one is computed, converted at the window read",
            DTYPES, lambda dtype, **_: _pipelined(dtype)),
    Variant("best", "the pipelined rung where the kernel is 3x3-7x7 square (and 1, 3 or 4 channels), the "
            "vector rung otherwise", DTYPES, lambda dtype, **_: (*_pipelined(dtype), *_vector(dtype)),
            default=True),
)

_plans = plan_cache()


def _plan(kind: str, dtype: torch.dtype, p: Planes, KH: int, KW: int, rows: Optional[int], dev: int):
    """(kernel, name, tile_w, tile_h, shmem, pipelined launch options or None) for a rung on this geometry."""
    square = KH == KW and KH in REG_K and p.C in reg_channels(dtype) and rows is None
    if kind in ("pipelined", "best") and square:
        aligned = rows_aligned(p)
        wide = wide_tiles(dtype, p, KH, sm_count(dev))
        if wide:
            tw, th, ld = pipe_geometry(dtype.itemsize, KH // 2, p.C, WIDE_ROWS, aligned, WIDE_BX)
            opts = {"block": (WIDE_BX, 256 // WIDE_BX), "per_sm": 1}
        else:
            tw, th, ld = pipe_geometry(dtype.itemsize, KH // 2, p.C, pipe_rows(dtype, KH), aligned)
            opts = {}
        if pipe_tiles(p, tw, th) <= PIPE_MAX_TILES:
            name = pipe_name(dtype, KH, p.C, aligned, wide)
            shmem = pipe_tile_bytes(dtype.itemsize, th + KH - 1, ld, aligned)
            return get_kernel(SRC_FILTER, name, device_index=dev), name, tw, th, shmem, opts
        kind = "registers"  # more tiles than 32-bit tile numbers reach
    if kind == "registers" and square:
        v, ry = reg_shape(dtype)
        name = reg_name(dtype, KH, p.C)
        ld = 31 * v + round4(v + (KH - 1) * p.C)
        return get_kernel(SRC_FILTER, name, device_index=dev), name, 32 * v, 8 * ry, (8 * ry + KH - 1) * ld * 4, None
    if kind in ("vector", "registers", "pipelined", "best"):
        ry = rows or rows_rule(p.H, VECTOR_ROWS)
        name = vector_name(p.x.dtype, dtype, ry)  # the output may be a float32 intermediate
        ld = round4(128 + (KW - 1) * p.C)
        shmem = (round4(KH * KW) + (8 * ry + KH - 1) * ld) * 4
        return get_kernel(SRC_FILTER, name, device_index=dev), name, 128, 8 * ry, shmem, None
    if kind == "shared":
        name = _shared(dtype)[0].name
        return (get_kernel(SRC_FILTER, name, device_index=dev), name, 32, 8,
                (8 + KH - 1) * (32 + (KW - 1) * p.C) * 4, None)
    name = _naive(dtype)[0].name
    return get_kernel(SRC_FILTER, name, device_index=dev), name, 32, 8, 0, None


def filter_planes(kind: str, p: Planes, out: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor],
                  groups: int, KH: int, KW: int, mode: int, rows: Optional[int] = None) -> None:
    """out (contiguous, p's planes) <- the correlation of p with weight set (plane % groups) of w."""
    dev = out.get_device()
    key = (kind, p.x.dtype, out.dtype, dev, p.H, p.W, p.C, p.planes, KH, KW, rows, rows_aligned(p))
    plan = _plans.get(key)
    if plan is None:
        plan = remember(_plans, key, _plan(kind, out.dtype, p, KH, KW, rows, dev))
    kernel, name, tw, th, shmem, pipelined = plan
    args = (kernel, name, p, out.data_ptr(), w.data_ptr(), 0 if bias is None else bias.data_ptr(), groups,
            KH, KW, mode, tw, th, shmem, dev)
    if pipelined is None:
        run_tiled(*args)
    else:
        run_pipelined(*args, **pipelined)


def _filter2d_into(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, border: int, channels_last: bool,
                   variant: Optional[str], rows: Optional[int]) -> None:
    p = planes_of(x, channels_last, "filter2d")
    kind = variant or "best"
    filter_planes(kind, p, out, weight, None, 1, weight.shape[0], weight.shape[1], border, rows)


_filter2d_out = out_op("filter2d_out", _filter2d_into)


def check_kernel2d(kernel: torch.Tensor, op: str, name: str = "kernel") -> tuple[int, int]:
    if kernel.dim() != 2:
        raise ValueError(f"{op}: {name} must be 2-D (KH, KW), got shape {tuple(kernel.shape)}")
    KH, KW = kernel.shape
    for k in (KH, KW):
        if k % 2 == 0 or not 1 <= k <= 31:
            raise ValueError(f"{op}: {name} sizes must be odd, 1 to 31, got {KH}x{KW}")
    return KH, KW


def filter2d(x: torch.Tensor, kernel, *, border: str = "zero", channels_last: bool = False,
             variant: Optional[str] = None, config: Optional[WindowConfig] = None) -> torch.Tensor:
    """The correlation of every plane of ``x`` with one 2-D ``kernel``, the output the size of the input.

    out[..., y, x] = sum over (i, j) of kernel[i, j] * x[..., y + i - KH // 2, x + j - KW // 2]: the kernel
    is not flipped, as in OpenCV's filter2D and torch's conv2d. Accumulation is in float32.
    ``x``: a CUDA tensor of float32, float16, bfloat16 or uint8, (..., H, W): every plane filtered. uint8
    results are rounded half to even and saturated to [0, 255], as OpenCV does. Any layout and alignment
    (views whose rows are not contiguous are copied first).
    ``kernel``: KH x KW weights, both odd, 1 to 31: a CUDA tensor (used as it is when float32 and
    contiguous), or a CPU tensor or nested lists (copied to the device once per tensor version, not on
    every call).
    ``border``: what the taps read outside the image: "zero", "replicate" (the edge pixel) or "reflect"
    (mirrored without repeating the edge, torch's reflect padding, OpenCV's BORDER_REFLECT_101; continued
    periodically for kernels larger than the image).
    ``channels_last``: True for HWC images, ``x`` of shape (..., H, W, C) with C = 1 to 4 interleaved
    channels (a uint8 RGB or RGBA image as decoders give it), each channel filtered on its own.
    No ``out``: the result is always a new contiguous tensor of ``x``'s shape and dtype.
    ``variant``: a rung of ``kernelkit.ladder("filter2d")`` (naive first); None picks the best.
    ``config``: for tuning and tests; a ``WindowConfig`` (rows of outputs per thread) for the vector rung
    (or for "best", which then runs the vector rung), eager calls only.

    Raises TypeError for a non-tensor ``x``, another dtype, a kernel that is not real numbers or a config
    of another type; ValueError for a CPU ``x``, a kernel that is not 2-D with odd sizes 1 to 31 or on
    another device, an unknown border or variant, fewer dims than the layout needs, channels_last with
    more than 4 channels, or a config that this rung does not run.
    """
    check_tensor(x, "x", DTYPES, "filter2d")
    mode = check_border(border, "filter2d")
    w = device_weights(kernel, x.device, "filter2d")
    check_kernel2d(w, "filter2d")
    if variant is not None:
        OP.variant(variant)
    rows = None
    if config is not None:
        if variant not in (None, "vector", "best"):
            raise ValueError(f"filter2d: config sets the vector rung's tile, not the {variant!r} rung's")
        rows = check_config(config, VECTOR_ROWS, "filter2d")
        variant = "vector"
    planes_of(x, channels_last, "filter2d")  # shape errors before any allocation
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    if rows is None:
        _filter2d_out(x, w, out, mode, bool(channels_last), variant, None)
    else:
        _filter2d_into(x, w, out, mode, bool(channels_last), variant, rows)
    return out


def _example(shape, dtype):
    x = random_image(shape, dtype)
    return (x, torch.randn(5, 5, device="cuda") / 5), {}


def _torch_filter2d(x, kernel, border="zero", channels_last=False):
    """What users write today: conv2d over (planes, 1, H, W), padded for the border."""
    import torch.nn.functional as F

    shape = x.shape
    KH, KW = kernel.shape
    y = x.reshape(-1, 1, shape[-2], shape[-1]).float()
    mode = {"zero": "constant", "replicate": "replicate", "reflect": "reflect"}[border]
    y = F.pad(y, (KW // 2, KW // 2, KH // 2, KH // 2), mode=mode)
    return F.conv2d(y, kernel.float()[None, None]).to(x.dtype).reshape(shape)


def _bytes(x, *a, **k):
    return 2 * x.numel() * x.element_size()


def _flops(x, kernel, *a, **k):
    return 2 * x.numel() * (kernel.numel() if isinstance(kernel, torch.Tensor) else 25)


OP = register(Op(
    name="filter2d", family="window", variants=VARIANTS, bytes_moved=_bytes, flops=_flops, call=filter2d,
    torch_fn=_torch_filter2d, example=_example,
    doc="one 2-D kernel correlated with every plane (OpenCV filter2D), zero/replicate/reflect borders",
    bench_shapes=((8192, 8192), (2160, 3840)), bench_dtypes=(torch.float32, torch.float16, torch.uint8),
))
