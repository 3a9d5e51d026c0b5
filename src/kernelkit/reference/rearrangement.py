"""References of the rearrangement family: torch's own strided copy, since a rearrangement moves bits
and must match exactly (no float64 detour: there is no arithmetic to be more precise about)."""
from __future__ import annotations

import torch

__all__ = ["transpose", "permute"]


def transpose(x: torch.Tensor, dim0: int = -2, dim1: int = -1) -> torch.Tensor:
    return x.transpose(dim0, dim1).contiguous()


def permute(x: torch.Tensor, dims) -> torch.Tensor:
    return x.permute(tuple(dims)).contiguous()
