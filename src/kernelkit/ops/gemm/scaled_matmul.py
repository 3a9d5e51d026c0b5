"""scaled_matmul: ``torch._scaled_mm`` with per-tensor scales, fp8 operands (csrc/gemm/wgmma_fp8.cu).

On compute capability 9.0 the Hopper rungs (``_fp8_hopper``: TMA and fp8 wgmma) run it; elsewhere, and
for operands the TMA cannot read, the ``dequant`` rung: a kernel decodes both operands to fp32 (exact),
the matmul ladder multiplies them on tf32 tensor cores (exact products, fp32 sums), a kernel applies
the scales and the bias and rounds. That path is correct on any GPU, not fast.
"""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel, launch
from .._shared.checks import check_same_device, check_tensor
from .._shared.custom_op import out_op
from .._shared.launch_rules import compute_capability, grid_for
from .._shared.plans import plan_cache, remember
from ._fp8_hopper import (CXX, E4M3, E5M2, FMT, FP8, OUT_DTYPES, RUNGS as HOPPER_RUNGS, SRC,
                          TECHNIQUE as HOPPER_TECHNIQUE, Fp8Tile, hopper_kernels, launch_fp8)
from ._ladder import _rung_kernels
from .matmul import check_result_out, matmul

__all__ = ["scaled_matmul"]

F32 = torch.float32
OP_NAME = "scaled_matmul"
BEST_HOPPER = "ws"
PORTABLE_BLOCK = 256


# ---- the dequant rung ------------------------------------------------------------------------------

def widen_kernel(dtype: torch.dtype) -> Kernel:
    return Kernel(SRC, f"kk::fp8_widen<{FMT[dtype]}>", block=PORTABLE_BLOCK)


def scale_out_kernel(out_dtype: torch.dtype) -> Kernel:
    return Kernel(SRC, f"kk::fp8_scale_out<{CXX[out_dtype]}>", block=PORTABLE_BLOCK)


def dequant_kernels(dtype: torch.dtype) -> tuple[Kernel, ...]:
    """Decoders of both fp8 formats, the epilogue for each output dtype, the tf32 mma rung's kernels."""
    return (tuple(widen_kernel(d) for d in FP8) + tuple(scale_out_kernel(o) for o in OUT_DTYPES)
            + _rung_kernels("mma", F32, True))


_plans = plan_cache()


def _go(rec: Kernel, dev: int, items: int, *args) -> None:
    key = (rec.name, dev)
    kern = _plans.get(key)
    if kern is None:
        kern = remember(_plans, key, get_kernel(rec.source, rec.name, device_index=dev))
    launch(kern, (grid_for(items, rec.block, dev, 8), 1, 1), rec.block, *args, name=rec.name, device_index=dev)


def _dequant_into(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                  bias: Optional[torch.Tensor], out: torch.Tensor) -> None:
    m, k = a.shape
    n = b.shape[1]
    dev = a.get_device()
    a32 = torch.empty((m, k), dtype=F32, device=a.device)
    bt32 = torch.empty((n, k), dtype=F32, device=a.device)  # B's columns as rows: k-major for the matmul
    _go(widen_kernel(a.dtype), dev, m * k, a.data_ptr(), a32.data_ptr(), m, k, a.stride(0) if m > 1 else k)
    _go(widen_kernel(b.dtype), dev, n * k, b.data_ptr(), bt32.data_ptr(), n, k, b.stride(1) if n > 1 else k)
    c = matmul(a32, bt32.t(), allow_tf32=True)
    _go(scale_out_kernel(out.dtype), dev, m * n, c.data_ptr(), out.data_ptr(), 0 if bias is None else bias.data_ptr(),
        scale_a.data_ptr(), scale_b.data_ptr(), m, n, out.stride(0) if m > 1 else n)


# ---- dispatch ----------------------------------------------------------------------------------------

def _scaled_matmul_into(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                        bias: Optional[torch.Tensor], out: torch.Tensor, use_fast_accum: bool,
                        variant: Optional[str], config: Optional[list[int]]) -> None:
    """out <- a @ b * scale_a * scale_b (+ bias): a (M, K) row-major, b (K, N) column-major, out (M, N)."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:  # an empty sum: zeros, as torch._scaled_mm (no bias either)
        out.zero_()
        return
    if out.stride(1) != 1 or out.stride(0) < n:  # the kernels write rows of unit column stride
        tmp = torch.empty((m, n), dtype=out.dtype, device=out.device)
        _scaled_matmul_into(a, b, scale_a, scale_b, bias, tmp, use_fast_accum, variant, config)
        out.copy_(tmp)
        return
    dev = a.get_device()
    rung = variant
    if variant in (None, "best"):
        rung = BEST_HOPPER if compute_capability(dev) == 90 else "dequant"
        config = None
    if rung in HOPPER_RUNGS:
        if launch_fp8(rung, a, b, scale_a, scale_b, bias, out, not use_fast_accum, config) is None:
            return
    _dequant_into(a, b, scale_a, scale_b, bias, out)


scaled_matmul_out = out_op("scaled_matmul_out", _scaled_matmul_into)


def _check_layout(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.stride(1) != 1 and a.shape[1] > 1:
        raise ValueError(f"{OP_NAME}: a must be row-major (a.stride(1) == 1), got strides {tuple(a.stride())}")
    if b.stride(0) != 1 and b.shape[0] > 1:
        raise ValueError(f"{OP_NAME}: b must be column-major (b.t() contiguous, b.stride(0) == 1), as "
                         f"torch._scaled_mm requires; got strides {tuple(b.stride())}")


def _check_scale(s, name: str) -> None:
    check_tensor(s, name, (F32,), OP_NAME)
    if s.numel() != 1:
        raise ValueError(f"{OP_NAME}: {name} must hold one float32 element (a per-tensor scale), got shape "
                         f"{tuple(s.shape)}; row-wise and block-wise scales are not supported")


def scaled_matmul(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
                  out_dtype: torch.dtype = torch.bfloat16, bias: Optional[torch.Tensor] = None,
                  out: Optional[torch.Tensor] = None, use_fast_accum: bool = False, variant: Optional[str] = None,
                  config: Optional[Fp8Tile] = None) -> torch.Tensor:
    """``torch._scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype, use_fast_accum=...)``
    with per-tensor scales: ``(a.float() @ b.float()) * scale_a * scale_b (+ bias)``, rounded once.

    ``a``: (M, K), row-major; ``b``: (K, N), column-major (``b.t()`` contiguous), as torch requires. Both
    float8_e4m3fn or float8_e5m2, any pair but e5m2 x e5m2 (torch refuses it too); K and N multiples
    of 16, any M. ``scale_a``, ``scale_b``: float32 tensors of one element, read by the kernels from
    device memory (no host synchronisation). ``out_dtype``: bfloat16 (default), float16 or float32.
    ``bias``: optional, N elements of ``out_dtype`` (bfloat16 or float16; torch takes no bias with a
    float32 result), added after the scaling. ``out``: optional (M, N) result of ``out_dtype`` on a's
    device, returned; None: a new tensor. ``use_fast_accum``: False (torch's default) adds each 128-deep
    slice of K, summed by the tensor cores, into fp32 registers (the tensor cores' own fp8 accumulation
    keeps fewer bits than fp32); True accumulates all of K on the tensor cores (faster, less exact).
    ``variant``: a rung of ``kernelkit.ladder("scaled_matmul")``; None picks ``best``: ``ws`` on compute
    capability 9.0, ``dequant`` elsewhere or where the TMA cannot read the operands (a base or row
    stride off the 16-byte grid; ``kernelkit.ops.gemm.fp8_fallback_reason`` names it). ``dequant`` is
    the portable path (fp8 decoded to fp32, tf32 tensor-core matmul), correct but not the fast one.
    ``config``: for tuning and tests; an ``Fp8Tile`` (kernelkit.ops.gemm.Fp8Tile) for the tma_wgmma and ws
    rungs instead of the rule's tile.

    Raises TypeError for a non-tensor, an operand that is not fp8, two e5m2 operands, scales that are
    not float32, an ``out_dtype`` other than those above, a ``bias`` or ``out`` of another dtype, a
    config that is not an Fp8Tile; ValueError for CPU tensors, tensors on different devices, operands
    that are not matrices, mismatched inner dims, K or N not a multiple of 16, a row-major b or
    column-major a, scales of more than one element, a bias with a float32 result or of the wrong
    size, an ``out`` of another shape, an unknown variant, or a config the rung cannot run.
    """
    check_tensor(a, "a", FP8, OP_NAME)
    check_tensor(b, "b", FP8, OP_NAME)
    if a.dtype == E5M2 and b.dtype == E5M2:
        raise TypeError(f"{OP_NAME}: a and b are both float8_e5m2; torch._scaled_mm multiplies e4m3 x e4m3, "
                        "e4m3 x e5m2 and e5m2 x e4m3 only")
    _check_scale(scale_a, "scale_a")
    _check_scale(scale_b, "scale_b")
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"{OP_NAME}: out_dtype must be bfloat16, float16 or float32, got {out_dtype}")
    check_same_device(OP_NAME, ("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                      ("out", out))
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"{OP_NAME}: a and b must be matrices, got {a.dim()} and {b.dim()} dims")
    m, k = a.shape
    if b.shape[0] != k:
        raise ValueError(f"{OP_NAME}: a ({m}x{k}) and b ({b.shape[0]}x{b.shape[1]}) cannot be multiplied")
    n = b.shape[1]
    if k % 16:
        raise ValueError(f"{OP_NAME}: a's trailing dim K = {k} must be a multiple of 16 (as torch._scaled_mm)")
    if n % 16:
        raise ValueError(f"{OP_NAME}: b's trailing dim N = {n} must be a multiple of 16 (as torch._scaled_mm)")
    _check_layout(a, b)
    if bias is not None:
        if out_dtype == F32:
            raise ValueError(f"{OP_NAME}: bias with out_dtype float32 is not supported (as torch._scaled_mm)")
        check_tensor(bias, "bias", (out_dtype,), OP_NAME)
        if bias.numel() != n:
            raise ValueError(f"{OP_NAME}: bias must have N = {n} elements, got shape {tuple(bias.shape)}")
        bias = bias.reshape(n).contiguous()
    if config is not None and not isinstance(config, Fp8Tile):
        raise TypeError(f"{OP_NAME}: config must be an Fp8Tile (kernelkit.ops.gemm.Fp8Tile), got "
                        f"{type(config).__name__}")
    if variant is not None:
        OP.variant(variant)
    if config is not None and variant not in HOPPER_RUNGS:
        raise ValueError(f"{OP_NAME}: config= is for the tma_wgmma and ws rungs, not variant {variant!r}")
    if config is not None:
        config.check(OP_NAME, out_dtype, not use_fast_accum)
    if out is None:
        out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    else:
        check_result_out(OP_NAME, out, (m, n), out_dtype)
    cfg = None if config is None else [config.block_n, config.stages]
    scaled_matmul_out(a, b, scale_a, scale_b, bias, out, bool(use_fast_accum), variant, cfg)
    return out


# ---- the ladder ----------------------------------------------------------------------------------------

def flops(a: torch.Tensor, b: torch.Tensor, *_, **__) -> int:
    return 2 * a.shape[0] * a.shape[1] * b.shape[1]


def bytes_moved(a: torch.Tensor, b: torch.Tensor, *_, out_dtype: torch.dtype = torch.bfloat16, **__) -> int:
    return a.numel() + b.numel() + a.shape[0] * b.shape[1] * out_dtype.itemsize


def random_fp8(shape, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(shape, device="cuda", dtype=F32).to(dtype)


def example(shape, dtype):
    """(M, N, K): a row-major, b column-major (as torch._scaled_mm takes them), per-tensor scales."""
    m, n, k = shape
    a = random_fp8((m, k), dtype)
    b = random_fp8((n, k), E4M3 if dtype == E5M2 else dtype).t()
    sa = torch.full((), 0.5, device="cuda", dtype=F32)
    sb = torch.full((), 0.25, device="cuda", dtype=F32)
    return (a, b, sa, sb), {}


def torch_scaled_mm(a, b, scale_a, scale_b, *, out_dtype=torch.bfloat16, bias=None, use_fast_accum=False, **_):
    return torch._scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype, use_fast_accum=use_fast_accum)


def _hopper_variant(rung: str) -> Variant:
    def kernels(dtype, use_fast_accum=False, **_):
        return hopper_kernels(rung, dtype, not use_fast_accum) + dequant_kernels(dtype)

    return Variant(name=rung, technique=HOPPER_TECHNIQUE[rung], dtypes=FP8, kernels=kernels)


LADDER = (
    Variant(name="dequant", technique="portable path: a kernel decodes the fp8 operands to fp32 (exact), the "
            "matmul ladder's mma rung multiplies them on tf32 tensor cores (exact products, fp32 sums), a kernel "
            "scales, adds the bias and rounds; any GPU, correct, not fast (5 bytes a moved operand element)",
            dtypes=FP8, kernels=lambda dtype, **_: dequant_kernels(dtype)),
    *(_hopper_variant(r) for r in HOPPER_RUNGS),
    Variant(name="best", technique=f"{BEST_HOPPER} on compute capability 9.0 (dequant where the TMA cannot read "
            "the operands), dequant on other GPUs", dtypes=FP8,
            kernels=lambda dtype, use_fast_accum=False, **_: hopper_kernels(BEST_HOPPER, dtype, not use_fast_accum)
            + dequant_kernels(dtype), default=True),
)

OP = register(Op(
    name=OP_NAME, family="gemm", variants=LADDER, bytes_moved=bytes_moved, flops=flops, call=scaled_matmul,
    torch_fn=torch_scaled_mm, example=example,
    doc="torch._scaled_mm(a, b, scale_a, scale_b): fp8 (e4m3, e5m2) with per-tensor scales, bias, "
        "bf16/fp16/fp32 result",
    param_space={"use_fast_accum": (False, True)},
    bench_shapes=((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)),
    bench_dtypes=(E4M3,), compute_bound=True,
))
