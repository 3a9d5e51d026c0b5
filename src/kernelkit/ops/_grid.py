"""Rows shared by the whole grid (csrc/norm_grid.cuh): each CTA a column slice of every row, the rows'
statistics meeting in global memory. Host side: the configuration by row length, the exchange buffers of a
stream, and the cooperative launch (every CTA must be resident: they wait for one another)."""
from __future__ import annotations

import numpy as np
import torch

from ..runtime import KernelLaunchError, current_stream
from ..runtime.launch import _raw_stream
from ._common import CXX_TYPE, sm_count
from ._rowwise import allow_shared, per_vec

# (warps a CTA, 16-byte vectors a lane, rows a warp holds, rows between publishing a partial and normalizing)
# by vectors a lane: one CTA an SM, each warp its own rows; the ring holds warps x depth x 32 x vecs x 16 bytes
# (128-192 KB), rows requested depth - lag rows ahead of their statistics
CONFIGS = {2: (16, 2, 8, 4), 4: (16, 4, 6, 3)}
MAX_CTAS = 256       # grid_combine reads 8 slots a lane
MAX_ROWS = 4096      # rows a launch; longer inputs launch once per 4096 rows (the buffers' size)
EMPTY = 0x7FBADBAD7FBADBAD  # kGridEmpty: a NaN pair no arithmetic produces
STATS_STRIDE = 16  # kGridStatsStride


def ctas(dev: int) -> int:
    """The grid: one CTA an SM."""
    return min(sm_count(dev), MAX_CTAS)


def config_for(dtype: torch.dtype, len_: int, ctas_: int):
    """(warps, vecs, depth, lag) for an aligned row of len_ elements over ctas_ CTAs, or None (too long)."""
    need = -(-(len_ // per_vec(dtype)) // ctas_)  # the largest slice, in vectors
    for vecs in sorted(CONFIGS):
        if 32 * vecs >= need:
            return CONFIGS[vecs]
    return None


def kernel_name(dtype: torch.dtype, cfg) -> str:
    return f"kk::norm_grid<{CXX_TYPE[dtype]}, {', '.join(map(str, cfg))}>"


def block(cfg) -> int:
    return cfg[0] * 32


def ring_bytes(cfg) -> int:
    warps, vecs, depth, _lag = cfg
    return warps * depth * 32 * vecs * 16


_buffers: dict[tuple[int, int], tuple] = {}


def buffers(dev: int) -> tuple:
    """((partials, stats, gen), their addresses) for torch's current stream on dev: the slots kGridEmpty, the
    statistics words of the set the next launch uses (gen & 1) kGridEmpty, as every launch leaves them. One
    set a stream, so that launches on two streams never meet in one."""
    key = (dev, _raw_stream(dev))
    got = _buffers.get(key)
    if got is None:
        d = f"cuda:{dev}"
        partials = torch.full((MAX_ROWS * MAX_CTAS,), EMPTY, dtype=torch.int64, device=d)
        stats = torch.full((2, MAX_ROWS, STATS_STRIDE), EMPTY, dtype=torch.int64, device=d)
        gen = torch.zeros(1, dtype=torch.int32, device=d)
        tensors = (partials, stats, gen)
        got = _buffers[key] = (tensors, tuple(t.data_ptr() for t in tensors))
    return got


_configs: dict[tuple, object] = {}


def _cooperative_config(LaunchConfig, grid: int, block: int, shmem: int):
    """A cooperative LaunchConfig: cuda.core 1.x names the option is_cooperative, 0.x cooperative_launch."""
    try:
        return LaunchConfig(grid=grid, block=block, shmem_size=shmem, is_cooperative=True)
    except TypeError:
        return LaunchConfig(grid=grid, block=block, shmem_size=shmem, cooperative_launch=True)


def launch_grid(kernel, cfg, x, out, wp: int, bp: int, rows: int, len_: int, flags, dev: int) -> None:
    """A cooperative launch of norm_grid per MAX_ROWS rows (one CTA an SM, the ring in dynamic shared memory)."""
    from cuda.core import LaunchConfig, launch

    shmem = ring_bytes(cfg)
    allow_shared(kernel, shmem, dev)
    grid = ctas(dev)
    key = (grid, block(cfg), shmem)
    lc = _configs.get(key)
    if lc is None:
        lc = _configs[key] = _cooperative_config(LaunchConfig, grid, block(cfg), shmem)
    _tensors, (pp, sp, gp) = buffers(dev)
    cap = np.int32(MAX_ROWS)
    stream = current_stream(dev)
    step = len_ * x.element_size()
    for r0 in range(0, rows, MAX_ROWS):
        n = min(MAX_ROWS, rows - r0)
        try:
            launch(stream, lc, kernel, x.data_ptr() + r0 * step, out.data_ptr() + r0 * step, wp, bp, n, len_, *flags,
                   pp, sp, gp, cap)
        except Exception as exc:
            raise KernelLaunchError(f"cooperative launch of {grid} CTAs failed: {exc}") from exc
