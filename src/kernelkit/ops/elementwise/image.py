"""Byte-image ops: invert_colors (RGBA, source 001) and binarize (grayscale), ladders and dispatch."""
from __future__ import annotations

import math
import numbers
from typing import Optional

import numpy as np
import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import launch
from .._shared.checks import check_tensor, pick_variant
from .._shared.launch_rules import cdiv, i32
from .._shared.plans import load_rung as load

__all__ = ["invert_colors", "binarize"]

SRC = "elementwise/image.cu"
U8 = (torch.uint8,)
BLOCK = 256
# fast rungs: one 16-byte vector per thread over a grid covering the image. Block size barely matters
# (invert at 2^30 bytes on an H100: 3017-3030 GB/s for 128-1024 threads); 512 as measured best-but-one.
FAST_BLOCK = 512
COARSEN_FACTORS = (1, 8, 16)  # the factors source 001 measured


def _kernels(op: str, kind: str, coarsen: int = 0) -> tuple[Kernel, ...]:
    f = "kk::Invert" if op == "invert_colors" else "kk::Binarize"
    byte = Kernel(SRC, f"kk::bytes_map<{f}>", 8, 8)
    if kind == "byte":
        return (byte,)
    if kind == "uchar4":  # 4-byte aligned: words; otherwise the byte kernel
        return (Kernel(SRC, f"kk::words_map<{f}>", 32, 32), byte)
    if kind == "coarsened":
        return (Kernel(SRC, f"kk::invert_coarsened<{coarsen}>", 32, 32), byte)
    return (  # fast: input aligned like the output (16-byte loads), or not (byte loads)
        Kernel(SRC, f"kk::bytes_fast<{f}, true>", 128, 128, block=FAST_BLOCK),
        Kernel(SRC, f"kk::bytes_fast<{f}, false>", 8, 128, block=FAST_BLOCK),
    )


def _rung(op: str, name: str, kind: str, technique: str, default: bool = False, coarsen: int = 0) -> Variant:
    return Variant(name=name, technique=technique, dtypes=U8, default=default,
                   kernels=lambda dtype, **p: _kernels(op, kind, coarsen),
                   params={"kind": kind, "coarsen": coarsen})


INVERT_VARIANTS = (
    _rung("invert_colors", "byte", "byte", "one byte per thread (8-bit accesses), alpha by index"),
    _rung("invert_colors", "uchar4", "uchar4", "one RGBA pixel per thread as uchar4 (32-bit accesses), "
          "inverted by one xor; unaligned images fall back to the byte kernel"),
    *(_rung("invert_colors", f"coarsen_x{k}", "coarsened",
            f"source 001's kernel: 32x8 blocks over (row, pixel), {k} uchar4 pixel(s) per thread 32 apart "
            "(thread coarsening, factor BK)", coarsen=k) for k in COARSEN_FACTORS),
    _rung("invert_colors", "fast", "fast", "16-byte accesses (4 pixels, 4 xors) one vector per thread over a "
          "grid covering the image, prologue/main/epilogue for any alignment", default=True),
)

BINARIZE_VARIANTS = (
    _rung("binarize", "byte", "byte", "one byte per thread (8-bit accesses)"),
    _rung("binarize", "uchar4", "uchar4", "four pixels per thread, one 32-bit access, per-byte compare "
          "(__vcmpgtu4); unaligned images fall back to the byte kernel"),
    _rung("binarize", "fast", "fast", "16-byte accesses, one vector per thread over a grid covering the "
          "image, per-byte compares, prologue/main/epilogue for any alignment", default=True),
)


def _launch(opname: str, v: Variant, src: torch.Tensor, out: torch.Tensor, param: int) -> None:
    """out = f(src) for contiguous uint8 tensors of n > 0 bytes."""
    n, dev = src.numel(), src.get_device()
    kind = v.params["kind"]
    ks = load(v, torch.uint8, dev)
    ip, op, p = src.data_ptr(), out.data_ptr(), np.uint32(param)
    if kind == "fast":
        head = min(n, (-op) % 16)
        k = ks[0] if (ip - op) % 16 == 0 else ks[1]
        blocks = max(1, cdiv((n - head) // 16, FAST_BLOCK))
        launch(k, blocks, FAST_BLOCK, op, ip, n, i32(head), p, name=f"{opname}_fast", device_index=dev)
        return
    aligned4 = ip % 4 == 0 and op % 4 == 0
    if kind == "uchar4" and aligned4:
        launch(ks[0], max(1, cdiv(n // 4, BLOCK)), BLOCK, op, ip, n, p, name=f"{opname}_words", device_index=dev)
    elif kind == "coarsened" and aligned4:
        width = src.shape[-2]
        rows = n // (4 * width)
        bk = v.params["coarsen"]
        grid = (cdiv(width, 32 * bk), min(cdiv(rows, 8), 65535))
        launch(ks[0], grid, (32, 8), op, ip, rows, width, name=f"invert_coarsened<{bk}>", device_index=dev)
    else:  # the byte rung, and the aligned rungs' fallback
        launch(ks[-1], cdiv(n, BLOCK), BLOCK, op, ip, n, p, name=f"{opname}_bytes", device_index=dev)


def _map_into(opname: str, src: torch.Tensor, out: torch.Tensor, param: int, variant: Optional[str]) -> None:
    if src.numel() == 0:
        return
    v = pick_variant(OPS[opname], variant, torch.uint8)
    sc = src.contiguous()
    target = out if out.is_contiguous() else torch.empty_like(sc)
    if target.data_ptr() != sc.data_ptr():
        a0, a1 = sc.data_ptr(), sc.data_ptr() + sc.numel()
        if a0 < target.data_ptr() + target.numel() and target.data_ptr() < a1:
            raise ValueError(f"{opname}: the output partially overlaps the image")
    _launch(opname, v, sc, target, param)
    if target is not out:
        out.copy_(target)


# ---- invert_colors -----------------------------------------------------------------------------


@torch.library.custom_op("kernelkit::invert_colors_out", mutates_args=("out",))
def _invert_out_op(image: torch.Tensor, out: torch.Tensor, variant: Optional[str]) -> None:
    _map_into("invert_colors", image, out, 0, variant)


@_invert_out_op.register_fake
def _(image, out, variant):
    return None


@torch.library.custom_op("kernelkit::invert_colors_", mutates_args=("image",))
def _invert_inplace_op(image: torch.Tensor, variant: Optional[str]) -> None:
    _map_into("invert_colors", image, image, 0, variant)


@_invert_inplace_op.register_fake
def _(image, variant):
    return None


def invert_colors(image: torch.Tensor, *, inplace: bool = False, variant: Optional[str] = None) -> torch.Tensor:
    """Invert the colours of RGBA images: R, G, B -> 255 - value, alpha unchanged.

    ``image``: uint8 CUDA tensor of shape (..., H, W, 4), any layout or alignment. ``inplace``: write
    the result into ``image`` (and return it) instead of a new tensor. ``variant``: a rung of
    ``kernelkit.ladder("invert_colors")``; None picks the fastest.
    """
    check_tensor(image, "image", U8, "invert_colors")
    if image.dim() < 3 or image.shape[-1] != 4:
        raise ValueError(f"invert_colors: image must have shape (..., H, W, 4) (RGBA, channels last), "
                         f"got {tuple(image.shape)}")
    if variant is not None:
        OP_INVERT.variant(variant)
    compiling = torch.compiler.is_compiling()
    if inplace:
        if compiling:
            torch.ops.kernelkit.invert_colors_(image, variant)
        else:
            _map_into("invert_colors", image, image, 0, variant)
        return image
    out = torch.empty_like(image, memory_format=torch.contiguous_format)
    if compiling:
        torch.ops.kernelkit.invert_colors_out(image, out, variant)
    else:
        _map_into("invert_colors", image, out, 0, variant)
    return out


_XOR_MASKS: dict[torch.device, torch.Tensor] = {}


def _torch_invert(image: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """What users write today: an xor with (255, 255, 255, 0) broadcast over the pixels."""
    mask = _XOR_MASKS.get(image.device)
    if mask is None:
        mask = _XOR_MASKS[image.device] = torch.tensor([255, 255, 255, 0], dtype=torch.uint8, device=image.device)
    return image.bitwise_xor_(mask) if inplace else image ^ mask


def _image_example(shape: tuple[int, ...], dtype: torch.dtype = torch.uint8) -> tuple[tuple, dict]:
    return (torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda"),), {}


OP_INVERT = register(
    Op(
        name="invert_colors",
        family="elementwise",
        variants=INVERT_VARIANTS,
        bytes_moved=lambda image, **_: 2 * image.numel(),
        flops=lambda image, **_: 3 * image.numel() // 4,  # three subtractions a pixel
        call=invert_colors,
        torch_fn=_torch_invert,
        example=_image_example,
        doc="RGBA colour inversion, alpha kept (source 001)",
        bench_shapes=((2048, 2048, 4), (16384, 16384, 4)),
        bench_dtypes=U8,
    )
)


# ---- binarize ----------------------------------------------------------------------------------


@torch.library.custom_op("kernelkit::binarize_out", mutates_args=("out",))
def _binarize_out_op(image: torch.Tensor, threshold: int, out: torch.Tensor, variant: Optional[str]) -> None:
    _binarize_into(image, threshold, out, variant)


@_binarize_out_op.register_fake
def _(image, threshold, out, variant):
    return None


def _binarize_into(image: torch.Tensor, t: int, out: torch.Tensor, variant: Optional[str]) -> None:
    if t < 0:  # every value exceeds it
        out.fill_(255)
    elif t >= 255:  # none does
        out.zero_()
    else:
        _map_into("binarize", image, out, t, variant)


def binarize(image: torch.Tensor, threshold, *, variant: Optional[str] = None) -> torch.Tensor:
    """255 where ``image > threshold``, else 0, as a new uint8 tensor of the image's shape.

    ``image``: uint8 CUDA tensor (grayscale) of any shape and layout. ``threshold``: a real number
    (compared as torch does: 127.5 keeps values >= 128). ``variant``: a rung of
    ``kernelkit.ladder("binarize")``; None picks the fastest.
    """
    check_tensor(image, "image", U8, "binarize")
    if isinstance(threshold, torch.Tensor) and threshold.numel() == 1 and threshold.device.type == "cpu":
        threshold = threshold.item()
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(threshold):
        raise TypeError(f"binarize: threshold must be a real number, got {threshold!r}")
    # integer pixels: v > t  <=>  v > floor(t); clamp to the int32 range the kernel takes
    t = int(max(-1, min(255, math.floor(threshold))))
    if variant is not None:
        OP_BINARIZE.variant(variant)
    out = torch.empty_like(image, memory_format=torch.contiguous_format)
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.binarize_out(image, t, out, variant)
    else:
        _binarize_into(image, t, out, variant)
    return out


def _binarize_example(shape: tuple[int, ...], dtype: torch.dtype = torch.uint8) -> tuple[tuple, dict]:
    return (torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda"), 127), {}


OP_BINARIZE = register(
    Op(
        name="binarize",
        family="elementwise",
        variants=BINARIZE_VARIANTS,
        bytes_moved=lambda image, threshold, **_: 2 * image.numel(),
        flops=lambda image, threshold, **_: image.numel(),
        call=binarize,
        torch_fn=lambda image, threshold: (image > threshold).to(torch.uint8).mul_(255),
        example=_binarize_example,
        doc="grayscale uint8 to {0, 255} by a threshold",
        bench_shapes=((4096, 4096), (16384, 16384)),
        bench_dtypes=U8,
    )
)

OPS = {"invert_colors": OP_INVERT, "binarize": OP_BINARIZE}
