"""max_pool2d and avg_pool2d with torch.nn.functional's semantics on NCHW and channels_last inputs:
their ladders, launch rules, torch.library ops and public functions."""
from __future__ import annotations

import numbers
from typing import Optional

import numpy as np
import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel, launch
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.launch_rules import cdiv, sm_count
from .._shared.plans import plan_cache, remember
from ._common import CXX, FLOATS, GRID_YZ, empty_output, out_size

__all__ = ["max_pool2d", "avg_pool2d"]

SRC, NHWC_SRC = "window/pool.cu", "window/pool_nhwc.cu"  # planar kernels; channels_last ones


def _pair(v, name: str, op: str) -> tuple[int, int]:
    vals = [v] if isinstance(v, numbers.Integral) else list(v) if isinstance(v, (list, tuple)) else None
    if vals is None or len(vals) not in (1, 2) or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
                                                          for a in vals):
        raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {v!r}")
    return (int(vals[0]), int(vals[0])) if len(vals) == 1 else (int(vals[0]), int(vals[1]))


def vec_of(dtype: torch.dtype) -> int:
    return 16 // dtype.itemsize


def _names(dtype: torch.dtype, is_max: bool, vector: bool) -> tuple[str, str]:
    m = "true" if is_max else "false"
    v = vec_of(dtype) if vector else 1
    return f"kk::pool_nchw<{CXX[dtype]}, {m}, {v}>", f"kk::pool_nhwc<{CXX[dtype]}, {m}, {v}>"


SPAN = ((2, 2), (3, 2), (3, 1))  # (K, S) of the square windows the span kernels are compiled for
SPAN_INPUT_ROWS = 4  # input rows a thread of the span kernels may hold: 16-byte vectors of each in registers


def span_rows(k: int, s: int) -> int:
    """Output rows a thread of the span kernels computes: two (their shared input rows read once) where
    their windows span at most SPAN_INPUT_ROWS input rows (2x2/s2, 3x3/s1), else one (3x3/s2: five rows of
    three vectors each kept 80 registers from holding the loop's invariants, which spilled)."""
    return 2 if s + k <= SPAN_INPUT_ROWS else 1


def span_name(dtype: torch.dtype, is_max: bool, k: int, s: int) -> str:
    return f"kk::pool_span<{CXX[dtype]}, {'true' if is_max else 'false'}, {k}, {s}, {span_rows(k, s)}>"


SPAN_BLOCK = 256  # threads a block of the span kernels where the problem fills the device
SPAN_MIN_BLOCK = 64  # the smallest block they shrink to so that the blocks cover every SM


def span_block(cols: int, groups: int, sms: int) -> tuple[int, int]:
    """Block shape (bx, by) of the planar span kernels for ``cols`` threads along an output row and
    ``groups`` row groups: a warp's threads along the row (up to 32, coalesced), the rest over row
    groups; where there are fewer row groups than that (1xN images) the block widens along the row
    instead of holding idle threads; then, while its blocks are fewer than the SMs, the block halves
    (row groups first) down to SPAN_MIN_BLOCK threads, so a small image is spread over the device rather
    than queued on half of it."""
    bx = min(cols, 32)
    by = max(1, min(SPAN_BLOCK // bx, groups))
    if by < SPAN_BLOCK // bx:
        bx = min(cols, SPAN_BLOCK // by)
    while cdiv(cols, bx) * cdiv(groups, by) < sms and bx * by >= 2 * SPAN_MIN_BLOCK:
        if by > 1:
            by = cdiv(by, 2)
        else:
            bx = cdiv(bx, 2)
    return bx, by


def span_nhwc_name(dtype: torch.dtype, is_max: bool, k: int, s: int) -> str:
    return f"kk::pool_nhwc_k<{CXX[dtype]}, {'true' if is_max else 'false'}, {k}, {s}>"


def span_shape(k: list[int], s: list[int], d: list[int]) -> Optional[tuple[int, int]]:
    """(K, S) where the window is a compiled square K x K at stride S without dilation, else None."""
    if k[0] == k[1] and s[0] == s[1] and d == [1, 1] and (k[0], s[0]) in SPAN:
        return k[0], s[0]
    return None


def ladder(is_max: bool) -> tuple[Variant, ...]:
    def generic(dtype, vector):
        a, b = _names(dtype, is_max, vector)
        bits = 128 if vector else None
        ks = [Kernel(SRC, a, store_bits=bits, block=256),
              Kernel(NHWC_SRC, b, load_bits=bits, store_bits=bits, block=256)]
        if vector:
            ks.append(Kernel(NHWC_SRC, _names(dtype, is_max, False)[1], block=256))  # channels not in 16-byte vectors
        return ks

    def span(dtype):
        return (*(Kernel(SRC, span_name(dtype, is_max, k, s), load_bits=128, store_bits=128, block=256)
                  for k, s in SPAN),
                *(Kernel(NHWC_SRC, span_nhwc_name(dtype, is_max, k, s), load_bits=128, store_bits=128, block=256)
                  for k, s in SPAN), *generic(dtype, True))

    return (
        Variant("naive", "one output per thread (planar) or one channel of one pixel (channels_last), taps read "
                "from global memory", FLOATS, lambda dtype, **_: tuple(generic(dtype, False))),
        Variant("vector", "planar: 16 bytes of outputs a row per thread, one vector store, taps read element by "
                "element; channels_last: 16 bytes of channels per thread, every tap one 16-byte load (channel "
                "counts not a multiple of a vector take the naive kernel)", FLOATS,
                lambda dtype, **_: tuple(generic(dtype, True))),
        Variant("span", "2x2/s2, 3x3/s2 and 3x3/s1 windows compiled: planar, each window row's inputs of a thread's "
                "16 bytes of outputs read as 16-byte vectors (rows that keep the alignment: their offset a "
                "compile-time case; other rows: shifted into place by selects, no per-row branch; the image's edges "
                "by predicated vectors), 2 output rows a thread sharing their input rows "
                "where they read at most 4; channels_last, all taps' 16-byte loads issued together, 16-bit max on packed pairs; "
                "NaN-propagating max in one instruction; other windows as the vector rung", FLOATS,
                lambda dtype, **_: span(dtype), default=True),
    )


_plans = plan_cache()


def _pool_into(x: torch.Tensor, out: torch.Tensor, is_max: bool, k: list[int], s: list[int], p: list[int],
               d: list[int], include_pad: bool, divisor: int, variant: Optional[str]) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    vector = variant != "naive"
    nhwc = x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    i32 = np.int32
    geo = (i32(k[0]), i32(k[1]), i32(s[0]), i32(s[1]), i32(p[0]), i32(p[1]), i32(d[0]), i32(d[1]),
           i32(include_pad), i32(divisor))
    ks = span_shape(k, s, d) if variant in (None, "span") else None
    if nhwc:
        ve = vec_of(dtype) if vector and C % vec_of(dtype) == 0 and x.data_ptr() % 16 == 0 else 1
        sn, _, sh, sw = x.stride()
        total = N * OH * OW * (C // ve)
        grid = max(1, min(cdiv(total, 256), sm_count(dev) * 16))
        if ks is not None and ve > 1:
            key = ("nhwc_k", dtype, dev, is_max, ks)
            kern = _plans.get(key) or remember(_plans, key, get_kernel(NHWC_SRC, span_nhwc_name(dtype, is_max, *ks),
                                                                       device_index=dev))
            launch(kern, grid, 256, x.data_ptr(), out.data_ptr(), i32(N), i32(C), i32(H), i32(W), i32(OH),
                   i32(OW), sn, sh, sw, i32(p[0]), i32(p[1]), i32(include_pad), i32(divisor), name="pool_nhwc_k",
                   device_index=dev)
            return
        key = ("nhwc", dtype, dev, is_max, ve)
        kern = _plans.get(key) or remember(_plans, key, get_kernel(
            NHWC_SRC, f"kk::pool_nhwc<{CXX[dtype]}, {'true' if is_max else 'false'}, {ve}>", device_index=dev))
        launch(kern, grid, 256, x.data_ptr(), out.data_ptr(), i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW),
               sn, sh, sw, *geo, name="pool_nhwc", device_index=dev)
        return
    x = x.contiguous()
    v = vec_of(dtype) if vector else 1
    if ks is not None:
        key = ("span", dtype, dev, is_max, ks)
        kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, span_name(dtype, is_max, *ks), device_index=dev))
        cols, groups = cdiv(OW, v), N * C * cdiv(OH, span_rows(*ks))
        bx, by = span_block(cols, groups, sm_count(dev))
        grid = (cdiv(cols, bx), min(cdiv(groups, by), GRID_YZ))
        launch(kern, grid, (bx, by), x.data_ptr(), out.data_ptr(), i32(N * C), i32(H), i32(W), i32(OH), i32(OW),
               H * W, W, i32(p[0]), i32(p[1]), i32(include_pad), i32(divisor), name="pool_span", device_index=dev)
        return
    key = ("nchw", dtype, dev, is_max, v)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, _names(dtype, is_max, vector)[0], device_index=dev))
    bx = max(1, min(32, cdiv(OW, v)))
    by = 256 // bx
    grid = (cdiv(cdiv(OW, v), bx), min(cdiv(OH, by), GRID_YZ), min(N * C, GRID_YZ))
    launch(kern, grid, (bx, by), x.data_ptr(), out.data_ptr(), i32(N * C), i32(H), i32(W), i32(OH), i32(OW),
           H * W, W, *geo, name="pool_nchw", device_index=dev)


_pool_out = out_op("pool2d_out", _pool_into)


def _pool(op: str, is_max: bool, x, kernel_size, stride, padding, dilation, ceil_mode, include_pad, divisor,
          variant) -> torch.Tensor:
    check_tensor(x, "input", FLOATS, op)
    if x.dim() not in (3, 4):
        raise ValueError(f"{op}: input must be (N, C, H, W) or (C, H, W), got shape {tuple(x.shape)}")
    k = _pair(kernel_size, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _pair(stride, "stride", op)
    p = _pair(padding, "padding", op)
    d = _pair(dilation, "dilation", op)
    if min(k) <= 0 or min(s) <= 0 or min(d) <= 0 or min(p) < 0:
        raise ValueError(f"{op}: kernel_size, stride and dilation must be positive and padding non-negative")
    for i in range(2):
        if p[i] > ((k[i] - 1) * d[i] + 1) // 2:
            raise ValueError(f"{op}: padding should be at most half of the effective kernel size, got padding {p} "
                             f"for kernel_size {k}")
    if divisor is not None and (isinstance(divisor, bool) or not isinstance(divisor, int) or divisor == 0):
        raise ValueError(f"{op}: divisor_override must be a non-zero int or None, got {divisor!r}")
    if variant is not None:
        (MAX_OP if is_max else AVG_OP).variant(variant)
    squeeze = x.dim() == 3
    x4 = x.unsqueeze(0) if squeeze else x
    N, C, H, W = x4.shape
    OH, OW = (out_size(H, k[0], s[0], p[0], d[0], ceil_mode), out_size(W, k[1], s[1], p[1], d[1], ceil_mode))
    if OH <= 0 or OW <= 0:
        raise ValueError(f"{op}: the output would be {OH}x{OW} for an input of {H}x{W}; the kernel is too large")
    out = empty_output(x4, (N, C, OH, OW))
    if out.numel():
        _pool_out(x4, out, is_max, list(k), list(s), list(p), list(d), bool(include_pad), int(divisor or 0), variant)
    return out[0] if squeeze else out


def max_pool2d(input: torch.Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               *, variant: Optional[str] = None) -> torch.Tensor:
    """2-D max pooling, as torch.nn.functional.max_pool2d (without return_indices).

    ``input``: a CUDA tensor of float32, float16 or bfloat16, (N, C, H, W) or (C, H, W); planar (NCHW,
    any view: non-contiguous ones are copied) or channels_last (the result is channels_last too, as
    torch's). A NaN in a window gives NaN.
    ``kernel_size``, ``stride`` (default: the kernel size), ``padding`` (at most half the effective
    kernel), ``dilation``: ints or (h, w) pairs. Padding is never the maximum.
    ``ceil_mode``: output length rounded up (a last window must still start inside the input or its
    left padding), as torch.
    No ``out``: the result is always a new tensor.
    ``variant``: a rung of ``kernelkit.ladder("max_pool2d")``; None picks the span rung.
    No ``config``: the launch follows from the output shape (for tuning and tests, ``variant`` selects
    the kernels).

    Raises TypeError for a non-tensor input, another dtype, or sizes that are not ints; ValueError for a
    CPU input, a shape that is not 3-D or 4-D, non-positive sizes, padding over half the kernel, an
    empty output or an unknown variant.
    """
    return _pool("max_pool2d", True, input, kernel_size, stride, padding, dilation, ceil_mode, False, None, variant)


def avg_pool2d(input: torch.Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Optional[int] = None, *,
               variant: Optional[str] = None) -> torch.Tensor:
    """2-D average pooling, as torch.nn.functional.avg_pool2d, accumulated in float32.

    ``input``: a CUDA tensor of float32, float16 or bfloat16, (N, C, H, W) or (C, H, W); planar or
    channels_last (the result keeps the layout, as torch's).
    ``kernel_size``, ``stride`` (default: the kernel size), ``padding`` (at most half the kernel): ints
    or (h, w) pairs.
    ``ceil_mode``: output length rounded up, as torch (windows past the padded input are cut).
    ``count_include_pad``: divide by the window's size including the zero padding (torch's default),
    else by the number of input elements in it. ``divisor_override``: a fixed divisor instead.
    No ``out``: the result is always a new tensor.
    ``variant``: a rung of ``kernelkit.ladder("avg_pool2d")``; None picks the span rung.
    No ``config``: the launch follows from the output shape (for tuning and tests, ``variant`` selects
    the kernels).

    Raises TypeError for a non-tensor input, another dtype, or sizes that are not ints; ValueError for a
    CPU input, a shape that is not 3-D or 4-D, non-positive sizes, padding over half the kernel, a zero
    divisor_override, an empty output or an unknown variant.
    """
    return _pool("avg_pool2d", False, input, kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                 divisor_override, variant)


def _example(shape, dtype):
    return (torch.randn(shape, dtype=dtype, device="cuda"), 2), {}


def _bytes(x, kernel_size, stride=None, *a, **k):
    kk = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
    ss = stride if isinstance(stride, int) else kk
    return x.numel() * x.element_size() + x.numel() * x.element_size() // (ss * ss)


MAX_OP = register(Op(
    name="max_pool2d", family="window", variants=ladder(True), bytes_moved=_bytes,
    flops=lambda x, *a, **k: x.numel(), call=max_pool2d, torch_fn=torch.nn.functional.max_pool2d,
    example=_example, doc="2-D max pooling (torch.nn.functional.max_pool2d), NCHW and channels_last",
    bench_shapes=((1, 1, 8192, 8192), (64, 96, 112, 112)),
))
AVG_OP = register(Op(
    name="avg_pool2d", family="window", variants=ladder(False), bytes_moved=_bytes,
    flops=lambda x, *a, **k: x.numel(), call=avg_pool2d, torch_fn=torch.nn.functional.avg_pool2d,
    example=_example, doc="2-D average pooling (torch.nn.functional.avg_pool2d), NCHW and channels_last",
    bench_shapes=((1, 1, 8192, 8192), (64, 96, 112, 112)),
))
