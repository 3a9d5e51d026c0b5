"""normalize_image: uint8 channels-last images to normalized float, planar (CHW) or not, in one pass."""
from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, register
from ...runtime import launch
from .._shared.checks import check_tensor, pick_variant
from .._shared.custom_op import out_op
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, i32
from .._shared.plans import load, plan_cache, remember
from ._launch import ElementwiseLaunch, check_config, launch_shape

__all__ = ["normalize_image"]

SRC = "elementwise/normalize_image.cu"
BLOCK = 256
# fast rung: 256 threads; 1024 threads, 75% occupancy or two pixel groups a thread moved none of the
# tuned cases by more than 0.4% (docs/design/elementwise.md)
FAST = ElementwiseLaunch(block=256)
VEC_CHANNELS = (1, 2, 3, 4)  # a vector kernel per channel count (compile-time C keeps bytes in registers)
LAYOUTS = ("CHW", "HWC")
_DTYPE_ALIASES = {"float16": torch.float16, "half": torch.float16, "fp16": torch.float16,
                  "float32": torch.float32, "float": torch.float32, "fp32": torch.float32,
                  "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


def _out_dtype(dtype) -> torch.dtype:
    d = _DTYPE_ALIASES.get(dtype.replace("torch.", "")) if isinstance(dtype, str) else dtype
    if d not in FLOAT_DTYPES:
        raise TypeError(f"normalize_image: dtype must be float16, float32 or bfloat16, got {dtype!r}")
    return d


def _layout(layout) -> str:
    if not isinstance(layout, str) or layout.upper() not in LAYOUTS:
        raise ValueError(f"normalize_image: layout must be 'CHW' (planar output) or 'HWC' (the input's "
                         f"order), got {layout!r}")
    return layout.upper()


def _kernels(kind: str, dtype=torch.float16, layout: str = "CHW") -> tuple[Kernel, ...]:
    dt, lay = _out_dtype(dtype), _layout(layout)
    ct, bits, chw = CXX_TYPE[dt], torch.finfo(dt).bits, "true" if lay == "CHW" else "false"
    pixel = Kernel(SRC, f"kk::norm_pixel<{ct}, {chw}>", 8, bits)
    if kind == "element":
        return (Kernel(SRC, f"kk::norm_element<{ct}, {chw}>", 8, bits),)
    if kind == "pixel":
        return (pixel,)
    # fast: a vector kernel per channel count, then the per-pixel fallback. A thread reads the bytes
    # of E = 16 / sizeof(out) elements per plane (CHW: E * C bytes; HWC: E bytes) with the widest
    # loads that size allows, and writes 16-byte vectors.
    e = 128 // bits
    vec = []
    for c in VEC_CHANNELS:
        nbytes = e * c if lay == "CHW" else e
        load_bits = 128 if nbytes % 16 == 0 else 64 if nbytes % 8 == 0 else 32
        name = f"kk::norm_{'chw' if lay == 'CHW' else 'hwc'}_vec<{ct}, {c}>"
        vec.append(Kernel(SRC, name, load_bits, 128, block=FAST.block))
    return (*vec, pixel)


def _rung(name: str, technique: str, default: bool = False) -> Variant:
    # the input dtype comes positionally: `dtype` among the params is the output dtype
    return Variant(name=name, technique=technique, dtypes=(torch.uint8,), default=default, params={"kind": name},
                   kernels=lambda in_dtype, /, _k=name, **p: _kernels(_k, **p))


VARIANTS = (
    _rung("element", "one output element per thread: divisions to find (n, c, h, w), a byte load each"),
    _rung("pixel", "one pixel per thread: C byte loads, C stores coalesced within each output plane"),
    _rung("fast", "a 16-byte output vector per plane per thread (8 pixels for 16-bit out, 4 for fp32), their "
                  "bytes in 4- to 16-byte loads, warp-contiguous stores; needs H*W a multiple of those pixels "
                  "and 16-byte aligned pointers, else per pixel", default=True),
)


@functools.lru_cache(maxsize=256)
def _coefficients(mean: tuple, std: tuple) -> tuple[float, ...]:
    """The eight kernel parameters, rounded to fp32: scale[0..3] = 1 / (255 std), bias[0..3] = -mean / std
    (padded with zeros)."""
    scale = [1.0 / (255.0 * s) for s in std] + [0.0] * (4 - len(std))
    bias = [-m / s for m, s in zip(mean, std)] + [0.0] * (4 - len(std))
    return tuple(float(np.float32(v)) for v in scale + bias)


@functools.lru_cache(maxsize=256)
def _as_f32(coef: tuple) -> tuple:
    """The coefficients as the fp32 scalars the launch passes."""
    return tuple(np.float32(v) for v in coef)


def _per_channel(values, name: str, c: int) -> tuple:
    if isinstance(values, torch.Tensor):
        if values.device.type != "cpu":
            raise TypeError(f"normalize_image: {name} must be numbers or a CPU tensor (reading a CUDA tensor "
                            "would synchronise the device); pass e.g. [0.485, 0.456, 0.406]")
        values = values.flatten().tolist()
    if isinstance(values, numbers.Real):
        values = [values]
    vals = [float(v) for v in values]
    if len(vals) == 1:
        vals = vals * c
    if len(vals) != c:
        raise ValueError(f"normalize_image: {name} has {len(vals)} values, the image has {c} channels")
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"normalize_image: {name} must be finite, got {vals}")
    return tuple(vals)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a launch needs beyond its pointers, resolved once per (rung, out dtype, layout, device, config)."""

    kind: str
    kernels: tuple  # loaded kernels: the vector kernel of each channel count (fast), then the per-pixel one
    block: int  # the fast rung's launch
    shmem: int


_plans = plan_cache()


def _plan(key: tuple) -> _Plan:
    variant, dtype, layout, dev, config = key
    v = pick_variant(OP, variant, torch.uint8)
    block, shmem = (FAST.block, 0) if config is None else launch_shape("normalize_image", config, dev)
    plan = _Plan(v.params["kind"], load(v.kernels(torch.uint8, dtype=dtype, layout=layout), dev), block, shmem)
    return remember(_plans, key, plan)


def _launch(variant: Optional[str], img: torch.Tensor, out: torch.Tensor, coef: tuple, layout: str,
            config: Optional[ElementwiseLaunch]) -> None:
    """img contiguous (N, H, W, C) uint8 with N*H*W*C > 0; out contiguous in the output layout."""
    *_, h, w, c = img.shape
    hw, dev, total = h * w, img.get_device(), img.numel()
    npix = total // c
    key = (variant, out.dtype, layout, dev, config)
    p = _plans.get(key)
    if p is None:
        p = _plan(key)
    ks = p.kernels
    ip, op = img.data_ptr(), out.data_ptr()
    if p.kind == "element":
        launch(ks[0], cdiv(total, BLOCK), BLOCK, op, ip, total, hw, i32(c), *coef, name="norm_element",
               device_index=dev)
        return
    if p.kind == "fast" and c in VEC_CHANNELS and ip % 16 == 0 and op % 16 == 0:
        k = ks[VEC_CHANNELS.index(c)]
        e = 16 // out.element_size()  # pixels per thread (CHW) / elements per thread (HWC)
        if layout == "CHW" and hw % e == 0:
            units = npix // e
            launch(k, max(1, cdiv(units, p.block)), p.block, op, ip, units, hw, *coef, shmem=p.shmem,
                   name="norm_chw_vec", device_index=dev)
            return
        if layout == "HWC":
            units = total // e
            launch(k, max(1, cdiv(units, p.block)), p.block, op, ip, total, *coef, shmem=p.shmem,
                   name="norm_hwc_vec", device_index=dev)
            return
    launch(ks[-1], cdiv(npix, BLOCK), BLOCK, op, ip, npix, hw, i32(c), *coef, name="norm_pixel", device_index=dev)


def _normalize(image: torch.Tensor, out: torch.Tensor, coef: tuple, layout: str, variant: Optional[str],
               config: Optional[ElementwiseLaunch]) -> None:
    """out <- the normalized image; coef: the eight kernel parameters as fp32 scalars."""
    if image.numel() == 0:
        return
    _launch(variant, image.contiguous(), out, coef, layout, config)


def _normalize_into(image: torch.Tensor, out: torch.Tensor, coef: list[float], layout: str,
                    variant: Optional[str]) -> None:
    _normalize(image, out, _as_f32(tuple(coef)), layout, variant, None)


_normalize_out = out_op("normalize_image_out", _normalize_into)


def normalize_image(image: torch.Tensor, mean, std, *, dtype=torch.float16, layout: str = "CHW",
                    variant: Optional[str] = None, config: Optional[ElementwiseLaunch] = None) -> torch.Tensor:
    """(image / 255 - mean[c]) / std[c] for uint8 channels-last images, in one pass.

    What vision pre-processing writes as ``((image.permute(2, 0, 1).float() / 255) - mean) / std``.
    ``image``: a uint8 CUDA tensor (N, H, W, C) or (H, W, C) with 1 <= C <= 4, any layout and
    alignment. ``mean``, ``std``: a number or C numbers (a list, or a CPU tensor); std non-zero.
    ``dtype``: the result's dtype, float16 (default), float32 or bfloat16; the math is fp32.
    ``layout``: "CHW" gives (N, C, H, W) / (C, H, W) contiguous (what a vision model takes), "HWC"
    keeps the input's shape.
    No ``out``: the result is always a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("normalize_image")`` (naive first); None picks the fastest.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``fast`` rung's vector kernels, eager
    calls only); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, an image dtype other than uint8, a ``dtype`` other than the
    three, a ``mean`` or ``std`` that is not numbers or a CPU tensor, or a config that is not an
    ElementwiseLaunch; ValueError for a CPU tensor, another image shape, a ``layout`` other than "CHW"
    or "HWC", a ``mean`` or ``std`` with another number of values than channels or not finite, a zero
    std, an unknown variant, or a config for another rung or under torch.compile.
    """
    check_tensor(image, "image", (torch.uint8,), "normalize_image")
    if image.dim() not in (3, 4) or not 1 <= image.shape[-1] <= 4:
        raise ValueError(f"normalize_image: image must be (N, H, W, C) or (H, W, C) with 1 <= C <= 4 "
                         f"(uint8, channels last), got shape {tuple(image.shape)}")
    dt, lay, c = _out_dtype(dtype), _layout(layout), image.shape[-1]
    m, s = _per_channel(mean, "mean", c), _per_channel(std, "std", c)
    if any(x == 0 for x in s):
        raise ValueError(f"normalize_image: std must be non-zero, got {list(s)}")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    shape = tuple(image.shape)
    if lay == "CHW":
        shape = shape[:-3] + (c,) + shape[-3:-1]
    out = torch.empty(shape, dtype=dt, device=image.device)
    coef = _coefficients(m, s)
    if config is None:
        _normalize_out(image, out, list(coef), lay, variant)
    else:
        check_config("normalize_image", config, variant)
        _normalize(image, out, _as_f32(coef), lay, variant, config)
    return out


_CONSTANTS = plan_cache()  # (mean, std, device, layout) -> the torch baseline's mean and std tensors


def _torch_normalize(image, mean, std, dtype=torch.float16, layout="CHW"):
    """The expression users write today, ((img.permute(2, 0, 1).float() / 255) - mean) / std, with
    mean and std as (C, 1, 1) CUDA tensors made once, then .to(dtype) when dtype is not float32."""
    dt, lay, c = _out_dtype(dtype), _layout(layout), image.shape[-1]
    key = (tuple(mean), tuple(std), image.device, lay)
    if key not in _CONSTANTS:
        shape = (c, 1, 1) if lay == "CHW" else (c,)
        _CONSTANTS[key] = tuple(torch.tensor(v, dtype=torch.float32, device=image.device).view(shape)
                                for v in (mean, std))
    m, s = _CONSTANTS[key]
    x = image
    if lay == "CHW":
        x = image.permute(2, 0, 1) if image.dim() == 3 else image.permute(0, 3, 1, 2)
    y = ((x.float() / 255) - m) / s
    return y if dt == torch.float32 else y.to(dt)


def _example(shape: tuple[int, ...], dtype: torch.dtype = torch.uint8) -> tuple[tuple, dict]:
    c = shape[-1]
    mean, std = [0.485, 0.456, 0.406, 0.5][:c], [0.229, 0.224, 0.225, 0.25][:c]
    return (torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda"), mean, std), {}


def _bytes(image, mean=None, std=None, dtype=torch.float16, layout="CHW", **_):
    return image.numel() * (1 + torch.finfo(_out_dtype(dtype)).bits // 8)


OP = register(
    Op(
        name="normalize_image",
        family="elementwise",
        variants=VARIANTS,
        bytes_moved=_bytes,
        flops=lambda image, *a, **k: 2 * image.numel(),  # one fma per element
        call=normalize_image,
        torch_fn=_torch_normalize,
        example=_example,
        doc="uint8 HWC images to normalized float CHW (vision pre-processing) in one pass",
        param_space={"dtype": FLOAT_DTYPES, "layout": LAYOUTS},
        bench_shapes=((64, 224, 224, 3), (16384, 16384, 3)),
        bench_dtypes=(torch.uint8,),
    )
)
