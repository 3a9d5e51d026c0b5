"""float64 references of the sliding-window family: torch's conv2d in float64 over explicitly padded
planes (the borders built by F.pad, reflect extended past one image width by padding again from the
mirror points), torch's pooling in float64, an unfold-and-median for the median filter."""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["pad2d", "filter2d", "gaussian_kernel1d", "gaussian_blur", "sobel", "box_filter", "median_blur",
           "max_pool2d", "avg_pool2d", "conv2d"]


def _pad_dim(x: torch.Tensor, lo: int, hi: int, dim: int, border: str) -> torch.Tensor:
    """x (N, 1, H, W) padded by lo/hi along dim (2: rows, 3: columns)."""
    n = x.shape[dim]
    pads = (lambda a, b: (a, b, 0, 0)) if dim == 3 else (lambda a, b: (0, 0, a, b))
    if border == "zero":
        return F.pad(x, pads(lo, hi))
    if border == "replicate" or n == 1:
        return F.pad(x, pads(lo, hi), mode="replicate")
    # reflect: pad by at most n - 1 at a time, so that every new edge is a mirror point of the extension
    while lo > 0 or hi > 0:
        a, b = min(lo, n - 1), min(hi, n - 1)
        x = F.pad(x, pads(a, b), mode="reflect")
        lo, hi = lo - a, hi - b
    return x


def pad2d(x: torch.Tensor, ph: int, pw: int, border: str) -> torch.Tensor:
    """x (N, 1, H, W) padded by ph rows and pw columns on each side under a border mode."""
    return _pad_dim(_pad_dim(x, pw, pw, 3, border), ph, ph, 2, border)


def _as_planes(x: torch.Tensor, channels_last: bool):
    """(planes (N, 1, H, W) float64, a function restoring the input's shape)."""
    if channels_last:
        moved = x.movedim(-1, -3)
        shape = moved.shape
        return moved.double().reshape(-1, 1, shape[-2], shape[-1]), lambda y: y.reshape(shape).movedim(-3, -1)
    shape = x.shape
    return x.double().reshape(-1, 1, shape[-2], shape[-1]), lambda y: y.reshape(shape)


def _finish(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """uint8 results rounded half to even and saturated, as the ops store them; others as they are."""
    return y.round().clamp(0, 255) if dtype == torch.uint8 else y


def filter2d(x, kernel, border: str = "zero", channels_last: bool = False) -> torch.Tensor:
    planes, back = _as_planes(x, channels_last)
    k = torch.as_tensor(kernel, dtype=torch.float64, device=x.device)
    KH, KW = k.shape
    y = F.conv2d(pad2d(planes, KH // 2, KW // 2, border), k[None, None])
    return _finish(back(y), x.dtype)


def gaussian_kernel1d(size: int, sigma: float) -> torch.Tensor:
    """torchvision's 1-D Gaussian: exp(-x^2 / 2 sigma^2) at x = -(size-1)/2 ... (size-1)/2, summing to 1."""
    half = (size - 1) * 0.5
    xs = torch.linspace(-half, half, size, dtype=torch.float64)
    pdf = torch.exp(-0.5 * (xs / sigma) ** 2)
    return pdf / pdf.sum()


def _sigma_for(size: int) -> float:
    return 0.3 * ((size - 1) * 0.5 - 1) + 0.8


def gaussian_blur(x, kernel_size, sigma=None, channels_last: bool = False) -> torch.Tensor:
    kx, ky = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    if sigma is None:
        sx, sy = _sigma_for(kx), _sigma_for(ky)
    elif isinstance(sigma, (int, float)):
        sx = sy = float(sigma)
    else:
        sx, sy = (sigma[0], sigma[0]) if len(sigma) == 1 else (sigma[0], sigma[1])
    k2 = torch.outer(gaussian_kernel1d(ky, sy), gaussian_kernel1d(kx, sx))
    return filter2d(x, k2, "reflect", channels_last)


def sobel(x, border: str = "reflect", channels_last: bool = False) -> torch.Tensor:
    planes, back = _as_planes(x, channels_last)
    gx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=torch.float64, device=x.device)
    p = pad2d(planes, 1, 1, border)
    a, b = F.conv2d(p, gx[None, None]), F.conv2d(p, gx.t()[None, None])
    return _finish(back(torch.sqrt(a * a + b * b)), x.dtype)


def box_filter(x, kernel_size, border: str = "reflect", normalize: bool = True,
               channels_last: bool = False) -> torch.Tensor:
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    k = torch.full((kh, kw), 1.0 / (kh * kw) if normalize else 1.0, dtype=torch.float64)
    return filter2d(x, k, border, channels_last)


def median_blur(x, kernel_size: int, channels_last: bool = False) -> torch.Tensor:
    planes, back = _as_planes(x, channels_last)
    r = kernel_size // 2
    p = pad2d(planes, r, r, "replicate")
    H, W = planes.shape[-2:]
    cols = F.unfold(p, kernel_size)  # (N, K*K, H*W)
    med = cols.median(dim=1).values.reshape(-1, 1, H, W)
    return back(med)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False) -> torch.Tensor:
    return F.max_pool2d(x.double(), kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None) -> torch.Tensor:
    return F.avg_pool2d(x.double(), kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> torch.Tensor:
    b = None if bias is None else bias.double()
    return F.conv2d(x.double(), weight.double(), b, stride, padding, dilation, groups)

