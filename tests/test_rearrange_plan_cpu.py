"""Rearrangement on the CPU, the planner: plans (merged dims, tiles or gather, widened elements, the skinny
kernels) against torch, the tile and gather kernels' semantics and the skinny kernels' index maths emulated
in numpy.

The emulators mirror csrc/rearrangement/transpose.cu (thread -> address formulas, the byte shuffles), so a
wrong formula fails here, before any GPU time is spent. The bank models: test_rearrange_banks_cpu.py; the
window tile: test_rearrange_window_cpu.py.
"""
import math
import random

import numpy as np
import pytest
import torch

from kernelkit.ops.rearrangement import _rearrange as R_


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
