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
from ...runtime import allow_shared, get_kernel, launch
from .._shared.checks import check_same_device, check_tensor
from .._shared.custom_op import out_op
from .._shared.launch_rules import cdiv, sm_count
from .._shared.plans import plan_cache, remember
from ._common import CXX, FLOATS, GRID_YZ, Planes, TensorCache, empty_output, out_size
from ._depthwise_shapes import (  # noqa: F401  (the configurations and rules, public through this module)
    GROUP, PLANAR_TILE_WIDTH, PLANES_MAX_SMEM, PLANES_RY, PLANES_SMEM, PLANES_THREADS, TILE_KS, TILE_MIN_CHANNELS,
    TILE_RX, TILE_RY, TILE_SMEM, DwPlanes, DwTile, pix_floats, planes_pitch, planes_rule, tile_rule)
from .filter2d import _registers, _vector, filter_planes

__all__ = ["conv2d"]

SRC = "window/conv2d.cu"


def _direct_name(dtype: torch.dtype, ve: int, cl: bool) -> str:
    return f"kk::dw_direct<{CXX[dtype]}, {ve}, {'true' if cl else 'false'}>"


def _direct(dtype):
    return (Kernel(SRC, _direct_name(dtype, 1, False), block=256), Kernel(SRC, _direct_name(dtype, 1, True), block=256),
            Kernel(SRC, _direct_name(dtype, 16 // dtype.itemsize, True), load_bits=128, store_bits=128, block=256))


def planes_name(dtype: torch.dtype, k: int, s: int, ry: int) -> str:
    return f"kk::dw_planes<{CXX[dtype]}, {k}, {s}, {ry}>"


def _planar(dtype):
    return tuple(Kernel(SRC, planes_name(dtype, k, s, ry), block=PLANES_THREADS, dyn_shared=PLANES_SMEM)
                 for k, s in TILE_KS for ry in PLANES_RY)


def tile_shape(kh: int, kw: int, stride: list[int], dilation: list[int]) -> Optional[tuple[int, int]]:
    """(K, S) where the tiled kernels are compiled for this window, else None."""
    if kh == kw and stride[0] == stride[1] and dilation == [1, 1] and (kh, stride[0]) in TILE_KS:
        return kh, stride[0]
    return None


def tile_name(dtype: torch.dtype, k: int, s: int, rx: int, cl: bool) -> str:
    return f"kk::dw_tile<{CXX[dtype]}, {k}, {s}, {rx}, {TILE_RY}, {'true' if cl else 'false'}>"


def _tiled(dtype):
    out = []
    for k, s in TILE_KS:
        for rx in TILE_RX[s]:
            out.append(Kernel(SRC, tile_name(dtype, k, s, rx, True), load_bits=128, block=256, dyn_shared=TILE_SMEM))
            out.append(Kernel(SRC, tile_name(dtype, k, s, rx, False), block=256, dyn_shared=TILE_SMEM))
    return tuple(out)


VARIANTS = (
    Variant("direct", "one output per thread (channels_last: 16 bytes of channels per thread, 16-byte tap "
            "loads, tap-major weights), taps read from global memory; any stride, padding and dilation",
            FLOATS, lambda dtype, **_: _direct(dtype)),
    Variant("tiled", "32 channels x an output tile per block, the tile's inputs (halo and padding included) "
            "read once into shared memory as float32 (16-byte channel vectors for channels_last, row runs for "
            "NCHW), a lane a channel with its weights in registers and 2 x 7-8 outputs from register windows; "
            "compiled 3x3, 5x5, 7x7 at stride 1 and 3x3, 5x5 at stride 2 (others: the direct kernels)",
            FLOATS, lambda dtype, **_: (*_tiled(dtype), *_direct(dtype))),
    Variant("best", "compiled windows: NCHW on planar bands (whole-width rows of one plane, or several whole "
            "small planes, staged in shared memory by coalesced row loads; a thread a column strip of 4 or 8 "
            "outputs), channels_last on the tiled kernels (16 channels or more); planar inputs of fewer "
            "channels at stride 1 with the size-keeping padding on filter2d's tiles (a weight set per channel); "
            "the direct kernels otherwise", FLOATS,
            lambda dtype, **_: (*_planar(dtype), *_tiled(dtype), *_registers(dtype), *_vector(dtype),
                                *_direct(dtype)), default=True),
)

_plans = plan_cache()
CONFIG_TILE, CONFIG_PLANES = 0, 1  # the first of the ints a config reaches the custom op as
_weights = {False: TensorCache(), True: TensorCache()}  # by tap_major: both forms kept for a weight


def _float_weights(weight: torch.Tensor, tap_major: bool) -> torch.Tensor:
    """The weights as float32 (C, KH*KW), or tap-major (KH*KW, C), made once per weight version."""
    key = (weight._version, weight.data_ptr())
    got = _weights[tap_major].get(weight, key)
    if got is not None:
        return got
    w = weight.detach().reshape(weight.shape[0], -1).to(torch.float32)
    w = (w.t() if tap_major else w).contiguous()
    _weights[tap_major].put(weight, key, w)
    return w


def _run_tiled(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
               padding: list[int], cl: bool, t: DwTile) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    key = ("tile", dtype, dev, k, s, t.rx, cl)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, tile_name(dtype, k, s, t.rx, cl), device_index=dev))
    shmem = t.smem(k, s, cl)
    if shmem > 48 * 1024:
        allow_shared(kern, shmem, dev)
    sn, sc, sh, sw = x.stride()
    ve = 16 // x.element_size()
    vec = cl and sc == 1 and C % ve == 0 and sw % ve == 0 and sh % ve == 0 and sn % ve == 0 and x.data_ptr() % 16 == 0
    tiles_x = cdiv(OW, t.tw)
    grid = (cdiv(OH, t.th) * tiles_x, cdiv(C, GROUP), min(N, GRID_YZ))
    i32 = np.int32
    launch(kern, grid, (32, t.warps_x * t.warps_y), x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sc, sh, sw,
           i32(padding[0]), i32(padding[1]), i32(t.warps_x), i32(tiles_x), i32(vec), shmem=shmem, name="dw_tile",
           device_index=dev)


def _run_planes(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
                padding: list[int], t: DwPlanes) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    key = ("planes", dtype, dev, k, s, t.ry)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, planes_name(dtype, k, s, t.ry), device_index=dev))
    shmem = t.smem(OW, k, s)
    bands = cdiv(cdiv(OH, t.ry), t.strips)
    NC = N * C
    i32 = np.int32
    launch(kern, cdiv(NC, t.planes) * bands, PLANES_THREADS, x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(NC), i32(C), i32(H), i32(W), i32(OH), i32(OW), i32(padding[0]),
           i32(padding[1]), i32(t.planes), i32(t.strips), i32(bands), i32(t.rows(k, s)), i32((OW - 1) * s + k),
           i32(planes_pitch(OW, k, s)), shmem=shmem, name="dw_planes", device_index=dev)


def _conv2d_into(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                 stride: list[int], padding: list[int], dilation: list[int], variant: Optional[str],
                 config: Optional[list[int]]) -> None:
    N, C, H, W = x.shape
    KH, KW = weight.shape[-2:]
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    b = None if bias is None else bias.to(torch.float32).contiguous()
    cl = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    ks = tile_shape(KH, KW, stride, dilation)
    if ks is not None and not cl and variant in (None, "best"):
        t = None
        if config is not None and config[0] == CONFIG_PLANES:
            t = DwPlanes(*config[1:])
        elif config is None and (C >= TILE_MIN_CHANNELS or stride != [1, 1] or padding != [KH // 2, KW // 2]):
            t = planes_rule(N * C, OH, OW, ks[0], ks[1], sm_count(dev))
        if t is not None:
            _run_planes(x.contiguous(), _float_weights(weight, False), b, out, ks, padding, t)
            return
    if ks is not None and (variant == "tiled" or (variant in (None, "best") and C >= TILE_MIN_CHANNELS)):
        t = DwTile(*config[1:]) if config is not None else tile_rule(OH, OW, ks[0], ks[1], cl)
        _run_tiled(x if cl else x.contiguous(), _float_weights(weight, True), b, out, ks, padding, cl, t)
        return
    same = (stride == [1, 1] and dilation == [1, 1] and KH % 2 == 1 and KW % 2 == 1
            and padding == [KH // 2, KW // 2])
    if variant in (None, "best") and same and not cl:
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
           dilation=1, groups: int = 1, *, variant: Optional[str] = None,
           config: "Optional[DwTile | DwPlanes]" = None) -> torch.Tensor:
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
    ``config``: for tuning and tests, a ``DwTile`` (``kernelkit.ops.window.conv2d.DwTile``: outputs a
    thread along W, warps across and down) for the tiled kernels, which then run (with variant None,
    "best" or "tiled"), or, for an NCHW input, a ``DwPlanes`` (output rows a thread, planes a block,
    strips a band) for the planar band kernels (variant None or "best"); without one ``planes_rule``
    (NCHW) and ``tile_rule`` (channels_last) pick from the output size, kernel, stride and SM count.

    Raises TypeError for a non-tensor input, a depthwise input of another dtype, sizes that are not
    ints or a config that is not a DwTile or DwPlanes; ValueError for an unknown variant, a weight or bias on another
    device, a padding string other than "valid"/"same", an output that would be empty, or a config for
    a window the tiled kernels are not compiled for, another rung, or a tile or band they cannot run.
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
    cfg = None
    if config is not None:
        cfg = _check_config(config, KH, KW, s, d, variant,
                            not input.is_contiguous() and input.is_contiguous(memory_format=torch.channels_last),
                            OH, OW)
        variant = "best" if isinstance(config, DwPlanes) else "tiled"
    out = empty_output(input, (N, C, OH, OW))
    if out.numel():
        _conv2d_out(input, weight, bias, out, s, p, d, variant, cfg)
    return out


def _check_config(config, KH: int, KW: int, s: list[int], d: list[int], variant: Optional[str],
                  channels_last: bool, OH: int, OW: int) -> list[int]:
    if not isinstance(config, (DwTile, DwPlanes)):
        raise TypeError(f"conv2d: config must be a DwTile or a DwPlanes, got {type(config).__name__}")
    planar = isinstance(config, DwPlanes)
    if variant not in ((None, "best") if planar else (None, "best", "tiled")):
        raise ValueError(f"conv2d: {type(config).__name__} sets the tiled or planar kernels' block, not the "
                         f"{variant!r} rung's")
    ks = tile_shape(KH, KW, s, d)
    if ks is None:
        raise ValueError(f"conv2d: no tiled kernel for a {KH}x{KW} window at stride {s}, dilation {d}; "
                         f"they are compiled for (K, S) in {TILE_KS}")
    if planar:
        if channels_last or not config.fits(OH, OW, *ks):
            raise ValueError(f"conv2d: {config} is not a band the planar kernels run: NCHW input, ry in "
                             f"{PLANES_RY}, several planes only whole, at most {PLANES_MAX_SMEM} bytes of shared "
                             f"memory")
        return [CONFIG_PLANES, config.ry, config.planes, config.strips]
    if config.rx not in TILE_RX[ks[1]] or not config.fits(*ks, channels_last):
        raise ValueError(f"conv2d: {config} is not a tile the kernels run: rx in {TILE_RX[ks[1]]}, 1 to 8 warps, "
                         f"at most {TILE_SMEM} bytes of shared memory, planar rows of at most "
                         f"{PLANAR_TILE_WIDTH} inputs")
    return [CONFIG_TILE, config.rx, config.warps_x, config.warps_y]


def _bytes(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, **_):
    """Input read once, output written once (the weights are small)."""
    H, W = x.shape[-2:]
    KH, KW = w.shape[-2:]
    s = [stride] * 2 if isinstance(stride, int) else list(stride)
    d = [dilation] * 2 if isinstance(dilation, int) else list(dilation)
    if padding == "same":
        return 2 * x.numel() * x.element_size()
    p = [0, 0] if padding == "valid" else [padding] * 2 if isinstance(padding, int) else list(padding)
    OH, OW = out_size(H, KH, s[0], p[0], d[0], False), out_size(W, KW, s[1], p[1], d[1], False)
    return (x.numel() + x.numel() // (H * W) * OH * OW) * x.element_size()


def _example(shape, dtype):
    x = torch.randn(shape, dtype=dtype, device="cuda").to(memory_format=torch.channels_last)
    w = torch.randn(shape[1], 1, 7, 7, dtype=dtype, device="cuda") / 7
    return (x, w, None, 1, 3, 1, shape[1]), {}


OP = register(Op(
    name="conv2d", family="window", variants=VARIANTS,
    bytes_moved=_bytes,
    flops=lambda x, w, *a, **k: 2 * x.numel() * w.shape[-1] * w.shape[-2],
    call=conv2d, torch_fn=F.conv2d, example=_example,
    doc="2-D convolution: the depthwise case on kernelkit's kernels, the rest on torch",
    bench_shapes=((64, 96, 56, 56), (64, 768, 7, 7)), bench_dtypes=(torch.float16, torch.bfloat16),
))
