"""box_filter: the mean (or sum) over a KH x KW window (OpenCV's boxFilter / blur), run as a separable
filter: its ladder, torch.library op and public function."""
from __future__ import annotations

import numbers
from typing import Optional

import torch

from ...ladder import Op, register
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from ._common import DTYPES, check_border, planes_of, random_image
from ._separable import ladder, run_separable

__all__ = ["box_filter"]

VARIANTS = ladder("box")
_weights: dict = {}


def _sizes(kernel_size) -> tuple[int, int]:
    ks = [kernel_size] if isinstance(kernel_size, numbers.Integral) and not isinstance(kernel_size, bool) else \
        list(kernel_size) if isinstance(kernel_size, (list, tuple)) else None
    if ks is None or len(ks) not in (1, 2) or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool)
                                                      for k in ks):
        raise TypeError(f"box_filter: kernel_size must be an int or a pair (KH, KW), got {kernel_size!r}")
    kh, kw = (ks[0], ks[0]) if len(ks) == 1 else (ks[0], ks[1])
    for k in (kh, kw):
        if k <= 0 or k % 2 == 0 or k > 31:
            raise ValueError(f"box_filter: kernel_size must be odd, 1 to 31, got {kernel_size!r}")
    return int(kh), int(kw)


def _box_weights(kh: int, kw: int, normalize: bool, device: torch.device) -> torch.Tensor:
    key = (kh, kw, normalize, device)
    w = _weights.get(key)
    if w is None:
        if len(_weights) > 256:
            _weights.clear()
        a, b = (1.0 / kw, 1.0 / kh) if normalize else (1.0, 1.0)
        w = _weights[key] = torch.tensor([a] * kw + [b] * kh, dtype=torch.float32, device=device)
    return w


def _box_filter_into(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, kh: int, kw: int, border: int,
                     normalize: bool, channels_last: bool, variant: Optional[str]) -> None:
    p = planes_of(x, channels_last, "box_filter")
    # the mean's weights are 1/k (a 1-D kernel sums to 1): uint8 means stay within [0, 255]; sums do not
    a, b = (1.0 / kw, 1.0 / kh) if normalize else (1.0, 1.0)
    run_separable(variant or "best", p, out, w[:kw], w[kw:], w, border, bounded=normalize,
                  host=((a,) * kw, (b,) * kh))


_box_filter_out = out_op("box_filter_out", _box_filter_into)


def box_filter(x: torch.Tensor, kernel_size, *, border: str = "reflect", normalize: bool = True,
               channels_last: bool = False, variant: Optional[str] = None) -> torch.Tensor:
    """The mean over a KH x KW window centred on each pixel, for every plane of ``x`` (OpenCV's blur;
    its boxFilter with ``normalize``), accumulated in float32 as a separable filter.

    ``x``: a CUDA tensor of float32, float16, bfloat16 or uint8, (..., H, W); uint8 results are rounded
    half to even and saturated to [0, 255].
    ``kernel_size``: an odd int, or a pair (KH, KW) (height first, as torch's pooling), 1 to 31 each.
    ``border``: "reflect" (default: mirrored without repeating the edge, OpenCV's default
    BORDER_REFLECT_101), "replicate" or "zero".
    ``normalize``: True divides by KH * KW (the mean); False gives the window's sum.
    ``channels_last``: True for HWC images, ``x`` of shape (..., H, W, C) with C = 1 to 4.
    No ``out``: the result is always a new contiguous tensor of ``x``'s shape and dtype.
    ``variant``: a rung of ``kernelkit.ladder("box_filter")``; None picks the best: the register strips
    for uint8 images whose rows start 16-byte aligned (and W * C a multiple of 16), the pipelined
    one-pass rung otherwise.
    No ``config``: the one-pass tiles follow from the dtype and kernel size (for tuning and tests,
    filter2d's ``config`` reaches the vector kernels of the two-pass rung).

    Raises TypeError for a non-tensor ``x``, another dtype or a kernel_size of the wrong type;
    ValueError for a CPU ``x``, an even or out-of-range kernel_size, an unknown border or variant, or too
    few dims.
    """
    check_tensor(x, "x", DTYPES, "box_filter")
    kh, kw = _sizes(kernel_size)
    mode = check_border(border, "box_filter")
    if variant is not None:
        OP.variant(variant)
    planes_of(x, channels_last, "box_filter")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    _box_filter_out(x, _box_weights(kh, kw, bool(normalize), x.device), out, kh, kw, mode, bool(normalize),
                    bool(channels_last), variant)
    return out


def _example(shape, dtype):
    x = random_image(shape, dtype)
    return (x, 5), {}


def _torch_box(x, kernel_size, border="reflect", normalize=True):
    """What users write today: avg_pool2d with stride 1 over a reflect-padded image."""
    import torch.nn.functional as F

    kh, kw = _sizes(kernel_size)
    shape = x.shape
    y = x.reshape(-1, 1, shape[-2], shape[-1]).float()
    y = F.avg_pool2d(F.pad(y, (kw // 2, kw // 2, kh // 2, kh // 2), mode="reflect"), (kh, kw), stride=1)
    return (y.round() if x.dtype == torch.uint8 else y).to(x.dtype).reshape(shape)


OP = register(Op(
    name="box_filter", family="window", variants=VARIANTS,
    bytes_moved=lambda x, *a, **k: 2 * x.numel() * x.element_size(),
    flops=lambda x, kernel_size, *a, **k: 4 * x.numel() * (kernel_size if isinstance(kernel_size, int) else 5),
    call=box_filter, torch_fn=_torch_box, example=_example,
    doc="mean over a KH x KW window (OpenCV blur / boxFilter), separable",
    bench_shapes=((8192, 8192), (2160, 3840)), bench_dtypes=(torch.float32, torch.uint8),
))
