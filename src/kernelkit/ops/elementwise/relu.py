"""ReLU on the shared unary ladder (_unary.py, csrc/elementwise/unary.cuh): torch.library op and public function."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Op, register
from ...runtime.lanes import run_unary
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from ._lane import COMPILING
from ._launch import ElementwiseLaunch
from ._unary import UnarySpec, unary_checked, unary_into, unary_ladder

__all__ = ["relu"]

SPEC = UnarySpec(source="elementwise/relu.cu", functor=lambda dtype, fast: "kk::Relu")


def _relu_into(x: torch.Tensor, out: torch.Tensor, variant: Optional[str]) -> None:
    """out <- relu(x) for any x and out layout (non-contiguous ones go through a contiguous copy)."""
    unary_into(SPEC, OP, x, out, variant)


_relu_out = out_op("relu_out", _relu_into)


def relu(x: torch.Tensor, *, out: Optional[torch.Tensor] = None, variant: Optional[str] = None,
         config: Optional[ElementwiseLaunch] = None) -> torch.Tensor:
    """max(x, 0) element by element, as ``torch.relu(x)``; NaN stays NaN.

    ``x``: a float32, float16 or bfloat16 CUDA tensor of any shape, layout and alignment (offset views;
    non-contiguous ones through a contiguous copy). The result has x's dtype and shape.
    ``out``: optional result of x's shape, dtype and device, returned; may be ``x`` itself (in place).
    None: a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("relu")`` (naive first); None picks the fastest valid for
    the input. Rungs that need aligned data (float2, float4, the pair rungs) raise ValueError for
    offset views; the default takes any.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``fast`` rung, eager calls only); raises
    ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, an ``out`` of another dtype, a
    rung without x's dtype or a config that is not an ElementwiseLaunch; ValueError for a CPU tensor,
    an ``out`` of another shape or device, an unknown variant, an offset view on an aligned rung, or a
    config for another rung or under torch.compile.
    """
    if out is None and variant is None and config is None and not COMPILING():  # the C lane, if made
        got = run_unary(SPEC.lanes, x, None)
        if got is not None:
            return got
    check_tensor(x, "x", FLOAT_DTYPES, "relu")
    return unary_checked(SPEC, OP, x, out, variant, config, None, lambda o: _relu_out(x, o, variant))


def _example(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[tuple, dict]:
    return (torch.randn(shape, dtype=dtype, device="cuda"),), {}


OP = register(
    Op(
        name="relu",
        family="elementwise",
        variants=unary_ladder(SPEC),
        bytes_moved=lambda x, **_: 2 * x.numel() * x.element_size(),
        flops=lambda x, **_: x.numel(),
        call=relu,
        torch_fn=torch.relu,
        example=_example,
        doc="ReLU, max(x, 0) (torch.relu)",
        bench_shapes=((1 << 24,), (1 << 28,)),
    )
)
