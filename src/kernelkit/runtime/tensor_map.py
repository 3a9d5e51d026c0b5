"""Tensor maps (CUtensorMap) for the TMA: encoded by the driver, handed to kernels by value.

A tensor map describes a tiled view of a global tensor (its base, extents, strides in bytes, the box
one copy moves, the shared-memory swizzle); a kernel takes it as a ``const __grid_constant__``
parameter of 128 bytes and names it in ``cp.async.bulk.tensor``. ``encode_tiled`` returns those bytes,
which ``launch`` passes like any other argument (the C launch shim packs a 128-byte buffer at 64-byte
alignment); ``maps_supported()`` says whether this install's launch path can pass them.
"""
from __future__ import annotations

import ctypes
from importlib import import_module

import torch

from .errors import KernelkitError

_launch = import_module(".launch", __package__)  # the module: the package's name `launch` is the function


class TensorMapError(KernelkitError):
    """The driver refused to encode a tensor map (or the launch path cannot pass one)."""


SWIZZLE_BYTES = (0, 32, 64, 128)
_cache: dict = {}
MAX_CACHED = 1024


def maps_supported() -> bool:
    """Whether launches can carry tensor maps: they travel through the C launch shim."""
    return _launch._fast_launch is not None


def check_fields(dtype: torch.dtype, address: int, dims, strides, box, swizzle: int) -> None:
    """The driver's documented constraints, checked before it is asked (TensorMapError naming the one broken):
    16-byte aligned base, strides multiples of 16 bytes below 2^40, extents 1 to 2^32, box sides 1 to 256 with
    the inner side a multiple of 16 bytes and at most the swizzle span."""
    es = torch.empty((), dtype=dtype).element_size()
    if address % 16:
        raise TensorMapError(f"the base address is {address % 16} bytes past a 16-byte boundary")
    for s in strides:
        if s % 16 or not 0 < s < 2**40:
            raise TensorMapError(f"a stride of {s} bytes (multiples of 16 below 2^40 only)")
    if not all(1 <= d <= 2**32 for d in dims):
        raise TensorMapError(f"extents {tuple(dims)} (1 to 2^32 each)")
    if not all(1 <= b <= 256 for b in box) or (box[0] * es) % 16:
        raise TensorMapError(f"box {tuple(box)}: sides 1 to 256, the inner one a multiple of 16 bytes")
    if swizzle and box[0] * es > swizzle:
        raise TensorMapError(f"box inner side of {box[0] * es} bytes exceeds the {swizzle}-byte swizzle")


def encode_tiled(dtype: torch.dtype, address: int, dims, strides, box, swizzle: int = 128) -> bytes:
    """The 128 bytes of a tiled tensor map of ``len(dims)`` dims, innermost first: ``dims`` extents in
    elements, ``strides`` the byte strides of dims 1 and up, ``box`` the elements one copy moves along
    each dim; ``swizzle`` 0, 32, 64 or 128 bytes. Out-of-range elements of a box read as zeros; L2 is
    filled in 256-byte requests. Remembered by its fields (the map depends on nothing else)."""
    key = (dtype, address, tuple(dims), tuple(strides), tuple(box), swizzle)
    got = _cache.get(key)
    if got is not None:
        return got
    check_fields(dtype, address, dims, strides, box, swizzle)
    from cuda.bindings import driver as d

    kinds = {torch.float16: d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
             torch.bfloat16: d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
             torch.float32: d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
             torch.uint8: d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8}
    if dtype not in kinds:
        raise TensorMapError(f"no tensor map data type for {dtype}")
    swz = {0: d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE, 32: d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
           64: d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B, 128: d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}
    u64, u32 = d.cuuint64_t, d.cuuint32_t
    err, tmap = d.cuTensorMapEncodeTiled(
        kinds[dtype], len(dims), address, [u64(x) for x in dims], [u64(x) for x in strides], [u32(x) for x in box],
        [u32(1)] * len(dims), d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swz[swizzle],
        d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != d.CUresult.CUDA_SUCCESS:
        raise TensorMapError(f"the driver refused the tensor map (extents {tuple(dims)}, strides {tuple(strides)}, "
                             f"box {tuple(box)}): {err.name}")
    raw = ctypes.string_at(tmap.getPtr(), 128)
    if len(_cache) >= MAX_CACHED:
        _cache.clear()
    _cache[key] = raw
    return raw
