"""Shared-memory bank conflicts of the swizzled matmul kernels, by a static model of their addresses.

The model replays, for one warp, the addresses each shared-memory access of one K stage computes in
the kernels (the same index and swizzle formulas as csrc/gemm/pipe.cuh, mma.cu and the fragment loads
of mma_pipe.cu and dmma.cu) and counts the wavefronts the hardware needs: an access is split into
phases (8 lanes for 16-byte accesses, 16 for 8-byte ones, 32 for 4-byte ones) and a phase takes as many
wavefronts as the most distinct 4-byte words one of the 32 banks must deliver. The ideal is one
wavefront a phase; the report is the ratio for the fragment reads and for the cp.async writes
("1.00" conflict-free). ``kernelkit ncu`` measures the same on a GPU
(l1tex__data_bank_conflicts_pipe_lsu_mem_shared_*).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

BYTES = {"MmaF16": 2, "MmaBF16": 2, "MmaTF32": 4, "MmaS8": 1}


@dataclass(frozen=True)
class Tile:
    """A stage tile's layout: C 16-byte chunks a row and the row's swizzle (chunk c at c ^ swz(row))."""

    chunks: int
    swz: Callable[[int], int]

    def addr(self, row: int, chunk: int, byte: int = 0) -> int:
        return (row * self.chunks + (chunk ^ self.swz(row))) * 16 + byte


def _wavefronts(addrs: list[int], width: int) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp-wide access of `width` bytes a lane at these addresses."""
    lanes = {16: 8, 8: 16, 4: 32}[width]
    got = ideal = 0
    for p in range(0, len(addrs), lanes):
        banks: dict[int, set[int]] = {}
        for a in addrs[p:p + lanes]:
            for w in range(a // 4, (a + width) // 4):
                banks.setdefault(w % 32, set()).add(w)
        got += max(len(s) for s in banks.values())
        ideal += 1
    return got, ideal


def _pipe_tile(size: int, rows: int, kb: int, kmaj: bool) -> Tile:
    """pipe.cuh's PipeTile: [r][k] (kb / 16 chunks a row) or [k][r] (rows * size / 16)."""
    period8 = not (size == 8 or (not kmaj and size == 4))
    swz = (lambda r: r & 7) if period8 else (lambda r: (r & 3) << 1)
    return Tile(kb // 16 if kmaj else rows * size // 16, swz)


def _cp_writes(tile: Tile, rows: int, threads: int) -> tuple[int, int]:
    """Warp 0's cp.async writes of a stage: thread t copies chunk t % C of rows t / C + i * (threads / C)."""
    c_per, rstep = tile.chunks, threads // tile.chunks
    got = ideal = 0
    for i in range(rows * c_per // threads):
        addrs = [tile.addr(t // c_per + i * rstep, t % c_per) for t in range(32)]
        g, d = _wavefronts(addrs, 16)
        got, ideal = got + g, ideal + d
    return got, ideal


def _mma_reads(size: int, ta: Tile, tb: Tile, a_k: bool, b_k: bool, wm: int, wn: int, ksteps: int,
               tf32: bool) -> tuple[int, int]:
    """Warp 0's fragment reads of one stage in mm_mma_pipe / mm_mma (ldmatrix x4, or LDS.128 for tf32's
    [k][n] B), ksteps 32-byte steps."""
    v = 16 // size
    got = ideal = 0

    def add(addrs, width):
        nonlocal got, ideal
        g, d = _wavefronts(addrs, width)
        got, ideal = got + g, ideal + d

    for ks in range(ksteps):
        for mt in range(wm // 16):
            r = mt * 16
            if a_k:
                add([ta.addr(r + (ln & 15), ks * 2 + (ln >> 4)) for ln in range(32)], 16)
            else:
                add([ta.addr(ks * 16 + (ln & 7) + ((ln >> 3) >> 1) * 8, r // v + ((ln >> 3) & 1)) for ln in range(32)], 16)
        for np_ in range(wn // 16):
            r = np_ * 16
            if b_k:
                add([tb.addr(r + (ln & 7) + ((ln >> 3) >> 1) * 8, ks * 2 + ((ln >> 3) & 1)) for ln in range(32)], 16)
            elif not tf32:
                add([tb.addr(ks * 16 + (ln & 7) + ((ln >> 3) & 1) * 8, r // v + ((ln >> 3) >> 1)) for ln in range(32)], 16)
    if tf32 and not b_k:  # tf32 [k][n]: 16 bytes of rows q and q + 4 at chunk g of each 32-column group
        for ks in range(ksteps):
            for grp in range(wn // 32):
                for dk in (0, 4):
                    add([tb.addr(ks * 8 + (ln & 3) + dk, grp * 8 + (ln >> 2)) for ln in range(32)], 16)
    return got, ideal


def _dmma_reads(ta: Tile, tb: Tile, a_k: bool, b_k: bool, wm: int, wn: int) -> tuple[int, int]:
    """Warp 0's 8-byte fragment reads of one stage in mm_dmma_pipe."""
    got = ideal = 0

    def el(tile: Tile, row: int, elem: int) -> int:
        return tile.addr(row, elem // 2, (elem % 2) * 8)

    for nt in range(wn // 8):
        for i in range(4):
            addrs = [el(tb, nt * 8 + (ln >> 2), 4 * i + (ln & 3)) if b_k else el(tb, 4 * i + (ln & 3), nt * 8 + (ln >> 2))
                     for ln in range(32)]
            g, d = _wavefronts(addrs, 8)
            got, ideal = got + g, ideal + d
    for mt in range(wm // 16):
        for j in range(4):
            for h in range(2):
                rows = [mt * 16 + (ln >> 2) + 8 * h for ln in range(32)]
                addrs = [el(ta, r, 4 * j + (ln & 3)) if a_k else el(ta, 4 * j + (ln & 3), r) for ln, r in zip(range(32), rows)]
                g, d = _wavefronts(addrs, 8)
                got, ideal = got + g, ideal + d
    return got, ideal


def _general_tile(size: int, rows: int, kmaj: bool) -> Tile:
    """mma.cu's StageTile: 64-byte stages, [r][k] 4 chunks a row (c ^ ((row >> 1) & 3)) or [k][r]."""
    c = 4 if kmaj else rows * size // 16
    swz = (lambda r: r & 7) if c >= 8 else (lambda r: (r >> 1) & 3) if c == 4 else (lambda r: (r >> 2) & 1)
    return Tile(c, swz)


_NAME = re.compile(r"kk::(mm_mma_pipe|mm_mma|mm_dmma_pipe)<(.*)>")


def bank_report(name: str) -> Optional[str]:
    """'reads 1.00, cp.async 1.00' (wavefronts against the ideal, one warp, one stage) for a swizzled
    kernel's instantiation name; None for a kernel the model does not cover."""
    m = _NAME.fullmatch(name)
    if not m:
        return None
    kind, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
    if kind == "mm_dmma_pipe":
        bm, bn, wm, wn, _st = map(int, args[:5])
        a_k, b_k = args[5] == "true", args[6] == "true"
        size, tr, tf32 = 8, None, False
    else:
        tr = args[0].replace("kk::", "")
        bm, bn, wm, wn, _st = map(int, args[1:6])
        a_k, b_k = args[6] == "true", args[7] == "true"
        size, tf32 = BYTES[tr], tr == "MmaTF32"
    threads = (bm // wm) * (bn // wn) * 32
    if kind == "mm_mma":
        if size != 2:
            a_k = b_k = True
        ta, tb = _general_tile(size, bm, a_k), _general_tile(size, bn, b_k)
        reads = _mma_reads(size, ta, tb, a_k, b_k, wm, wn, 2, tf32)
        rows_a, rows_b = (bm if a_k else 64 // size), (bn if b_k else 64 // size)
    else:
        ta, tb = _pipe_tile(size, bm, 128, a_k), _pipe_tile(size, bn, 128, b_k)
        reads = (_dmma_reads(ta, tb, a_k, b_k, wm, wn) if kind == "mm_dmma_pipe"
                 else _mma_reads(size, ta, tb, a_k, b_k, wm, wn, 4, tf32))
        rows_a, rows_b = (bm if a_k else 128 // size), (bn if b_k else 128 // size)
    wa, ia = _cp_writes(ta, rows_a, threads)
    wb, ib = _cp_writes(tb, rows_b, threads)
    return f"reads {reads[0] / reads[1]:.2f}, cp.async {(wa + wb) / (ia + ib):.2f}"
