"""scaled_matmul on a GPU: every rung, operand-type pair, output dtype and accumulation against a float64
reference of the dequantized product (fp8 values are exact in float64), and against torch._scaled_mm;
odd M, odd multiples of 16 for N and K, scales != 1, bias, NaN-poisoned, misaligned and strided outputs,
offset operands, the fallback, argument errors.

Tolerance: |out - ref| <= 2^-p |ref| + tol_acc * (|a| @ |b|) * scale_a * scale_b, p the output's
mantissa bits (one rounding), tol_acc from the sums: K * 2^-24 for fp32 sums of K exact products
(dequant: tf32 products of fp8 values are exact), plus for the fp8 tensor cores, whose sums keep about
13 bits, up to 2^-13 of the magnitude lost on each K step of 32 that accumulates on them: 4 steps (one
128-deep slice) with the promoted accumulation, K / 32 with the fast one."""
import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import Fp8Tile, fp8_fallback_reason

pytestmark = pytest.mark.gpu

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
PAIRS = [(E4M3, E4M3), (E4M3, E5M2), (E5M2, E4M3)]
OUTS = [BF16, F16, F32]
MANTISSA = {BF16: 8, F16: 11, F32: 24}
SHAPES = [(1, 16, 16), (17, 48, 112), (129, 272, 208), (131, 144, 1040)]  # 1040: nine K tiles, rings wrap


def hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def operands(m, n, k, da, db, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(m, k, device="cuda", generator=g) * 2).to(da)
    b = (torch.randn(n, k, device="cuda", generator=g) * 2).to(db).t()
    sa = torch.tensor(0.75, device="cuda")
    sb = torch.tensor([1.25], device="cuda")
    return a, b, sa, sb


def reference(a, b, sa, sb, bias):
    a64, b64 = a.double(), b.double()
    s = sa.double().item() * sb.double().item()
    ref = a64 @ b64 * s
    if bias is not None:
        ref = ref + bias.double()
    return ref, (a64.abs() @ b64.abs()) * s


def tol_acc(rung, k, fast):
    fp32 = k * 2.0**-24
    if rung == "dequant":
        return fp32
    return fp32 + (max(k, 32) / 32 if fast else 4) * 2.0**-13


def bound_of(out, a, b, sa, sb, bias, rung, fast):
    ref, mag = reference(a, b, sa, sb, bias)
    return ref, 2.0 ** -MANTISSA[out.dtype] * ref.abs() + tol_acc(rung, a.shape[1], fast) * mag + 1e-30


def check(out, a, b, sa, sb, bias, rung, fast, what="", strict=True):
    """The worst error over the bound; asserted <= 1 unless ``strict`` is False (torch's own result)."""
    ref, bound = bound_of(out, a, b, sa, sb, bias, rung, fast)
    o = out.double()
    assert not torch.isnan(o).any(), f"{what}: NaN in the result"
    err = (o - ref).abs()
    worst = (err / bound).max().item()
    assert worst <= 1.0 or not strict, f"{what}: error {worst:.3g} x the bound (max abs err {err.max().item():.3g})"
    return worst


def agree_with_torch(out, a, b, sa, sb, bias, fast, what):
    """torch._scaled_mm on the same inputs: its error over our bound printed, and the two results within
    twice the bound of each other."""
    t = torch._scaled_mm(a, b, sa.reshape(()), sb.reshape(()), bias=bias, out_dtype=out.dtype, use_fast_accum=fast)
    theirs = check(t, a, b, sa, sb, bias, "ws", fast, what, strict=False)
    _, bound = bound_of(out, a, b, sa, sb, bias, "ws", fast)
    apart = ((out.double() - t.double()).abs() / bound).max().item()
    print(f"{what}: torch's worst error / bound {theirs:.3g}, kernelkit - torch / bound {apart:.3g}")
    assert apart <= 2.0, f"{what}: kernelkit and torch._scaled_mm {apart:.3g} bounds apart"


RUNGS = ["dequant", "tma_wgmma", "ws", None]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("out_dtype", OUTS)
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{str(p[0])[13:]}x{str(p[1])[13:]}")
@pytest.mark.parametrize("rung", RUNGS)
def test_against_float64(rung, pair, out_dtype, fast):
    if rung in ("tma_wgmma", "ws") and not hopper():
        pytest.skip("the Hopper rungs run on compute capability 9.0")
    for i, (m, n, k) in enumerate(SHAPES):
        a, b, sa, sb = operands(m, n, k, *pair, seed=i)
        bias = None if out_dtype == F32 else torch.randn(n, device="cuda").to(out_dtype)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
        got = kernelkit.scaled_matmul(a, b, sa, sb, out_dtype=out_dtype, bias=bias, out=out, use_fast_accum=fast,
                                      variant=rung)
        assert got is out
        check(out, a, b, sa, sb, bias, rung or "ws", fast, f"{rung} {m}x{n}x{k}")
        if hopper():
            agree_with_torch(out, a, b, sa, sb, bias, fast, f"{rung} {m}x{n}x{k} {out_dtype} fast={fast}")


@pytest.mark.parametrize("rung,tile", [("ws", Fp8Tile(256, 4)), ("tma_wgmma", Fp8Tile(256, 4)),
                                       ("ws", Fp8Tile(192, 5)), ("tma_wgmma", Fp8Tile(192, 3)),
                                       ("ws", Fp8Tile(128, 3)), ("tma_wgmma", Fp8Tile(128, 2))])
def test_tiles_and_torch(rung, tile):
    """The wide tile and short rings through config=, at a size with full and partial tiles, and
    agreement with torch._scaled_mm on the same inputs (both within the bound of each other)."""
    if not hopper():
        pytest.skip("the Hopper rungs run on compute capability 9.0")
    fast = tile.block_n == 256
    m, n, k = 1031, 784, 2064
    a, b, sa, sb = operands(m, n, k, E4M3, E4M3, seed=7)
    bias = torch.randn(n, device="cuda").to(BF16)
    out = kernelkit.scaled_matmul(a, b, sa, sb, bias=bias, use_fast_accum=fast, variant=rung, config=tile)
    check(out, a, b, sa, sb, bias, rung, fast, f"{rung} {tile}")
    agree_with_torch(out, a, b, sa, sb, bias, fast, f"{rung} {tile} {m}x{n}x{k}")


def test_best_runs_hopper_and_large_square_matches_torch():
    if not hopper():
        pytest.skip("compute capability 9.0")
    m = n = k = 2048
    a, b, sa, sb = operands(m, n, k, E4M3, E4M3, seed=3)
    assert fp8_fallback_reason(a, b) is None
    for fast in (False, True):
        out = kernelkit.scaled_matmul(a, b, sa, sb, use_fast_accum=fast)
        ours = check(out, a, b, sa, sb, None, "ws", fast, f"2048^3 fast={fast}")
        print(f"2048^3 fast={fast}: kernelkit's worst error / bound {ours:.3g}")
        agree_with_torch(out, a, b, sa, sb, None, fast, f"2048^3 fast={fast}")


@pytest.mark.parametrize("rung", ["ws", "tma_wgmma", "dequant"])
def test_views_misaligned_and_strided(rung):
    """Offset operands (16-byte aligned: the TMA reads them; 8 bytes off: dequant does), a misaligned
    out (element stores) and a strided out (rows wider than N)."""
    if rung != "dequant" and not hopper():
        pytest.skip("compute capability 9.0")
    m, n, k = 67, 80, 176
    abuf = (torch.randn(m, k + 48, device="cuda") * 2).to(E4M3)
    bbuf = (torch.randn(n, k + 48, device="cuda") * 2).to(E4M3)
    sa, sb = torch.tensor(2.0, device="cuda"), torch.tensor(0.5, device="cuda")
    a, b = abuf[:, 16:16 + k], bbuf[:, 32:32 + k].t()  # rows k + 48 bytes apart: 224, a multiple of 16
    assert not hopper() or fp8_fallback_reason(a, b) is None
    for out in (torch.full((m * n + 1,), float("nan"), device="cuda", dtype=BF16)[1:].view(m, n),
                torch.full((m, n + 8), float("nan"), device="cuda", dtype=BF16)[:, :n]):
        kernelkit.scaled_matmul(a, b, sa, sb, out=out, variant=rung)
        check(out, a, b, sa, sb, None, rung, False, f"{rung} out strides {out.stride()}")
    a8 = abuf[:, 8:8 + k]  # 8 bytes off the 16-byte grid
    if hopper():
        assert "16-byte boundary" in fp8_fallback_reason(a8, b)
    out = kernelkit.scaled_matmul(a8, b, sa, sb, variant=rung)
    check(out, a8, b, sa, sb, None, "dequant", False, f"{rung} misaligned a")


def test_empty_and_zero_k():
    a, b, sa, sb = operands(0, 32, 64, E4M3, E4M3)
    assert kernelkit.scaled_matmul(a, b, sa, sb).shape == (0, 32)
    a = torch.empty(5, 0, device="cuda", dtype=E4M3)
    b = torch.empty(16, 0, device="cuda", dtype=E4M3).t()
    out = kernelkit.scaled_matmul(a, b, sa, sb, out_dtype=F32)
    assert out.shape == (5, 16) and (out == 0).all()


def test_argument_errors_name_the_argument():
    a, b, sa, sb = operands(32, 48, 64, E4M3, E4M3)
    bf = torch.zeros(48, device="cuda", dtype=BF16)
    bad = [
        (dict(a=a.to(BF16)), TypeError, "a must have dtype"),
        (dict(b=b.to(E5M2), a=a.to(E5M2)), TypeError, "both float8_e5m2"),
        (dict(scale_a=sa.double()), TypeError, "scale_a must have dtype float32"),
        (dict(scale_b=torch.ones(48, device="cuda")), ValueError, "scale_b must hold one float32 element"),
        (dict(scale_a=sa.cpu()), ValueError, "scale_a must be a CUDA tensor"),
        (dict(out_dtype=torch.int32), TypeError, "out_dtype"),
        (dict(a=a[0]), ValueError, "matrices"),
        (dict(b=b[:32]), ValueError, "cannot be multiplied"),
        (dict(a=a[:, :40].contiguous(), b=b[:40]), ValueError, "K = 40 must be a multiple of 16"),
        (dict(b=operands(32, 40, 64, E4M3, E4M3)[1]), ValueError, "N = 40 must be a multiple of 16"),
        (dict(a=a.t().contiguous().t()), ValueError, "a must be row-major"),
        (dict(b=b.contiguous()), ValueError, "b must be column-major"),
        (dict(bias=bf, out_dtype=F32), ValueError, "bias with out_dtype float32"),
        (dict(bias=bf.half()), TypeError, "bias must have dtype bfloat16"),
        (dict(bias=bf[:32]), ValueError, "bias must have N = 48"),
        (dict(out=torch.empty(32, 48, device="cuda", dtype=F16)), TypeError, "out has dtype"),
        (dict(out=torch.empty(48, 32, device="cuda", dtype=BF16)), ValueError, "out has shape"),
        (dict(variant="nope"), ValueError, "unknown variant"),
        (dict(variant="ws", config=(128, 4)), TypeError, "Fp8Tile"),
        (dict(variant="dequant", config=Fp8Tile(128, 4)), ValueError, "tma_wgmma and ws"),
        (dict(variant="ws", config=Fp8Tile(256, 4)), ValueError, "192 at most"),
    ]
    base = dict(a=a, b=b, scale_a=sa, scale_b=sb)
    for change, exc, words in bad:
        kw = {**base, **change}
        with pytest.raises(exc, match=words):
            kernelkit.scaled_matmul(kw.pop("a"), kw.pop("b"), kw.pop("scale_a"), kw.pop("scale_b"), **kw)
