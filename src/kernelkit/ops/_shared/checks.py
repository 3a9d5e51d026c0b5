"""Input checks shared by every op family.

Every public op validates its arguments here so that errors read the same everywhere: they name the
argument and say what was expected.
"""
from __future__ import annotations

from typing import Iterable

import torch

from ...ladder import Op, Variant

_DTYPE_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float64: "float64", torch.uint8: "uint8", torch.int8: "int8", torch.int32: "int32",
    torch.int64: "int64", torch.int16: "int16", torch.bool: "bool",
}


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def check_tensor(t, name: str, dtypes: Iterable[torch.dtype], op: str) -> None:
    """``t`` must be a CUDA tensor of one of ``dtypes``."""
    if isinstance(t, torch.Tensor) and t.is_cuda and t.dtype in dtypes:
        return  # the common case, kept cheap: every call of every op passes here
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cuda":
        raise ValueError(f"{op}: {name} must be a CUDA tensor, got a tensor on {t.device}")
    dtypes = tuple(dtypes)
    if t.dtype not in dtypes:
        raise TypeError(
            f"{op}: {name} must have dtype {' or '.join(dtype_name(d) for d in dtypes)}, got {dtype_name(t.dtype)}"
        )


def check_out(out, like: torch.Tensor, op: str, name: str = "out") -> None:
    """``out`` must match ``like`` in device, shape and dtype."""
    if (isinstance(out, torch.Tensor) and out.shape == like.shape and out.dtype == like.dtype
            and out.get_device() == like.get_device()):
        return
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor or None, got {type(out).__name__}")
    if out.device != like.device:
        raise ValueError(f"{op}: {name} is on {out.device}, expected {like.device}")
    if out.shape != like.shape:
        raise ValueError(f"{op}: {name} has shape {tuple(out.shape)}, expected {tuple(like.shape)}")
    if out.dtype != like.dtype:
        raise TypeError(f"{op}: {name} has dtype {dtype_name(out.dtype)}, expected {dtype_name(like.dtype)}")


def output_for(out, like: torch.Tensor, op: str) -> torch.Tensor:
    """The tensor an op writes: a fresh contiguous one like ``like``, or the caller's ``out`` once checked."""
    if out is None:
        return torch.empty_like(like, memory_format=torch.contiguous_format)
    check_out(out, like, op)
    return out


def pick_variant(op: Op, variant: str | None, dtype: torch.dtype, *tensors: torch.Tensor) -> Variant:
    """The variant to run: the named one (checked against dtype and alignment) or the default."""
    if variant is None:
        return op.default_variant
    v = op.variant(variant)
    why = v.unavailable()
    if why:
        from ...runtime import HeadersNotFoundError

        raise HeadersNotFoundError(f"{op.name}: variant {v.name!r} cannot be built here: {why}")
    if not v.supports(dtype):
        raise TypeError(
            f"{op.name}: variant {v.name!r} supports {', '.join(dtype_name(d) for d in v.dtypes)}, "
            f"not {dtype_name(dtype)}; variants for {dtype_name(dtype)}: "
            f"{[w.name for w in op.variants_for(dtype)]}"
        )
    if v.align:
        for t in tensors:
            if t.data_ptr() % v.align:
                raise ValueError(
                    f"{op.name}: variant {v.name!r} needs {v.align}-byte aligned data, but a tensor's "
                    f"address is {t.data_ptr() % v.align} bytes past a boundary (a view with an offset?); "
                    f"the default variant handles any alignment"
                )
    return v


def check_same_device(op: str, first: tuple[str, torch.Tensor], *others: tuple[str, torch.Tensor | None]) -> None:
    """Every tensor given (None skipped) lives on the device of ``first``; the error names both."""
    name0, t0 = first
    dev = t0.device
    for name, t in others:
        if t is not None and t.device != dev:
            raise ValueError(f"{op}: {name} is on {t.device} but {name0} is on {dev}; "
                             "move them to one device first")


def check_no_partial_overlap(op: str, out: torch.Tensor, **inputs: torch.Tensor) -> None:
    """``out`` may be an input itself (in place) but must not overlap one partially.

    A partial overlap (out = a[1:] viewing a's memory) would let one thread read what another
    already wrote; torch refuses the same for its out= arguments.
    """
    o0 = out.data_ptr()
    o1 = o0 + out.numel() * out.element_size()
    for name, t in inputs.items():
        t0 = t.data_ptr()
        t1 = t0 + t.numel() * t.element_size()
        if t0 < o1 and o0 < t1 and t0 != o0:
            raise ValueError(
                f"{op}: out partially overlaps {name} (they share memory at different offsets); pass "
                f"out={name} itself for an in-place result, or a separate tensor"
            )
