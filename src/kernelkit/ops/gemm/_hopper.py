"""The Hopper rungs of the matmul ladder (sm_90a): ``tma_wgmma`` and ``ws`` (csrc/gemm/wgmma.cu), and
``persistent``, ``cluster`` and ``tma_store`` (csrc/gemm/wgmma_persistent.cu).

Both load the operand tiles with the TMA through tensor maps built here from the operands' strides
(passed by value, 128 bytes each, as the kernels' ``__grid_constant__`` parameters) and multiply them
with wgmma from shared memory; ``ws`` adds warp specialization, ``persistent`` makes ``ws`` walk
several tiles a block (one block an SM), its producer loading the next tile during the epilogue. What
the TMA cannot read, the
rungs hand to the mma rung, and ``tma_fallback_reason`` says why: a tensor map needs a base address
and strides that are multiples of 16 bytes (K = 4093 in bf16 has rows 8186 bytes apart), and the
kernels run only on compute capability 9.0 (wgmma and setmaxnreg are sm_90a instructions).

Launch rule: 128 rows of C a block (two consumer warpgroups of 64 rows), ``block_n`` = 256 columns
where the 128 x 256 tiles still give every SM one, else 128; as many K stages of 64 as the shared
memory a block may take holds (at most 8); where the tiles leave SMs idle, K split into slices that
fill them (``split_for``; the blocks of a tile meet in a workspace, csrc/gemm/splitk.cuh).
``persistent``: the same tile widths, min(tiles, SMs) blocks, no K split; ``cluster``: the same in clusters
of two CTAs sharing B by TMA multicast, as many as fit at once; ``tma_store``: persistent with C written by TMA
stores. ``WgmmaTile`` is the ``config=`` surface of these rungs.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional

import torch

from ...ladder import Kernel
from ...runtime import allow_shared, get_kernel, launch, stream_handle
from ...runtime.launch import resident_blocks
from ...runtime.tensor_map import TensorMapError, encode_tiled, maps_supported
from .._shared.launch_rules import cdiv, compute_capability, sm_count
from .._shared.plans import plan_cache, remember
from ._problem import Side, as3, side_a, side_b
from ._replay import TmaReplay, launch_handle, offer, replays_possible

SRC = {"tma_wgmma": "gemm/wgmma.cu", "ws": "gemm/wgmma.cu", "persistent": "gemm/wgmma_persistent.cu",
       "cluster": "gemm/wgmma_persistent.cu", "tma_store": "gemm/wgmma_persistent.cu"}
F16, BF16 = torch.float16, torch.bfloat16
DTYPES = (F16, BF16)
RUNGS = ("tma_wgmma", "ws", "persistent", "cluster", "tma_store")
PERSISTENT = ("persistent", "cluster", "tma_store")  # the rungs whose blocks walk tiles (no K split, C staged past the ring)
CLUSTER = {"cluster": 2}  # CTAs a cluster (1 where absent)
# rungs whose launch the replay path cannot repeat: a cluster launch (not the C shim's plain launch) and a
# third tensor map (C's), which TmaReplay does not rebuild
NO_REPLAY = ("cluster", "tma_store")
CXX = {F16: "__half", BF16: "__nv_bfloat16"}
BM, BK = 128, 64  # rows of C a block (two warpgroups of m64); K elements a stage (one 128-byte swizzle line)
WIDTHS = (128, 256)  # wgmma's N: 256 is its widest, and its 128 accumulators a thread the most registers hold
MAX_STAGES = 8
SM90_SHARED = 232448  # dynamic shared memory a block may opt into on sm_90 (227 KB)
ALIGN_SLACK = 1024  # the kernels align their stages up to the 1024-byte swizzle atom
STATIC_SHARED = 1280  # the kernels' static shared memory (mbarriers, the tile's bias in fp32) stays below this
GRID_Z = 65535
MAX_SPLIT = 64  # K slices of a tile at most (the last block reads them all)
MIN_SLICE_KTILES = 4  # K tiles a slice keeps at least: the pipeline's fill and drain stay a small part
TAIL_KTILES = 16  # a slice's full (BM-row) partial costs the tile's finish about this many K tiles' time
THREADS = {"tma_wgmma": 256, "ws": 384, "persistent": 384, "cluster": 384, "tma_store": 384}

TECHNIQUE = {
    "tma_wgmma": "TMA tile loads (tensor maps from the operands' strides, 128-byte swizzle) completing on "
                 "mbarriers, a ring of K stages, wgmma m64n128/256k16 from shared memory by two warpgroups "
                 "(one K tile of MMAs in flight, a block barrier before a stage is refilled); sm_90 only, "
                 "operands with 16-byte-aligned bases and strides (else the mma rung)",
    "ws": "tma_wgmma with warp specialization: a producer warpgroup issues the TMA copies, two consumer "
          "warpgroups issue wgmma, setmaxnreg moves registers to the consumers (40 / 232 a thread), "
          "full and empty mbarriers per stage, no block barrier in the main loop",
    "persistent": "ws made persistent: one block an SM walks its tiles in L2-grouped order and the producer "
                  "runs ahead across tiles (the next tile's stages load during the epilogue, which stages C "
                  "in a buffer of its own past the ring); no K split",
    "cluster": "persistent in clusters of two CTAs taking tiles in pairs (128 rows apart, the same columns): "
               "each CTA loads its A and half of the B tile, which the TMA multicasts into both, so B is read "
               "from L2 once a pair; a stage is refilled once the consumers of both CTAs left it",
    "tma_store": "persistent with TMA stores in the epilogue: C staged as 128-byte-swizzled boxes of 128 x 64 "
                 "and written by the TMA while the consumers start the next tile (C off the 16-byte grid: "
                 "16-byte stores, as persistent)",
}


@dataclass(frozen=True)
class WgmmaTile:
    """The ``config=`` of the Hopper rungs: a block computes 128 x ``block_n`` outputs (128 or 256: wgmma's
    N) at a time and keeps ``stages`` K tiles of 64 in its shared-memory ring; ``split`` > 1 divides K
    into that many slices, one block each, summed in slice order (1: no split; ``persistent`` takes no
    split)."""

    block_n: int
    stages: int
    split: int = 1

    @property
    def stage_bytes(self) -> int:
        return (BM + self.block_n) * BK * 2

    def shmem_for(self, rung: str) -> int:
        """Dynamic shared memory of the launch on ``rung`` (``persistent`` stages C past the ring)."""
        return ALIGN_SLACK + self.stages * self.stage_bytes + persistent_staged(self.block_n, rung)

    @property
    def shmem(self) -> int:
        return self.shmem_for("tma_wgmma")

    def check(self, op: str, shared_limit: int = SM90_SHARED, staged_bytes: int = 2, rung: str = "tma_wgmma") -> None:
        """ValueError naming what this tile breaks. ``staged_bytes``: bytes an element of the C tile the
        epilogue stages in the ring (2: rounded to fp16/bf16; 4: fp32, linear's fused epilogues)."""
        bad = None
        persistent = rung in PERSISTENT
        if self.block_n not in WIDTHS:
            bad = "block_n must be 128 or 256 (wgmma m64n128k16 or m64n256k16)"
        elif not 2 <= self.stages <= MAX_STAGES:
            bad = f"stages must be 2 to {MAX_STAGES}"
        elif self.shmem_for(rung) + STATIC_SHARED > shared_limit:
            bad = f"{self.shmem_for(rung)} bytes of shared memory; a block may take {shared_limit - STATIC_SHARED}"
        elif not persistent and BM * (self.block_n + 8) * staged_bytes > self.stages * self.stage_bytes:
            bad = (f"the epilogue stages the C tile{' in fp32' if staged_bytes == 4 else ''} in the ring: more "
                   "stages needed")
        elif not 1 <= self.split <= (1 if persistent else MAX_SPLIT):
            bad = ("the persistent rung takes no K split (split 1)" if persistent
                   else f"split must be 1 (no split) to {MAX_SPLIT} K slices")
        if bad:
            raise ValueError(f"{op}: config {self} cannot run: {bad}")


def persistent_staged(block_n: int, rung: str) -> int:
    """Bytes of the persistent kernel's staging buffer past its ring (128 rows of 16-bit C for the plain
    epilogue, 64 of fp32 for a fused one: block_n + 8 a row, the same bytes); 0 for the other
    rungs, which stage C in their ring."""
    return 64 * (block_n + 8) * 4 if rung in PERSISTENT else 0


def stages_for(block_n: int, shared_limit: int, rung: str = "tma_wgmma") -> int:
    """As many K stages as the shared memory a block may take holds (past the persistent kernel's staging
    buffer), at most MAX_STAGES."""
    per = (BM + block_n) * BK * 2
    staged = persistent_staged(block_n, rung)
    return max(2, min(MAX_STAGES, (shared_limit - ALIGN_SLACK - STATIC_SHARED - staged) // per))


def split_for(tiles: int, ktiles: int, rows: int, sms: int, block_n: int = 128, a_rows: int = BM) -> int:
    """K slices for ``tiles`` output tiles (batch included) of ``rows`` rows of C each over ``ktiles`` K
    tiles. Few-tile shapes are bound by the loads: one SM's TMA brings a stage's (a_rows + block_n) rows
    of 128 bytes at a fixed pace (``a_rows``: A's box, ``a_box_rows``; zero-filled rows past M included),
    and about half the SMs streaming real rows reach the device's memory rate; so the blocks wanted are
    sms / 2 scaled by (a_rows + block_n) / (rows + block_n), the TMA's rows against those that carry data
    (an m-major A of one row: all the SMs; a k-major A, whose box stops at M: half).
    Bounded by one wave (a block holds an SM: a second wave doubles the time), by MIN_SLICE_KTILES K
    tiles a slice, and by sqrt(ktiles / c), where the slices' time ktiles / S plus the finishing tail
    S c is least, c = TAIL_KTILES rows / BM the cost of a slice's partial in K tiles (it binds where a
    few tiles have long K). 1 where the tiles fill the SMs."""
    rows = max(1, min(rows, BM))
    want = (sms // 2) * (a_rows + block_n) // (rows + block_n)
    s = min(sms, want) // max(1, tiles)
    s = min(s, ktiles // MIN_SLICE_KTILES, MAX_SPLIT, math.isqrt(ktiles * BM // (TAIL_KTILES * rows)))
    return max(1, s)


def width_for(m: int, n: int, batch: int, sms: int) -> int:
    """block_n: 256 where the 128 x 256 tiles give every SM at least one (the wider MMA reads A once for
    twice the columns), else 128."""
    return 256 if cdiv(m, BM) * cdiv(n, 256) * batch >= sms else 128


def tile_for(m: int, n: int, batch: int, sms: int, shared_limit: int, k: int = BK, a_rows: int = BM) -> WgmmaTile:
    """``width_for``'s block_n, the stages that fit, K slices where the tiles leave SMs idle."""
    bn = width_for(m, n, batch, sms)
    split = split_for(cdiv(m, BM) * cdiv(n, bn) * batch, cdiv(k, BK), m, sms, bn, a_rows)
    return WgmmaTile(bn, stages_for(bn, shared_limit), split)


def persistent_tile(m: int, n: int, batch: int, sms: int, shared_limit: int) -> WgmmaTile:
    """The persistent rung's tile: tile_for's width, the stages that fit beside the staging buffer."""
    bn = width_for(m, n, batch, sms)
    return WgmmaTile(bn, stages_for(bn, shared_limit, "persistent"))


def persistent_grid(tiles: int, sms: int) -> int:
    """Blocks of the persistent rung: one an SM, none without a tile."""
    return max(1, min(tiles, sms))


def cluster_grid(pairs: int, resident: int) -> int:
    """CTAs of the cluster rung: two a pair of tiles, at most the clusters of two that fit at once
    (``resident`` CTAs: a cluster's CTAs share a GPC, so an odd SM of a GPC stays out), at least one pair."""
    return 2 * max(1, min(pairs, resident // 2))


C_BOX = (64, BM)  # the tma_store rung's boxes of C: 64 columns (128 bytes, the swizzle's span) x 128 rows


def c_tensor_map(out3: torch.Tensor, m: int, n: int, batch: int, ldc: int) -> Optional[bytes]:
    """The tma_store rung's tensor map of C (batch, m, n; rows ``ldc`` elements apart): dims (n, m, batch) with
    C_BOX boxes and the 128-byte swizzle, or None where the TMA cannot write it (a base or a row stride off the
    16-byte grid)."""
    es = out3.element_size()
    bsc = out3.stride(0) if batch > 1 else m * ldc
    try:
        return encode_tiled(out3.dtype, out3.data_ptr(), (n, m, batch), (ldc * es, bsc * es), (*C_BOX, 1),
                            swizzle=128)
    except TensorMapError:
        return None


def b_box_rows(rung: str, block_n: int) -> int:
    """Rows of a k-major B's TMA box: the tile's block_n, half of it on the cluster rung (each CTA of a
    pair loads one half and multicasts it). An n-major B is loaded in boxes of 64 columns either way."""
    return block_n // 2 if rung in CLUSTER else block_n


# best's Hopper rungs for fp16 and bf16: persistent wherever its rule needs no K split and there is no fused
# epilogue, else tma_wgmma (which splits K). On an H200 over the 24 shapes of matmul_table.py, persistent
# ran 0.5-10 points of cuBLAS ahead of tma_wgmma on every unsplit shape (4096^3 96.2% against 95.0%) and
# 13-31 points behind on the split ones; with linear's fused epilogues (staged in fp32 one warpgroup's half
# at a time past its ring) 1.5-2.5% slower than tma_wgmma at 16384x14336x4096
# (docs/design/hopper-gemm.md, "The persistent rung").
BEST_RUNGS = ("persistent", "tma_wgmma")


@functools.lru_cache(maxsize=4096)
def best_rung(m: int, n: int, k: int, batch: int, sms: int, shared_limit: int, a_rows: int, epi: int = 0) -> str:
    """best's Hopper rung for a problem: tma_wgmma where tile_for splits K or ``epi`` (linear's fused
    epilogue) is set, else persistent."""
    if epi or tile_for(m, n, batch, sms, shared_limit, k, a_rows).split > 1:
        return "tma_wgmma"
    return "persistent"


def kernel(rung: str, dtype: torch.dtype, tile: WgmmaTile, a_k: bool, b_k: bool, epi: int = 0) -> Kernel:
    """The kernel record; ``epi``: the epilogue template argument (0: matmul's, left to its default)."""
    lay = f"{'true' if a_k else 'false'}, {'true' if b_k else 'false'}" + (f", {epi}" if epi else "")
    sass = ("UTMALDG", "SYNCS") + (("USETMAXREG",) if rung != "tma_wgmma" else ())
    return Kernel(SRC[rung], f"kk::mm_{rung}<{CXX[dtype]}, {tile.block_n}, {tile.stages}, {lay}>", store_bits=128,
                  tensor_core="HGMMA", block=THREADS[rung], arch_suffix="a", min_sm=90, sass=sass,
                  dyn_shared=tile.shmem_for(rung))


def hopper_kernels(rung: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    """Every kernel the rule launches on sm_90: both widths with their stages, the four operand layouts."""
    if dtype not in DTYPES:
        return ()
    tiles = [WgmmaTile(bn, stages_for(bn, SM90_SHARED, rung)) for bn in WIDTHS]
    return tuple(kernel(rung, dtype, t, a, b) for t in tiles for a in (True, False) for b in (True, False))


# ---- why a problem stays on the mma rung ----------------------------------------------------------

def _side_reason(name: str, s: Side) -> Optional[str]:
    es = s.t.element_size()
    if s.t.data_ptr() % 16:
        return f"{name} starts {s.t.data_ptr() % 16} bytes past a 16-byte boundary"
    if (s.ld * es) % 16:
        return (f"{name}'s leading dimension is {s.ld} elements ({s.ld * es} bytes), not a multiple of 16 bytes: "
                "a tensor map cannot stride it")
    if (s.bstride * es) % 16:
        return f"{name}'s batch stride is {s.bstride * es} bytes, not a multiple of 16"
    return None


def problem_reason(sa: Side, sb: Side, batch: int, cc: int) -> Optional[str]:
    """Why the TMA rungs cannot run this problem on a GPU of compute capability ``cc`` (90 for 9.0) (None:
    they can)."""
    if sa.t.dtype not in DTYPES:
        return f"the TMA rungs take float16 and bfloat16, not {str(sa.t.dtype)[6:]}"
    if cc != 90:
        return f"wgmma and setmaxnreg are sm_90a instructions: compute capability 9.0 only, not {cc / 10:.1f}"
    if not maps_supported():
        return "tensor maps travel by value through the C launch shim, not built in this install"
    if batch > GRID_Z:
        return f"a batch of {batch}: the grid's z extent holds {GRID_Z}"
    return _side_reason("A", sa) or _side_reason("B", sb)


def tma_fallback_reason(a: torch.Tensor, b: torch.Tensor) -> Optional[str]:
    """Which constraint sends ``matmul(a, b, variant="tma_wgmma")`` (or ``"ws"``) to the mma rung, or None
    when the TMA rungs run it. ``a`` and ``b`` as ``kernelkit.matmul`` takes them (2-D or 3-D)."""
    a3 = as3(a if a.dim() > 1 else a.unsqueeze(0))
    b3 = as3(b if b.dim() > 1 else b.unsqueeze(-1))
    return problem_reason(side_a(a3), side_b(b3), max(a3.shape[0], b3.shape[0]), compute_capability(a.get_device()))


# ---- tensor maps ----------------------------------------------------------------------------------

def tensor_map_fields(s: Side, rows: int, k: int, batch: int, box_rows: int) -> tuple:
    """(dims, strides in bytes, box) of an operand's tensor map, innermost first: (K, rows, batch) for a
    k-major operand with a box of 64 x box_rows, (rows, K, batch) for an m- or n-major one with a box of
    64 x 64. Without a batch dim (one matrix for every z) the third dim has extent 1."""
    es = s.t.element_size()
    dims, box = ((k, rows), (BK, box_rows)) if s.kmaj else ((rows, k), (64, BK))
    s1 = s.ld * es
    d2, s2 = (batch, s.bstride * es) if s.bstride else (1, s1 * dims[1])
    return (dims[0], dims[1], d2), (s1, s2), (box[0], box[1], 1)


def a_box_rows(kmaj: bool, m: int) -> int:
    """Rows of A's TMA box: the tile's 128, or for a k-major A of fewer rows, M rounded up to 8 (the
    128-byte swizzle's atom), so that the TMA does not write a stage's zero rows past M into shared
    memory: at M = 1 and BN = 128 a stage moves 136 rows of 128 bytes instead of 256. The kernels learn
    the box's bytes from flags bits 8-15 (rows / 8)."""
    return BM if not kmaj or m >= BM else cdiv(m, 8) * 8


def tensor_map(s: Side, rows: int, k: int, batch: int, box_rows: int) -> bytes:
    dims, strides, box = tensor_map_fields(s, rows, k, batch, box_rows)
    return encode_tiled(s.t.dtype, s.t.data_ptr(), dims, strides, box, swizzle=128)


# ---- the launch -----------------------------------------------------------------------------------

_plans = plan_cache()


def shared_limit(dev: int) -> int:
    props = torch.cuda.get_device_properties(dev)
    return getattr(props, "shared_memory_per_block_optin", 0) or SM90_SHARED


# Device memory, not plans: a captured CUDA graph keeps the addresses it was given, so outgrown buffers
# stay alive in _keep. One workspace per (device, stream): launches on one stream run in order, and the
# kernels leave every ticket at 0.
_workspaces: dict[tuple[int, int], tuple] = {}
_keep: list[torch.Tensor] = []


def split_workspace(dev: int, floats: int, tickets: int) -> tuple[int, int]:
    """Addresses of the split-K partials (``floats`` fp32) and zeroed tickets on ``dev`` for torch's
    current stream there."""
    key = (dev, stream_handle(dev))
    ws = _workspaces.get(key)
    if ws is None or ws[2] < floats or ws[3] < tickets:
        if ws is not None:
            _keep.extend(ws[:2])
        f = max(floats, 2 * (ws[2] if ws else 0), 1 << 20)
        c = max(tickets, 2 * (ws[3] if ws else 0), 1024)
        device = torch.device("cuda", dev)
        part = torch.empty(f, dtype=torch.float32, device=device)
        tick = torch.zeros(c, dtype=torch.int32, device=device)
        ws = _workspaces[key] = (part, tick, f, c, part.data_ptr(), tick.data_ptr())
    return ws[4], ws[5]


def launch_tma(rung: str, sa: Side, sb: Side, out3: torch.Tensor, bias: Optional[torch.Tensor], m: int, n: int,
               k: int, batch: int, dev: int, config: Optional[list[int]], residual: Optional[torch.Tensor] = None,
               ldr: int = 0, epi: int = 0) -> Optional[str]:
    """out3 <- A @ B (+ bias) on ``rung`` ("best": ``best_rung``'s); None once launched, else the reason it
    cannot run (the caller takes the mma rung). ``config``: a WgmmaTile's fields, or None for the rule's
    tile. ``epi``: linear's fused epilogue (the kernels' EPI), ``residual`` (or None) read with row stride
    ``ldr``."""
    reason = problem_reason(sa, sb, batch, compute_capability(dev))
    if reason:
        return reason
    a_rows = a_box_rows(sa.kmaj, m)
    if rung == "best":
        rung = best_rung(m, n, k, batch, sm_count(dev), shared_limit(dev), a_rows, epi)
    key = (rung, sa.t.dtype, sa.kmaj, sb.kmaj, m, n, k, batch, dev, config and tuple(config), epi)  # K sets the split
    plan = _plans.get(key)
    if plan is None:
        op = "linear" if epi else "matmul"
        limit = shared_limit(dev)
        if config:
            tile = WgmmaTile(*config)
        elif rung in PERSISTENT:
            tile = persistent_tile(m, n, batch, sm_count(dev), limit)
        else:
            tile = tile_for(m, n, batch, sm_count(dev), limit, k, a_rows)
        tile.check(op, limit, 4 if epi else 2, rung)
        if tile.split > cdiv(k, BK):
            raise ValueError(f"{op}: config {tile} cannot run: {tile.split} K slices of {cdiv(k, BK)} K tiles")
        rec = kernel(rung, sa.t.dtype, tile, sa.kmaj, sb.kmaj, epi)
        kern = get_kernel(rec.source, rec.name, device_index=dev, arch_suffix=rec.arch_suffix)
        allow_shared(kern, tile.shmem_for(rung), dev)
        tiles = cdiv(m, BM) * cdiv(n, tile.block_n)
        if rung in ("persistent", "tma_store"):  # one block an SM; the batch travels in flags (grid z = 1)
            grid = (persistent_grid(tiles * batch, sm_count(dev)), 1, 1)
        elif rung == "cluster":  # as many pairs as fit at once, each walking pairs of tiles
            pairs = cdiv(m, 2 * BM) * cdiv(n, tile.block_n) * batch
            grid = (cluster_grid(pairs, resident_blocks(kern, rec.block, 2, dev, tile.shmem_for(rung))), 1, 1)
        else:
            grid = (tiles, tile.split, batch)
        plan = remember(_plans, key, (kern, rec, tile, grid))
    kern, rec, tile, grid = plan
    shmem = tile.shmem_for(rung)
    try:
        ta = tensor_map(sa, m, k, batch, a_rows)
        tb = tensor_map(sb, n, k, batch, b_box_rows(rung, tile.block_n))
    except TensorMapError as exc:
        return str(exc)
    ldc = out3.stride(1) if m > 1 else n
    bsc = out3.stride(0) if batch > 1 else 0
    flags = int(sa.bstride != 0) | int(sb.bstride != 0) << 1 | (a_rows // 8 if a_rows < BM else 0) << 8
    if rung in PERSISTENT:
        flags |= (batch - 1) << 16
    maps = (ta, tb)
    if rung == "tma_store":
        tc = c_tensor_map(out3, m, n, batch, ldc)
        flags |= 4 if tc is not None else 0
        maps = (ta, tb, tc if tc is not None else ta)  # bit 2 clear: the kernel stores C itself
    ws = tickets = 0
    if tile.split > 1:
        tiles = grid[0] * grid[2]
        ws, tickets = split_workspace(dev, tiles * tile.split * BM * tile.block_n, tiles)
    launch(kern, grid, rec.block, *maps, out3.data_ptr(), 0 if bias is None else bias.data_ptr(), m, n, k, ldc,
           bsc, flags, 0 if residual is None else residual.data_ptr(), ldr, ws, tickets, shmem=shmem,
           cluster=CLUSTER.get(rung, 1), name=rec.name, device_index=dev)
    if batch == 1 and residual is None and out3.is_cuda and rung not in NO_REPLAY and replays_possible():
        split = (grid[0] * tile.split * BM * tile.block_n, grid[0]) if tile.split > 1 else None
        offer(TmaReplay(launch_handle(kern), grid, rec.block, shmem, dev, sa.t.dtype,
                        tensor_map_fields(sa, m, k, batch, a_rows), tensor_map_fields(sb, n, k, batch, tile.block_n),
                        (m, n, k, ldc, bsc, flags), split, rec.name, (sa.t.data_ptr(), sb.t.data_ptr())))
    return None
