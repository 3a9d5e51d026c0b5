"""The Hopper rungs of scaled_matmul (csrc/gemm/wgmma_fp8.cu, sm_90a): ``tma_wgmma`` and ``ws`` in fp8.

Both operands are read K-major (A row-major, B column-major, as torch._scaled_mm takes them) by the
TMA through tensor maps of bytes with the 128-byte swizzle: a K tile of 128 fp8 elements is one
swizzle line. wgmma m64nNk32 multiplies them into fp32 accumulators, two consumer warpgroups of 64
rows a block. ``Fp8Tile`` is the ``config=`` surface; ``tile_for`` the launch rule:
- promoted accumulation (``use_fast_accum=False``, torch's default) keeps a stage's partial sum and the
  running fp32 sum, BN/2 registers each a thread: BN = 192 (two sets of 96; two of 128 at BN = 256
  would pass the 232 registers a consumer thread has);
  The wider the MMA, the fewer shared-memory bytes a MAC: (64 + BN) / BN * 64 bytes a cycle at the
  SM's 4096 fp8 MACs a cycle, 96 at BN = 128, 85 at 192, 80 at 256, of the 128 shared memory gives;
- fast accumulation: BN = 256;
- either falls back to BN = 128 where its waves of tiles cost less (``wave_cost``: 2048^3 promoted,
  176 tiles of 192 on 132 SMs leave the second wave a third full);
- stages: as many as the opt-in shared memory holds, at most 8 (the same bytes a stage as the 16-bit
  rungs: 4 at BN = 256, 7 at BN = 128).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ...ladder import Kernel
from ...runtime import allow_shared, get_kernel, launch
from ...runtime.tensor_map import TensorMapError, encode_tiled, maps_supported
from .._shared.launch_rules import cdiv, compute_capability, sm_count
from .._shared.plans import plan_cache, remember
# the 16-bit rungs' launch limits, and their stage rule: a stage's rows are 128-byte lines in both
from ._hopper import ALIGN_SLACK, MAX_STAGES, SM90_SHARED, STATIC_SHARED, THREADS, shared_limit, stages_for

SRC = "gemm/wgmma_fp8.cu"
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FP8 = (E4M3, E5M2)
FMT = {E4M3: 0, E5M2: 1}  # hop::kE4M3, hop::kE5M2
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
OUT_DTYPES = (BF16, F16, F32)
CXX = {BF16: "__nv_bfloat16", F16: "__half", F32: "float"}
RUNGS = ("tma_wgmma", "ws")
BM, BK = 128, 128  # rows of C a block; K elements (bytes) a stage: one 128-byte swizzle line
WIDTHS = (128, 192, 256)
PROMOTED_MAX = 192  # two sets of BN / 2 fp32 registers within a consumer's 232
MAX_DIM = 2**31 - 1  # the kernels index rows and columns in 32 bits

TECHNIQUE = {
    "tma_wgmma": "TMA loads of both K-major fp8 operands (tensor maps of bytes, 128-byte swizzle: a K tile of "
                 "128), a ring of K stages, wgmma m64n128/256k32 (e4m3/e5m2) from shared memory by two "
                 "warpgroups into fp32, a block barrier before a stage is refilled; each stage's partial sum "
                 "added into fp32 registers (use_fast_accum=True: one accumulation over K); the scales and "
                 "bias in the epilogue; sm_90 only, 16-byte-aligned operands (else dequant)",
    "ws": "tma_wgmma with warp specialization: a producer warpgroup (40 registers) issues the TMA copies, two "
          "consumer warpgroups (232) issue wgmma, full and empty mbarriers per stage, no block barrier in the "
          "main loop: one warpgroup's partial-sum adds overlap the other's MMAs",
}


@dataclass(frozen=True)
class Fp8Tile:
    """The ``config=`` of scaled_matmul's Hopper rungs: a block computes 128 x ``block_n`` outputs (128, 192
    or 256: wgmma's N) with ``stages`` K tiles of 128 in its shared-memory ring."""

    block_n: int
    stages: int

    @property
    def stage_bytes(self) -> int:
        return (BM + self.block_n) * BK

    @property
    def shmem(self) -> int:
        return ALIGN_SLACK + self.stages * self.stage_bytes

    def check(self, op: str, out_dtype: torch.dtype, promote: bool, shared_limit: int = SM90_SHARED) -> None:
        """ValueError naming what this tile breaks for this output dtype and accumulation."""
        bad = None
        if self.block_n not in WIDTHS:
            bad = "block_n must be 128, 192 or 256 (wgmma m64n128k32, m64n192k32 or m64n256k32)"
        elif promote and self.block_n > PROMOTED_MAX:
            bad = (f"the promoted accumulation (use_fast_accum=False) holds two sets of block_n / 2 registers: "
                   f"block_n {PROMOTED_MAX} at most")
        elif not 2 <= self.stages <= MAX_STAGES:
            bad = f"stages must be 2 to {MAX_STAGES}"
        elif self.shmem + STATIC_SHARED > shared_limit:
            bad = f"{self.shmem} bytes of shared memory; a block may take {shared_limit - STATIC_SHARED}"
        elif BM * (self.block_n + 8) * out_dtype.itemsize > self.stages * self.stage_bytes:
            bad = "the epilogue stages the C tile in the ring: more stages needed"
        if bad:
            raise ValueError(f"{op}: config {self} cannot run: {bad}")


def wave_cost(m: int, n: int, bn: int, sms: int) -> int:
    """Time of a launch in units of a 128 x 128 x 32 step at the shared-memory bound: waves of tiles
    (a partial wave costs a whole one) times a tile's shared-memory bytes a step, (64 + BN) / 64."""
    return cdiv(cdiv(m, BM) * cdiv(n, bn), sms) * (64 + bn)


def tile_for(m: int, n: int, sms: int, shared_limit: int, promote: bool) -> Fp8Tile:
    """The widest tile the accumulation allows (192 promoted, 256 fast) unless 128 x 128 tiles cost less
    by ``wave_cost`` (fewer idle SMs in the last wave outweigh the wider MMA); the stages that fit."""
    wide = PROMOTED_MAX if promote else 256
    bn = wide if wave_cost(m, n, wide, sms) <= wave_cost(m, n, 128, sms) else 128
    return Fp8Tile(bn, stages_for(bn, shared_limit))


def kernel(rung: str, a: torch.dtype, b: torch.dtype, out: torch.dtype, tile: Fp8Tile, promote: bool) -> Kernel:
    name = (f"kk::f8_{rung}<{FMT[a]}, {FMT[b]}, {CXX[out]}, {tile.block_n}, {tile.stages}, "
            f"{'true' if promote else 'false'}>")
    sass = ("UTMALDG", "SYNCS") + (("USETMAXREG",) if rung == "ws" else ())
    return Kernel(SRC, name, store_bits=128, tensor_core="QGMMA", block=THREADS[rung], arch_suffix="a", min_sm=90,
                  sass=sass, dyn_shared=tile.shmem)


def pairs_for(a: torch.dtype) -> tuple[tuple[torch.dtype, torch.dtype], ...]:
    """The (a, b) dtype pairs with this a that torch._scaled_mm takes: not e5m2 x e5m2."""
    return tuple((a, b) for b in FP8 if E4M3 in (a, b))


def hopper_kernels(rung: str, a: torch.dtype, promote: bool) -> tuple[Kernel, ...]:
    """Every kernel the rule launches on sm_90 for this A dtype and accumulation."""
    widths = (128, PROMOTED_MAX) if promote else (128, 256)
    tiles = [Fp8Tile(bn, stages_for(bn, SM90_SHARED)) for bn in widths]
    return tuple(kernel(rung, x, y, o, t, promote) for x, y in pairs_for(a) for o in OUT_DTYPES for t in tiles)


def _operand_reason(name: str, t: torch.Tensor, ld: int) -> Optional[str]:
    if t.data_ptr() % 16:
        return f"{name} starts {t.data_ptr() % 16} bytes past a 16-byte boundary"
    if ld % 16:
        return f"{name}'s rows are {ld} bytes apart, not a multiple of 16: a tensor map cannot stride them"
    return None


def problem_reason(a: torch.Tensor, b: torch.Tensor, cc: int) -> Optional[str]:
    """Why the Hopper rungs cannot run this problem on a GPU of compute capability ``cc`` (90 for 9.0)
    (None: they can); a row-major, b column-major."""
    if cc != 90:
        return f"fp8 wgmma is an sm_90a instruction: compute capability 9.0 only, not {cc / 10:.1f}"
    if not maps_supported():
        return "tensor maps travel by value through the C launch shim, not built in this install"
    if max(a.shape[0], b.shape[1]) > MAX_DIM:
        return f"M or N above {MAX_DIM}"
    return _operand_reason("a", a, a.stride(0) if a.shape[0] > 1 else a.shape[1]) or \
        _operand_reason("b", b, b.stride(1) if b.shape[1] > 1 else b.shape[0])


def fp8_fallback_reason(a: torch.Tensor, b: torch.Tensor) -> Optional[str]:
    """Which constraint sends ``scaled_matmul(a, b, ...)`` from the Hopper rungs to the dequant rung, or
    None when they run it (a row-major, b column-major, as scaled_matmul takes them)."""
    return problem_reason(a, b, compute_capability(a.get_device()))


_plans = plan_cache()


def launch_fp8(rung: str, a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
               bias: Optional[torch.Tensor], out: torch.Tensor, promote: bool,
               config: Optional[list[int]]) -> Optional[str]:
    """out (M x N, unit column stride) <- a @ b * scale_a * scale_b (+ bias) on ``rung``; None once
    launched, else the reason it cannot run (the caller takes the dequant rung)."""
    dev = a.get_device()
    reason = problem_reason(a, b, compute_capability(dev))
    if reason:
        return reason
    m, k = a.shape
    n = b.shape[1]
    key = (rung, a.dtype, b.dtype, out.dtype, promote, m, n, dev, config and tuple(config))
    plan = _plans.get(key)
    if plan is None:
        limit = shared_limit(dev)
        tile = Fp8Tile(*config) if config else tile_for(m, n, sm_count(dev), limit, promote)
        tile.check("scaled_matmul", out.dtype, promote, limit)
        rec = kernel(rung, a.dtype, b.dtype, out.dtype, tile, promote)
        kern = get_kernel(rec.source, rec.name, device_index=dev, arch_suffix=rec.arch_suffix)
        allow_shared(kern, tile.shmem, dev)
        grid = (cdiv(m, BM) * cdiv(n, tile.block_n), 1, 1)
        plan = remember(_plans, key, (kern, rec, tile, grid))
    kern, rec, tile, grid = plan
    lda = a.stride(0) if m > 1 else k
    ldb = b.stride(1) if n > 1 else k
    try:  # fp8 travels as bytes: the tensor maps only move them
        ta = encode_tiled(torch.uint8, a.data_ptr(), (k, m, 1), (lda, lda * m), (BK, BM, 1), swizzle=128)
        tb = encode_tiled(torch.uint8, b.data_ptr(), (k, n, 1), (ldb, ldb * n), (BK, tile.block_n, 1), swizzle=128)
    except TensorMapError as exc:
        return str(exc)
    ldc = out.stride(0) if m > 1 else n
    launch(kern, grid, rec.block, ta, tb, out.data_ptr(), 0 if bias is None else bias.data_ptr(), scale_a.data_ptr(),
           scale_b.data_ptr(), m, n, k, ldc, shmem=tile.shmem, name=rec.name, device_index=dev)
    return None
