"""float64 references: what every variant is checked against (tests, judge, benchmarks)."""
from __future__ import annotations

import math

import torch


def gelu(x: torch.Tensor, approximate: str = "tanh") -> torch.Tensor:
    """GELU in float64 (tanh form or exact erf form), returned in float64."""
    x = x.double()
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))
        return 0.5 * x * (1.0 + torch.tanh(inner))
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


# Relative-error tolerances by dtype for ||out - ref|| / ||ref||: a float32 result lands far under
# 1e-5 with accurate math; 16-bit results carry their rounding (2^-11 fp16, 2^-8 bf16) plus the
# packed-arithmetic error of the half2 rungs.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf when out has NaNs where ref has none."""
    out, ref = out.double(), ref.double()
    if torch.isnan(out).ne(torch.isnan(ref)).any():
        return math.inf
    mask = ~torch.isnan(ref)
    num = torch.linalg.vector_norm((out - ref)[mask])
    den = torch.linalg.vector_norm(ref[mask])
    return float(num / den) if den > 0 else float(num)
