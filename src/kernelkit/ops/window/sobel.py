"""sobel: the Sobel gradient magnitude in one pass, its ladder, torch.library op and public function."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Kernel, Op, Variant, register
from ...runtime import get_kernel
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.plans import plan_cache, remember
from ._common import (CXX, DTYPES, PIPE_MAX_TILES, Planes, check_border, pipe_geometry, pipe_tile_bytes, pipe_tiles,
                      planes_of, random_image, round4, rows_aligned, run_pipelined, run_tiled)
from .filter2d import reg_channels, reg_shape

__all__ = ["sobel"]

SRC = "window/sobel.cu"


def _name(dtype: torch.dtype, c: int) -> str:
    v, ry = reg_shape(dtype)
    return f"kk::sobel_mag<{CXX[dtype]}, {c}, {v}, {ry}>"


def pipe_rows(dtype: torch.dtype) -> int:
    """Output rows a thread of the pipelined kernel: 4 (a 32-row tile reads 34 rows), uint8 2 (16 outputs a
    row: both gradients of 2 rows in 64 registers)."""
    return 4 if dtype.itemsize > 1 else 2


def _pipe_name(dtype: torch.dtype, c: int, aligned: bool) -> str:
    return f"kk::sobel_pipelined<{CXX[dtype]}, {c}, {pipe_rows(dtype)}, {'true' if aligned else 'false'}>"


VARIANTS = (
    Variant("fused", "both 3x3 gradients and the magnitude in one pass: the tile with its halo in shared memory, "
            "register windows (128-bit shared loads), compile-time weights, 16-byte vector stores", DTYPES,
            lambda dtype, **_: tuple(Kernel(SRC, _name(dtype, c), load_bits=128, store_bits=128, block=256)
                                     for c in reg_channels(dtype))),
    Variant("pipelined", "the fused pass on persistent blocks: the next tile's raw elements arrive by cp.async "
            "in a second buffer while one is computed; each window's column sums formed once for both "
            "gradients, the square root one MUFU.SQRT", DTYPES,
            lambda dtype, **_: tuple(Kernel(SRC, _pipe_name(dtype, c, a), store_bits=128,
                                            sass=("LDGSTS.E.BYPASS.128", "MUFU.SQRT"), block=256)
                                     for c in reg_channels(dtype) for a in (True, False)), default=True),
)
_plans = plan_cache()


def run_planes(p: Planes, out: torch.Tensor, mode: int, kind: str = "pipelined") -> None:
    dev, dtype = out.get_device(), out.dtype
    if kind == "pipelined":
        aligned = rows_aligned(p)
        key = ("pipelined", dtype, dev, p.C, aligned)
        plan = _plans.get(key)
        if plan is None:
            tw, th, ld = pipe_geometry(dtype.itemsize, 1, p.C, pipe_rows(dtype), aligned)
            name = _pipe_name(dtype, p.C, aligned)
            plan = remember(_plans, key, (get_kernel(SRC, name, device_index=dev), name, tw, th,
                                          pipe_tile_bytes(dtype.itemsize, th + 2, ld, aligned)))
        kernel, name, tw, th, shmem = plan
        if pipe_tiles(p, tw, th) <= PIPE_MAX_TILES:
            run_pipelined(kernel, name, p, out.data_ptr(), 0, 0, 1, 3, 3, mode, tw, th, shmem, dev)
            return
    key = (dtype, dev, p.C)
    plan = _plans.get(key)
    if plan is None:
        v, ry = reg_shape(dtype)
        name = _name(dtype, p.C)
        shmem = (8 * ry + 2) * (31 * v + round4(v + 2 * p.C)) * 4
        plan = remember(_plans, key, (get_kernel(SRC, name, device_index=dev), name, 32 * v, 8 * ry, shmem))
    kernel, name, tw, th, shmem = plan
    run_tiled(kernel, name, p, out.data_ptr(), 0, 0, 1, 3, 3, mode, tw, th, shmem, dev)


def _sobel_into(x: torch.Tensor, out: torch.Tensor, border: int, channels_last: bool,
                variant: Optional[str]) -> None:
    p = planes_of(x, channels_last, "sobel")
    kind = variant or "pipelined"
    if p.C in reg_channels(x.dtype):
        run_planes(p, out, border, kind)
        return
    # channel counts without a compiled kernel: each channel as a plane of its own
    planar = x.movedim(-1, -3).contiguous()
    tmp = torch.empty_like(planar)
    run_planes(planes_of(planar, False, "sobel"), tmp, border, kind)
    out.copy_(tmp.movedim(-3, -1))


_sobel_out = out_op("sobel_out", _sobel_into)


def sobel(x: torch.Tensor, *, border: str = "reflect", channels_last: bool = False,
          variant: Optional[str] = None) -> torch.Tensor:
    """The Sobel gradient magnitude of every plane of ``x``: sqrt(gx^2 + gy^2), gx the correlation with
    [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]] (OpenCV's Sobel with dx=1, ksize=3) and gy with its transpose.

    ``x``: a CUDA tensor of float32, float16, bfloat16 or uint8, (..., H, W); computed in float32, uint8
    results rounded half to even and saturated to [0, 255].
    ``border``: "reflect" (default, OpenCV's BORDER_REFLECT_101), "replicate" or "zero".
    ``channels_last``: True for HWC images, ``x`` of shape (..., H, W, C) with C = 1 to 4.
    No ``out``: the result is always a new contiguous tensor of ``x``'s shape and dtype.
    ``variant``: a rung of ``kernelkit.ladder("sobel")``; None picks the pipelined rung.
    No ``config``: the tile is fixed per dtype (for tuning and tests, none is needed: one kernel a dtype
    and alignment).

    Raises TypeError for a non-tensor ``x`` or another dtype; ValueError for a CPU ``x``, an unknown
    border or variant, or too few dims.
    """
    check_tensor(x, "x", DTYPES, "sobel")
    mode = check_border(border, "sobel")
    if variant is not None:
        OP.variant(variant)
    planes_of(x, channels_last, "sobel")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel():
        _sobel_out(x, out, mode, bool(channels_last), variant)
    return out


def _example(shape, dtype):
    x = random_image(shape, dtype)
    return (x,), {}


def _torch_sobel(x, border="reflect"):
    import torch.nn.functional as F

    shape = x.shape
    k = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], device=x.device)
    y = F.pad(x.reshape(-1, 1, shape[-2], shape[-1]).float(), (1, 1, 1, 1), mode="reflect")
    g = F.conv2d(y, torch.stack([k, k.t()])[:, None])
    return g.square().sum(1).sqrt().to(x.dtype).reshape(shape)


OP = register(Op(
    name="sobel", family="window", variants=VARIANTS,
    bytes_moved=lambda x, *a, **k: 2 * x.numel() * x.element_size(), flops=lambda x, *a, **k: 24 * x.numel(),
    call=sobel, torch_fn=_torch_sobel, example=_example,
    doc="Sobel gradient magnitude sqrt(gx^2 + gy^2), one pass",
    bench_shapes=((8192, 8192), (2160, 3840)), bench_dtypes=(torch.float32, torch.uint8),
))
