"""binarize: grayscale uint8 to {0, 255} by a threshold, its ladder, torch.library op and public function
(its lane: the byte maps' one, _bytes.make_lane)."""
from __future__ import annotations

import math
import numbers
from typing import Optional

import torch

from ...ladder import Op, register
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from ._bytes import U8, ByteMap, make_lane, map_into
from ._lane import COMPILING, EMPTY_LIKE, TENSOR
from ._launch import ElementwiseLaunch, check_config

__all__ = ["binarize"]

SPEC = ByteMap(name="binarize", source="elementwise/binarize.cu", functor="kk::Binarize")

VARIANTS = (
    SPEC.rung("byte", "one byte per thread (8-bit accesses)"),
    SPEC.rung("uchar4", "four pixels per thread, one 32-bit access, per-byte compare (__vcmpgtu4); "
              "unaligned images fall back to the byte kernel"),
    SPEC.rung("fast", "16-byte accesses, one vector per thread over a grid covering the image, per-byte "
              "compares, prologue/main/epilogue for any alignment", default=True),
)


def _binarize(image: torch.Tensor, t: int, out: torch.Tensor, variant: Optional[str],
              config: Optional[ElementwiseLaunch]) -> None:
    """out <- 255 where image > t, else 0, for an integer t (thresholds outside [0, 254] need no kernel)."""
    if t < 0:  # every value exceeds it
        out.fill_(255)
    elif t >= 255:  # none does
        out.zero_()
    else:
        map_into(SPEC, OP, image, out, t, variant, config)


def _binarize_into(image: torch.Tensor, threshold: int, out: torch.Tensor, variant: Optional[str]) -> None:
    _binarize(image, threshold, out, variant, None)


_binarize_out = out_op("binarize_out", _binarize_into)


def binarize(image: torch.Tensor, threshold, *, variant: Optional[str] = None,
             config: Optional[ElementwiseLaunch] = None) -> torch.Tensor:
    """255 where ``image > threshold``, else 0: a new uint8 tensor of the image's shape.

    As ``(image > threshold).to(torch.uint8) * 255``. ``image``: a uint8 CUDA tensor (grayscale) of any
    shape, layout and alignment. ``threshold``: a real number or a one-element CPU tensor, compared as
    torch does (127.5 keeps values >= 128; below 0 every pixel is 255, from 255 none is).
    No ``out``: the result is always a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("binarize")`` (naive first); None picks the fastest.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``fast`` rung, eager calls only); raises
    ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than uint8, a ``threshold`` that is not a real
    number (or NaN), or a config that is not an ElementwiseLaunch; ValueError for a CPU tensor, an
    unknown variant, or a config for another rung or under torch.compile.
    """
    if variant is None and config is None and type(image) is TENSOR and not COMPILING():
        lane = SPEC.lanes.get((image.dtype, image.get_device()))
        if lane is not None and image.is_contiguous():
            kind = type(threshold)  # thresholds in [0, 255) launch; for them int() is the floor the checked path takes
            if (kind is int and 0 <= threshold < 255) or (kind is float and 0.0 <= threshold < 255.0):
                out = EMPTY_LIKE(image)
                lane(image, out, int(threshold))
                return out
    check_tensor(image, "image", U8, "binarize")
    if isinstance(threshold, torch.Tensor) and threshold.numel() == 1 and threshold.device.type == "cpu":
        threshold = threshold.item()
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(threshold):
        raise TypeError(f"binarize: threshold must be a real number, got {threshold!r}")
    # integer pixels: v > t  <=>  v > floor(t); clamp to the int32 range the kernel takes
    t = int(max(-1, min(255, math.floor(threshold))))
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    out = torch.empty_like(image, memory_format=torch.contiguous_format)
    if config is None:
        _binarize_out(image, t, out, variant)
        if variant is None and not COMPILING():
            make_lane(SPEC, OP, image.get_device())
    else:
        check_config("binarize", config, variant)
        _binarize(image, t, out, variant, config)
    return out


def _example(shape: tuple[int, ...], dtype: torch.dtype = torch.uint8) -> tuple[tuple, dict]:
    return (torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda"), 127), {}


OP = register(
    Op(
        name="binarize",
        family="elementwise",
        variants=VARIANTS,
        bytes_moved=lambda image, threshold, **_: 2 * image.numel(),
        flops=lambda image, threshold, **_: image.numel(),
        call=binarize,
        torch_fn=lambda image, threshold: (image > threshold).to(torch.uint8).mul_(255),
        example=_example,
        doc="grayscale uint8 to {0, 255} by a threshold",
        bench_shapes=((4096, 4096), (16384, 16384)),
        bench_dtypes=U8,
    )
)
