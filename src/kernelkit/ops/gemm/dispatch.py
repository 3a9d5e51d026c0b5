"""What ``matmul``, ``linear`` and ``scaled_matmul`` launch for a problem, worked out without a GPU.

``explain`` builds the operands as meta tensors (shapes, strides and the byte offset of their first
element, no memory) and runs the same checks and rules the launches run, for a device described by a
``DeviceModel`` (an H100 unless told otherwise): which rung ``best`` takes, the Hopper rungs' tile and
K split, and, where the TMA rungs cannot read the operands, the constraint that sends the problem to
the mma (or, for fp8, the dequant) rung. ``kernelkit inspect matmul --shape 4096x4096x4093`` prints it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from . import _fp8_hopper as f8
from . import _hopper as hop
from ._problem import as3, side_a, side_b
from .scaled_matmul import BEST_HOPPER as FP8_BEST

__all__ = ["DeviceModel", "explain"]

F32, F64 = torch.float32, torch.float64


@dataclass(frozen=True)
class DeviceModel:
    """The device facts the rules read: compute capability (90 for 9.0), SM count, and the dynamic
    shared memory a block may opt into."""

    cc: int = 90
    sms: int = 132
    shared: int = hop.SM90_SHARED
    name: str = "an H100 (sm_90, 132 SMs)"

    @classmethod
    def of(cls, device_index: int) -> "DeviceModel":
        props = torch.cuda.get_device_properties(device_index)
        return cls(props.major * 10 + props.minor, props.multi_processor_count,
                   getattr(props, "shared_memory_per_block_optin", 0) or hop.SM90_SHARED, props.name)


def _meta(shape: tuple[int, ...], dtype: torch.dtype, transposed: bool, offset: int) -> torch.Tensor:
    """A meta tensor of ``shape``, stored transposed (its last two dims swapped in memory) if asked,
    starting ``offset`` elements into its storage."""
    stored = (*shape[:-2], shape[-1], shape[-2]) if transposed else shape
    base = torch.empty(int(torch.Size(stored).numel()) + offset, dtype=dtype, device="meta")
    t = base[offset:].view(stored)
    return t.transpose(-1, -2) if transposed else t


def _operands(op: str, m: int, n: int, k: int, batch: int, dtype: torch.dtype, b_kmajor: Optional[bool],
              offset: int) -> tuple[torch.Tensor, torch.Tensor, str]:
    """A (M, K) and B (K, N) as the op passes them to its kernels, and a line saying how they lie."""
    if op == "linear":
        b_kmajor = True  # weight (N, K) read through its transpose
    elif op == "scaled_matmul":
        b_kmajor = True  # torch._scaled_mm's column-major b
    kmaj = bool(b_kmajor)
    lead = (batch,) if batch > 1 else ()
    a = _meta((*lead, m, k), dtype, False, offset)
    b = _meta((*lead, k, n), dtype, kmaj, 0)
    how = (f"A {m}x{k} row-major{f' starting {offset} elements into its storage' if offset else ''}, "
           f"B {k}x{n} {'k-major (the transpose of an N x K row-major tensor)' if kmaj else 'row-major (n-major)'}"
           + (f", a batch of {batch}" if batch > 1 else ""))
    return a, b, how


def explain(op: str, m: int, n: int, k: int, dtype: torch.dtype, *, batch: int = 1,
            b_kmajor: Optional[bool] = None, offset: int = 0, allow_tf32: bool = False,
            device: Optional[DeviceModel] = None, fused: bool = False) -> list[str]:
    """Lines saying what ``op`` ("matmul", "linear" or "scaled_matmul") runs for C (M x N) = A (M x K) @
    B (K x N) in ``dtype`` on ``device`` (default: an H100). ``b_kmajor``: matmul's B is the transpose of
    a row-major (N, K) tensor (linear's and scaled_matmul's always is); ``offset``: A starts this many
    elements past an aligned allocation (a view); ``fused``: linear with an activation or a residual."""
    dev = device or DeviceModel()
    if min(m, n, k, batch) < 1:
        raise ValueError(f"explain: M, N, K and the batch must be at least 1, got {m}, {n}, {k}, {batch}")
    a, b, how = _operands(op, m, n, k, batch, dtype, b_kmajor, offset)
    lines = [f"{op} {'x'.join(map(str, (m, n, k)))} {str(dtype)[6:]} on {dev.name}: {how}"]
    if op == "scaled_matmul":
        return lines + _explain_fp8(a, b, m, n, k, dev)
    if dtype == F32 and not allow_tf32:
        return lines + ["best: simt_best (exact fp32 on the SIMT rungs; allow_tf32=True runs tensor cores)"]
    if dtype not in hop.DTYPES:
        rung = "dmma" if dtype == F64 else "mma"
        return lines + [f"best: {rung} (the TMA rungs take float16 and bfloat16, not {str(dtype)[6:]})"]
    a3, b3 = as3(a), as3(b)
    reason = hop.problem_reason(side_a(a3), side_b(b3), batch, dev.cc)
    if reason:
        return lines + [f"{', '.join(hop.RUNGS)}: cannot run it: {reason}", "best: mma (the sm_80-class rung)"]
    a_rows = hop.a_box_rows(side_a(a3).kmaj, m)
    tile = hop.tile_for(m, n, batch, dev.sms, dev.shared, k, a_rows)
    split = f", K in {tile.split} slices met in a workspace" if tile.split > 1 else ""
    tiles = hop.cdiv(m, hop.BM) * hop.cdiv(n, tile.block_n) * batch
    plural = "s" if tiles != 1 else ""
    pt = hop.persistent_tile(m, n, batch, dev.sms, dev.shared)
    ptiles = hop.cdiv(m, hop.BM) * hop.cdiv(n, pt.block_n) * batch
    pairs = hop.cdiv(m, 2 * hop.BM) * hop.cdiv(n, pt.block_n) * batch
    best = hop.best_rung(m, n, k, batch, dev.sms, dev.shared, a_rows, int(fused))
    return lines + [f"tma_wgmma, ws: run it with {tile}: {tiles} tile{plural} of {hop.BM} x {tile.block_n}"
                    f"{split}, {tile.stages} K stages of {hop.BK} in {tile.shmem} bytes of shared memory"
                    f"{f', A in boxes of {a_rows} rows' if a_rows < hop.BM else ''}",
                    f"persistent: run it with {pt}: {ptiles} tile{'s' if ptiles != 1 else ''} of {hop.BM} x "
                    f"{pt.block_n} walked by {hop.persistent_grid(ptiles, dev.sms)} blocks, {pt.stages} K stages",
                    f"cluster: the same tiles in pairs along M ({pairs} pair{'s' if pairs != 1 else ''}) walked by "
                    f"clusters of two CTAs, as many as fit at once, each pair's B tile multicast by the TMA",
                    "tma_store: as persistent, C written by TMA stores" + (
                        "" if n * a.element_size() % 16 == 0 else
                        f" where its rows start on 16 bytes (not a fresh output of N = {n}: threads' stores)"),
                    f"best: {best}" + ((" (fused epilogue)" if fused else " (K split)") if best == "tma_wgmma" else "")]


def _explain_fp8(a: torch.Tensor, b: torch.Tensor, m: int, n: int, k: int, dev: DeviceModel) -> list[str]:
    if a.dtype not in f8.FP8:
        return [f"scaled_matmul takes float8_e4m3fn and float8_e5m2 operands, not {str(a.dtype)[6:]}"]
    if k % 16 or n % 16:
        return ["scaled_matmul refuses it: K and N must be multiples of 16 (as torch._scaled_mm)"]
    reason = f8.problem_reason(a, b, dev.cc)
    if reason:
        return [f"tma_wgmma, ws: cannot run it: {reason}", "best: dequant (the portable path)"]
    lines = []
    for promote, what in ((True, "use_fast_accum=False"), (False, "use_fast_accum=True")):
        tile = f8.tile_for(m, n, dev.sms, dev.shared, promote)
        lines.append(f"tma_wgmma, ws with {what}: {tile}, {tile.stages} K stages of {f8.BK}")
    return lines + [f"best: {FP8_BEST}"]
