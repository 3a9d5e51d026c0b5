"""Input checks and device facts shared by every op family.

Every public op validates its arguments here so that errors read the same everywhere: they name the
argument and say what was expected.
"""
from __future__ import annotations

import functools
from typing import Iterable

import torch

from ..ladder import Op, Variant

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


@functools.cache
def sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def grid_for(items: int, block: int, device_index: int, blocks_per_sm: int) -> int:
    """Blocks for a grid-stride kernel: one thread per item, capped at ``blocks_per_sm`` per SM."""
    return max(1, min(cdiv(items, block), sm_count(device_index) * blocks_per_sm))


CXX_TYPE = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}
CXX_PAIR = {torch.float16: "__half2", torch.bfloat16: "__nv_bfloat162"}
