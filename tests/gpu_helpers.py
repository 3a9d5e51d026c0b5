"""Shared pieces of the GPU tests: random inputs, poisoned outputs, offset views, the check."""
from __future__ import annotations

import torch

from kernelkit.reference import mismatches, relative_error

SIZES = (0, 1, 3, 4097, 2**20 + 3, 2**24)


def random_input(n: int, dtype: torch.dtype, offset: int = 0, scale: float = 3.0) -> torch.Tensor:
    """n random values as a view starting ``offset`` elements into a fresh buffer (misaligned if odd)."""
    base = torch.randn(n + offset, device="cuda", dtype=torch.float32).mul_(scale).to(dtype)
    return base[offset:]


def poisoned_like(x: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """An output buffer of x's shape filled with NaN (so an unwritten element fails the check)."""
    buf = torch.full((x.numel() + offset,), float("nan"), device=x.device, dtype=x.dtype)
    return buf[offset:].view(x.shape)


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "") -> None:
    """Every element within the dtype's tolerance of the float64 reference; prints the first misses."""
    bad = mismatches(out, ref, dtype)
    if bad.numel():
        idx = bad[:8].tolist()
        o, r = out.flatten(), ref.flatten()
        raise AssertionError(
            f"{what}: {bad.numel()} of {ref.numel()} elements off (relative error "
            f"{relative_error(out, ref):.3g}); first at {idx}: out={[float(o[i]) for i in idx]} "
            f"ref={[float(r[i]) for i in idx]}"
        )


GUARD = 16  # NaN elements either side of a guarded output


def guarded_out(shape, dtype: torch.dtype, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, view): a NaN buffer with GUARD elements either side of an ``offset``-element view of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    buf = torch.full((n + offset + 2 * GUARD,), float("nan"), device="cuda", dtype=dtype)
    return buf, buf[GUARD + offset:GUARD + offset + n].view(shape)


def check_guarded(buf: torch.Tensor, out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    """out within tolerance of ref, and nothing of buf outside out written (guarded_out's NaNs intact)."""
    assert_close(out, ref, dtype, what)
    start = out.storage_offset() - buf.storage_offset()
    assert torch.isnan(buf[:start]).all() and torch.isnan(buf[start + out.numel():]).all(), f"{what}: wrote outside out"
