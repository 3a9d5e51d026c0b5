"""The SIMT rungs of the matmul ladder (exact fp32 FMAs; naive and smem_tiles also fp64): their kernels,
block tiles and SASS claims, and the cp.async kernel's stage sizing and tile check.

The fixed rungs (naive to double_buffer) launch one kernel at one block tile each (``SIMPLE``, from
csrc/gemm/simt.cu); warp_tile, simt_async and simt_best take a ``MatmulTile``, the last two the cp.async
kernel of csrc/gemm/simt_async.cu. Which kernel a call launches is ``_ladder.resolve``'s rule, which asks
the device (SM count, compute capability, shared memory) and passes what it learns to these functions.
"""
from __future__ import annotations

import torch

from ...ladder import Kernel
from ._tile import LAYOUTS, MatmulTile

SIMT, ASYNC = "gemm/simt.cu", "gemm/simt_async.cu"
_CXX = {torch.float32: "float", torch.float64: "double"}

SIMPLE = {  # rung -> (kernel name, block threads, block tile (M, N))
    "naive": ("kk::mm_naive<T>", 256, (8, 32)),
    "smem_tiles": ("kk::mm_smem<T>", 1024, (32, 32)),
    "column": ("kk::mm_column<T>", 512, (64, 64)),
    "reg_8x8": ("kk::mm_reg8x8<T>", 256, (128, 128)),
    "lds128": ("kk::mm_lds128<false>", 256, (128, 128)),
    "double_buffer": ("kk::mm_lds128<true>", 256, (128, 128)),
}
_SIMPLE_SASS = {"reg_8x8": (("FFMA",), 128), "lds128": (("FFMA", "LDS.128"), 128),
                "double_buffer": (("FFMA", "LDS.128"), 128)}


def fixed_kernels(rung: str):
    """The ``kernels`` function of a fixed rung's Variant: its one kernel for the dtype, with the SASS it
    claims (DFMA for fp64)."""
    kname, block, _ = SIMPLE[rung]
    sass, bits = _SIMPLE_SASS.get(rung, (("FFMA",), None))

    def kernels(dtype, allow_tf32=False, **_):
        cxx = kname.replace("<T>", f"<{_CXX[dtype]}>")
        return (Kernel(SIMT, cxx, load_bits=bits, block=block, sass=("DFMA",) if dtype == torch.float64 else sass),)
    return kernels


def fixed_launch(rung: str, dtype: torch.dtype) -> tuple[Kernel, tuple[int, int]]:
    """A fixed rung's kernel for the dtype and its block tile (M, N)."""
    kname, block, tile = SIMPLE[rung]
    return Kernel(SIMT, kname.replace("<T>", f"<{_CXX[dtype]}>"), block=block), tile


SIMT_LARGE, SIMT_SMALL = MatmulTile(128, 128, 64, 32, min_blocks=2), MatmulTile(64, 64, 32, 32)
SIMT_WARP_TILE = MatmulTile(128, 128, 64, 32, min_blocks=1)  # the warp_tile rung: registers uncapped


def warp_kernel(t: MatmulTile) -> Kernel:
    """The SIMT warp-tile kernel; capped for two blocks an SM (128 registers) it is spill-free on sm_90 only
    (sm_80's ptxas spills 264 bytes at 128x128), so that form is an sm_90 kernel."""
    minb = t.min_blocks or 1
    return Kernel(SIMT, f"kk::mm_warp<{t.block_m}, {t.block_n}, 16, {t.warp_m}, {t.warp_n}, {t.threads}, {minb}>",
                  load_bits=128, block=t.threads, sass=("FFMA", "LDS.128"), min_sm=90 if minb > 1 else 0)


# the cp.async-fed SIMT kernel (mm_async): 8 warps of 64x64, 8x16 outputs a lane (up to 255 registers,
# one block an SM), K tiles of 16 in up to 4 stages
SIMT_ASYNC, ASYNC_BK, ASYNC_MAX_STAGES = MatmulTile(128, 256, 64, 64), 16, 4


def async_check(t: MatmulTile, op: str) -> None:
    """ValueError where mm_async cannot run tile t: whole 4x4 blocks of a lane's 8 x 4-lane tile, and
    each operand's 16-byte chunks of a stage a whole number a thread, in whole chunk columns."""
    t.check(False, op)
    th = t.threads
    if t.warp_m % 32 or t.warp_n % 16 or any(th % (r // 4) or (ASYNC_BK * r // 4) % th for r in (t.block_m, t.block_n)):
        raise ValueError(f"{op}: config {t} cannot run on simt_async: warp_m a multiple of 32, warp_n of 16, "
                         "the threads a multiple of a quarter of each block side")


def async_stage_bytes(t: MatmulTile, a_k: bool, b_k: bool, stage_a: bool = False) -> int:
    """One stage of mm_async: a k-major operand copied as it lies, rows of BK + 4 floats; an m-/n-major one
    (and a k-major A staged through registers) as BK rows of block_m (+ 4 where staged)."""
    side = lambda r, kmaj: r * (ASYNC_BK + 4) if kmaj else ASYNC_BK * r  # noqa: E731
    a = ASYNC_BK * (t.block_m + 4) if stage_a else side(t.block_m, a_k)
    return 4 * (a + side(t.block_n, b_k))


def async_kernel(t: MatmulTile, a_k: bool, b_k: bool, smem: tuple[int, int], stage_a: bool = False) -> Kernel:
    """mm_async for one layout pair on a device of ``smem`` = (shared memory an SM, the most a block may opt
    in to): as many stages as a block may opt in to (up to 4, at least 2), with the blocks an SM its
    registers allow (255 registers: 8 warps an SM). ``stage_a`` (k-major A): A through registers, stored
    transposed (simt_best's form)."""
    stage_a = stage_a and a_k
    per_sm, per_block = smem
    minb = max(1, 8 // (t.threads // 32))
    budget = min(per_block, per_sm // minb - 1024)
    stage = async_stage_bytes(t, a_k, b_k, stage_a)
    stages = t.stages or max(2, min(ASYNC_MAX_STAGES, budget // stage))
    cb = lambda x: "true" if x else "false"  # noqa: E731
    return Kernel(ASYNC, f"kk::mm_async<{t.block_m}, {t.block_n}, {ASYNC_BK}, {t.warp_m}, {t.warp_n}, {stages}, "
                  f"{cb(a_k)}, {cb(b_k)}, {minb}, {cb(stage_a)}>", block=t.threads,
                  sass=("FFMA", "LDS.128", "LDGSTS"), store_bits=128, dyn_shared=stages * stage)


def tiled_kernels(rung: str, smem: tuple[int, int]) -> tuple[Kernel, ...]:
    """Every fp32 kernel rung warp_tile, simt_async or simt_best can launch without a config, stages sized
    for ``smem`` (as async_kernel): simt_best's cp.async kernels (A staged, not both operands k-major) and
    its warp kernels at each tile its rule picks."""
    if rung == "warp_tile":
        return (warp_kernel(SIMT_WARP_TILE),)
    if rung == "simt_async":
        return tuple(async_kernel(SIMT_ASYNC, a, b, smem) for a, b in LAYOUTS)
    return (tuple(async_kernel(SIMT_ASYNC, a, b, smem, stage_a=True) for a, b in LAYOUTS if not (a and b))
            + tuple(warp_kernel(t) for t in (SIMT_LARGE, SIMT_WARP_TILE, SIMT_SMALL)))
