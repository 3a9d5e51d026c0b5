"""matmul: ``torch.matmul`` for 1-D to 3-D CUDA tensors, on the matmul ladder (csrc/gemm/*.cu).

The operands are read as they lie (row-major, transposed views such as ``w.t()``, offset views); the
kernels predicate every edge, so any M, N, K >= 1 runs. ``_matmul_into`` is the one body behind both
public ops (linear adds its bias in the kernels' epilogue) and their torch.library custom op.
"""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Op, register
from ...runtime import allow_shared, get_kernel, launch
from .._shared.checks import check_same_device, check_tensor, dtype_name
from .._shared.custom_op import out_op
from .._shared.launch_rules import compute_capability
from .._shared.plans import plan_cache, remember
from ._hopper import DTYPES as HOPPER_DTYPES, RUNGS as HOPPER_RUNGS, WgmmaTile, launch_tma
from ._banks import bank_report
from ._ladder import F32, F64, I8, LADDER, MatmulTile, resolve, with_epilogue
from ._problem import as3, flags, out_view_ok, side_a, side_b
from ._replay import begin, capture, keep, replays_possible, signature

__all__ = ["matmul"]

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.float64)
TENSOR_CORE_ONLY = ("wmma_global", "wmma_smem", "mma")
_plans = plan_cache()
_replays = plan_cache()  # call signature -> TmaReplay (_replay.py): plain calls that skip the checks


def result_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.int32 if dtype == I8 else dtype


def check_rung(op: str, variant: Optional[str], dtype: torch.dtype, allow_tf32: bool, config) -> None:
    """The named rung takes this dtype (and fp32 on tensor cores only with allow_tf32); config's type."""
    if config is not None and not isinstance(config, (MatmulTile, WgmmaTile)):
        raise TypeError(f"{op}: config must be a MatmulTile (kernelkit.ops.gemm.MatmulTile), got "
                        f"{type(config).__name__}")
    if config is not None and isinstance(config, WgmmaTile) != (variant in HOPPER_RUNGS):
        raise ValueError(f"{op}: config= of the tma_wgmma and ws rungs is a WgmmaTile, of the other tiled rungs "
                         f"a MatmulTile; got a {type(config).__name__} for variant {variant!r}")
    if variant is None:
        return
    v = OP.variant(variant)
    if not v.supports(dtype):
        raise TypeError(f"{op}: variant {variant!r} supports {', '.join(dtype_name(d) for d in v.dtypes)}, not "
                        f"{dtype_name(dtype)}")
    if dtype == F32 and variant in TENSOR_CORE_ONLY and not allow_tf32:
        raise ValueError(f"{op}: variant {variant!r} runs float32 on tensor cores as tf32; pass allow_tf32=True "
                         "(or pick a SIMT rung for exact float32)")


def _matmul_into(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                 allow_tf32: bool, variant: Optional[str], config: Optional[list[int]],
                 residual: Optional[torch.Tensor] = None, epi: int = 0) -> None:
    """out <- a @ b (+ bias) for a and b 2-D or 3-D (a batch of 1 broadcasts) and out of any shape with
    batch x M x N elements (torch.matmul's result shape). ``config``: a MatmulTile's fields, or None.
    ``epi``: linear's fused epilogue (mm::Epilogue: 1 identity, 2 relu, 3 gelu, 4 gelu_tanh; 0 none),
    act(a @ b + bias) + residual rounded once; ``residual``: None or (M, N) with a unit column stride
    (a batch of one)."""
    a3, b3 = as3(a), as3(b)
    batch, m, k = max(a3.shape[0], b3.shape[0]), a3.shape[1], a3.shape[2]
    n = b3.shape[2]
    if batch == 0 or m == 0 or n == 0:
        return
    if k == 0:  # an empty sum: zeros, plus the bias (and the fused epilogue, in fp32 or fp64)
        out.zero_()
        if bias is not None:
            out.add_(bias)
        if epi:
            out.copy_(empty_sum_epilogue(out, residual, epi).view(out.shape))
        return
    try:
        out3 = out.view(batch, m, n)
    except RuntimeError:  # a layout no view of (batch, M, N) reaches
        out3 = None
    if out3 is None or not out_view_ok(out3):
        tmp = torch.empty((batch, m, n), dtype=out.dtype, device=out.device)
        _matmul_into(a, b, bias, tmp, allow_tf32, variant, config, residual, epi)
        out.copy_(tmp.view(out.shape))
        return
    sa, sb = side_a(a3), side_b(b3)
    dev = a.get_device()
    res_ptr, ldr = (0, 0) if residual is None else (residual.data_ptr(), residual.stride(0) if m > 1 else n)
    if variant in HOPPER_RUNGS:
        if launch_tma(variant, sa, sb, out3, bias, m, n, k, batch, dev, config, residual, ldr, epi) is None:
            return
        variant, config = "mma", None  # what the TMA cannot read (tma_fallback_reason says why) runs on mma
    elif variant in (None, "best") and config is None and a.dtype in HOPPER_DTYPES and compute_capability(dev) == 90:
        if launch_tma("best", sa, sb, out3, bias, m, n, k, batch, dev, None, residual, ldr, epi) is None:
            return
    cp = sa.vec and sb.vec
    key = (a.dtype, allow_tf32, variant, sa.kmaj, sb.kmaj, cp, m, n, batch, dev, config and tuple(config), epi)
    plan = _plans.get(key)
    if plan is None:
        cfg = None if config is None else MatmulTile(*config)
        ln = resolve(variant or "best", a.dtype, allow_tf32, sa.kmaj, sb.kmaj, m, n, batch, dev, cfg,
                     "linear" if epi else "matmul", cp)
        name = with_epilogue(ln.kernel.name, epi)
        kern = get_kernel(ln.kernel.source, name, device_index=dev)
        allow_shared(kern, ln.shmem, dev)
        plan = remember(_plans, key, (kern, ln, name))
    kern, ln, name = plan
    ldc = out3.stride(1) if m > 1 else n
    bsc = out3.stride(0) if batch > 1 else 0
    bias_ptr = 0 if bias is None else bias.data_ptr()
    launch(kern, ln.grid, ln.threads, sa.t.data_ptr(), sb.t.data_ptr(), out3.data_ptr(), bias_ptr, m, n, k,
           sa.ld, sb.ld, ldc, sa.bstride, sb.bstride, bsc, batch, flags(sa, sb), res_ptr, ldr, shmem=ln.shmem,
           name=name, device_index=dev)


def empty_sum_epilogue(out: torch.Tensor, residual: Optional[torch.Tensor], epi: int) -> torch.Tensor:
    """K = 0: act(bias) + residual from ``out`` (holding the bias), in fp32 (fp64 for float64), one rounding."""
    from .linear import ACTIVATION_FNS  # linear imports this module
    wide = out.to(torch.float64 if out.dtype == F64 else torch.float32)
    v = ACTIVATION_FNS[epi](wide)
    if residual is not None:
        v = v + residual.to(v.dtype).reshape(v.shape)
    return v.to(out.dtype)


matmul_out = out_op("matmul_out", _matmul_into)


def result_shape(op: str, a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
    """torch.matmul's result shape for 1-D to 3-D operands; ValueError naming the mismatch."""
    if not 1 <= a.dim() <= 3:
        raise ValueError(f"{op}: a must have 1 to 3 dims, got {a.dim()}")
    if not 1 <= b.dim() <= 3:
        raise ValueError(f"{op}: b must have 1 to 3 dims, got {b.dim()}")
    ka = a.shape[-1]
    kb = b.shape[0] if b.dim() == 1 else b.shape[-2]
    if ka != kb:
        raise ValueError(f"{op}: a's last dim ({ka}) must equal b's {'only' if b.dim() == 1 else 'second-to-last'} "
                         f"dim ({kb}); shapes {tuple(a.shape)} and {tuple(b.shape)}")
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    if ba != bb and 1 not in (ba, bb):
        raise ValueError(f"{op}: batch sizes {ba} (a) and {bb} (b) do not broadcast")
    batch = () if a.dim() < 3 and b.dim() < 3 else (max(ba, bb),)
    rows = () if a.dim() == 1 else (a.shape[-2],)
    cols = () if b.dim() == 1 else (b.shape[-1],)
    return (*batch, *rows, *cols)


def matmul(a: torch.Tensor, b: torch.Tensor, *, out: Optional[torch.Tensor] = None, allow_tf32: bool = False,
           variant: Optional[str] = None, config: Optional[MatmulTile] = None) -> torch.Tensor:
    """``torch.matmul(a, b)`` for 1-D, 2-D and batched 3-D CUDA tensors.

    ``a``: (M, K), (K,) or (batch, M, K); ``b``: (K, N), (K,) or (batch, K, N); a batch of 1 broadcasts
    against the other's, and 1-D operands follow torch.matmul (a vector's dim is dropped from the
    result). Any M, N, K >= 1 (K = 0 gives zeros); operands may be row-major, transposed views such as
    ``w.t()`` (read as they lie, no copy), or offset views; other strided views are copied once.
    dtypes: float32 (exact fp32 FMAs on the SIMT rungs), float32 with ``allow_tf32=True`` (tensor cores,
    operands rounded to tf32, fp32 accumulation), float16 and bfloat16 (fp32 accumulation, result in
    the input dtype), int8 (int32 accumulation and an int32 result: torch._int_mm's semantics, batched
    too), float64 (fp64 tensor cores). ``a`` and ``b`` share one dtype and device.
    ``out``: optional result tensor (the result's shape, its dtype: int32 for int8 inputs; on a's
    device), returned; a non-contiguous ``out`` is written through a temporary. None: a new tensor.
    ``allow_tf32``: let float32 inputs run on tensor cores as tf32 (about 10 bits of mantissa).
    ``variant``: a rung of ``kernelkit.ladder("matmul")`` (naive first); None picks ``best``: simt_best
    for float32, mma for float16, bfloat16, int8 and tf32, dmma for float64.
    ``config``: for tuning and tests; a ``MatmulTile`` (kernelkit.ops.gemm.MatmulTile) to launch instead
    of the rule's block tile, on the simt_best, simt_async, warp_tile, mma and best rungs (simt_best with
    a config runs the warp-tile kernel); a ``WgmmaTile``
    (kernelkit.ops.gemm.WgmmaTile) on the Hopper rungs tma_wgmma and ws (float16 and bfloat16 on
    compute capability 9.0; operands the TMA cannot read run on mma: ``tma_fallback_reason`` says why).

    Raises TypeError for a non-tensor, a dtype outside those above, mismatched dtypes, an ``out`` of
    another dtype, a rung that does not take the dtype or a config that is not a MatmulTile;
    ValueError for a CPU tensor, tensors on different devices, more than 3 dims, mismatched inner or
    batch dims, an ``out`` of another shape, an unknown variant, a tensor-core rung on float32
    without ``allow_tf32``, or a config the rung cannot run.
    """
    key = None
    if (out is None and config is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
            and (variant is None or type(variant) is str) and replays_possible()):
        key = signature(a, b, params=(bool(allow_tf32), variant))
        replay = _replays.get(key)
        if replay is not None:
            got = replay(a, b, None)
            if got is not None:
                return got
    check_tensor(a, "a", DTYPES, "matmul")
    check_tensor(b, "b", DTYPES, "matmul")
    check_same_device("matmul", ("a", a), ("b", b), ("out", out))
    if b.dtype != a.dtype:
        raise TypeError(f"matmul: b has dtype {dtype_name(b.dtype)} but a has {dtype_name(a.dtype)}; "
                        "convert one first")
    shape = result_shape("matmul", a, b)
    check_rung("matmul", variant, a.dtype, allow_tf32, config)
    rdt = result_dtype(a.dtype)
    if out is None:
        out = torch.empty(shape, dtype=rdt, device=a.device)
    else:
        check_result_out("matmul", out, shape, rdt)
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    replayable = key is not None and a.dim() == 2 and b.dim() == 2  # the new out is contiguous
    if replayable:
        begin()
    matmul_out(a2, b2, None, out, bool(allow_tf32), variant, _cfg(config))
    if replayable:
        keep(_replays, key, capture(a, b, shape))
    return out


def _cfg(config) -> Optional[list[int]]:
    if isinstance(config, WgmmaTile):
        return [config.block_n, config.stages, config.split]
    return None if config is None else [config.block_m, config.block_n, config.warp_m, config.warp_n, config.stages,
                                        config.min_blocks]


def check_result_out(op: str, out, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{op}: out must be a torch.Tensor or None, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    if out.dtype != dtype:
        raise TypeError(f"{op}: out has dtype {dtype_name(out.dtype)}, expected {dtype_name(dtype)}")


def flops(a: torch.Tensor, b: torch.Tensor, **_) -> int:
    a3, b3 = as3(a if a.dim() > 1 else a.unsqueeze(0)), as3(b if b.dim() > 1 else b.unsqueeze(-1))
    return 2 * max(a3.shape[0], b3.shape[0]) * a3.shape[1] * a3.shape[2] * b3.shape[2]


def bytes_moved(a: torch.Tensor, b: torch.Tensor, **_) -> int:
    a3, b3 = as3(a if a.dim() > 1 else a.unsqueeze(0)), as3(b if b.dim() > 1 else b.unsqueeze(-1))
    out = max(a3.shape[0], b3.shape[0]) * a3.shape[1] * b3.shape[2] * result_dtype(a.dtype).itemsize
    return a.numel() * a.element_size() + b.numel() * b.element_size() + out


def random_operand(shape, dtype: torch.dtype) -> torch.Tensor:
    if dtype == I8:
        return torch.randint(-128, 128, shape, device="cuda", dtype=torch.int8)
    return torch.randn(shape, device="cuda", dtype=torch.float32).to(dtype)


def example(shape, dtype):
    """(M, N, K) or (batch, M, N, K): a row-major A and B (int8: B column-major, torch._int_mm's fast layout)."""
    *batch, m, n, k = shape
    a = random_operand((*batch, m, k), dtype)
    b = random_operand((*batch, n, k), dtype).transpose(-1, -2) if dtype == I8 else random_operand((*batch, k, n), dtype)
    return (a, b), {}


def torch_matmul(a: torch.Tensor, b: torch.Tensor, allow_tf32: bool = False, **_) -> torch.Tensor:
    """torch's call for the same product: torch._int_mm for int8 (per batch entry), matmul with
    torch's tf32 switch set as ``allow_tf32`` asks (cuBLAS on tensor cores) for float32."""
    if a.dtype == I8:
        if a.dim() == 2 and b.dim() == 2:
            return torch._int_mm(a, b)
        return torch.stack([torch._int_mm(x, y) for x, y in zip(a, b)])
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = bool(allow_tf32)
    try:
        return torch.matmul(a, b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


OP = register(Op(
    name="matmul", family="gemm", variants=LADDER, bytes_moved=bytes_moved, flops=flops, call=matmul,
    torch_fn=torch_matmul, example=example,
    doc="torch.matmul(a, b): fp32 (SIMT or tf32), fp16, bf16, int8 -> int32, fp64; batched, transposed views",
    param_space={"allow_tf32": (False, True)},
    bench_shapes=((4096, 4096, 4096), (8192, 8192, 8192), (4097, 4095, 4093), (16, 4096, 4096, 4096)),
    bench_dtypes=(torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.float64),
    compute_bound=True, bank_model=bank_report,
))
