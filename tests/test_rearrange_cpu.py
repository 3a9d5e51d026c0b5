"""Rearrangement on the CPU: the planner against torch, the kernels' index maths emulated in numpy
(bank mapping of every shared-memory access included), and the SASS census of the shared accesses.

The emulators mirror csrc/rearrangement/transpose.cu line by line (thread -> address formulas, the XOR swizzle, the
byte permutes), so a wrong formula fails here, before any GPU time is spent.
"""
import itertools
import math
import random

import numpy as np
import pytest
import torch

from kernelkit.ops.rearrangement import _rearrange as R_
from kernelkit.ops.rearrangement._launch import BEST_TILES, WIDE_TILE, TileConfig, best_tile, tile_kernel

CARRIER_NP = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: None}


# ----------------------------------------------------------------------------- emulation helpers

def _bytes_of(t: torch.Tensor) -> np.ndarray:
    """The whole storage of t as bytes."""
    return np.frombuffer(bytes(t.untyped_storage()), dtype=np.uint8).copy()


def _elems(buf: np.ndarray, byte0: int, idx: np.ndarray, e: int) -> np.ndarray:
    """Elements idx (in e-byte units from byte0) of a byte buffer, as an (n, e) byte array."""
    starts = byte0 + idx.astype(np.int64).reshape(-1, 1) * e
    return buf[starts + np.arange(e)]


def emulate_plan(p: R_.Plan, inbuf: np.ndarray, in_byte0: int, nbytes_out: int) -> np.ndarray:
    """What the planned launch writes: the semantics of the tile kernels and of the gather."""
    e = p.esize
    out = np.zeros(nbytes_out, dtype=np.uint8)
    if p.kind == "tile":
        B, R, C, isb, isr, osb, osc = p.args
        b, r, c = np.meshgrid(np.arange(B), np.arange(R), np.arange(C), indexing="ij")
        src = (b * isb + r * isr + c).ravel()
        dst = (b * osb + c * osc + r).ravel()
    else:
        n, nd = p.args[:2]
        sizes, strides = p.args[2:8], p.args[8:14]
        rest = np.arange(n, dtype=np.int64)
        src = np.zeros(n, dtype=np.int64)
        for d in range(nd):
            src += (rest % sizes[d]) * strides[d]
            rest //= sizes[d]
        dst = np.arange(n)
    out[(dst.reshape(-1, 1) * e + np.arange(e)).ravel()] = _elems(inbuf, in_byte0, src, e).ravel()
    return out


def _random_view(rng: random.Random, dtype: torch.dtype) -> torch.Tensor:
    """A random view: odd sizes and 1s, an element offset, sometimes strided or transposed."""
    nd = rng.randint(1, 5)
    shape = [rng.choice([1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 32]) for _ in range(nd)]
    while math.prod(shape) > 6000:  # keep the numpy emulation quick
        shape[shape.index(max(shape))] //= 2
    n, e = math.prod(shape), dtype.itemsize
    base = torch.randint(0, 256, ((2 * n + 8) * e,), dtype=torch.uint8).view(dtype)
    off = rng.choice([0, 0, 1, 3])
    if rng.random() < 0.3:
        x = base[off:off + 2 * n].view(*shape[:-1], 2 * shape[-1])[..., ::2]
    else:
        x = base[off:off + n].view(shape)
    if nd >= 2 and rng.random() < 0.3:
        x = x.transpose(0, -1)
    return x


# ----------------------------------------------------------------------------- planner vs torch

@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("widen,tiles", [(True, True), (False, False), (True, False)])
def test_plans_compute_the_permutation(dtype, widen, tiles):
    rng = random.Random(f"{dtype}-{widen}-{tiles}")  # a str seed is stable across runs
    for _ in range(60):
        x = _random_view(rng, dtype)
        perm = list(range(x.dim()))
        rng.shuffle(perm)
        y = x.permute(perm)
        ref = y.clone(memory_format=torch.contiguous_format)  # own storage, exactly numel
        e0 = x.element_size()
        in_ptr, out_ptr = 4096 + x.storage_offset() * e0, 4096 + rng.choice([0, 0, 2, 8]) * e0
        p = R_.make_plan(y.shape, y.stride(), e0, in_ptr, out_ptr, widen=widen, tiles=tiles)
        got = emulate_plan(p, _bytes_of(x), x.storage_offset() * e0, ref.numel() * e0)
        assert bytes(got) == bytes(ref.untyped_storage()), (x.shape, x.stride(), perm, p)
        if not widen:
            assert p.esize == e0
        if not tiles:
            assert p.kind == "gather"


def test_deployment_permutations_take_the_fast_paths():
    def plan(x, perm, e=2, out_ptr=0):
        y = x.permute(perm)
        return R_.make_plan(y.shape, y.stride(), e, 0, out_ptr)

    nchw = torch.empty(64, 64, 224, 224, device="meta")
    p = plan(nchw, (0, 2, 3, 1))  # NCHW -> NHWC: a batch of (C, HW) transposes
    assert p.kind == "tile" and p.args == (64, 64, 224 * 224, 64 * 224 * 224, 224 * 224, 224 * 224 * 64, 64)
    assert p.wide_ok
    p = plan(torch.empty(64, 224, 224, 64, device="meta"), (0, 3, 1, 2))  # NHWC -> NCHW
    assert p.kind == "tile" and p.args[:3] == (64, 224 * 224, 64)
    p = plan(torch.empty(16384, 16384, device="meta"), (1, 0), e=4)
    assert p.kind == "tile" and p.args == (1, 16384, 16384, 0, 16384, 0, 16384) and p.wide_ok
    p = plan(torch.empty(8, 128, 768, device="meta"), (1, 0, 2))  # batch axis moved: 16-byte rows
    assert p.kind == "gather" and p.esize == 16 and p.args[1] == 3
    p = plan(torch.empty(5, 7, 3, device="meta"), (2, 1, 0), e=4)  # reversal: batch in the middle
    assert p.kind == "tile" and p.args == (7, 5, 3, 3, 21, 5, 35)
    p = plan(torch.empty(100, 50, 2, device="meta"), (1, 0, 2), e=2)  # fp16 pairs move as 4-byte words
    assert p.kind == "tile" and p.esize == 4
    p = plan(torch.empty(9, 13, device="meta"), (1, 0), e=2, out_ptr=2)  # odd shape: padded fallback
    assert p.kind == "tile" and not p.wide_ok
    assert plan(torch.empty(3, 4, device="meta"), (0, 1), e=2).kind == "gather"  # identity: a copy


def test_more_than_six_unmergeable_dims_is_a_clear_error():
    x = torch.empty([2] * 8, device="meta")
    y = x.permute(7, 5, 3, 1, 6, 4, 2, 0)
    with pytest.raises(ValueError, match="up to 6"):
        R_.make_plan(y.shape, y.stride(), 4, 0, 0)


# ----------------------------------------------------------------------------- banks

def wavefronts(addrs, width: int) -> int:
    """Shared-memory wavefronts of one warp instruction: lanes split into phases of 128 bytes (1 for
    <= 4-byte accesses, 2 half-warps for 8, 4 quarter-warps for 16); a phase costs as many wavefronts
    as the most distinct 4-byte words any bank must deliver."""
    lanes_per_phase = 32 if width <= 4 else 128 // width
    total = 0
    for ph in range(0, 32, lanes_per_phase):
        banks: dict[int, set] = {}
        for a in addrs[ph:ph + lanes_per_phase]:
            words = range(a // 4, (a + width - 1) // 4 + 1) if width >= 4 else (a // 4,)
            for w in words:
                banks.setdefault(w % 32, set()).add(w)
        total += max((len(s) for s in banks.values()), default=0)
    return total


def tile_accesses(e: int, pad: int):
    """(kind, addresses) of each warp instruction of transpose_tile<T_e, pad> (pad in elements)."""
    row = (32 + pad) * e
    for ty in range(8):  # warp ty: lanes tx = 0..31
        for i in range(0, 32, 8):
            yield "st", [(ty + i) * row + tx * e for tx in range(32)]
            yield "ld", [tx * row + (ty + i) * e for tx in range(32)]


@pytest.mark.parametrize("e", [1, 2, 4, 8])
def test_padded_tile_is_conflict_free_and_unpadded_is_not(e):
    phases = 1 if e <= 4 else 2
    pad = int(tile_kernel("padded", e)[0].split(",")[1].strip(" >"))
    assert pad * e % 4 == 0 and (32 + pad) * e // max(4, e) % 2 == 1  # an odd number of bank units a row
    for kind, addrs in tile_accesses(e, pad):
        assert wavefronts(addrs, e) == phases, (kind, e)
    worst = max(wavefronts(a, e) for k, a in tile_accesses(e, 0) if k == "ld")
    assert worst == {1: 8, 2: 16, 4: 32, 8: 32}[e]  # the unpadded tile's 32-way conflict, at 4 bytes
    if e < 4:  # a one-element pad is not enough below 4 bytes
        assert max(wavefronts(a, e) for k, a in tile_accesses(e, 1) if k == "ld") == 2


class Wide:
    """transpose_wide<T_e, TR, TC, THREADS>'s constants and per-thread address formulas."""

    def __init__(self, e, tile: TileConfig):
        tr, tc, threads = tile.rows, tile.cols, tile.threads
        self.e, self.tr, self.tc, self.threads = e, tr, tc, threads
        self.V, self.U = 16 // e, max(4, e)
        self.P = self.U // e
        self.CH = tc * e // 16
        self.LOADS = tr * self.CH // threads
        self.JB, self.CB, self.WARPS = tr // (8 * self.V), tc // (4 * self.P), threads // 32
        self.ITEMS = self.JB * self.CB // self.WARPS

    def store_slot(self, tid, i):  # (tile row, chunk, physical chunk index)
        idx = tid + i * self.threads
        row, ch = divmod(idx, self.CH)
        return row, ch, row * self.CH + (ch ^ ((row // self.V) & 7))

    def read(self, tid, it, k):  # (byte address of unit k, row0, col)
        lane, warp = tid & 31, tid >> 5
        j, gq = lane & 7, lane >> 3
        item = warp + it * self.WARPS
        row0 = (item % self.JB * 8 + j) * self.V
        byte = (item // self.JB * 4 + gq) * self.P * self.e
        base = (((byte >> 4) ^ j) << 4) + (byte & 15)
        return base + (row0 + k) * (self.CH * 16), row0, (item // self.JB * 4 + gq) * self.P


CONFIGS = sorted(set(WIDE_TILE.items()) | {(e, c) for e, cs in BEST_TILES.items() for c in cs})


@pytest.mark.parametrize("e,cfg", CONFIGS)
def test_wide_tile_accesses_are_conflict_free(e, cfg):
    w = Wide(e, cfg)
    for warp in range(w.WARPS):
        lanes = range(warp * 32, warp * 32 + 32)
        for i in range(w.LOADS):
            assert wavefronts([w.store_slot(t, i)[2] * 16 for t in lanes], 16) == 4
        for it in range(w.ITEMS):
            for k in range(w.V):
                assert wavefronts([w.read(t, it, k)[0] for t in lanes], w.U) == (2 if w.U == 8 else 1)


def byte_perm(x: int, y: int, s: int) -> int:
    """CUDA's __byte_perm: result byte i is byte (s >> 4i) & 7 of the 8-byte value y:x."""
    v = (y << 32) | x
    return sum(((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def pack_column(e, w, p):
    """csrc pack_column: 16 output bytes from the V units w (ints of U bytes)."""
    if e == 8:
        words = [w[0] & 0xFFFFFFFF, w[0] >> 32, w[1] & 0xFFFFFFFF, w[1] >> 32]
    elif e == 4:
        words = list(w[:4])
    elif e == 2:
        sel = 0x5410 if p == 0 else 0x7632
        words = [byte_perm(w[2 * q], w[2 * q + 1], sel) for q in range(4)]
    else:
        lo, hi = (0x5140 if p < 2 else 0x7362), (0x7632 if p & 1 else 0x5410)
        words = [byte_perm(byte_perm(w[4 * m], w[4 * m + 1], lo), byte_perm(w[4 * m + 2], w[4 * m + 3], lo), hi)
                 for m in range(4)]
    return b"".join(int(x).to_bytes(4, "little") for x in words)


def emulate_wide(e, cfg, x: np.ndarray) -> np.ndarray:
    """transpose_wide on one contiguous (R, C) matrix of e-byte elements, tile by tile, lane by lane."""
    w = Wide(e, cfg)
    R, C = x.shape
    xb = x.view(np.uint8).reshape(R, C * e)
    out = np.zeros((C, R * e), dtype=np.uint8)
    for r0, c0 in itertools.product(range(0, R, w.tr), range(0, C, w.tc)):
        smem = np.zeros(w.tr * w.CH * 16, dtype=np.uint8)
        for t in range(w.threads):
            for i in range(w.LOADS):
                row, ch, phys = w.store_slot(t, i)
                r, c = r0 + row, c0 + ch * w.V
                if not (r < R and c < C):
                    r, c = r0, c0  # the kernel's stand-in load: never written out
                smem[phys * 16:phys * 16 + 16] = xb[r, c * e:c * e + 16]
        for t in range(w.threads):
            for it in range(w.ITEMS):
                units = []
                for k in range(w.V):
                    a, row0, col = w.read(t, it, k)
                    units.append(int.from_bytes(smem[a:a + w.U].tobytes(), "little"))
                for p in range(w.P):
                    c, r = c0 + col + p, r0 + row0
                    if c < C and r < R:
                        out[c, r * e:r * e + 16] = np.frombuffer(pack_column(e, units, p), dtype=np.uint8)
    return out.view(x.dtype).reshape(C, R)


@pytest.mark.parametrize("e", [1, 2, 4, 8])
def test_wide_tile_emulation_transposes(e):
    cfgs = {WIDE_TILE[e], *BEST_TILES[e]}
    v = 16 // e
    rng = np.random.default_rng(e)
    for cfg in cfgs:
        for R, C in ((cfg.rows, cfg.cols), (v * 3, v * 5), (cfg.rows + v, 2 * cfg.cols - v)):
            x = rng.integers(0, 2**63, size=(R, C), dtype=np.uint64).astype(CARRIER_NP[e])
            np.testing.assert_array_equal(emulate_wide(e, cfg, x), x.T)


# ----------------------------------------------------------------------------- SASS census

def test_shared_memory_instruction_census():
    """The compiled kernels issue the shared accesses the bank model above was computed for."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.sass import kernel_census
    from kernelkit.runtime import compile_source

    names = {}
    for e in (1, 2, 4, 8):
        for mode in ("shared", "padded", "wide"):
            names[(e, mode, None)] = tile_kernel(mode, e)[0]
        for cfg in BEST_TILES[e]:
            names[(e, "best", cfg)] = tile_kernel("best", e, cfg)[0]
    from kernelkit.ops.rearrangement._launch import WINDOW_ALIGNED, WINDOW_TILES
    for e, tiles in WINDOW_TILES.items():
        for cfg in tiles:
            for aligned in WINDOW_ALIGNED:
                names[(e, "window", (cfg, aligned))] = tile_kernel("window", e, cfg, aligned)[0]
    b = compile_source("rearrangement/transpose.cu", tuple(dict.fromkeys(names.values())), "sm_90")
    cens = kernel_census(b.cubin)
    for (e, mode, cfg), name in names.items():
        c = cens[b.mangled(name)]
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


def test_best_tile_fits_the_matrix():
    assert best_tile(2, 16384, 16384) == BEST_TILES[2][0] and best_tile(4, 16384, 16384) == BEST_TILES[4][0]
    assert 64 % best_tile(2, 64, 224 * 224).rows == 0  # NCHW -> NHWC, 64 channels: no half-empty tiles
    assert 64 % best_tile(2, 224 * 224, 64).cols == 0


# ----------------------------------------------------------------------------- skinny kernels

def elem_bits(e, v, m):
    """csrc elem_bits: element m of a run of 16-byte vectors v (lists of 4 words)."""
    x = v[m // (16 // e)]
    byte = (m % (16 // e)) * e
    if e == 8:
        return x[byte // 4] | (x[byte // 4 + 1] << 32)
    return (x[byte // 4] >> (8 * (byte % 4))) & ((1 << (8 * e)) - 1)


def build_vec(e, bits_of):
    """csrc build_vec: four words from the bits of 16/e elements."""
    w = [0, 0, 0, 0]
    for i in range(16 // e):
        b = bits_of(i)
        if e == 8:
            w[2 * i], w[2 * i + 1] = b & 0xFFFFFFFF, b >> 32
        else:
            w[i * e // 4] |= b << (8 * (i * e % 4))
    return w


def emulate_skinny(p: R_.Plan, inbuf: np.ndarray, nbytes_out: int) -> np.ndarray:
    """transpose_skinny_rows / _cols, thread by thread (element offsets from byte 0 of inbuf)."""
    e, (side, n) = p.esize, p.skinny
    B, R, C, isb, isr, osb, osc = p.args
    V = 16 // e
    out = np.zeros(nbytes_out, dtype=np.uint8)

    def load(elem):  # a 16-byte vector as 4 words
        return [int.from_bytes(inbuf[elem * e + 4 * k: elem * e + 4 * k + 4].tobytes(), "little") for k in range(4)]

    def store(elem, w):
        out[elem * e: elem * e + 16] = np.frombuffer(b"".join(x.to_bytes(4, "little") for x in w), dtype=np.uint8)

    for b in range(B):
        for j in range((C if side == "rows" else R) // V):
            if side == "rows":
                v = [load(b * isb + r * isr + j * V) for r in range(n)]
                for q in range(n):
                    store(b * osb + j * V * n + q * V,
                          build_vec(e, lambda i: elem_bits(e, v[(q * V + i) % n:], (q * V + i) // n)))
            else:
                v = [load(b * isb + j * V * n + k * V) for k in range(n)]
                for cc in range(n):
                    store(b * osb + cc * osc + j * V, build_vec(e, lambda i: elem_bits(e, v, i * n + cc)))
    return out


@pytest.mark.parametrize("e", [1, 2, 4, 8])
def test_skinny_emulation_transposes(e):
    dtype = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[e]
    v = 16 // e
    seen = set()
    for shape, perm in [((2, 3, 5 * v), (0, 2, 1)), ((4, v * 2), (1, 0)), ((3, 7 * v, 2), (0, 2, 1)),
                        ((5 * v, 4), (1, 0)), ((2, 8, v), (0, 2, 1)), ((v, 6), (1, 0))]:
        x = torch.randint(0, 100, shape, dtype=dtype)
        y = x.permute(perm)
        p = R_.make_plan(y.shape, y.stride(), e, 0, 0)
        assert p.kind == "tile" and p.skinny, (shape, p)
        seen.add(p.skinny[0])
        got = emulate_skinny(p, _bytes_of(x), y.numel() * e)
        assert bytes(got) == bytes(y.clone(memory_format=torch.contiguous_format).untyped_storage()), (shape, p)
    assert seen == {"rows", "cols"}


def test_rgb_images_take_the_skinny_path():
    x = torch.empty(64, 3, 224, 224, device="meta")
    for perm, side in (((0, 2, 3, 1), "rows"),):
        y = x.permute(perm)
        assert R_.make_plan(y.shape, y.stride(), 2, 0, 0).skinny == (side, 3)
    z = torch.empty(64, 224, 224, 3, device="meta").permute(0, 3, 1, 2)
    assert R_.make_plan(z.shape, z.stride(), 2, 0, 0).skinny == ("cols", 3)


# ----------------------------------------------------------------------------- tile configurations

# Tiles a tuner may pass as config= (the rearrangement benchmark's sweep), beside the rungs' own.
SWEPT = {4: [(32, 32, 128), (64, 128, 256), (128, 64, 256), (64, 64, 128), (32, 128, 256), (64, 128, 512)],
         2: [(64, 64, 256), (64, 128, 256), (128, 64, 128), (64, 128, 128)],
         1: [(128, 256, 512), (256, 128, 256), (128, 128, 128)],
         8: [(16, 64, 128), (64, 32, 256), (32, 32, 128), (64, 64, 256), (16, 128, 256)]}


def test_tile_config_check_accepts_the_rungs_tiles_and_refuses_broken_ones():
    for e, t in WIDE_TILE.items():
        assert t.check(e) is None, (e, t)
    for e, ts in BEST_TILES.items():
        for t in ts:
            assert t.check(e) is None, (e, t)
    assert "multiple of 32" in TileConfig(64, 64, 100).check(4)
    assert "cols a multiple of 32" in TileConfig(64, 48, 256).check(4)  # rows of 192 bytes: not whole 128-byte groups
    assert "rows a multiple of 32" in TileConfig(16, 64, 256).check(4)  # 16 rows: fewer than 8 groups of 4
    assert "48 KB" in TileConfig(256, 256, 256).check(4)
    assert "evenly" in TileConfig(32, 32, 1024).check(4)  # 256 vectors for 1024 threads


@pytest.mark.parametrize("e", [1, 2, 4, 8])
def test_tiles_the_check_accepts_transpose_without_conflicts(e):
    """Every swept tile passes the check, and the kernel's formulas hold for it: conflict-free shared
    accesses and a correct transpose (so config= cannot launch a tile the kernel gets wrong)."""
    v = 16 // e
    rng = np.random.default_rng(10 + e)
    for cfg in map(lambda t: TileConfig(*t), SWEPT[e]):
        assert cfg.check(e) is None, cfg
        w = Wide(e, cfg)
        for warp in range(w.WARPS):
            lanes = range(warp * 32, warp * 32 + 32)
            for i in range(w.LOADS):
                assert wavefronts([w.store_slot(t, i)[2] * 16 for t in lanes], 16) == 4
        x = rng.integers(0, 2**63, size=(cfg.rows + v, cfg.cols + 2 * v), dtype=np.uint64).astype(CARRIER_NP[e])
        np.testing.assert_array_equal(emulate_wide(e, cfg, x), x.T)


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
