"""linear: ``torch.nn.functional.linear`` on the matmul ladder, the bias added in the kernels' epilogue.

``weight`` (N, K) is read through its transpose view as a k-major B: no copy of the weight is made.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import torch

from ...ladder import Op, register
from .._shared.checks import check_same_device, check_tensor, dtype_name
from ._ladder import LADDER, MatmulTile
from .matmul import _cfg, check_result_out, check_rung, matmul_out, random_operand

__all__ = ["linear"]

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, *,
           out: Optional[torch.Tensor] = None, allow_tf32: bool = False, variant: Optional[str] = None,
           config: Optional[MatmulTile] = None) -> torch.Tensor:
    """``torch.nn.functional.linear(x, weight, bias)``: x @ weight.T + bias over x's last dim.

    ``x``: (..., K), any number of leading dims (flattened into the rows of one matmul; a view where
    their layout allows, else a copy); ``weight``: (N, K), read as it lies (its transpose is the
    k-major B of the matmul kernels); ``bias``: optional (N,), added to every row in the kernels'
    epilogue before the result is rounded. dtypes: float32 (exact fp32 on the SIMT rungs; tf32 tensor
    cores with ``allow_tf32=True``), float16 and bfloat16 (fp32 accumulation), float64; all three
    tensors share one dtype and device.
    ``out``: optional result of shape (..., N) and x's dtype, returned; None: a new tensor.
    ``allow_tf32``: let float32 inputs run on tensor cores as tf32.
    ``variant``: a rung of ``kernelkit.ladder("linear")`` (the matmul ladder; naive first); None picks
    the best for the dtype. ``config``: for tuning and tests; a ``MatmulTile``
    (``from kernelkit.ops.gemm import MatmulTile``) instead of the rule's block tile.

    Raises TypeError for a non-tensor, another dtype, mismatched dtypes, an ``out`` of another dtype, a
    rung that does not take the dtype or a config that is not a MatmulTile; ValueError for a CPU
    tensor, tensors on different devices, a weight that is not 2-D, a last dim of x that differs from
    weight's, a bias that is not (N,), an ``out`` of another shape, an unknown variant, a tensor-core
    rung on float32 without ``allow_tf32``, or a config the rung cannot run.
    """
    check_tensor(x, "x", DTYPES, "linear")
    check_tensor(weight, "weight", DTYPES, "linear")
    if bias is not None:
        check_tensor(bias, "bias", DTYPES, "linear")
    check_same_device("linear", ("x", x), ("weight", weight), ("bias", bias), ("out", out))
    for name, t in (("weight", weight), ("bias", bias)):
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
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    else:
        check_result_out("linear", out, shape, x.dtype)
    x2 = x.reshape(-1, k)
    if bias is not None and bias.stride(0) != 1 and n > 1:
        bias = bias.contiguous()
    matmul_out(x2, weight.t(), bias, out, bool(allow_tf32), variant, _cfg(config))
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
    doc="torch.nn.functional.linear(x, weight, bias): the matmul ladder with the bias in the epilogue",
    param_space={"allow_tf32": (False, True)},
    bench_shapes=((1, 4096, 4096), (16, 4096, 4096), (128, 14336, 4096), (4096, 4096, 14336), (16384, 128256, 4096)),
    bench_dtypes=(torch.float32, torch.float16, torch.bfloat16),
    compute_bound=True,
))
