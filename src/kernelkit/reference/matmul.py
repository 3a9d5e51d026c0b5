"""References of the matrix multiplication family: the products in float64 (exact for int8 inputs)."""
from __future__ import annotations

from typing import Optional

import torch

__all__ = ["matmul", "linear", "matmul_magnitude"]


def matmul(a: torch.Tensor, b: torch.Tensor, **_) -> torch.Tensor:
    return torch.matmul(a.double(), b.double())


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, **_) -> torch.Tensor:
    y = torch.matmul(x.double(), weight.double().t())
    return y if bias is None else y + bias.double()


def matmul_magnitude(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a| @ |b| in float64: what the rounding errors of a sum of products scale with."""
    return torch.matmul(a.double().abs(), b.double().abs())
