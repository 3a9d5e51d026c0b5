"""GELU: the model element-wise op (source 000), its ladder, dispatch and torch.library op."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Op, register
from .._shared.checks import check_tensor, output_for
from ._unary import UnarySpec, unary_into, unary_ladder

__all__ = ["gelu"]

APPROXIMATIONS = ("tanh", "none")


def _functor(dtype: torch.dtype, fast: bool, approximate: str = "tanh") -> str:
    if approximate == "none":
        return "kk::GeluErf"
    # the hardware tanh is below a 16-bit result's rounding; fp32 keeps the accurate tanhf
    return "kk::GeluTanhFast" if fast and dtype != torch.float32 else "kk::GeluTanh"


SPEC = UnarySpec(source="elementwise/gelu.cu", functor=_functor)


def _flops(x: torch.Tensor, approximate: str = "tanh") -> int:
    # tanh form: x^3 (2), fma (2), scale (1), tanh (counted as 1), 1+t, 0.5*x, product (3) ~ 9 per element
    return 9 * x.numel()


def _bytes(x: torch.Tensor, approximate: str = "tanh") -> int:
    return 2 * x.numel() * x.element_size()  # read x once, write out once


_PARAMS = {a: {"approximate": a} for a in APPROXIMATIONS}  # built once: run_unary's plan key reads them


def _gelu_into(x: torch.Tensor, out: torch.Tensor, approximate: str, variant: Optional[str]) -> None:
    """out <- gelu(x) for any x and out layout (non-contiguous ones go through a contiguous copy)."""
    params = _PARAMS.get(approximate)
    if params is None:  # reachable through torch.ops.kernelkit.gelu_out, which gelu() does not guard
        raise ValueError(f"gelu: approximate must be 'tanh' or 'none', got {approximate!r}")
    unary_into(SPEC, OP, x, out, variant, params)


@torch.library.custom_op("kernelkit::gelu_out", mutates_args=("out",))
def _gelu_out_op(x: torch.Tensor, out: torch.Tensor, approximate: str, variant: Optional[str]) -> None:
    _gelu_into(x, out, approximate, variant)


@_gelu_out_op.register_fake
def _(x, out, approximate, variant):
    return None


def gelu(
    x: torch.Tensor,
    *,
    approximate: str = "tanh",
    out: Optional[torch.Tensor] = None,
    variant: Optional[str] = None,
) -> torch.Tensor:
    """GELU of ``x`` as torch.nn.functional.gelu (approximate "tanh", kernelkit's default, or "none").

    ``x``: float32, float16 or bfloat16 CUDA tensor of any shape and layout. ``out``: optional result
    tensor of the same shape and dtype (may be ``x`` itself). ``variant``: a rung of
    ``kernelkit.ladder("gelu")``; None picks the fastest rung valid for the input.
    """
    check_tensor(x, "x", FLOAT_DTYPES, "gelu")
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"gelu: approximate must be 'tanh' or 'none', got {approximate!r}")
    out = output_for(out, x, "gelu")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.gelu_out(x, out, approximate, variant)
    else:  # eager: skip the dispatcher, the launch is the only work left
        _gelu_into(x, out, approximate, variant)
    return out


def _example(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[tuple, dict]:
    return (torch.randn(shape, dtype=dtype, device="cuda") * 3,), {}


OP = register(
    Op(
        name="gelu",
        family="elementwise",
        variants=unary_ladder(SPEC, fast_note=", hardware tanh for 16-bit types"),
        bytes_moved=_bytes,
        flops=_flops,
        call=gelu,
        torch_fn=lambda x, approximate="tanh": torch.nn.functional.gelu(x, approximate=approximate),
        example=_example,
        doc="GELU, tanh or erf form (torch.nn.functional.gelu)",
        param_space={"approximate": APPROXIMATIONS},
    )
)
