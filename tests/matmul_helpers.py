"""Shared pieces of the matmul tests: operands in either layout and at any offset, the bound check (GPU);
matmul's dispatch on CPU tensors with the device calls stubbed (CPU)."""
from __future__ import annotations

import torch

from kernelkit import reference

OUT_EPS = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float64: 2.0**-53}
INT_POISON = -(2**31) + 7


def values(n: int, dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.int8:
        return torch.randint(-128, 128, (n,), device="cuda", dtype=torch.int8)
    return torch.randn(n, device="cuda", dtype=torch.float32).to(dtype)


def operand(shape: tuple[int, ...], dtype: torch.dtype, transposed: bool = False, offset: int = 0) -> torch.Tensor:
    """A tensor of ``shape`` (last two dims a matrix) starting ``offset`` elements into its buffer; with
    ``transposed`` its last two dims are stored swapped and it is the transpose view (w.t())."""
    stored = (*shape[:-2], shape[-1], shape[-2]) if transposed else tuple(shape)
    n = 1
    for s in stored:
        n *= s
    t = values(n + offset, dtype)[offset:].view(stored)
    return t.transpose(-1, -2) if transposed else t


def poisoned(shape, dtype: torch.dtype, offset: int = 0) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    fill = INT_POISON if dtype == torch.int32 else float("nan")
    return torch.full((n + offset,), fill, device="cuda", dtype=dtype)[offset:].view(shape)


def check(out: torch.Tensor, ref: torch.Tensor, mag: torch.Tensor, k: int, in_dtype: torch.dtype, tf32: bool,
          what: str) -> None:
    """Every element within the rounding bound of its sum of products: exact for int8; otherwise
    2 (K + 2) u |a| |b| for the accumulation (u of fp32, or fp64's; tensor cores may truncate, hence 2),
    2^-10 |a| |b| more for tf32's rounded operands, and the result's own rounding. NaN fails."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    if in_dtype == torch.int8:
        assert out.dtype == torch.int32
        bad = torch.nonzero(out.long() != ref.long())
    else:
        u = 2.0**-53 if in_dtype == torch.float64 else 2.0**-24
        bound = 2 * (k + 2) * u * mag + (2.0**-10 * mag if tf32 else 0) + OUT_EPS[out.dtype] * ref.abs() + 1e-300
        bad = torch.nonzero(~((out.double() - ref).abs() <= bound))
    if bad.numel():
        first = [tuple(i) for i in bad[:5].tolist()]
        raise AssertionError(f"{what}: {bad.shape[0]} of {ref.numel()} wrong; first at {first}: "
                             f"out={[float(out[i]) for i in first]} ref={[float(ref[i]) for i in first]}")


def check_matmul(out, a, b, tf32: bool, what: str, bias=None) -> None:
    ref = reference.matmul(a, b)
    mag = reference.matmul_magnitude(a, b)
    if bias is not None:
        ref, mag = ref + bias.double(), mag + bias.double().abs()
    check(out, ref, mag, a.shape[-1], a.dtype, tf32, what)


def stub_sm90(monkeypatch) -> list:
    """Let matmul's body run on CPU tensors as on an sm_90 device of 132 SMs: kernels are their names,
    tensor maps empty, launches recorded as (name, args after the kernel) in the list returned."""
    from kernelkit.ops.gemm import _hopper as hop
    from kernelkit.ops.gemm import _ladder
    from kernelkit.ops.gemm import matmul as mm

    launched = []
    record = lambda k, *a, **kw: launched.append((k, a))  # noqa: E731
    for mod in (hop, mm):
        monkeypatch.setattr(mod, "compute_capability", lambda dev: 90)
        monkeypatch.setattr(mod, "get_kernel", lambda src, name, **kw: name)
        monkeypatch.setattr(mod, "allow_shared", lambda *a: None)
        monkeypatch.setattr(mod, "launch", record)
    monkeypatch.setattr(hop, "maps_supported", lambda: True)
    monkeypatch.setattr(hop, "sm_count", lambda dev: 132)
    monkeypatch.setattr(hop, "shared_limit", lambda dev: hop.SM90_SHARED)
    monkeypatch.setattr(hop, "encode_tiled", lambda *a, **kw: bytes(128))
    monkeypatch.setattr(hop, "split_workspace", lambda dev, floats, tickets: (1 << 40, 1 << 41))
    monkeypatch.setattr(_ladder, "sm_count", lambda dev: 132)
    monkeypatch.setattr(_ladder, "compute_capability", lambda dev: 90)
    monkeypatch.setattr(_ladder, "smem_limits", lambda dev: (233472, 232448))
    hop._plans.clear()
    mm._plans.clear()
    return launched
