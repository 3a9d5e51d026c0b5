"""The register strips of the separable filters on uint8 images (csrc/window/sep_strips.cu): which inputs
they take, their launch rules and the weights parameter."""
from __future__ import annotations

import functools
from typing import Optional, Sequence

import numpy as np
import torch

from ...ladder import Kernel
from ...runtime import get_kernel, launch, resident_blocks
from ...runtime.tensor_map import maps_supported
from .._shared.cxx import cxx_bool
from .._shared.launch_rules import cdiv
from .._shared.plans import plan_cache, remember
from ._common import Planes, rows_aligned

SRC_STRIPS = "window/sep_strips.cu"
STRIP_K = (3, 5, 7)  # compiled kernel sizes: a KH x KW filter runs in the smallest K >= both, zero-padded
STRIP_C = (1,)  # planar images (and HWC with one channel); 3 and 4 channels measured slower than the tiles
WARPS = 4  # a block of 128 threads: 4 warps, each on its own strip (fine-grained residency at ~100 registers)
MAX_TASKS = 2 ** 31 - 2 ** 24  # strips are numbered in 32 bits (plus the grid's warps)


def strip_k(kh: int, kw: int) -> Optional[int]:
    return next((k for k in STRIP_K if k >= max(kh, kw)), None)


def lane_bytes(k: int) -> int:
    """Bytes a lane a row: 16 (one vector) up to 5 taps; 8 at 7 taps, whose ring of 7 rows of vertical sums
    would not fit 16 floats a row in registers."""
    return 16 if k <= 5 else 8


MIN_BLOCKS = 4  # the launch bound's blocks of 128 threads an SM: a cap of 128 registers a thread


def halo_lanes(k: int, c: int) -> int:
    return cdiv((k // 2) * c, lane_bytes(k))


def strip_width(k: int, c: int) -> int:
    """Output elements a strip: the lanes between the halo lanes, a lane's bytes each."""
    return (32 - 2 * halo_lanes(k, c)) * lane_bytes(k)


def strips_name(k: int, c: int, bounded: bool) -> str:
    """The kernel of K taps and C channels, its rows loaded K - 1 ahead (the most its ring of K raw rows holds)."""
    return f"kk::sep_strips<{k}, {c}, {lane_bytes(k)}, {k - 1}, {MIN_BLOCKS}, {cxx_bool(bounded)}>"


def strips_kernels(dtype: torch.dtype) -> tuple[Kernel, ...]:
    if dtype != torch.uint8:
        return ()
    return tuple(Kernel(SRC_STRIPS, strips_name(k, c, b), load_bits=8 * lane_bytes(k), store_bits=8 * lane_bytes(k),
                        block=32 * WARPS, sass=("SHFL.UP", "SHFL.DOWN"))
                 for k in STRIP_K for c in STRIP_C for b in (True, False))


def strips_take(p: Planes, kh: int, kw: int) -> bool:
    """Whether the strips run this input: uint8, one channel, kernels up to 7 x 7, every input row
    16-byte aligned and the (contiguous) output's rows too (WC a multiple of 16), and a launch path that
    passes the 128-byte weights parameter (the C launch shim)."""
    return (p.x.dtype == torch.uint8 and p.C in STRIP_C and strip_k(kh, kw) is not None and p.WC % 16 == 0
            and rows_aligned(p) and maps_supported() and p.planes * p.H * cdiv(p.WC, 128) < MAX_TASKS)


def strip_height(tasks_per_row: int, H: int, k: int, warps: int) -> int:
    """Output rows a strip: enough strips for two a resident warp (the last round's imbalance at most half a
    strip a warp), but at least 2 (K - 1) rows, so that the K - 1 extra input rows a strip reads cost at most
    half its own."""
    rows = cdiv(tasks_per_row * H, 2 * warps)
    return max(1, min(H, max(2 * (k - 1), rows)))


@functools.lru_cache(maxsize=256)
def taps_param(k: int, wx: tuple[float, ...], wy: tuple[float, ...]) -> bytes:
    """The kernel's SepTaps: 16 horizontal weights (wx centred in the first k) then 16 vertical (wy centred
    in the first k), float32."""
    t = np.zeros(32, dtype=np.float32)
    lx, ly = (k - len(wx)) // 2, (k - len(wy)) // 2
    t[lx:lx + len(wx)] = wx
    t[16 + ly:16 + ly + len(wy)] = wy
    return t.tobytes()


_plans = plan_cache()


def strips_plan(dev: int, k: int, c: int, bounded: bool) -> tuple:
    """(kernel, name, warps resident on the device at once), built once per key."""
    key = (dev, k, c, bounded)
    plan = _plans.get(key)
    if plan is None:
        name = strips_name(k, c, bounded)
        kernel = get_kernel(SRC_STRIPS, name, device_index=dev)
        plan = (kernel, name, resident_blocks(kernel, 32 * WARPS, 1, dev) * WARPS)
        remember(_plans, key, plan)
    return plan


def strips_fill(p: Planes, kh: int, kw: int, bounded: bool, dev: int) -> bool:
    """Whether the image has a strip for every resident warp at the least strip height: a warp walks its
    rows one after another, so fewer strips leave the device idle (a 1920x1080 plane, 540 strips of 8
    rows for 2112 warps on an H100, ran at 32% of the copy rate against the tiles' 39%)."""
    k = strip_k(kh, kw)
    warps = strips_plan(dev, k, p.C, bounded)[2]
    return p.planes * cdiv(p.WC, strip_width(k, p.C)) * cdiv(p.H, 2 * (k - 1)) >= warps


def run_strips(p: Planes, out: torch.Tensor, wx: Sequence[float], wy: Sequence[float], mode: int,
               bounded: bool) -> None:
    """out <- the separable filter (wy down, wx across) of p on the register strips (strips_take(p) holds)."""
    dev = out.get_device()
    k = strip_k(len(wy), len(wx))
    kernel, name, warps = strips_plan(dev, k, p.C, bounded)
    nsx = cdiv(p.WC, strip_width(k, p.C))
    sh = strip_height(nsx * p.planes, p.H, k, warps)
    nsy = cdiv(p.H, sh)
    tasks = nsx * nsy * p.planes  # below MAX_TASKS: strips are at least 128 elements wide (strips_take)
    i32 = np.int32
    launch(kernel, min(cdiv(tasks, WARPS), warps // WARPS), 32 * WARPS, p.x.data_ptr(), out.data_ptr(),
           taps_param(k, tuple(wx), tuple(wy)), i32(p.planes), i32(p.H), i32(p.WC), p.plane, p.row, i32(mode),
           i32(sh), i32(nsx), i32(nsy), name=name, device_index=dev)
