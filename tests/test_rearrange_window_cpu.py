"""Rearrangement on the CPU, the window tile (any alignment): transpose_window emulated thread by thread
(`Window`: its constants and formulas; `emulate_window`: loads, shared stores and reads with their banks, the
edge pass), its aligned forms and tiles, and the SASS census of the shared accesses of every tile kernel.

The emulator mirrors csrc/rearrangement/transpose_window.cu line by line, so a wrong formula fails here, before
any GPU time is spent.
"""
import itertools
import math

import numpy as np
import pytest
import torch

from kernelkit.ops.rearrangement import _rearrange as R_
from kernelkit.ops.rearrangement._launch import BEST_TILES, WIDE_TILE, TileConfig, tile_kernel
from rearrange_helpers import CARRIER_NP, Wide, wavefronts


# ----------------------------------------------------------------------------- the window tile (any alignment)

class Window:
    """transpose_window<T_e, TR, TC, THREADS, in_aligned, out_aligned>'s constants and formulas."""

    def __init__(self, e, tile: TileConfig, in_aligned=False, out_aligned=False):
        self.e, self.tr, self.tc, self.threads = e, tile.rows, tile.cols, tile.threads
        self.V, self.P = 16 // e, 4 // e
        self.CH = self.tc * e // 16
        self.XW, self.PITCH = min(8, self.CH), self.CH * 16
        self.LOADS = self.tr * self.CH // self.threads
        self.NQ = self.tr // self.V
        self.JB, self.WARPS = self.NQ // 8, self.threads // 32
        self.ITEMS = self.JB * self.CH // self.WARPS
        self.in_aligned, self.out_aligned = in_aligned, out_aligned

    def slot(self, tid, i):  # (tile row, logical chunk, physical chunk index)
        idx = tid + i * self.threads
        row, k = divmod(idx, self.CH)
        return row, k, row * self.CH + (k ^ ((row // self.V) & (self.XW - 1)))

    def item(self, tid, it):  # (chunk q, 4-byte unit)
        lane, warp = tid & 31, tid >> 5
        j, gq = lane & 7, lane >> 3
        item = warp + it * self.WARPS
        return item % self.JB * 8 + j, item // self.JB * 4 + gq

    def read_offsets(self, q, cc, o):  # shared byte offset of element e, for e < V
        c16, within = cc * self.e >> 4, cc * self.e & 15
        a0 = (q * self.V - o) * self.PITCH + ((c16 ^ (q & (self.XW - 1))) << 4) + within
        a1 = (q * self.V - o + (self.tr if q == 0 else 0)) * self.PITCH + ((c16 ^ ((q - 1) & (self.XW - 1))) << 4) + within
        return [(a1 if e < o else a0) + e * self.PITCH for e in range(self.V)]


def emulate_window(w: Window, mem: np.ndarray, args, in_addr: int, out_addr: int, out_len: int, bank_log=None):
    """transpose_window over a batch of 2-d transposes (args as the plan's), thread by thread: ``mem`` holds
    the input at byte address ``in_addr`` (element offsets from there, as the kernel's pointer); returns the
    output bytes (``out_len`` elements at ``out_addr``; unwritten bytes stay 0xA5) and asserts that every
    global load stays within the aligned chunks of the input's elements and no output element is written
    twice. ``bank_log``: a list that collects the shared wavefronts of each warp-wide read."""
    e, V = w.e, w.V
    B, R, C, isb, isr, osb, osc = args
    out = np.full(out_len * e, 0xA5, dtype=np.uint8)
    written = np.zeros(out_len, dtype=np.int32)
    valid_chunks = set()  # aligned 16-byte chunks that hold a byte of an input element
    for b, r in itertools.product(range(B), range(R)):
        first = in_addr + (b * isb + r * isr) * e
        valid_chunks.update(range(first // 16, (first + C * e - 1) // 16 + 1))

    def ld(addr):
        assert addr % 16 == 0 and addr // 16 in valid_chunks, f"load of a chunk outside the input at {addr}"
        return mem[addr:addr + 16]

    for b, r0, c0 in itertools.product(range(B), range(0, R, w.tr), range(0, C, w.tc)):
        nr, nc = min(w.tr, R - r0), min(w.tc, C - c0)
        src = in_addr + (b * isb + r0 * isr + c0) * e
        safe = src & ~15
        smem = np.zeros(w.tr * w.PITCH, dtype=np.uint8)
        for tid in range(w.threads):
            for i in range(w.LOADS):
                row, k, phys = w.slot(tid, i)
                a = src + (row * isr + k * V) * e
                c = a & ~15
                ok0 = row < nr and k * V < nc
                s = 0 if w.in_aligned else a & 15
                if w.in_aligned:
                    assert a % 16 == 0 or not ok0, "in_aligned promised, row off a 16-byte boundary"
                w0 = ld(c if ok0 else safe)
                if w.in_aligned:
                    v = w0
                else:
                    ok1 = ok0 and s != 0 and k * V + (16 - s) // e < nc
                    w1 = ld(c + 16 if ok1 else (c if ok0 else safe))
                    v = np.concatenate([w0, w1])[s:s + 16]
                smem[phys * 16:phys * 16 + 16] = v
        dst = out_addr + (b * osb + r0) * e  # byte address of output row c0 + cc is dst + (c0 + cc) * osc * e
        for it in range(w.ITEMS):
            for p in range(w.P):
                lanes = []
                for tid in range(w.threads):
                    q, unit = w.item(tid, it)
                    cc = unit * w.P + p
                    if cc >= nc:
                        continue
                    row = dst + (c0 + cc) * osc * e
                    o = 0 if w.out_aligned else (row & 15) // e
                    if w.out_aligned:
                        assert row % 16 == 0, "out_aligned promised, row off a 16-byte boundary"
                    offs = w.read_offsets(q, cc, o)
                    lanes.append((tid, offs))
                    vals = [smem[a:a + e] for a in offs]
                    firstr = q * V - o
                    elems = []
                    if (q > 0 or o == 0) and firstr + V <= nr:  # whole chunks; the rest in the edge pass
                        addr = row + firstr * e
                        assert addr % 16 == 0
                        tgt = [(addr - out_addr) // e + i for i in range(V)]
                        elems = list(zip(tgt, vals))
                    for idx, val in elems:
                        assert 0 <= idx < out_len, "store outside the output"
                        written[idx] += 1
                        out[idx * e:idx * e + e] = val
                if bank_log is not None:
                    for wp in range(w.WARPS):
                        warp_lanes = [offs for tid, offs in lanes if tid >> 5 == wp]
                        if warp_lanes:
                            for i in range(V):
                                bank_log.append(wavefronts([offs[i] for offs in warp_lanes], e))
        for tid in range(w.threads):  # the edge pass: each column's head and tail, element by element
            for t in range(tid, w.tc * 2 * V, w.threads):
                cc, slot = divmod(t, 2 * V)
                if cc >= nc:
                    break
                row = dst + (c0 + cc) * osc * e
                o = 0 if w.out_aligned else (row & 15) // e
                head = 0 if o == 0 else min(V - o, nr)
                tail = max(head, (nr + o) // V * V - o)
                tr = slot if slot < V else tail + slot - V
                if tr < (head if slot < V else nr):
                    c16, within = cc * e >> 4, cc * e & 15
                    a = (tr * w.CH + (c16 ^ ((tr // V) & (w.XW - 1)))) * 16 + within
                    idx = (row + tr * e - out_addr) // e
                    assert 0 <= idx < out_len, "store outside the output"
                    written[idx] += 1
                    out[idx * e:idx * e + e] = smem[a:a + e]
    assert written.max(initial=0) <= 1, "an output element written twice"
    return out


def _window_case(rng, e, shape, perm, in_off, out_off, tile=None):
    """A transpose on the window tile: the plan of x.permute(perm) (x contiguous, ``in_off`` elements past a
    16-byte boundary), emulated, against numpy."""
    carrier = CARRIER_NP[e]
    n = math.prod(shape)
    x = rng.integers(0, 2**63, size=n, dtype=np.uint64).astype(carrier).reshape(shape)
    y = np.ascontiguousarray(np.transpose(x, perm))
    xs = torch.empty(shape, device="meta").permute(perm)
    strides = [s for s in xs.stride()]
    in_addr, out_addr = 4096 + in_off * e, 8192 * 64 + out_off * e
    p = R_.make_plan(list(xs.shape), strides, e, in_addr, out_addr, widen=False)
    assert p.kind == "tile" and p.esize == e, p
    mem = np.zeros(in_addr + n * e + 64, dtype=np.uint8)
    mem[in_addr:in_addr + n * e] = x.reshape(-1).view(np.uint8)
    from kernelkit.ops.rearrangement._launch import WINDOW_TILES, best_tile, window_aligned
    tile = tile or best_tile(e, p.args[1], p.args[2], WINDOW_TILES[e])
    w = Window(e, tile, *window_aligned(p))
    log = []
    got = emulate_window(w, mem, p.args, in_addr, out_addr, n, log)
    assert bytes(got) == y.reshape(-1).view(np.uint8).tobytes(), (shape, perm, in_off, out_off, tile)
    return p, log


@pytest.mark.parametrize("e", [1, 2, 4])
def test_window_tile_emulation_transposes_at_any_alignment(e):
    """Odd and prime sides, batches, every start of both pointers within 16 bytes, each candidate tile:
    the window kernel's formulas move every element once, read only the input's own 16-byte chunks, and
    the column reads are conflict-free (2-way for rows of 4 chunks)."""
    from kernelkit.ops.rearrangement._launch import WINDOW_TILES
    rng = np.random.default_rng(20 + e)
    v = 16 // e
    shapes = [((37, 53), (1, 0)), ((3, 67, 45), (0, 2, 1)), ((130, 9), (1, 0)), ((9, 130), (1, 0)),
              ((2, 31, 3 * v), (0, 2, 1))]
    for tile in WINDOW_TILES[e]:
        for (shape, perm), in_off, out_off in itertools.product(shapes, (0, 1, v - 1), (0, 3 % v, v // 2)):
            _, log = _window_case(rng, e, shape, perm, in_off, out_off, tile)
            assert max(log) <= (1 if tile.cols * e // 16 >= 8 else 2), (tile, shape, max(log))


@pytest.mark.parametrize("e", [2, 4])
def test_window_tile_aligned_forms(e):
    """The promises: input rows aligned (width a multiple of 16 bytes, R odd) and output rows aligned
    (R a multiple of 16 bytes, C odd) take the kernels without the shift or the output phase."""
    rng = np.random.default_rng(30 + e)
    v = 16 // e
    p, _ = _window_case(rng, e, (45, 4 * v), (1, 0), 0, 0)
    assert p.in_aligned and not p.out_aligned
    p, _ = _window_case(rng, e, (4 * v, 45), (1, 0), 0, 0)
    assert p.out_aligned and not p.in_aligned
    p, _ = _window_case(rng, e, (3, 4 * v, 45), (0, 2, 1), v, 0)
    assert p.out_aligned and not p.in_aligned


def test_window_tiles_pass_their_check_and_fit_short_sides():
    from kernelkit.ops.rearrangement._launch import WINDOW_TILES, best_tile
    for e, ts in WINDOW_TILES.items():
        for t in ts:
            assert t.check_window(e) is None, (e, t)
    assert "power of two" in TileConfig(64, 48, 256).check_window(4)
    assert "multiple of 64" in TileConfig(32, 64, 256).check_window(2)
    assert "1, 2 or 4" in TileConfig(32, 32, 256).check_window(8)
    assert "at most 8" in TileConfig(128, 64, 64).check_window(4)
    assert best_tile(2, 1000003, 31, WINDOW_TILES[2]) == TileConfig(256, 32, 256)  # 31 columns: a 32-column tile
    assert best_tile(4, 1000003, 31, WINDOW_TILES[4]) == TileConfig(128, 32, 256)
    assert best_tile(2, 12345, 6789, WINDOW_TILES[2]) == TileConfig(128, 64, 256)


# ----------------------------------------------------------------------------- SASS census

def test_shared_memory_instruction_census():
    """The compiled kernels issue the shared accesses the bank models (Window above; Wide in rearrange_helpers)
    were computed for."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.sass import kernel_census
    from kernelkit.runtime import compile_source

    names = {}
    for e in (1, 2, 4, 8):
        for mode in ("shared", "padded", "wide"):
            names[(e, mode, None)] = tile_kernel(mode, e)[0]
        for cfg in BEST_TILES[e]:
            names[(e, "best", cfg)] = tile_kernel("best", e, cfg)[0]
    from kernelkit.ops.rearrangement._launch import WINDOW_ALIGNED, WINDOW_TILES, source_of
    for e, tiles in WINDOW_TILES.items():
        for cfg in tiles:
            for aligned in WINDOW_ALIGNED:
                names[(e, "window", (cfg, aligned))] = tile_kernel("window", e, cfg, aligned)[0]
    cens, mangled = {}, {}
    for src in dict.fromkeys(map(source_of, names.values())):  # the window tile has a file of its own
        b = compile_source(src, tuple(dict.fromkeys(n for n in names.values() if source_of(n) == src)), "sm_90")
        cens.update(kernel_census(b.cubin))
        mangled.update(b.symbols)
    for (e, mode, cfg), name in names.items():
        c = cens[mangled[name]]
        if mode in ("shared", "padded"):  # one element per access, 4 per thread each way
            assert c.shared_store_widths == {8 * e: 4} and c.shared_load_widths == {8 * e: 4}, (name, c)
        elif mode == "window":  # whole 16-byte chunks in (two loads each unless rows are aligned), E-byte reads
            w = Window(e, cfg[0], *cfg[1])
            items = w.ITEMS if w.in_aligned else 1  # the read items' loop is unrolled only for aligned input rows
            assert c.shared_store_widths == {128: w.LOADS}, (name, c.shared_store_widths)
            # (and one more: the edge pass's element reads, in a loop)
            assert c.shared_load_widths == {8 * e: items * w.P * w.V + 1}, (name, c.shared_load_widths)
            assert c.global_load_widths == {128: w.LOADS * (1 if w.in_aligned else 2)}, (name, c.global_load_widths)
            assert c.global_store_widths[128] == items * w.P, (name, c.global_store_widths)
        else:
            w = Wide(e, cfg or WIDE_TILE[e])
            assert c.shared_store_widths == {128: w.LOADS}, (name, c.shared_store_widths)
            assert c.shared_load_widths == {8 * w.U: w.ITEMS * w.V}, (name, c.shared_load_widths)


def test_skew_tiles_pass_their_check_and_fit_short_sides():
    from kernelkit.ops.rearrangement._launch import SKEW_TILES, best_skew_tile
    for e, ts in SKEW_TILES.items():
        for t in ts:
            assert t.check_skew(e) is None, (e, t)
            assert t.skew_rows(e) == t.rows - 16 // e
    assert "2 or 4" in TileConfig(128, 64, 128).check_skew(1)
    assert "multiple of 64" in TileConfig(96, 64, 128).check_skew(2)
    assert "takes 128 threads" in TileConfig(128, 64, 256).check_skew(2)
    assert best_skew_tile(2, 12345, 6789) == TileConfig(256, 32, 128)
    assert best_skew_tile(2, 197, 768) == TileConfig(256, 32, 128)  # 197 of 248 rows: long runs win
    assert best_skew_tile(4, 67, 9797) == TileConfig(32, 128, 256)  # 67 rows: 3 steps of 28, not 1 of 124
    assert best_skew_tile(2, 1000003, 31) == TileConfig(256, 32, 128)  # 31 columns: a 32-column tile
    assert best_skew_tile(4, 1000003, 31) == TileConfig(128, 32, 256)
    assert best_skew_tile(4, 40, 1000) == TileConfig(64, 64, 256)  # 40 rows: one step of 60, not 124


def test_skew_tile_instruction_census():
    """transpose_skew's accesses, as its comment claims: V 16-byte loads a thread (twice that for shifted input
    rows), V STS.128 of the transposed block, two LDS.128 and one STG.128 an output chunk (the item loop
    unrolled by 2), no element-wide shared access."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.sass import kernel_census
    from kernelkit.ops.rearrangement._launch import SKEW_TILES, WINDOW_SOURCE
    from kernelkit.runtime import compile_source

    names = {(e, t, ia): tile_kernel("skew", e, t, (ia, False))[0]
             for e, ts in SKEW_TILES.items() for t in ts for ia in (False, True)}
    b = compile_source(WINDOW_SOURCE, tuple(names.values()), "sm_90")
    cens = kernel_census(b.cubin)
    for (e, t, ia), name in names.items():
        c, v = cens[b.symbols[name]], 16 // e
        assert c.global_load_widths == {128: v * (1 if ia else 2)}, (name, c.global_load_widths)
        assert c.shared_store_widths == {128: v}, (name, c.shared_store_widths)
        assert c.shared_load_widths == {128: 2 * 2}, (name, c.shared_load_widths)
        assert c.global_store_widths[128] == 2, (name, c.global_store_widths)
