"""median_blur: the median over a 3x3 or 5x5 window (OpenCV's medianBlur), its ladder, torch.library op
and public function."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.plans import plan_cache, remember
from ._common import CXX, DTYPES, Planes, planes_of, random_image, round4, run_tiled
from .filter2d import reg_channels

__all__ = ["median_blur"]

SRC = "window/median.cu"
SIZES = (3, 5)


def _name(dtype: torch.dtype, k: int, c: int) -> str:
    return f"kk::median_blur_k<{CXX[dtype]}, {k}, {c}>"


VARIANTS = (
    Variant("network", "the tile with its halo in shared memory; per output the K*K values in registers and a "
            "forgetful selection network of min/max exchanges (no branches), 4 outputs a thread", DTYPES,
            lambda dtype, **_: tuple(Kernel(SRC, _name(dtype, k, c), load_bits=128, block=256)
                                     for k in SIZES for c in reg_channels(dtype)), default=True),
)
_plans = plan_cache()


def _run(p: Planes, out: torch.Tensor, k: int) -> None:
    dev, dtype = out.get_device(), out.dtype
    key = (dtype, dev, p.C, k)
    plan = _plans.get(key)
    if plan is None:
        name = _name(dtype, k, p.C)
        shmem = (8 + k - 1) * round4(128 + (k - 1) * p.C) * 4
        plan = remember(_plans, key, (get_kernel(SRC, name, device_index=dev), name, shmem))
    kernel, name, shmem = plan
    run_tiled(kernel, name, p, out.data_ptr(), 0, 0, 1, k, k, 1, 128, 8, shmem, dev)


def _median_blur_into(x: torch.Tensor, out: torch.Tensor, k: int, channels_last: bool,
                      variant: Optional[str]) -> None:
    p = planes_of(x, channels_last, "median_blur")
    if p.C in reg_channels(x.dtype):
        _run(p, out, k)
        return
    planar = x.movedim(-1, -3).contiguous()  # channel counts without a compiled kernel: planes of their own
    tmp = torch.empty_like(planar)
    _run(planes_of(planar, False, "median_blur"), tmp, k)
    out.copy_(tmp.movedim(-3, -1))


_median_blur_out = out_op("median_blur_out", _median_blur_into)


def median_blur(x: torch.Tensor, kernel_size: int, *, channels_last: bool = False,
                variant: Optional[str] = None) -> torch.Tensor:
    """The median of the ``kernel_size`` x ``kernel_size`` window around each pixel, for every plane of
    ``x`` (OpenCV's medianBlur): the border replicates the edge pixels.

    ``x``: a CUDA tensor of float32, float16, bfloat16 or uint8, (..., H, W); the result is one of the
    input values (exact). NaN inputs are dropped by the min/max exchanges while numbers remain in the
    window (the result is then the median of what is left in the network, not a NaN).
    ``kernel_size``: 3 or 5.
    ``channels_last``: True for HWC images, ``x`` of shape (..., H, W, C) with C = 1 to 4.
    No ``out``: the result is always a new contiguous tensor of ``x``'s shape and dtype.
    ``variant``: a rung of ``kernelkit.ladder("median_blur")``; None picks the selection network.
    No ``config``: the tile is fixed (for tuning and tests, none is needed: one kernel a size and dtype).

    Raises TypeError for a non-tensor ``x``, another dtype or a non-int kernel_size; ValueError for a
    CPU ``x``, a kernel_size other than 3 or 5, an unknown variant, or too few dims.
    """
    check_tensor(x, "x", DTYPES, "median_blur")
    if isinstance(kernel_size, bool) or not isinstance(kernel_size, int):
        raise TypeError(f"median_blur: kernel_size must be an int, got {kernel_size!r}")
    if kernel_size not in SIZES:
        raise ValueError(f"median_blur: kernel_size must be 3 or 5, got {kernel_size}")
    if variant is not None:
        OP.variant(variant)
    planes_of(x, channels_last, "median_blur")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel():
        _median_blur_out(x, out, kernel_size, bool(channels_last), variant)
    return out


def _example(shape, dtype):
    x = random_image(shape, dtype)
    return (x, 5), {}


def _torch_median(x, kernel_size):
    import torch.nn.functional as F

    shape = x.shape
    r = kernel_size // 2
    y = F.pad(x.reshape(-1, 1, shape[-2], shape[-1]).float(), (r, r, r, r), mode="replicate")
    return F.unfold(y, kernel_size).median(dim=1).values.to(x.dtype).reshape(shape)


OP = register(Op(
    name="median_blur", family="window", variants=VARIANTS,
    bytes_moved=lambda x, *a, **k: 2 * x.numel() * x.element_size(), flops=lambda x, *a, **k: 200 * x.numel(),
    call=median_blur, torch_fn=_torch_median, example=_example,
    doc="median over a 3x3 or 5x5 window (OpenCV medianBlur), a selection network in registers",
    bench_shapes=((4096, 4096), (2160, 3840)), bench_dtypes=(torch.float32, torch.uint8),
))
