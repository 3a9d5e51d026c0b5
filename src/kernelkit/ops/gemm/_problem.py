"""A matmul call as the kernels see it: batch, M, N, K and each operand's layout, strides and alignment.

Every kernel computes C[z] = A[z] @ B[z] (+ bias) with C row-major. An operand is taken as it lies in
memory when one of its two matrix dims is contiguous: "k-major" (A row-major, B = w.t()) or "m-/n-major"
(A = a.t(), B row-major), with the other dim's stride as its leading dimension; a size-1 dim counts as
contiguous. Any other view (both strides > 1, or expanded) is copied once to a contiguous tensor.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Side:
    """One operand: its tensor (possibly a contiguous copy), k-major or not, leading dim, batch stride,
    and whether 16-byte vector loads may read it (aligned start, whole-vector strides)."""

    t: torch.Tensor
    kmaj: bool
    ld: int
    bstride: int
    vec: bool


def _side(t: torch.Tensor, rows: int, k: int, s_batch: int, s_row: int, s_k: int, batch: int) -> Side:
    """``t`` viewed as (batch, rows, k) with these strides (a 2-D operand: batch stride 0)."""
    if s_k == 1 or k == 1:
        kmaj, ld = True, (s_row if rows > 1 else -(-k // 16) * 16)
    elif s_row == 1 or rows == 1:
        kmaj, ld = False, (s_k if k > 1 else -(-rows // 16) * 16)
    else:
        raise _NeedsCopy
    vec_elems = 16 // t.element_size()
    bstride = s_batch if batch > 1 else 0
    vec = t.data_ptr() % 16 == 0 and ld % vec_elems == 0 and bstride % vec_elems == 0
    return Side(t, kmaj, ld, bstride, vec)


class _NeedsCopy(Exception):
    pass


def side_a(a3: torch.Tensor) -> Side:
    """A as (batch, M, K)."""
    return _as_side(a3, lambda t: _side(t, t.shape[1], t.shape[2], t.stride(0), t.stride(1), t.stride(2), t.shape[0]))


def side_b(b3: torch.Tensor) -> Side:
    """B as (batch, K, N): its rows for the kernels are N, its depth K."""
    return _as_side(b3, lambda t: _side(t, t.shape[2], t.shape[1], t.stride(0), t.stride(2), t.stride(1), t.shape[0]))


def _as_side(t: torch.Tensor, side) -> Side:
    """``side(t)`` as it lies; only a view that neither layout reads is copied (``.contiguous()`` of a
    transposed view is a whole transpose on the GPU: it must not run for the views the kernels take)."""
    try:
        return side(t)
    except _NeedsCopy:
        return side(t.contiguous())


def flags(a: Side, b: Side) -> int:
    """The kernels' flags word: A k-major, B k-major, A vector loads, B vector loads (bits 0-3)."""
    return int(a.kmaj) | int(b.kmaj) << 1 | int(a.vec) << 2 | int(b.vec) << 3


def as3(t: torch.Tensor) -> torch.Tensor:
    """A 2-D operand as a batch of one (a view)."""
    return t.unsqueeze(0) if t.dim() == 2 else t


def out_view_ok(out3: torch.Tensor) -> bool:
    """The kernels write rows of unit column stride, rows ldc apart, batch entries bsc apart."""
    _, m, n = out3.shape
    return (out3.stride(2) == 1 or n == 1) and (out3.stride(1) >= n or m == 1)
