"""matmul and linear on the GPU: every rung x dtype (tf32 included) against float64, at 1x1x1, primes,
M = 1, tall and skinny, batched (with broadcast), both layouts of each operand, offset views, and
poisoned outputs; then out=, config=, the errors, and torch.compile."""
import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import MatmulTile
from kernelkit.ops.gemm._ladder import PIPE_TILES, pipe_layouts
from matmul_helpers import check_matmul, operand, poisoned

pytestmark = pytest.mark.gpu

TENSOR_CORE_RUNGS = ("wmma_global", "wmma_smem", "mma")
CASES = [(v.name, d, tf32) for v in kernelkit.ladder("matmul") for d in v.dtypes for tf32 in (False, True)
         if not v.unavailable()  # headers missing here: test_cute_gpu says why
         and (tf32 is False or (d == torch.float32 and v.name in (*TENSOR_CORE_RUNGS, "best")))
         and not (d == torch.float32 and v.name in TENSOR_CORE_RUNGS and not tf32)]
IDS = [f"{v}-{str(d)[6:]}{'-tf32' if t else ''}" for v, d, t in CASES]
SHAPES = [(1, 1, 1), (1, 37, 61), (67, 1, 129), (131, 257, 97), (1000, 17, 33), (33, 515, 1031), (128, 128, 64)]


def _run(variant, dtype, tf32, m, n, k, ta=False, tb=False, oa=0, ob=0, oc=0, batch=()):
    a = operand((*batch, m, k), dtype, ta, oa)
    b = operand((*batch, k, n), dtype, tb, ob)
    rdt = torch.int32 if dtype == torch.int8 else dtype
    out = poisoned((*batch, m, n), rdt, oc)
    got = kernelkit.matmul(a, b, out=out, allow_tf32=tf32, variant=variant)
    assert got is out
    check_matmul(out, a, b, tf32, f"{variant} {dtype} tf32={tf32} {batch}{m}x{n}x{k} t={ta},{tb} off={oa},{ob},{oc}")


@pytest.mark.parametrize("variant,dtype,tf32", CASES, ids=IDS)
def test_every_rung_matches_float64(variant, dtype, tf32):
    for m, n, k in SHAPES:
        _run(variant, dtype, tf32, m, n, k)


@pytest.mark.parametrize("variant,dtype,tf32", CASES, ids=IDS)
def test_layouts_and_offsets(variant, dtype, tf32):
    for m, n, k in ((131, 257, 97), (64, 64, 128), (5, 130, 67)):
        for ta in (False, True):
            for tb in (False, True):
                _run(variant, dtype, tf32, m, n, k, ta, tb)
        _run(variant, dtype, tf32, m, n, k, oa=1, ob=3, oc=1)  # misaligned: the element paths
        _run(variant, dtype, tf32, m, n, k, True, True, oa=8, ob=16, oc=0)


@pytest.mark.parametrize("variant,dtype,tf32", CASES, ids=IDS)
def test_batched(variant, dtype, tf32):
    _run(variant, dtype, tf32, 61, 67, 71, batch=(3,))
    _run(variant, dtype, tf32, 61, 67, 71, ta=True, tb=True, batch=(2,))
    a = operand((4, 33, 40), dtype)
    b = operand((40, 35), dtype, True)  # broadcast: one B for the batch, a transposed view
    out = kernelkit.matmul(a, b, allow_tf32=tf32, variant=variant)
    check_matmul(out, a, b.expand(4, 40, 35), tf32, f"{variant} broadcast B")
    a1 = operand((1, 17, 40), dtype)
    b3 = operand((3, 40, 19), dtype)
    check_matmul(kernelkit.matmul(a1, b3, allow_tf32=tf32, variant=variant), a1.expand(3, 17, 40), b3, tf32,
                 f"{variant} broadcast A")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_linear_with_bias_every_rung(dtype):
    for v in kernelkit.ladder("linear"):
        for tf32 in (False, True):
            if not v.supports(dtype) or (tf32 and dtype != torch.float32) or v.unavailable():
                continue
            if dtype == torch.float32 and v.name in TENSOR_CORE_RUNGS and not tf32:
                continue
            x = operand((2, 3, 97), dtype)
            w = operand((131, 97), dtype)
            bias = operand((1, 131), dtype)[0]
            out = kernelkit.linear(x, w, bias, allow_tf32=tf32, variant=v.name)
            assert out.shape == (2, 3, 131)
            check_matmul(out.view(6, 131), x.reshape(6, 97), w.t(), tf32, f"linear {v.name}", bias=bias)
            out = kernelkit.linear(x[0], w, allow_tf32=tf32, variant=v.name)
            check_matmul(out, x[0], w.t(), tf32, f"linear {v.name} no bias")


def test_vectors_and_default_rungs():
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        a, b = operand((1, 300), dtype)[0], operand((300, 7), dtype)
        check_matmul(kernelkit.matmul(a, b).unsqueeze(0), a.unsqueeze(0), b, False, "vector @ matrix")
        check_matmul(kernelkit.matmul(b.t(), a).unsqueeze(-1), b.t(), a.unsqueeze(-1), False, "matrix @ vector")
    a8, b8 = operand((37, 64), torch.int8), operand((64, 41), torch.int8, True)
    assert torch.equal(kernelkit.matmul(a8, b8), torch.matmul(a8.double(), b8.double()).int())  # exact at K = 64
    x = operand((64, 64), torch.float32)
    assert kernelkit.matmul(x, x).dtype == torch.float32
    assert kernelkit.matmul(x[:, :0], x[:0, :]).abs().sum() == 0  # K = 0: zeros


def test_non_contiguous_out_and_odd_views():
    a, b = operand((50, 70), torch.float32), operand((70, 30), torch.float32)
    out = torch.full((30, 50), float("nan"), device="cuda").t()  # a column-major out
    kernelkit.matmul(a, b, out=out)
    check_matmul(out, a, b, False, "column-major out")
    s = operand((50, 140), torch.float32)[:, ::2]  # both strides > 1: copied once
    check_matmul(kernelkit.matmul(s, b), s, b, False, "strided a")


@pytest.mark.parametrize("tile", [MatmulTile(128, 128, 64, 32), MatmulTile(64, 64, 32, 32), MatmulTile(64, 128, 32, 64),
                                  MatmulTile(128, 64, 64, 32)], ids=str)
def test_config_tiles(tile):
    for dtype, tf32, variant in ((torch.float32, False, "simt_best"), (torch.float16, False, "mma"),
                                 (torch.bfloat16, False, "mma"), (torch.float32, True, "mma"), (torch.int8, False, "mma")):
        for m, n, k in ((131, 257, 97), (300, 200, 129)):
            a = operand((m, k), dtype)
            b = operand((k, n), dtype, dtype == torch.int8)
            out = kernelkit.matmul(a, b, allow_tf32=tf32, variant=variant, config=tile)
            check_matmul(out, a, b, tf32, f"{variant} {dtype} {tile}")


def test_errors_name_the_argument():
    a = operand((4, 5), torch.float32)
    with pytest.raises(ValueError, match="CUDA"):
        kernelkit.matmul(a.cpu(), a.t())
    with pytest.raises(TypeError, match="b has dtype"):
        kernelkit.matmul(a, a.t().half())
    with pytest.raises(ValueError, match="last dim"):
        kernelkit.matmul(a, a)
    with pytest.raises(ValueError, match="allow_tf32"):
        kernelkit.matmul(a, a.t(), variant="mma")
    with pytest.raises(TypeError, match="variant 'column'"):
        kernelkit.matmul(a.half(), a.t().half(), variant="column")
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.matmul(a, a.t(), variant="nope")
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.matmul(a, a.t(), out=torch.empty(5, 5, device="cuda"))
    with pytest.raises(TypeError, match="config"):
        kernelkit.matmul(a, a.t(), config=(1, 2))
    with pytest.raises(ValueError, match="config"):
        kernelkit.matmul(a, a.t(), variant="simt_best", config=MatmulTile(100, 64, 32, 32))
    with pytest.raises(ValueError, match="bias must have shape"):
        kernelkit.linear(a, a, torch.zeros(3, device="cuda"))
    with pytest.raises(TypeError, match="x must have dtype"):
        kernelkit.linear(a.to(torch.int8), a.to(torch.int8))


def test_torch_compile_fullgraph():
    a, b = operand((64, 96), torch.float16), operand((96, 80), torch.float16, True)
    fn = torch.compile(lambda x, y: kernelkit.matmul(x, y) * 2, fullgraph=True)
    check_matmul(fn(a, b) / 2, a, b, False, "compiled")


def _strided_operand(rows: int, cols: int, ld: int, dtype: torch.dtype, transposed: bool) -> torch.Tensor:
    """A rows x cols matrix whose contiguous dim has leading dimension ld (>= that dim), 16-byte aligned:
    a view of a wider buffer, or the transpose view of one."""
    inner, outer = (rows, cols) if transposed else (cols, rows)
    buf = operand((outer, ld), dtype)[:, :inner]
    return buf.t() if transposed else buf


COPY_ONLY = [(torch.float16, False), (torch.bfloat16, False), (torch.float32, True), (torch.int8, False)]


@pytest.mark.parametrize("dtype,tf32", COPY_ONLY, ids=["f16", "bf16", "tf32", "i8"])
@pytest.mark.parametrize("tile", [None, *PIPE_TILES], ids=str)
def test_copy_only_kernel_edges(dtype, tf32, tile):
    """The mma rung's copy-only kernel (aligned operands, whole-vector leading dims) at every tile: M and N
    off the tile, K off the 128-byte stage and off the 16-byte chunk (a view of a wider buffer), each
    layout it takes, a batch, and a bias (linear)."""
    _copy_only_edges(dtype, tf32, "mma", tile, pipe_layouts(dtype))


@pytest.mark.parametrize("variant", ["mma", "best"])
def test_tf32_operands_round_to_nearest(variant):
    """tf32 operands are rounded to nearest, not truncated: 1 + 3 * 2^-12 is 1 + 2^-10 in tf32 (1 truncated),
    so K of them times ones sum to K + K / 1024, in A and in B, each layout of B the copy-only kernel takes
    at two tiles, and a misaligned view (the general kernel)."""
    k, x = 1024, 1 + 3 * 2.0**-12
    for (m, n), a_val, b_val in (((256, 256), x, 1.0), ((256, 256), 1.0, x), ((2048, 4096), -x, 1.0),
                                 ((2048, 4096), 1.0, x)):  # the 64x64 and the 128x256 tiles
        for b_kmajor in (False, True):
            for off in (0, 1):
                a = torch.full((m * k + off,), a_val, device="cuda")[off:].view(m, k)
                b = torch.full((k * n,), b_val, device="cuda").view((n, k) if b_kmajor else (k, n))
                out = kernelkit.matmul(a, b.t() if b_kmajor else b, allow_tf32=True, variant=variant)
                want = (k + k / 1024) * (-1 if a_val < 0 else 1)
                got = out.double()
                assert torch.all((got - want).abs() < 0.25), (variant, a_val, b_val, b_kmajor, off, float(got.min()), float(got.max()))


def test_dmma_edges():
    """The dmma rung's copy-only fp64 kernel (sm_90; wmma_smem's kernel elsewhere) on the same edges."""
    _copy_only_edges(torch.float64, False, "dmma", None, ((True, True), (True, False), (False, True), (False, False)))


def _copy_only_edges(dtype, tf32, variant, tile, layouts):
    for a_k, b_k in layouts:
        for m, n, k, ld in ((130, 264, 136, 144), (300, 72, 200, 208), (1, 16, 16, 16), (257, 520, 131, 144)):
            rows_a, rows_b = (m, k), (k, n)
            a = _strided_operand(m, k, ld if a_k else -(-m // 16) * 16, dtype, not a_k)
            b = _strided_operand(k, n, ld if b_k else -(-n // 16) * 16, dtype, b_k)
            assert a.shape == rows_a and b.shape == rows_b
            rdt = torch.int32 if dtype == torch.int8 else dtype
            out = poisoned((m, n), rdt)
            kernelkit.matmul(a, b, out=out, allow_tf32=tf32, variant=variant, config=tile)
            check_matmul(out, a, b, tf32, f"copy-only {dtype} {tile} {m}x{n}x{k} ld={ld} k-major={a_k},{b_k}")
    a, b = operand((3, 136, 72), dtype), operand((3, 72, 264), dtype, dtype != torch.float16)
    check_matmul(kernelkit.matmul(a, b, allow_tf32=tf32, variant=variant, config=tile), a, b, tf32, "copy-only batch")
    if dtype != torch.int8:
        x, w, bias = operand((70, 136), dtype), operand((200, 136), dtype), operand((1, 200), dtype)[0]
        out = kernelkit.linear(x, w, bias, allow_tf32=tf32, variant=variant, config=tile)
        check_matmul(out, x, w.t(), tf32, "copy-only linear", bias=bias)


def test_simt_best_async_kernel(monkeypatch):
    """simt_best's cp.async kernel (a k-major A staged through registers), which its rule takes only where the
    128x256 tiles cover every SM: forced here at small shapes by a one-SM device, every layout, misaligned
    views, batches."""
    import importlib
    from kernelkit.ops.gemm import _ladder
    mm_module = importlib.import_module("kernelkit.ops.gemm.matmul")
    monkeypatch.setattr(_ladder, "sm_count", lambda dev: 1)
    monkeypatch.setattr(mm_module, "_plans", mm_module.plan_cache())
    for m, n, k in SHAPES:
        _run("simt_best", torch.float32, False, m, n, k)
    for m, n, k in ((131, 257, 97), (5, 130, 67), (129, 260, 40)):
        for ta in (False, True):
            for tb in (False, True):
                _run("simt_best", torch.float32, False, m, n, k, ta, tb)
        _run("simt_best", torch.float32, False, m, n, k, oa=1, ob=3, oc=1)
    _run("simt_best", torch.float32, False, 61, 67, 71, batch=(3,))
    _run("simt_best", torch.float32, False, 61, 67, 71, ta=True, tb=True, batch=(2,))
