"""linear: ``torch.nn.functional.linear`` on the matmul ladder, the bias added in the kernels' epilogue,
with an optional activation (ReLU, GELU in its erf and tanh forms) and residual add fused into it.

``weight`` (N, K) is read through its transpose view as a k-major B: no copy of the weight is made. The
fused epilogue is the kernels' EPI template argument (mm::Epilogue in csrc/gemm/matmul.cuh): one
instantiation per activation, the residual a runtime pointer (null: none) and row stride.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import torch

from ...ladder import Op, register
from .._shared.checks import check_no_partial_overlap, check_same_device, check_tensor, dtype_name
from .._shared.plans import plan_cache
from ._ladder import LADDER, MatmulTile
from ._replay import begin, capture, keep, replays_possible, signature
from .matmul import _cfg, check_result_out, check_rung, matmul_out, random_operand

_replays = plan_cache()  # call signature -> TmaReplay (_replay.py): plain calls that skip the checks

__all__ = ["linear"]

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# activation -> mm::Epilogue; kIdentity (1) carries a residual without an activation
ACTIVATIONS = {"relu": 2, "gelu": 3, "gelu_tanh": 4}
IDENTITY = 1
# mm::Epilogue -> the activation in torch (the K = 0 case and the references)
ACTIVATION_FNS = {
    IDENTITY: lambda v: v,
    2: torch.relu,
    3: torch.nn.functional.gelu,
    4: lambda v: torch.nn.functional.gelu(v, approximate="tanh"),
}


def epilogue_code(activation: Optional[str], residual: Optional[torch.Tensor]) -> int:
    """The kernels' EPI for an activation (None or a key of ACTIVATIONS) and whether a residual is added:
    0 (matmul's epilogue) without either. ValueError for an unknown activation."""
    if activation is None:
        return 0 if residual is None else IDENTITY
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"linear: activation must be None or one of {', '.join(repr(a) for a in ACTIVATIONS)}; "
                         f"got {activation!r}")
    return ACTIVATIONS[activation]


def residual_rows(residual: torch.Tensor, n: int) -> torch.Tensor:
    """The residual as (M, N) rows of unit column stride: a view where its layout allows (any row stride),
    else a contiguous copy."""
    try:
        r2 = residual.view(-1, n)
    except RuntimeError:
        return residual.reshape(-1, n).contiguous()
    if (r2.stride(1) == 1 or n == 1) and (r2.stride(0) >= n or r2.shape[0] == 1):
        return r2
    return r2.contiguous()


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, *,
           activation: Optional[str] = None, residual: Optional[torch.Tensor] = None,
           out: Optional[torch.Tensor] = None, allow_tf32: bool = False, variant: Optional[str] = None,
           config: Optional[MatmulTile] = None) -> torch.Tensor:
    """``act(torch.nn.functional.linear(x, weight, bias)) + residual``: x @ weight.T + bias over x's last
    dim, then the activation and the residual, all in the GEMM's epilogue.

    ``x``: (..., K), any number of leading dims (flattened into the rows of one matmul; a view where
    their layout allows, else a copy); ``weight``: (N, K), read as it lies (its transpose is the
    k-major B of the matmul kernels); ``bias``: optional (N,), added to every row in the kernels'
    epilogue before the result is rounded. dtypes: float32 (exact fp32 on the SIMT rungs; tf32 tensor
    cores with ``allow_tf32=True``), float16 and bfloat16 (fp32 accumulation), float64; all three
    tensors share one dtype and device.
    ``activation``: None, "relu", "gelu" (the erf form, as ``F.gelu``) or "gelu_tanh" (``F.gelu(...,
    approximate="tanh")``). ``residual``: None or a tensor of the result's shape (..., N), x's dtype and
    device, added after the activation; any layout whose last dim is contiguous is read in place (its
    row stride passed to the kernel), others are copied once. The bias, activation and residual are
    applied to the accumulator (fp32; fp64 for float64) and the result is rounded to the output dtype
    once: act(acc + bias) + residual, not torch's three roundings of the unfused expression.
    ``out``: optional result of shape (..., N) and x's dtype, returned; None: a new tensor.
    ``allow_tf32``: let float32 inputs run on tensor cores as tf32.
    ``variant``: a rung of ``kernelkit.ladder("linear")`` (the matmul ladder; naive first); None picks
    the best for the dtype. ``config``: for tuning and tests; a ``MatmulTile``
    (``from kernelkit.ops.gemm import MatmulTile``) instead of the rule's block tile.

    Raises TypeError for a non-tensor, another dtype, mismatched dtypes (residual included), an ``out``
    of another dtype, a rung that does not take the dtype or a config that is not a MatmulTile;
    ValueError for a CPU tensor, tensors on different devices, a weight that is not 2-D, a last dim of
    x that differs from weight's, a bias that is not (N,), a residual or ``out`` of another shape than
    the result's, an unknown activation or variant, a tensor-core rung on float32 without
    ``allow_tf32``, or a config the rung cannot run.
    """
    key = None
    if (residual is None and out is None and config is None and isinstance(x, torch.Tensor)
            and isinstance(weight, torch.Tensor) and (bias is None or isinstance(bias, torch.Tensor))
            and (activation is None or type(activation) is str) and (variant is None or type(variant) is str)
            and replays_possible()):  # else the checks below say what is wrong
        key = signature(x, weight, bias, params=(activation, bool(allow_tf32), variant))
        replay = _replays.get(key)
        if replay is not None:
            got = replay(x, weight, bias)
            if got is not None:
                return got
    check_tensor(x, "x", DTYPES, "linear")
    check_tensor(weight, "weight", DTYPES, "linear")
    if bias is not None:
        check_tensor(bias, "bias", DTYPES, "linear")
    if residual is not None:
        check_tensor(residual, "residual", DTYPES, "linear")
    epi = epilogue_code(activation, residual)
    check_same_device("linear", ("x", x), ("weight", weight), ("bias", bias), ("residual", residual), ("out", out))
    for name, t in (("weight", weight), ("bias", bias), ("residual", residual)):
        if t is not None and t.dtype != x.dtype:
            raise TypeError(f"linear: {name} has dtype {dtype_name(t.dtype)} but x has {dtype_name(x.dtype)}")
    if weight.dim() != 2:
        raise ValueError(f"linear: weight must be 2-D (out_features, in_features), got shape {tuple(weight.shape)}")
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: x's last dim must equal weight's in_features ({weight.shape[1]}); x has shape "
                         f"{tuple(x.shape)}")
    n, k = weight.shape
    if bias is not None and tuple(bias.shape) != (n,):
        raise ValueError(f"linear: bias must have shape ({n},), got {tuple(bias.shape)}")
    check_rung("linear", variant, x.dtype, allow_tf32, config)
    shape = (*x.shape[:-1], n)
    if residual is not None and tuple(residual.shape) != shape:
        raise ValueError(f"linear: residual must have the result's shape {shape}, got {tuple(residual.shape)}")
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    else:
        check_result_out("linear", out, shape, x.dtype)
        if residual is not None:  # in place (out is residual) is fine: an element is read before it is written
            check_no_partial_overlap("linear", out, residual=residual)
    x2 = x.reshape(-1, k) if k else x.new_empty(math.prod(x.shape[:-1]), 0)  # reshape(-1, 0) cannot size -1
    # a call that can be replayed: x read where it lies, the bias as given, not a contiguous copy of it
    # (the replay passes the caller's bias pointer); out is new and contiguous
    replayable = key is not None and x.is_contiguous() and (bias is None or bias.stride(0) == 1)
    if bias is not None and bias.stride(0) != 1 and n > 1:
        bias = bias.contiguous()
    r2 = None if residual is None else residual_rows(residual, n)
    if replayable:
        begin()
    matmul_out(x2, weight.t(), bias, out, bool(allow_tf32), variant, _cfg(config), r2, epi)
    if replayable:
        keep(_replays, key, capture(x, weight, shape))
    return out


def example(shape, dtype):
    """(M, N, K): x (M, K), weight (N, K), bias (N,)."""
    m, n, k = shape[-3:]
    return (random_operand((m, k), dtype), random_operand((n, k), dtype), random_operand((n,), dtype)), {}


OP = register(Op(
    name="linear", family="gemm",
    variants=tuple(replace(v, dtypes=tuple(d for d in v.dtypes if d in DTYPES)) for v in LADDER),
    bytes_moved=lambda x, weight, bias=None, **_: (x.numel() + weight.numel() + x.numel() // x.shape[-1]
                                                   * weight.shape[0]) * x.element_size(),
    flops=lambda x, weight, bias=None, **_: 2 * x.numel() * weight.shape[0],
    call=linear, torch_fn=torch.nn.functional.linear, example=example,
    doc="act(torch.nn.functional.linear(x, weight, bias)) + residual: the matmul ladder with the bias, an "
        "activation (relu, gelu, gelu_tanh) and a residual fused in the epilogue, rounded once",
    param_space={"allow_tf32": (False, True)},
    bench_shapes=((1, 4096, 4096), (16, 4096, 4096), (128, 14336, 4096), (4096, 4096, 14336), (16384, 128256, 4096)),
    bench_dtypes=(torch.float32, torch.float16, torch.bfloat16),
    compute_bound=True,
))
