"""The depthwise conv2d's kernels and their launches: the kernel names each rung compiles, the float32
weights made once per weight tensor, and a launcher per kernel family (register tiles and columns, the
channel-group tile, planar bands). conv2d.py picks among them."""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ...ladder import Kernel
from ...runtime import allow_shared, get_kernel, launch
from .._shared.launch_rules import cdiv, sm_count
from .._shared.plans import plan_cache, remember
from ._common import CXX, GRID_YZ, TensorCache
from ._depthwise_shapes import (COLUMNS_RY, GROUP, PLANES_RY, PLANES_SMEM, PLANES_THREADS, REGS_KS, REGS_THREADS,
                                REGS_TILES, TILE_KS, TILE_RX, TILE_RY, TILE_SMEM, DwColumns, DwPlanes, DwRegs, DwTile,
                                planes_pitch)

SRC = "window/conv2d.cu"
REGS_SRC = "window/dw_registers.cu"


def _direct_name(dtype: torch.dtype, ve: int, cl: bool) -> str:
    return f"kk::dw_direct<{CXX[dtype]}, {ve}, {'true' if cl else 'false'}>"


def _direct(dtype):
    return (Kernel(SRC, _direct_name(dtype, 1, False), block=256), Kernel(SRC, _direct_name(dtype, 1, True), block=256),
            Kernel(SRC, _direct_name(dtype, 16 // dtype.itemsize, True), load_bits=128, store_bits=128, block=256))


def planes_name(dtype: torch.dtype, k: int, s: int, ry: int) -> str:
    return f"kk::dw_planes<{CXX[dtype]}, {k}, {s}, {ry}>"


def _planar(dtype):
    return tuple(Kernel(SRC, planes_name(dtype, k, s, ry), block=PLANES_THREADS, dyn_shared=PLANES_SMEM)
                 for k, s in TILE_KS for ry in PLANES_RY)


def tile_shape(kh: int, kw: int, stride: list[int], dilation: list[int]) -> Optional[tuple[int, int]]:
    """(K, S) where the tiled kernels are compiled for this window, else None."""
    if kh == kw and stride[0] == stride[1] and dilation == [1, 1] and (kh, stride[0]) in TILE_KS:
        return kh, stride[0]
    return None


def tile_name(dtype: torch.dtype, k: int, s: int, rx: int, cl: bool) -> str:
    return f"kk::dw_tile<{CXX[dtype]}, {k}, {s}, {rx}, {TILE_RY}, {'true' if cl else 'false'}>"


def _tiled(dtype):
    out = []
    for k, s in TILE_KS:
        for rx in TILE_RX[s]:
            out.append(Kernel(SRC, tile_name(dtype, k, s, rx, True), load_bits=128, block=256, dyn_shared=TILE_SMEM))
            out.append(Kernel(SRC, tile_name(dtype, k, s, rx, False), block=256, dyn_shared=TILE_SMEM))
    return tuple(out)


def regs_name(dtype: torch.dtype, k: int, s: int, rx: int, ry: int) -> str:
    return f"kk::dw_registers<{CXX[dtype]}, {k}, {s}, {rx}, {ry}>"


def columns_name(dtype: torch.dtype, k: int, s: int, ry: int) -> str:
    return f"kk::dw_columns<{CXX[dtype]}, {k}, {s}, {ry}>"


def _registers_dw(dtype):
    return (*(Kernel(REGS_SRC, regs_name(dtype, k, s, rx, ry), block=REGS_THREADS, load_bits=128)  # float4 weights
              for k, s in REGS_KS for rx, ry in REGS_TILES[s]),
            *(Kernel(REGS_SRC, columns_name(dtype, k, s, ry), block=REGS_THREADS) for k, s in REGS_KS
              for ry in COLUMNS_RY))


_plans = plan_cache()
# the first of the ints a config reaches the custom op as
CONFIG_TILE, CONFIG_PLANES, CONFIG_REGS, CONFIG_COLUMNS = 0, 1, 2, 3
_weights = {False: TensorCache(), True: TensorCache()}  # by tap_major: both forms kept for a weight


def float_weights(weight: torch.Tensor, tap_major: bool) -> torch.Tensor:
    """The weights as float32 (C, KH*KW), or tap-major (KH*KW, C), made once per weight version."""
    key = (weight._version, weight.data_ptr())
    got = _weights[tap_major].get(weight, key)
    if got is not None:
        return got
    w = weight.detach().reshape(weight.shape[0], -1).to(torch.float32)
    w = (w.t() if tap_major else w).contiguous()
    _weights[tap_major].put(weight, key, w)
    return w


def _kernel(source: str, name: str, dev: int):
    """The compiled kernel ``name``, looked up once per device."""
    key = (source, name, dev)
    return _plans.get(key) or remember(_plans, key, get_kernel(source, name, device_index=dev))


def run_tiled(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
              padding: list[int], cl: bool, t: DwTile) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    kern = _kernel(SRC, tile_name(dtype, k, s, t.rx, cl), dev)
    shmem = t.smem(k, s, cl)
    if shmem > 48 * 1024:
        allow_shared(kern, shmem, dev)
    sn, sc, sh, sw = x.stride()
    ve = 16 // x.element_size()
    vec = cl and sc == 1 and C % ve == 0 and sw % ve == 0 and sh % ve == 0 and sn % ve == 0 and x.data_ptr() % 16 == 0
    tiles_x = cdiv(OW, t.tw)
    grid = (cdiv(OH, t.th) * tiles_x, cdiv(C, GROUP), min(N, GRID_YZ))
    i32 = np.int32
    launch(kern, grid, (32, t.warps_x * t.warps_y), x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sc, sh, sw,
           i32(padding[0]), i32(padding[1]), i32(t.warps_x), i32(tiles_x), i32(vec), shmem=shmem, name="dw_tile",
           device_index=dev)


def run_planes(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
               padding: list[int], t: DwPlanes) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    kern = _kernel(SRC, planes_name(dtype, k, s, t.ry), dev)
    shmem = t.smem(OW, k, s)
    bands = cdiv(cdiv(OH, t.ry), t.strips)
    sw = t.width(OW)  # output columns a segment
    segs = cdiv(OW, sw)
    NC = N * C
    i32 = np.int32
    launch(kern, cdiv(NC, t.planes) * bands * segs, PLANES_THREADS, x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(NC), i32(C), i32(H), i32(W), i32(OH), i32(OW), i32(padding[0]),
           i32(padding[1]), i32(t.planes), i32(t.strips), i32(bands), i32(t.rows(k, s)), i32((sw - 1) * s + k),
           i32(planes_pitch(sw, k, s)), i32(sw), i32(segs), shmem=shmem, name="dw_planes", device_index=dev)


def regs_fit(x: torch.Tensor, ks: Optional[tuple[int, int]]) -> bool:
    """Whether the register rung runs this channels_last input: a compiled window, C a multiple of 4 and every
    4-channel vector on its own 8 (16-bit) or 16 (fp32) bytes."""
    if ks not in REGS_KS:
        return False
    N, C, H, W = x.shape
    sn, sc, sh, sw = x.stride()
    align = 4 * x.element_size()
    return sc == 1 and C % 4 == 0 and sn % 4 == 0 and sh % 4 == 0 and sw % 4 == 0 and x.data_ptr() % align == 0


def run_regs(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
             padding: list[int], t: DwRegs) -> bool:
    """The channels_last register kernels on x (regs_fit); False (nothing launched) past int32 threads."""
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    cv, tiles_x, tiles_y = C // 4, cdiv(OW, t.rx), cdiv(OH, t.ry)
    chunks = cdiv(tiles_y, t.chunk)
    total = N * chunks * tiles_x * cv
    if total >= 2 ** 31:
        return False
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    if b is not None and b.data_ptr() % 16:  # the kernels read a vector's 4 biases as one float4
        b = b.clone()
    kern = _kernel(REGS_SRC, regs_name(dtype, k, s, t.rx, t.ry), dev)
    sn, _, sh, sw = x.stride()
    i32 = np.int32
    launch(kern, cdiv(total, REGS_THREADS), REGS_THREADS, x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sh, sw, i32(padding[0]),
           i32(padding[1]), i32(cv), i32(tiles_x), i32(tiles_y), i32(chunks), i32(t.chunk), i32(total),
           name="dw_registers", device_index=dev)
    return True


def run_columns(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor,
                 ks: tuple[int, int], padding: list[int], t: DwColumns) -> bool:
    """The planar register kernels on a contiguous NCHW x; False (nothing launched) past int32 threads."""
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    strips = cdiv(OH, t.ry)
    total = N * C * strips * OW
    if total >= 2 ** 31:
        return False
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    kern = _kernel(REGS_SRC, columns_name(dtype, k, s, t.ry), dev)
    i32 = np.int32
    launch(kern, cdiv(total, REGS_THREADS), REGS_THREADS, x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(C), i32(H), i32(W), i32(OH), i32(OW), i32(padding[0]),
           i32(padding[1]), i32(strips), i32(total), name="dw_columns", device_index=dev)
    return True


def run_direct(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, kernel: tuple[int, int],
               stride: list[int], padding: list[int], dilation: list[int], cl: bool) -> None:
    """The direct kernels: any window, stride, padding and dilation; channels_last by 16-byte channel vectors
    where C and the base allow, else one channel a thread."""
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    KH, KW = kernel
    dev, dtype = x.get_device(), x.dtype
    ve = 16 // x.element_size() if cl and C % (16 // x.element_size()) == 0 and x.data_ptr() % 16 == 0 else 1
    kern = _kernel(SRC, _direct_name(dtype, ve, cl), dev)
    wc, wt = (1, C) if cl else (KH * KW, 1)
    sn, sc, sh, sw = x.stride()
    total = N * OH * OW * (C // ve)
    grid = max(1, min(cdiv(total, 256), sm_count(dev) * 16))
    i32 = np.int32
    launch(kern, grid, 256, x.data_ptr(), out.data_ptr(), w.data_ptr(), 0 if b is None else b.data_ptr(),
           i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sc, sh, sw, i32(wc), i32(wt), i32(KH), i32(KW),
           i32(stride[0]), i32(stride[1]), i32(padding[0]), i32(padding[1]), i32(dilation[0]), i32(dilation[1]),
           name="dw_direct", device_index=dev)
