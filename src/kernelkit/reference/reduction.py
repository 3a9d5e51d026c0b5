"""float64 references of the reduction family (sum, mean, amax, amin, softmax, layer_norm, rms_norm).

Each takes the op's arguments and returns float64. A reduction's error grows with the magnitudes it
accumulates, not with its result (a sum near zero from large terms): ``reduction_mismatches`` judges a
result against its reference with an extra absolute allowance of ``ABS_PER_MAGNITUDE`` times the sum
of |x| over the reduced elements, the scale of fp32 accumulation error.
"""
from __future__ import annotations

import torch

from .core import TOLERANCE

__all__ = ["sum", "mean", "amax", "amin", "softmax", "layer_norm", "rms_norm", "reduction_mismatches",
           "magnitude", "accumulation_magnitude"]

ABS_PER_MAGNITUDE = 2e-6  # fp32 accumulation (2^-24 per add) over trees a few dozen levels deep


def _dims(x: torch.Tensor, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(x.dim()))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def sum(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:  # noqa: A001
    return x.double().sum(_dims(x, dim), keepdim=keepdim) if x.dim() else x.double().clone()


def mean(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    return x.double().mean(_dims(x, dim), keepdim=keepdim) if x.dim() else x.double().clone()


def amax(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    return torch.amax(x.double(), _dims(x, dim), keepdim=keepdim)


def amin(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    return torch.amin(x.double(), _dims(x, dim), keepdim=keepdim)


def magnitude(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """sum(|x|) over the reduced elements: the scale of a sum's accumulation error."""
    return sum(x.abs(), dim, keepdim)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(x - max) / sum in float64: torch's formula, so inf and NaN land where torch puts them."""
    x = x.double()
    m = x.amax(dim, keepdim=True) if x.dim() else x
    e = torch.exp(x - m)
    return e / (e.sum(dim, keepdim=True) if x.dim() else e)


def _rows(x: torch.Tensor, normalized_shape):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = tuple(range(x.dim() - len(ns), x.dim()))
    return x.double(), dims


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    x, dims = _rows(x, normalized_shape)
    mu = x.mean(dims, keepdim=True)
    var = ((x - mu) ** 2).mean(dims, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y


def rms_norm(x, normalized_shape, weight=None, eps=None) -> torch.Tensor:
    eps = torch.finfo(torch.float32).eps if eps is None else eps  # torch's own default for every dtype
    x, dims = _rows(x, normalized_shape)
    y = x / torch.sqrt((x * x).mean(dims, keepdim=True) + eps)
    return y * weight.double() if weight is not None else y


def accumulation_magnitude(op: str, x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """The magnitude an accumulating reduction's error scales with, shaped like its result: sum |x| for
    sum, that over the count for mean, zero for amax / amin (exact)."""
    if op not in ("sum", "mean"):
        return torch.zeros_like(amax(x, dim, keepdim))
    mag = magnitude(x, dim, keepdim)
    return mag / max(1, x.numel() // max(1, mag.numel())) if op == "mean" else mag


def reduction_mismatches(out: torch.Tensor, ref: torch.Tensor, mag: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Flat indices where ``out`` misses ``ref`` beyond the dtype's tolerance plus the accumulation
    allowance ABS_PER_MAGNITUDE * mag; NaN must meet NaN and inf the same inf."""
    rtol, atol = TOLERANCE[dtype]
    o, r, m = out.double().flatten(), ref.double().flatten(), mag.double().flatten()
    ref_rounded = r.to(dtype).double()  # the result's own rounding (a 16-bit sum past 65504 is inf)
    special = torch.isinf(ref_rounded) | torch.isnan(r)
    same = (torch.isnan(o) & torch.isnan(r)) | (torch.isinf(ref_rounded) & (o == ref_rounded))
    close = (o - r).abs() <= atol + rtol * r.abs() + ABS_PER_MAGNITUDE * m
    return torch.nonzero(~(same | (close & ~special))).flatten()
