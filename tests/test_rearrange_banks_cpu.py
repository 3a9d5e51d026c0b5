"""Rearrangement on the CPU, the shared-memory tiles: the bank mapping of every shared access of the
padded and wide tiles (rearrange_helpers.wavefronts), the wide tile's lane-by-lane transpose with its byte
permutes, the tile configurations a tuner may pass, and the choice of tile.

The emulators mirror csrc/rearrangement/transpose.cu line by line (thread -> address formulas, the XOR swizzle,
the byte permutes), so a wrong formula fails here, before any GPU time is spent.
"""
import itertools

import numpy as np
import pytest

from kernelkit.ops.rearrangement._launch import BEST_TILES, WIDE_TILE, TileConfig, best_tile, tile_kernel
from rearrange_helpers import CARRIER_NP, Wide, wavefronts


# ----------------------------------------------------------------------------- banks

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



def test_best_tile_fits_the_matrix():
    assert best_tile(2, 16384, 16384) == BEST_TILES[2][0] and best_tile(4, 16384, 16384) == BEST_TILES[4][0]
    assert 64 % best_tile(2, 64, 224 * 224).rows == 0  # NCHW -> NHWC, 64 channels: no half-empty tiles
    assert 64 % best_tile(2, 224 * 224, 64).cols == 0

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
