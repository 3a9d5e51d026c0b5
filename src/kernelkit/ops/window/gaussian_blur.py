"""gaussian_blur: torchvision.transforms.functional.gaussian_blur's semantics (reflect border, sigma from
the kernel size when not given), run as a separable filter: its ladder, torch.library op and public
function."""
from __future__ import annotations

import functools
import math
import numbers
from typing import Optional

import torch

from ...ladder import Op, register
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from ._common import BORDERS, DTYPES, planes_of, random_image
from ._separable import ladder, run_separable

__all__ = ["gaussian_blur"]

VARIANTS = ladder("Gaussian")
_weights: dict = {}


def _sizes(kernel_size) -> tuple[int, int]:
    ks = [kernel_size] if isinstance(kernel_size, numbers.Integral) else list(kernel_size) \
        if isinstance(kernel_size, (list, tuple)) else None
    if ks is None or not 1 <= len(ks) <= 2 or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool)
                                                      for k in ks):
        raise TypeError(f"gaussian_blur: kernel_size must be an int or a sequence of one or two ints, got {kernel_size!r}")
    kx, ky = (ks[0], ks[0]) if len(ks) == 1 else (ks[0], ks[1])
    for k in (kx, ky):
        if k <= 0 or k % 2 == 0 or k > 31:
            raise ValueError(f"gaussian_blur: kernel_size must be odd and positive, at most 31, got {kernel_size!r}")
    return int(kx), int(ky)


def _sigmas(sigma, kx: int, ky: int) -> tuple[float, float]:
    if sigma is None:  # torchvision's rule, per axis
        return 0.3 * ((kx - 1) * 0.5 - 1) + 0.8, 0.3 * ((ky - 1) * 0.5 - 1) + 0.8
    if isinstance(sigma, numbers.Real) and not isinstance(sigma, bool):
        s = [float(sigma)]
    elif isinstance(sigma, (list, tuple)) and 1 <= len(sigma) <= 2 and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in sigma):
        s = [float(v) for v in sigma]
    else:
        raise TypeError(f"gaussian_blur: sigma must be a number or a sequence of one or two numbers, got {sigma!r}")
    sx, sy = (s[0], s[0]) if len(s) == 1 else (s[0], s[1])
    if not (sx > 0 and sy > 0 and math.isfinite(sx) and math.isfinite(sy)):
        raise ValueError(f"gaussian_blur: sigma must be positive and finite, got {sigma!r}")
    return sx, sy


def _kernel1d(size: int, sigma: float) -> list[float]:
    half = (size - 1) * 0.5
    pdf = [math.exp(-0.5 * ((-half + i) / sigma) ** 2) for i in range(size)]
    total = sum(pdf)
    return [v / total for v in pdf]


@functools.lru_cache(maxsize=256)
def host_weights(kx: int, ky: int, sx: float, sy: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The horizontal and the vertical 1-D kernel as Python floats."""
    return tuple(_kernel1d(kx, sx)), tuple(_kernel1d(ky, sy))


def gaussian_weights(kx: int, ky: int, sx: float, sy: float, device: torch.device) -> torch.Tensor:
    """The horizontal then the vertical 1-D kernel, one float32 device tensor, built once per key."""
    key = (kx, ky, sx, sy, device)
    w = _weights.get(key)
    if w is None:
        if len(_weights) > 256:
            _weights.clear()
        hx, hy = host_weights(kx, ky, sx, sy)
        w = _weights[key] = torch.tensor(hx + hy, dtype=torch.float32, device=device)
    return w


def _gaussian_blur_into(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, kx: int, ky: int, sx: float,
                        sy: float, channels_last: bool, variant: Optional[str]) -> None:
    p = planes_of(x, channels_last, "gaussian_blur")
    # Gaussian weights are positive and each 1-D kernel sums to 1: uint8 results stay within [0, 255]
    run_separable(variant or "best", p, out, w[:kx], w[kx:], w, BORDERS["reflect"], bounded=True,
                  host=host_weights(kx, ky, sx, sy))


_gaussian_blur_out = out_op("gaussian_blur_out", _gaussian_blur_into)


def gaussian_blur(x: torch.Tensor, kernel_size, sigma=None, *, channels_last: bool = False,
                  variant: Optional[str] = None) -> torch.Tensor:
    """Gaussian blur of every plane of ``x``, as torchvision.transforms.functional.gaussian_blur.

    The 2-D kernel is the outer product of two 1-D Gaussians exp(-t^2 / 2 sigma^2) at t = -(k-1)/2 ...
    (k-1)/2, each summing to 1, applied with a reflect border (mirrored without repeating the edge, and
    continued periodically where the kernel is larger than the image, where torchvision raises).
    torchvision runs it as a dense convolution; here it is separable, accumulated in float32.
    ``x``: a CUDA tensor of float32, float16, bfloat16 or uint8, (..., H, W); uint8 results are rounded
    half to even (and saturated), as torchvision rounds.
    ``kernel_size``: an odd int, or a sequence [kx, ky] (width first, as torchvision), 1 to 31 each.
    ``sigma``: None (torchvision's 0.3 * ((k - 1) * 0.5 - 1) + 0.8 per axis), a positive number or a
    sequence [sx, sy].
    ``channels_last``: True for HWC images, ``x`` of shape (..., H, W, C) with C = 1 to 4 interleaved
    channels (uint8 RGB from a decoder), each channel blurred on its own.
    No ``out``: the result is always a new contiguous tensor of ``x``'s shape and dtype.
    ``variant``: a rung of ``kernelkit.ladder("gaussian_blur")``; None picks the best: the register strips
    for uint8 images whose rows start 16-byte aligned (and W * C a multiple of 16) with kernels up to 7,
    the pipelined one-pass rung otherwise.
    No ``config``: the one-pass tiles follow from the dtype and kernel size (for tuning and tests, filter2d's
    ``config`` reaches the vector kernels that the two-pass rung runs).

    Raises TypeError for a non-tensor ``x``, another dtype, or a kernel_size / sigma of the wrong type;
    ValueError for a CPU ``x``, an even, non-positive or too large kernel_size, a sigma that is not
    positive, an unknown variant or too few dims.
    """
    check_tensor(x, "x", DTYPES, "gaussian_blur")
    kx, ky = _sizes(kernel_size)
    sx, sy = _sigmas(sigma, kx, ky)
    if variant is not None:
        OP.variant(variant)
    planes_of(x, channels_last, "gaussian_blur")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    _gaussian_blur_out(x, gaussian_weights(kx, ky, sx, sy, x.device), out, kx, ky, sx, sy, bool(channels_last),
                       variant)
    return out


def _example(shape, dtype):
    x = random_image(shape, dtype)
    return (x, 7), {}


def _torch_blur(x, kernel_size, sigma=None):
    """torchvision's expression: the dense 2-D kernel through conv2d with a reflect pad."""
    import torch.nn.functional as F

    kx, ky = _sizes(kernel_size)
    sx, sy = _sigmas(sigma, kx, ky)
    k = torch.outer(torch.tensor(_kernel1d(ky, sy)), torch.tensor(_kernel1d(kx, sx))).to(x.device, torch.float32)
    shape = x.shape
    y = x.reshape(-1, 1, shape[-2], shape[-1]).float()
    y = F.conv2d(F.pad(y, (kx // 2, kx // 2, ky // 2, ky // 2), mode="reflect"), k[None, None])
    return (y.round() if x.dtype == torch.uint8 else y).to(x.dtype).reshape(shape)


OP = register(Op(
    name="gaussian_blur", family="window", variants=VARIANTS,
    bytes_moved=lambda x, *a, **k: 2 * x.numel() * x.element_size(),
    flops=lambda x, kernel_size, *a, **k: 4 * x.numel() * (kernel_size if isinstance(kernel_size, int) else 7),
    call=gaussian_blur, torch_fn=_torch_blur, example=_example,
    doc="Gaussian blur (torchvision semantics: reflect border, sigma from the kernel size), separable",
    bench_shapes=((8192, 8192), (2160, 3840)), bench_dtypes=(torch.float32, torch.float16, torch.uint8),
))
