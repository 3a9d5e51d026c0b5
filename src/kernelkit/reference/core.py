"""Comparison machinery shared by every reference: tolerances by dtype, error measures."""
from __future__ import annotations

import math

import torch


# Tolerances by result dtype, (rtol, atol) for |out - ref| <= atol + rtol |ref| at every element.
# fp32 with accurate math lands near 1e-6; 16-bit results carry their rounding (2^-11 fp16, 2^-8
# bf16) plus the packed 16-bit arithmetic of the half2/bf16x2 rungs (a few roundings more). The atol
# covers outputs near zero, where GELU's 1 + tanh cancels in any fp32 evaluation (torch's included).
TOLERANCE = {torch.float32: (2e-5, 1e-5), torch.float16: (4e-3, 2e-3), torch.bfloat16: (2e-2, 1e-2)}


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 over the elements where ref is not NaN (a summary number)."""
    out, ref = out.double(), ref.double()
    mask = ~torch.isnan(ref)
    num = torch.linalg.vector_norm((out - ref)[mask])
    den = torch.linalg.vector_norm(ref[mask])
    return float(num / den) if den > 0 else float(num)


def mismatches(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Flat indices where out misses ref by more than the dtype's tolerance (NaN and inf must match)."""
    rtol, atol = TOLERANCE[dtype]
    o, r = out.double().flatten(), ref.double().flatten()
    same_special = (torch.isnan(o) & torch.isnan(r)) | (torch.isinf(r) & (o == r))
    close = (o - r).abs() <= atol + rtol * r.abs()
    return torch.nonzero(~(close | same_special)).flatten()
