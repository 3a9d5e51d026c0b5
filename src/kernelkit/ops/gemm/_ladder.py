"""The matmul ladder: every rung's record, the tensor-core rungs' kernels, SASS claims and tiles, and the
launch rule of every rung (``resolve``). The SIMT rungs' kernels and tiles are in _simt.py; the tile record
``MatmulTile`` (the ``config=`` surface for tuners and tests) is in _tile.py.

A launch rule is a short function of the problem (M, N, batch, the operands' layouts) and the device
(SM count, shared memory per SM and per block): the largest block tile that still gives every SM a
tile, and as many cp.async stages as the shared memory holds. Of the SIMT and tensor-core rules only this
module asks the device (the Hopper rungs' own rules are in _hopper.py), so that tests stand in for it by
patching its ``sm_count``, ``compute_capability`` and ``smem_limits``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import torch

from ...ladder import Kernel, Variant
from .._shared.launch_rules import cdiv, compute_capability, sm_count
from ._hopper import BEST_RUNGS, RUNGS as HOPPER_RUNGS, TECHNIQUE as HOPPER_TECHNIQUE, hopper_kernels
from ._simt import (SIMPLE, SIMT_ASYNC, SIMT_LARGE, SIMT_SMALL, SIMT_WARP_TILE, async_check, async_kernel,
                    fixed_kernels, fixed_launch, tiled_kernels, warp_kernel)
from ._tile import LAYOUTS, MatmulTile

WMMA, MMA, PIPE, DMMA = "gemm/wmma.cu", "gemm/mma.cu", "gemm/mma_pipe.cu", "gemm/dmma.cu"
CUTE = "gemm/mma_cute.cu"
F32, F16, BF16, I8, F64 = torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.float64
TENSOR = (F16, BF16, F32, I8, F64)  # float32 on tensor cores: tf32, with allow_tf32=True
WMMA_T = {F16: "kk::WmmaF16", BF16: "kk::WmmaBF16", F32: "kk::WmmaTF32", I8: "kk::WmmaS8", F64: "kk::WmmaF64"}
MMA_T = {F16: "kk::MmaF16", BF16: "kk::MmaBF16", F32: "kk::MmaTF32", I8: "kk::MmaS8"}
CUTE_T = {F16: "kk::CuteF16", BF16: "kk::CuteBF16"}
TC_SASS = {F16: "HMMA", BF16: "HMMA", F32: "HMMA", I8: "IMMA", F64: "DMMA"}
STAGES = 4  # cp.async stages of the general mma kernel: 3 in flight while one is computed
PIPE_KB = 128  # bytes of K a stage of the cp.async-only mma kernel
MAX_STAGES = 4  # 3 stages in flight cover an L2 round trip at the H100's rate (docs/design/matmul.md)
GRID_Z = 65535  # the grid's z extent: batch entries beyond it are looped inside the kernel

MMA_LARGE, MMA_SMALL = MatmulTile(128, 128, 64, 32), MatmulTile(64, 64, 32, 32)
# the copy-only kernel's tiles, largest first: 64x64 warp tiles (128 accumulators a lane) halve the
# shared-memory bytes an mma against 64x32 ones; 8 warps an SM (one 128x256 block or two 128x128)
PIPE_TILES = (MatmulTile(128, 256, 64, 64), MatmulTile(128, 128, 64, 64), MatmulTile(64, 64, 32, 32))
# fp64: 32x32 warp tiles (64 fp64 accumulators a lane): ptxas keeps the DMMA fragments in aligned
# register groups, 200-226 registers here, and spilled at 64x32 warps (32-40 bytes)
DMMA_TILE = MatmulTile(64, 64, 32, 32)


@functools.cache
def smem_limits(dev: Optional[int]) -> tuple[int, int]:
    """(shared memory an SM, the most a block may opt in to), bytes; dev None: an H100's (sm_90)."""
    if dev is None:
        return 233472, 232448
    props = torch.cuda.get_device_properties(dev)
    per_sm = getattr(props, "shared_memory_per_multiprocessor", 0) or 167936
    return per_sm, getattr(props, "shared_memory_per_block_optin", 0) or 48 * 1024


def pipe_stages(t: MatmulTile, dev: Optional[int]) -> int:
    """Stages of the copy-only kernel: as many as fit (up to MAX_STAGES) with the blocks of 8 warps an SM
    (one of 8 warps, two of 4) sharing the SM's shared memory; at least 2."""
    if t.stages:
        return t.stages
    per_sm, per_block = smem_limits(dev)
    blocks = max(1, 8 // (t.threads // 32))
    budget = min(per_block, per_sm // blocks - 1024)
    return max(2, min(MAX_STAGES, budget // ((t.block_m + t.block_n) * PIPE_KB)))


def pipe_shmem(t: MatmulTile, stages: int, acc_bytes: int = 4) -> int:
    """The stages, or the epilogue's tile of accumulators (rows of block_n + 8) if larger."""
    return max(stages * (t.block_m + t.block_n) * PIPE_KB, t.block_m * (t.block_n + 8) * acc_bytes)


def dmma_kernel(a_k: bool, b_k: bool, dev: Optional[int] = None) -> Kernel:
    t = DMMA_TILE
    stages = pipe_stages(t, dev)
    return Kernel(DMMA, f"kk::mm_dmma_pipe<{t.block_m}, {t.block_n}, {t.warp_m}, {t.warp_n}, {stages}, "
                  f"{'true' if a_k else 'false'}, {'true' if b_k else 'false'}>", tensor_core="DMMA",
                  block=t.threads, sass=("LDGSTS",), store_bits=128, dyn_shared=pipe_shmem(t, stages, 8), min_sm=90)


def pipe_check(t: MatmulTile, dtype: torch.dtype, a_k: bool, b_k: bool, op: str) -> None:
    """ValueError where the copy-only kernel cannot run tile t: every thread's copies one chunk column,
    rows a multiple of 8 apart (one swizzle), whole 16-byte epilogue chunks a thread."""
    th, size = t.threads, dtype.itemsize
    bad = th % 64 or (t.block_m * t.block_n // 8) % th
    for r, kmaj in ((t.block_m, a_k), (t.block_n, b_k)):
        # [r][k]: 8 chunks a row; [k][r]: r * size / 16 chunks a row, its swizzle repeating every 8 rows
        # (16-bit) or 4 (tf32)
        chunks, rows, period = (8, r, 8) if kmaj else (r * size // 16, PIPE_KB // size, 8 if size == 2 else 4)
        bad = (bad or chunks < 8 or chunks & (chunks - 1) or th % chunks or (th // chunks) % period
               or (rows * chunks) % th or rows * chunks // th > 32)
    if bad:
        raise ValueError(f"{op}: config {t} cannot run the copy-only mma kernel: threads a multiple of 64, "
                         "m-/n-major sides at most the threads (16-bit) or twice them (tf32), 16-byte epilogue "
                         "chunks a thread")


def pipe_layouts(dtype: torch.dtype) -> tuple[tuple[bool, bool], ...]:
    """(A k-major, B k-major) the copy-only kernel takes: every layout of 16-bit operands (ldmatrix.trans
    for m-/n-major ones), tf32 with A k-major (an n-major B read element-wise), int8 both k-major."""
    return LAYOUTS if dtype.itemsize == 2 else ((True, True), (True, False)) if dtype == F32 else ((True, True),)


def pipe_kernel(dtype: torch.dtype, t: MatmulTile, a_k: bool, b_k: bool, dev: Optional[int] = None) -> Kernel:
    stages = pipe_stages(t, dev)
    lay = f"{'true' if a_k else 'false'}, {'true' if b_k else 'false'}"
    return Kernel(PIPE, f"kk::mm_mma_pipe<{MMA_T[dtype]}, {t.block_m}, {t.block_n}, {t.warp_m}, {t.warp_n}, "
                  f"{stages}, {lay}>", tensor_core=TC_SASS[dtype], block=t.threads, sass=("LDSM", "LDGSTS"),
                  store_bits=128, dyn_shared=pipe_shmem(t, stages))


def mma_kernel(dtype: torch.dtype, t: MatmulTile, a_k: bool, b_k: bool) -> Kernel:
    if dtype.itemsize != 2:  # tf32 and int8 stage k-major whatever the layout: one instantiation
        a_k = b_k = True
    lay = f"{'true' if a_k else 'false'}, {'true' if b_k else 'false'}"
    return Kernel(MMA, f"kk::mm_mma<{MMA_T[dtype]}, {t.block_m}, {t.block_n}, {t.warp_m}, {t.warp_n}, {STAGES}, {lay}>",
                  tensor_core=TC_SASS[dtype], block=t.threads, sass=("LDSM", "LDGSTS"),
                  dyn_shared=mma_shmem(t))


def mma_shmem(t: MatmulTile) -> int:
    return STAGES * (t.block_m + t.block_n) * 64


def cute_kernel(dtype: torch.dtype, a_k: bool, b_k: bool) -> Kernel:
    """The CuTe rung's kernel for the operands' layouts: mm_mma's large tile and pipeline (MMA_LARGE, STAGES)."""
    return Kernel(CUTE, f"kk::mm_cute<{CUTE_T[dtype]}, {'true' if a_k else 'false'}, {'true' if b_k else 'false'}>",
                  tensor_core="HMMA", block=MMA_LARGE.threads, sass=("LDSM", "LDGSTS"), dyn_shared=mma_shmem(MMA_LARGE))


def wmma_smem_tile(dtype: torch.dtype) -> MatmulTile:
    return MatmulTile(64, 64, 32, 32) if dtype == F64 else MatmulTile(128, 128, 64, 32)


def wmma_global_kernel(dtype: torch.dtype, b_k: bool) -> Kernel:
    return Kernel(WMMA, f"kk::mm_wmma_global<{WMMA_T[dtype]}, {'true' if b_k else 'false'}>",
                  tensor_core=TC_SASS[dtype], block=128)


def wmma_smem_kernel(dtype: torch.dtype) -> Kernel:
    t = wmma_smem_tile(dtype)
    return Kernel(WMMA, f"kk::mm_wmma_smem<{WMMA_T[dtype]}, {t.block_m}, {t.block_n}, {t.warp_m}, {t.warp_n}, "
                  f"{t.threads}>", tensor_core=TC_SASS[dtype], block=t.threads)


def _rung_kernels(rung: str, dtype: torch.dtype, allow_tf32: bool = False) -> tuple[Kernel, ...]:
    """Every kernel ``rung`` can launch for ``dtype``. float32 on the tensor-core rungs is tf32 (run only
    with allow_tf32=True); on ``best`` it is SIMT unless allow_tf32 is set."""
    if rung in HOPPER_RUNGS:  # its sm_90a kernels, and the mma kernels of the shapes the TMA cannot take
        return hopper_kernels(rung, dtype) + _rung_kernels("mma", dtype)
    if rung == "best" and dtype in (F16, BF16):  # sm_90: the TMA rung; elsewhere and where it cannot read: mma
        return tuple(k for r in BEST_RUNGS for k in hopper_kernels(r, dtype)) + _rung_kernels("mma", dtype)
    tc = dtype != F32 or allow_tf32 or rung in ("wmma_global", "wmma_smem", "mma")
    if rung in ("simt_async", "simt_best", "warp_tile") or (rung == "best" and not tc):
        return tiled_kernels("simt_best" if rung == "best" else rung, smem_limits(None)) if dtype == F32 else ()
    if not tc:
        return ()
    if rung == "cute":
        return tuple(cute_kernel(dtype, a, b) for a, b in LAYOUTS) if dtype in CUTE_T else ()
    if rung == "wmma_global":
        return tuple(wmma_global_kernel(dtype, b) for b in (True, False))
    if rung in ("dmma", "best") and dtype == F64:
        return tuple(dmma_kernel(a, b) for a, b in LAYOUTS) + (wmma_smem_kernel(dtype),)
    if rung == "wmma_smem":
        return (wmma_smem_kernel(dtype),)
    if rung in ("mma", "best") and dtype in MMA_T:
        lays = LAYOUTS if dtype.itemsize == 2 else ((True, True),)
        return (tuple(pipe_kernel(dtype, t, a, b) for t in PIPE_TILES for a, b in pipe_layouts(dtype))
                + tuple(mma_kernel(dtype, t, a, b) for t in (MMA_LARGE, MMA_SMALL) for a, b in lays))
    return ()



def _variant(name, technique, dtypes, default=False):
    if name in SIMPLE:
        kernels = fixed_kernels(name)
    else:
        kernels = lambda dtype, allow_tf32=False, _n=name, **_: _rung_kernels(_n, dtype, allow_tf32)  # noqa: E731
    return Variant(name=name, technique=technique, dtypes=dtypes, kernels=kernels, default=default)


LADDER = (
    _variant("naive", "one output per thread, operands read from global memory (2 loads a FMA)", (F32, F64)),
    _variant("smem_tiles", "32x32 output tile a block; 32x32 tiles of A and B staged in shared memory, each "
             "element loaded once per tile (2 shared loads a FMA)", (F32, F64)),
    _variant("column", "64x64 block tile, 8 outputs a thread down a column: one B value feeds 8 FMAs", (F32,)),
    _variant("reg_8x8", "128x128 block tile, an 8x8 register tile a thread, interleaved (rows i*16 + ty): "
             "each k an outer product of 8 A and 8 B values, 16-byte global loads", (F32,)),
    _variant("lds128", "A stored transposed in shared memory, the thread tile as 2x2 blocks of 4x4: four "
             "LDS.128 feed 64 FMAs", (F32,)),
    _variant("double_buffer", "the next K tile fetched into registers during this one's FMAs, two shared "
             "buffers, one barrier a K tile", (F32,)),
    _variant("warp_tile", "warp tiles (64x32 a warp, lanes 8x4): a warp's shared loads one wavefront for A "
             "and one for B; BK = 16, double-buffered", (F32,)),
    _variant("simt_async", "warp tiles fed by cp.async alone (no register staging): each operand kept in "
             "shared memory in its own layout ([m][k] rows of BK + 4 for k-major, [k][m] else), read by LDS.128 "
             "either way; 128x256 block tiles of 8 warps of 64x64, 8x16 outputs a lane (6 LDS.128 feed 128 FFMA), "
             "4 stages of BK = 16, one barrier a K tile", (F32,)),
    _variant("simt_best", "simt_async's kernel where its 128x256 tiles give every SM one, a k-major A fetched "
             "into registers and stored transposed ([k][m]: its fragments then avoid the register-bank "
             "conflicts of [m][k] ones), B by cp.async; otherwise (and with both operands k-major) the "
             "warp-tiled kernel at 128x128 (registers capped at 128 for two blocks an SM on sm_90) or 64x64, "
             "interior tiles loaded without a check a chunk, 16-byte stores", (F32,)),
    _variant("wmma_global", "tensor cores through WMMA: one warp a 16x16 output fragment (8x8 fp64), "
             "operands loaded straight from global memory (staged through shared memory at the edges); "
             "fp16, bf16, tf32, int8, fp64. Sub-byte s4/b1: no rung, torch has no 4- or 1-bit dtype; NVRTC "
             "takes both, sm_80 runs s4 as IMMA.16864.S4, sm_90 emulates it with 8-bit IMMAs and about a "
             "hundred instructions a step, b1 is BMMA on both (csrc/gemm/probes.cu)", TENSOR),
    _variant("wmma_smem", "WMMA on 128x128 block tiles (64x64 fp64) staged in shared memory in 64-byte K "
             "slabs, 4x2 fragments a warp, the next slab fetched during the MMAs", TENSOR),
    _variant("mma", "mma.sync with ldmatrix from XOR-swizzled shared memory (ldmatrix.trans for m/n-major "
             "16-bit operands) fed by cp.async alone: 128-byte K stages, as many as shared memory holds (4 on "
             "an H100), 64x64 warp tiles, the epilogue through shared memory in 16-byte stores; operands no "
             "copy can read as they lie (misaligned, tf32/int8 m-/n-major) take the element-wise loads of a "
             "64x32-warp kernel", (F16, BF16, F32, I8)),
    _variant("dmma", "fp64 on mma.sync m16n8k16 (DMMA.16x8x16, sm_90: twice the rate of the m8n8k4 that WMMA "
             "compiles to) fed by cp.async, 128-byte K stages, 32x32 warp tiles, the epilogue through shared "
             "memory; operands no copy can read, and GPUs before sm_90, take wmma_smem's kernel", (F64,)),
    *(_variant(r, HOPPER_TECHNIQUE[r], (F16, BF16)) for r in HOPPER_RUNGS),
    _variant("cute", "the mma rung's plan at its 128x128 tile written with CuTe (needs kernelkit[cute]): a "
             "TiledMMA of SM80 m16n8k16 atoms (8 warps, 64x32 each), ldmatrix TiledCopies (LDSM_N, LDSM_T for "
             "m/n-major) from Swizzle<2,3,3> / <3,3,3> shared layouts, a 4-stage cp.async TiledCopy", (F16, BF16)),
    _variant("best", "the fastest rung for the dtype: simt_best for fp32; for fp16 and bf16 on sm_90 persistent, "
             "or tma_wgmma where K is split or linear fuses an epilogue (mma where the TMA cannot read the operands, and on other GPUs); mma for int8 and tf32; dmma for "
             "fp64", (F32, F16, BF16, I8, F64), default=True),
)


def with_epilogue(name: str, epi: int) -> str:
    """A kernel's name with linear's fused epilogue (mm::Epilogue) as its last template argument; 0 (matmul's
    epilogue, the kernels' default) leaves the name as it is."""
    return f"{name[:-1]}, {epi}>" if epi else name


@dataclass(frozen=True)
class Launch:
    """A resolved launch: the kernel record, grid, block threads and dynamic shared memory."""

    kernel: Kernel
    grid: tuple[int, int, int]
    threads: int
    shmem: int


def _pick(t_large: MatmulTile, t_small: MatmulTile, m: int, n: int, batch: int, dev: int) -> MatmulTile:
    """The larger tile where its tiles cover every SM at least once, else the smaller one."""
    tiles = cdiv(m, t_large.block_m) * cdiv(n, t_large.block_n) * batch
    return t_large if tiles >= sm_count(dev) else t_small


def pick_pipe(m: int, n: int, batch: int, dev: int) -> MatmulTile:
    """The first of PIPE_TILES (largest first) whose tiles cover every SM once, else the smallest."""
    for t in PIPE_TILES[:-1]:
        if cdiv(m, t.block_m) * cdiv(n, t.block_n) * batch >= sm_count(dev):
            return t
    return PIPE_TILES[-1]


def resolve(rung: str, dtype: torch.dtype, tf32: bool, a_k: bool, b_k: bool, m: int, n: int, batch: int, dev: int,
            config: Optional[MatmulTile], op: str, cp: bool = False) -> Launch:
    """The launch of ``rung`` for this problem. ``config`` replaces the rule's tile where the rung has one.
    ``cp``: both operands may be read by 16-byte copies (aligned base, whole-vector leading dimension and
    batch stride): the mma rung then runs its copy-only kernel where it takes the layouts (pipe_layouts)."""
    z = min(batch, GRID_Z)
    tc = dtype != F32 or tf32
    if rung == "best":
        rung = "simt_best" if not tc else ("dmma" if dtype == F64 else "mma")
    if config is not None and rung not in ("simt_best", "simt_async", "warp_tile", "mma"):
        raise ValueError(f"{op}: config= applies to the simt_best, simt_async, warp_tile, mma and best rungs, "
                         f"not {rung!r}")
    # simt_best: the cp.async kernel where its tiles cover every SM, but not with both operands k-major (A
    # staged, B's [n][k] fragments: 41.7 against the warp kernel's 42.6 TFLOP/s at 4096^3 on an H100)
    def fills_every_sm() -> bool:  # asked only for simt_best (no device query for the other rungs)
        return cdiv(m, SIMT_ASYNC.block_m) * cdiv(n, SIMT_ASYNC.block_n) * batch >= sm_count(dev)

    if rung == "simt_async" or (rung == "simt_best" and config is None and not (a_k and b_k) and fills_every_sm()):
        t = config or SIMT_ASYNC
        async_check(t, op)
        k = async_kernel(t, a_k, b_k, smem_limits(dev), stage_a=rung == "simt_best")
        return Launch(k, (cdiv(m, t.block_m), cdiv(n, t.block_n), z), t.threads, k.dyn_shared)
    if rung in SIMPLE:
        k, (tm, tn) = fixed_launch(rung, dtype)
        return Launch(k, (cdiv(m, tm), cdiv(n, tn), z), k.block, 0)
    if rung in ("simt_best", "warp_tile"):
        large = SIMT_LARGE if compute_capability(dev) >= 90 else SIMT_WARP_TILE  # two blocks an SM on sm_90
        t = config or (SIMT_WARP_TILE if rung == "warp_tile" else _pick(large, SIMT_SMALL, m, n, batch, dev))
        t.check(False, op)
        return Launch(warp_kernel(t), (cdiv(m, t.block_m), cdiv(n, t.block_n), z), t.threads, 0)
    if rung == "wmma_global":
        k = wmma_global_kernel(dtype, b_k)
        f = 8 if dtype == F64 else 16
        return Launch(k, (cdiv(m, 2 * f), cdiv(n, 2 * f), z), 128, 0)
    if rung == "dmma" and cp and compute_capability(dev) >= 90:
        t = DMMA_TILE
        k = dmma_kernel(a_k, b_k, dev)
        return Launch(k, (cdiv(m, t.block_m) * cdiv(n, t.block_n), 1, z), t.threads, k.dyn_shared)
    if rung in ("wmma_smem", "dmma"):
        t = wmma_smem_tile(dtype)
        return Launch(wmma_smem_kernel(dtype), (cdiv(m, t.block_m), cdiv(n, t.block_n), z), t.threads, 0)
    if rung == "cute":  # one tile: MMA_LARGE's
        return Launch(cute_kernel(dtype, a_k, b_k), (cdiv(m, MMA_LARGE.block_m) * cdiv(n, MMA_LARGE.block_n), 1, z),
                      MMA_LARGE.threads, mma_shmem(MMA_LARGE))
    if rung == "mma" and cp and (a_k, b_k) in pipe_layouts(dtype):
        t = config or pick_pipe(m, n, batch, dev)
        t.check(True, op)
        pipe_check(t, dtype, a_k, b_k, op)
        k = pipe_kernel(dtype, t, a_k, b_k, dev)
        return Launch(k, (cdiv(m, t.block_m) * cdiv(n, t.block_n), 1, z), t.threads, k.dyn_shared)
    if rung == "mma":
        t = config or _pick(MMA_LARGE, MMA_SMALL, m, n, batch, dev)
        t.check(True, op)
        k = mma_kernel(dtype, t, a_k, b_k)
        return Launch(k, (cdiv(m, t.block_m) * cdiv(n, t.block_n), 1, z), t.threads, mma_shmem(t))
    raise AssertionError(rung)


kernels_for = _rung_kernels
