"""GELU (tanh or erf form) on the shared unary ladder: its functors, torch.library op and public function."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, register
from ...runtime.lanes import run_unary
from .._shared.checks import check_tensor
from .._shared.cxx import CXX_TYPE, cxx_bool
from .._shared.custom_op import out_op
from ._lane import COMPILING
from ._launch import ElementwiseLaunch
from ._unary import FAST, UnarySpec, unary_checked, unary_into, unary_ladder

__all__ = ["gelu"]

APPROXIMATIONS = ("tanh", "none")


def _bad_approximate(approximate) -> ValueError:
    return ValueError(f"gelu: approximate must be 'tanh' or 'none', got {approximate!r}")


def _functor(dtype: torch.dtype, fast: bool, approximate: str = "tanh") -> str:
    if approximate == "none":  # 16-bit results: a branch-free erfc of 12 instructions instead of erff's ~27
        return "kk::GeluErfFast" if fast and dtype != torch.float32 else "kk::GeluErf"
    if approximate != "tanh":  # reachable through torch.ops.kernelkit.gelu_out, which gelu() does not guard
        raise _bad_approximate(approximate)
    # the hardware tanh is below a 16-bit result's rounding; fp32 keeps the accurate tanhf
    return "kk::GeluTanhFast" if fast and dtype != torch.float32 else "kk::GeluTanh"


SPEC = UnarySpec(source="elementwise/gelu.cu", functor=_functor, param="approximate")


def _flops(x: torch.Tensor, approximate: str = "tanh") -> int:
    # tanh form: x^3 (2), fma (2), scale (1), tanh (counted as 1), 1+t, 0.5*x, product (3) ~ 9 per element
    return 9 * x.numel()


def _bytes(x: torch.Tensor, approximate: str = "tanh") -> int:
    return 2 * x.numel() * x.element_size()  # read x once, write out once


def _gelu_into(x: torch.Tensor, out: torch.Tensor, approximate: str, variant: Optional[str]) -> None:
    """out <- gelu(x) for any x and out layout (non-contiguous ones go through a contiguous copy)."""
    unary_into(SPEC, OP, x, out, variant, approximate)


_gelu_out = out_op("gelu_out", _gelu_into)


def gelu(
    x: torch.Tensor,
    *,
    approximate: str = "tanh",
    out: Optional[torch.Tensor] = None,
    variant: Optional[str] = None,
    config: Optional[ElementwiseLaunch] = None,
) -> torch.Tensor:
    """GELU element by element, as ``torch.nn.functional.gelu(x, approximate=approximate)``.

    ``approximate``: "tanh" (kernelkit's default: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))))
    or "none" (torch's default: 0.5 x (1 + erf(x / sqrt(2)))). Computed in fp32; for 16-bit x the
    default rung's tanh form uses the hardware tanh, whose error is below a 16-bit result's rounding.
    ``x``: a float32, float16 or bfloat16 CUDA tensor of any shape, layout and alignment (offset views;
    non-contiguous ones through a contiguous copy). The result has x's dtype and shape.
    ``out``: optional result of x's shape, dtype and device, returned; may be ``x`` itself (in place).
    None: a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("gelu")`` (naive first); None picks the fastest valid for
    the input. Rungs that need aligned data (float2, float4, the pair rungs) raise ValueError for
    offset views; the default takes any.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``fast`` rung, eager calls only); raises
    ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, an ``out`` of another dtype, a
    rung without x's dtype or a config that is not an ElementwiseLaunch; ValueError for a CPU tensor,
    an ``approximate`` other than "tanh" or "none", an ``out`` of another shape or device, an unknown
    variant, an offset view on an aligned rung, or a config for another rung or under torch.compile.
    """
    if out is None and variant is None and config is None and not COMPILING():  # the C lane, if made
        got = run_unary(SPEC.lanes, x, approximate)
        if got is not None:
            return got
    check_tensor(x, "x", FLOAT_DTYPES, "gelu")
    if approximate not in APPROXIMATIONS:
        raise _bad_approximate(approximate)
    return unary_checked(SPEC, OP, x, out, variant, config, approximate,
                         lambda o: _gelu_out(x, o, approximate, variant))


def _cute_kernels(dtype: torch.dtype, approximate: str = "tanh", **_) -> tuple[Kernel, ...]:
    """The CuTe rung's kernels: input aligned like the output (128-bit copies both ways), or not (element loads)."""
    f, ct, bits = _functor(dtype, True, approximate), CXX_TYPE[dtype], torch.finfo(dtype).bits
    return tuple(Kernel("elementwise/gelu_cute.cu", f"kk::gelu_cute<{ct}, {f}, {cxx_bool(a)}>",
                        128 if a else bits, 128, block=FAST.block) for a in (True, False))


# launched as the fast rung ("kind": "fast": its grid rule, head and tail), with the fast rung's functors
CUTE = Variant(
    name="cute", dtypes=FLOAT_DTYPES, kernels=_cute_kernels, params={"kind": "fast", "width": 0},
    technique="the fast rung written with CuTe (needs kernelkit[cute]): the aligned run as (16/E, n) global "
    "tensors, a thread's tile one column copied to a register tensor and back by a 128-bit copy atom "
    "(UniversalCopy<uint4>: LDG.E.128, STG.E.128), head and tail elements for any alignment",
    bytes_moved=_bytes, flops=_flops,
)


_RUNGS = unary_ladder(SPEC, fast_note=", hardware tanh for 16-bit types")  # the CuTe rung goes before the default


def _example(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[tuple, dict]:
    return (torch.randn(shape, dtype=dtype, device="cuda") * 3,), {}


OP = register(
    Op(
        name="gelu",
        family="elementwise",
        variants=(*_RUNGS[:-1], CUTE, _RUNGS[-1]),
        bytes_moved=_bytes,
        flops=_flops,
        call=gelu,
        torch_fn=lambda x, approximate="tanh": torch.nn.functional.gelu(x, approximate=approximate),
        example=_example,
        doc="GELU, tanh or erf form (torch.nn.functional.gelu)",
        param_space={"approximate": APPROXIMATIONS},
    )
)
