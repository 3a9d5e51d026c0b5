"""invert_colors: RGBA colour inversion (alpha kept), its ladder, torch.library ops and public function
(its lane: the byte maps' one, _bytes.make_lane)."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime.lanes import run_fixed
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.plans import plan_cache, with_fixed_lane
from ._bytes import U8, ByteMap, make_lane, map_into
from ._lane import COMPILING, EMPTY_LIKE, TENSOR
from ._launch import ElementwiseLaunch, check_config

__all__ = ["invert_colors"]

SPEC = ByteMap(name="invert_colors", source="elementwise/invert_colors.cu", functor="kk::Invert")
COARSEN_FACTORS = (1, 8, 16)  # no coarsening, and two factors on the flat part of its curve


def _coarsened(k: int) -> Variant:
    kernels = (Kernel(SPEC.source, f"kk::invert_coarsened<{k}>", 32, 32), SPEC.kernels("byte")[0])
    return Variant(name=f"coarsen_x{k}", dtypes=U8, kernels=lambda dtype, **_: kernels,
                   params={"kind": "coarsened", "coarsen": k},
                   technique=f"32x8 blocks over (row, pixel), {k} uchar4 pixel(s) per thread 32 apart "
                             "(thread coarsening, factor BK); unaligned images fall back to the byte kernel")


VARIANTS = (
    SPEC.rung("byte", "one byte per thread (8-bit accesses), alpha by index"),
    SPEC.rung("uchar4", "one RGBA pixel per thread as uchar4 (32-bit accesses), inverted by one xor; "
              "unaligned images fall back to the byte kernel"),
    *(_coarsened(k) for k in COARSEN_FACTORS),
    SPEC.rung("fast", "16-byte accesses (4 pixels, 4 xors) one vector per thread over a grid covering the "
              "image, prologue/main/epilogue for any alignment", default=True),
)


def _invert_into(image: torch.Tensor, out: torch.Tensor, variant: Optional[str]) -> None:
    map_into(SPEC, OP, image, out, 0, variant)


def _invert_inplace_into(image: torch.Tensor, variant: Optional[str]) -> None:
    map_into(SPEC, OP, image, image, 0, variant)


_invert_out = out_op("invert_colors_out", _invert_into)
_invert_inplace = out_op("invert_colors_", _invert_inplace_into, mutates=("image",))


def invert_colors(image: torch.Tensor, *, inplace: bool = False, variant: Optional[str] = None,
                  config: Optional[ElementwiseLaunch] = None) -> torch.Tensor:
    """Invert the colours of RGBA images: R, G, B -> 255 - value, alpha unchanged.

    As ``image ^ torch.tensor([255, 255, 255, 0])``. ``image``: a uint8 CUDA tensor of shape
    (..., H, W, 4) (channels last), any layout and alignment.
    No ``out``: ``inplace``=True writes the result into ``image`` and returns it; otherwise the result
    is a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("invert_colors")`` (naive first); None picks the fastest.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``fast`` rung, eager calls only); raises
    ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than uint8 or a config that is not an
    ElementwiseLaunch; ValueError for a CPU tensor, a shape that is not (..., H, W, 4), an unknown
    variant, or a config for another rung or under torch.compile.
    """
    if variant is None and config is None and type(image) is TENSOR and not COMPILING():
        if not inplace:  # the recorded launch of this shape, replayed (C), if made
            got = run_fixed(_FIXED, image, 0)
            if got is not None:
                return got
        lane = SPEC.lanes.get((image.dtype, image.get_device()))
        if lane is not None:
            shape = image.shape
            if len(shape) >= 3 and shape[-1] == 4 and image.is_contiguous():
                out = image if inplace else EMPTY_LIKE(image)
                lane(image, out, 0)
                return out
    check_tensor(image, "image", U8, "invert_colors")
    if image.dim() < 3 or image.shape[-1] != 4:
        raise ValueError(f"invert_colors: image must have shape (..., H, W, 4) (RGBA, channels last), "
                         f"got {tuple(image.shape)}")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    out = image if inplace else torch.empty_like(image, memory_format=torch.contiguous_format)
    if config is not None:
        check_config("invert_colors", config, variant)
        map_into(SPEC, OP, image, out, 0, variant, config)
    else:
        if inplace:
            _invert_inplace(image, variant)
        elif variant is None and type(image) is TENSOR and image.is_contiguous() and not COMPILING():
            # a plain call: its one launch, recorded, becomes the fixed lane of (device, shape)
            out = with_fixed_lane(_FIXED, image, 0, lambda: _fresh(image))
        else:
            _invert_out(image, out, variant)
        if variant is None and not COMPILING():
            make_lane(SPEC, OP, image.get_device())
    return out


_FIXED = plan_cache()  # (dtype, device, shape, 0) -> the fixed lane of plain calls (runtime.lanes.run_fixed)


def _fresh(image: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(image)
    map_into(SPEC, OP, image, out, 0, None)
    return out


_XOR_MASKS = plan_cache()  # device -> the (255, 255, 255, 0) mask of the torch baseline


def _torch_invert(image: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """What users write today: an xor with (255, 255, 255, 0) broadcast over the pixels."""
    mask = _XOR_MASKS.get(image.device)
    if mask is None:
        mask = _XOR_MASKS[image.device] = torch.tensor([255, 255, 255, 0], dtype=torch.uint8, device=image.device)
    return image.bitwise_xor_(mask) if inplace else image ^ mask


def _example(shape: tuple[int, ...], dtype: torch.dtype = torch.uint8) -> tuple[tuple, dict]:
    return (torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda"),), {}


OP = register(
    Op(
        name="invert_colors",
        family="elementwise",
        variants=VARIANTS,
        bytes_moved=lambda image, **_: 2 * image.numel(),
        flops=lambda image, **_: 3 * image.numel() // 4,  # three subtractions a pixel
        call=invert_colors,
        torch_fn=_torch_invert,
        example=_example,
        doc="RGBA colour inversion, alpha kept",
        bench_shapes=((2048, 2048, 4), (16384, 16384, 4)),
        bench_dtypes=U8,
    )
)
