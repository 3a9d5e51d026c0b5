"""conv2d: torch.nn.functional.conv2d, with the depthwise case (groups == channels, one filter per
channel) on kernelkit's kernels and every other case on torch: its ladder, torch.library op and public
function."""
from __future__ import annotations

import numbers
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel, launch
from .._shared.checks import check_same_device, check_tensor
from .._shared.custom_op import out_op
from .._shared.launch_rules import cdiv, sm_count
from .._shared.plans import plan_cache, remember
from ._common import CXX, FLOATS, Planes, TensorCache, empty_output, out_size
from .filter2d import _registers, _vector, filter_planes

__all__ = ["conv2d"]

SRC = "window/conv2d.cu"


def _direct_name(dtype: torch.dtype, ve: int, cl: bool) -> str:
    return f"kk::dw_direct<{CXX[dtype]}, {ve}, {'true' if cl else 'false'}>"


def _direct(dtype):
    return (Kernel(SRC, _direct_name(dtype, 1, False), block=256), Kernel(SRC, _direct_name(dtype, 1, True), block=256),
            Kernel(SRC, _direct_name(dtype, 16 // dtype.itemsize, True), load_bits=128, store_bits=128, block=256))


VARIANTS = (
    Variant("direct", "one output per thread (channels_last: 16 bytes of channels per thread, 16-byte tap "
            "loads, tap-major weights), taps read from global memory; any stride, padding and dilation",
            FLOATS, lambda dtype, **_: _direct(dtype)),
    Variant("best", "planar inputs at stride 1 with the padding that keeps the size: filter2d's tiles (a weight "
            "set per channel, zero border, bias); the direct kernels otherwise", FLOATS,
            lambda dtype, **_: (*_registers(dtype), *_vector(dtype), *_direct(dtype)), default=True),
)

_plans = plan_cache()
_weights = TensorCache()


def _float_weights(weight: torch.Tensor, tap_major: bool) -> torch.Tensor:
    """The weights as float32 (C, KH*KW), or tap-major (KH*KW, C), made once per weight version."""
    key = (weight._version, tap_major, weight.data_ptr())
    got = _weights.get(weight, key)
    if got is not None:
        return got
    w = weight.detach().reshape(weight.shape[0], -1).to(torch.float32)
    w = (w.t() if tap_major else w).contiguous()
    _weights.put(weight, key, w)
    return w


def _conv2d_into(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                 stride: list[int], padding: list[int], dilation: list[int], variant: Optional[str]) -> None:
    N, C, H, W = x.shape
    KH, KW = weight.shape[-2:]
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    b = None if bias is None else bias.to(torch.float32).contiguous()
    cl = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    same = (stride == [1, 1] and dilation == [1, 1] and KH % 2 == 1 and KW % 2 == 1
            and padding == [KH // 2, KW // 2])
    if variant != "direct" and same and not cl:
        xc = x.contiguous()
        p = Planes(xc, N * C, H, W, 1, H * W, W)
        filter_planes("best", p, out, _float_weights(weight, False), b, C, KH, KW, 0)
        return
    if not cl:
        x = x.contiguous()
    ve = 16 // x.element_size() if cl and C % (16 // x.element_size()) == 0 and x.data_ptr() % 16 == 0 else 1
    key = (dtype, dev, ve, cl)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, _direct_name(dtype, ve, cl), device_index=dev))
    w = _float_weights(weight, cl)
    wc, wt = (1, C) if cl else (KH * KW, 1)
    sn, sc, sh, sw = x.stride()
    total = N * OH * OW * (C // ve)
    grid = max(1, min(cdiv(total, 256), sm_count(dev) * 16))
    i32 = np.int32
    launch(kern, grid, 256, x.data_ptr(), out.data_ptr(), w.data_ptr(), 0 if b is None else b.data_ptr(),
           i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sc, sh, sw, i32(wc), i32(wt), i32(KH), i32(KW),
           i32(stride[0]), i32(stride[1]), i32(padding[0]), i32(padding[1]), i32(dilation[0]), i32(dilation[1]),
           name="dw_direct", device_index=dev)


_conv2d_out = out_op("conv2d_depthwise_out", _conv2d_into)


def _pair(v, name: str) -> list[int]:
    vals = [v] if isinstance(v, numbers.Integral) else list(v) if isinstance(v, (list, tuple)) else None
    if vals is None or len(vals) not in (1, 2) or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
                                                          for a in vals):
        raise TypeError(f"conv2d: {name} must be an int or a pair of ints, got {v!r}")
    return [int(vals[0])] * 2 if len(vals) == 1 else [int(vals[0]), int(vals[1])]


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, stride=1, padding=0,
           dilation=1, groups: int = 1, *, variant: Optional[str] = None) -> torch.Tensor:
    """2-D convolution with torch.nn.functional.conv2d's arguments and semantics (a correlation).

    The depthwise case runs on kernelkit's kernels: a float32, float16 or bfloat16 CUDA ``input`` of
    shape (N, C, H, W) (planar or channels_last; the result keeps the layout, as torch's), ``groups`` ==
    C and ``weight`` of shape (C, 1, KH, KW) (a channel multiplier of 1), accumulated in float32. Every
    other case (other groups, a channel multiplier, 3-D inputs, CPU tensors, other dtypes) calls
    torch.nn.functional.conv2d itself, unchanged.
    ``weight``: (C_out, C_in / groups, KH, KW), the input's dtype and device. ``bias``: None or (C_out,).
    ``stride``, ``padding`` (an int, a pair, "valid" or "same"), ``dilation``: as torch's.
    ``groups``: as torch's; the depthwise case is groups == C == C_out.
    No ``out``: the result is always a new tensor.
    ``variant``: a rung of ``kernelkit.ladder("conv2d")`` for the depthwise case; None picks the best.
    No ``config``: the depthwise launch follows from the shape (for tuning and tests, ``variant``
    selects the direct kernels).

    Raises TypeError for a non-tensor input, a depthwise input of another dtype or sizes that are not
    ints; ValueError for an unknown variant, a weight or bias on another device, a padding string other
    than "valid"/"same", or an output that would be empty; torch's own errors in the cases it runs.
    """
    depthwise = (isinstance(input, torch.Tensor) and isinstance(weight, torch.Tensor) and input.dim() == 4
                 and input.is_cuda and weight.dim() == 4 and groups == input.shape[1] == weight.shape[0]
                 and weight.shape[1] == 1 and input.dtype in FLOATS and weight.dtype == input.dtype)
    if not depthwise:
        return F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    check_tensor(input, "input", FLOATS, "conv2d")
    check_same_device("conv2d", ("input", input), ("weight", weight), ("bias", bias))
    if variant is not None:
        OP.variant(variant)
    s, d = _pair(stride, "stride"), _pair(dilation, "dilation")
    KH, KW = weight.shape[-2:]
    if isinstance(padding, str):
        if padding == "valid":
            p = [0, 0]
        elif padding == "same":
            if s != [1, 1]:
                raise ValueError("conv2d: padding='same' needs stride 1, as torch's")
            if (d[0] * (KH - 1)) % 2 or (d[1] * (KW - 1)) % 2:  # torch pads asymmetrically: let it
                return F.conv2d(input, weight, bias, stride, padding, dilation, groups)
            p = [d[0] * (KH - 1) // 2, d[1] * (KW - 1) // 2]
        else:
            raise ValueError(f"conv2d: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    else:
        p = _pair(padding, "padding")
    if min(s) <= 0 or min(d) <= 0 or min(p) < 0:
        raise ValueError("conv2d: stride and dilation must be positive and padding non-negative")
    N, C, H, W = input.shape
    OH, OW = out_size(H, KH, s[0], p[0], d[0], False), out_size(W, KW, s[1], p[1], d[1], False)
    if OH <= 0 or OW <= 0:
        raise ValueError(f"conv2d: the output would be {OH}x{OW} for an input of {H}x{W}")
    out = empty_output(input, (N, C, OH, OW))
    if out.numel():
        _conv2d_out(input, weight, bias, out, s, p, d, variant)
    return out


def _example(shape, dtype):
    x = torch.randn(shape, dtype=dtype, device="cuda").to(memory_format=torch.channels_last)
    w = torch.randn(shape[1], 1, 7, 7, dtype=dtype, device="cuda") / 7
    return (x, w, None, 1, 3, 1, shape[1]), {}


OP = register(Op(
    name="conv2d", family="window", variants=VARIANTS,
    bytes_moved=lambda x, w, *a, **k: 2 * x.numel() * x.element_size(),
    flops=lambda x, w, *a, **k: 2 * x.numel() * w.shape[-1] * w.shape[-2],
    call=conv2d, torch_fn=F.conv2d, example=_example,
    doc="2-D convolution: the depthwise case on kernelkit's kernels, the rest on torch",
    bench_shapes=((64, 96, 56, 56), (64, 768, 7, 7)), bench_dtypes=(torch.float16, torch.bfloat16),
))
