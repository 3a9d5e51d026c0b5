"""float64 references of the element-wise family."""
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
