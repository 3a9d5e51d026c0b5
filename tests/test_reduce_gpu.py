"""sum, mean, amax, amin on the GPU: every rung x dtype against float64, every dim and path, exact and
repeatable results, special values, empty inputs, bad arguments, torch.compile and CUDA graphs, a second
device."""
import pytest
import torch

import kernelkit
from gpu_helpers import random_input
from reduce_helpers import DTYPES, OPS, RUNGS, check, run

pytestmark = pytest.mark.gpu

CASES = [(op, r, d) for op in OPS for r in RUNGS for d in DTYPES]
IDS = [f"{o}-{r}-{str(d)[6:]}" for o, r, d in CASES]


@pytest.mark.parametrize("op,variant,dtype", CASES, ids=IDS)
def test_small_full_reduction_every_rung(op, variant, dtype):
    for n in (1, 3, 4097, 70001):
        for offset in (0, 1, 3):
            x = random_input(n, dtype, offset)
            check(op, x, run(op, x, variant=variant), what=f"{variant} n={n} offset={offset}")


@pytest.mark.parametrize("op,variant,dtype", CASES, ids=IDS)
def test_large_full_reduction_every_rung(op, variant, dtype):
    for n in (2**20 + 3, 2**24):
        x = random_input(n, dtype, 1)
        check(op, x, run(op, x, variant=variant), what=f"{variant} n={n}")


DIM_CASES = [
    ((37, 129), 0, False), ((37, 129), 1, False), ((37, 129), -1, True), ((5, 7, 33), 1, True),
    ((3, 1, 4097), 2, False), ((2049, 3), 0, False), ((2049, 3), (0, 1), True), ((4, 6, 5), (0, 2), False),
    ((6, 1, 1), 0, False), ((), 0, False), ((), -1, True), ((7,), 0, True), ((1, 1), None, True),
]


@pytest.mark.parametrize("op,variant,dtype", CASES, ids=IDS)
def test_small_dims_every_rung(op, variant, dtype):
    for shape, dim, keepdim in DIM_CASES:
        n = max(1, torch.Size(shape).numel())
        x = random_input(n + 1, dtype, 1)[1:].view(shape) if shape else random_input(1, dtype, 1)[0]
        check(op, x, run(op, x, dim, keepdim, variant), dim, keepdim, f"{variant} {shape} dim={dim}")
        if len(shape) == 2:  # a non-contiguous (transposed) input
            xt = x.t()
            d = dim if isinstance(dim, int) or dim is None else tuple(dim)
            check(op, xt, run(op, xt, d, keepdim, variant), d, keepdim, f"{variant} {shape}.t() dim={dim}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_default_rung_paths(op, dtype):
    """The fast rung's shapes: split rows with per-row tickets, warp rows, column splits, middle dims."""
    cases = [((3, 2**22 + 1), 1), ((2, 3, 300001), 2), ((100000, 33), 1), ((4096, 256), 0), ((100000, 6), 0),
             ((3, 5000, 40), 1), ((8, 12345, 3), 1), ((1, 2**21), 0), ((2**16, 2), 1), ((513, 1025), 0)]
    for shape, dim in cases:
        for offset in (0, 1):
            x = random_input(torch.Size(shape).numel() + offset, dtype, offset)[: torch.Size(shape).numel()].view(shape)
            check(op, x, run(op, x, dim), dim, False, f"{shape} dim={dim} offset={offset}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_column_splits_finish_in_one_launch(op, dtype):
    """Leading and middle dims whose rows are split over blocks that meet in the workspace (odd, prime
    and vector-width column counts, misaligned starts), each result twice with other reductions between
    (the tickets must be back at 0), poisoned outputs, the same bits every time. Splits of more than
    TICKET_SPLITS_MAX blocks (50257 x 768, 100003 x 129, 7919 x 8 on an H100) are summed by the fold's
    second launch instead of the last block."""
    cases = [((8192, 300), 0), ((100003, 129), 0), ((3, 20011, 77), 1), ((50257, 768), 0), ((4097, 4095), 0),
             ((2, 4099, 1021), 1), ((7919, 8), 0), ((64, 197, 768), 1)]
    for shape, dim in cases:
        n = torch.Size(shape).numel()
        for offset in (0, 3):
            x = random_input(n + offset, dtype, offset)[:n].view(shape)
            first = run(op, x, dim)
            check(op, x, first, dim, False, f"{shape} dim={dim} offset={offset}")
            kernelkit.amax(x, dim)
            kernelkit.sum(x.view(shape[0], -1), 0)
            assert torch.equal(run(op, x, dim), first), (shape, dim, offset)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_short_column_splits_meet_in_clusters(op, dtype):
    """Short splits of a column block meet in a cluster on sm_90 (reduce_cols_cluster: clusters of 2 to 8,
    every phase of the window form, several outer slabs), each result repeatable and against float64;
    elsewhere the same shapes take reduce_cols' ticket."""
    from kernelkit.runtime.launch import recording

    sm90 = torch.cuda.get_device_capability()[0] >= 9
    cases = [((16, 197, 768), 1), ((130, 1000), 0), ((300, 4097), 0), ((5, 256, 2053), 1), ((7, 130, 999), 1)]
    for shape, dim in cases:
        n = torch.Size(shape).numel()
        for offset in (0, 1, 5):
            x = random_input(n + offset, dtype, offset)[:n].view(shape)
            with recording() as rec:
                first = run(op, x, dim)
            names = [r[7] for r in rec]
            assert ("reduce_cols_cluster" in names) == sm90, (shape, names)
            check(op, x, first, dim, False, f"{shape} dim={dim} offset={offset}")
            assert torch.equal(run(op, x, dim), first), (shape, dim, offset)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_narrow_columns_read_in_groups_of_rows(op, dtype):
    """Leading and middle dims of narrow, odd widths read as groups of rows (reduce_cols into fp32
    partials, then their fold with the rows past the last group): prime and odd row counts and widths,
    several outer slabs, offsets at and off 16-byte boundaries, keepdim, poisoned outputs, the same bits
    every time; sum and mean also into fp32 (dtype=)."""
    from kernelkit.ops.reduction.reduce import col_group

    cases = [((200003, 127), 0), ((131071, 127), 0), ((3, 8 * 3001, 127), 1), ((50021, 37), 0),
             ((8 * 1031 + 5, 33), 0), ((2, 8 * 1003, 129), 1), ((100019, 3), 0)]
    if dtype != torch.float32:
        cases.append(((20011, 1021), 0))
    for shape, dim in cases:
        outer, inner = torch.Size(shape[:dim]).numel(), torch.Size(shape[dim + 1:]).numel()
        assert col_group(outer, shape[dim], inner, dtype) > 1, (shape, dtype)  # the grouped path runs
        n = torch.Size(shape).numel()
        for offset, keepdim in ((0, False), (1, True), (3, False), (8, False)):
            x = random_input(n + offset, dtype, offset)[:n].view(shape)
            first = run(op, x, dim, keepdim)
            check(op, x, first, dim, keepdim, f"{shape} dim={dim} offset={offset}")
            assert torch.equal(run(op, x, dim, keepdim), first), (shape, dim, offset)
            if op in ("sum", "mean") and dtype != torch.float32 and offset < 2:
                check(op, x, run(op, x, dim, keepdim, dtype=torch.float32), dim, keepdim, f"{shape} fp32",
                      dtype=torch.float32)
    # every row counted once, the rows past the last group included; a max planted in them and in a group
    for R in (8 * 5003, 8 * 5003 + 7):
        x = torch.ones(R, 127, device="cuda", dtype=dtype)
        assert torch.equal(kernelkit.sum(x, 0, dtype=torch.float32), torch.full((127,), float(R), device="cuda"))
        y = torch.rand(R, 127, device="cuda").sub_(2).to(dtype)
        y[R - 1, 5], y[R // 2, 126], y[3, 0] = 5.0, 6.0, 7.0
        got = kernelkit.amax(y, 0)
        assert (got[5].item(), got[126].item(), got[0].item()) == (5.0, 6.0, 7.0), R
        assert (kernelkit.amin(-y, 0)[[5, 126, 0]].tolist()) == [-5.0, -6.0, -7.0], R


def test_exact_results():
    """Structured inputs where any dropped or doubled element shows: counts of ones, a planted max."""
    for n in (4097, 2**20 + 3, 2**23 + 5):
        for offset in (0, 1, 2, 3):
            x = torch.ones(n + offset, device="cuda")[offset:]
            for variant in RUNGS:
                assert kernelkit.sum(x, variant=variant).item() == n, (n, offset, variant)
            y = torch.rand(n + offset, device="cuda")[offset:] - 2
            i = (7919 * 31) % n
            y[i] = 5.0
            for variant in RUNGS:
                assert kernelkit.amax(y, variant=variant).item() == 5.0, (n, offset, variant)
                assert kernelkit.amin(-y, variant=variant).item() == -5.0, (n, offset, variant)
    x = torch.ones(3000, 7, device="cuda")
    assert torch.equal(kernelkit.sum(x, 0), torch.full((7,), 3000.0, device="cuda"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_same_bits_every_time(dtype):
    x = random_input(2**24 + 11, dtype, 1)
    m = x[: 2**24].view(4096, 4096)
    for variant in RUNGS:
        first = [kernelkit.sum(x, variant=variant), kernelkit.mean(m, 1, variant=variant)]
        for _ in range(3):
            kernelkit.amax(m, 0)  # other work in between (the tickets and partials are shared)
            again = [kernelkit.sum(x, variant=variant), kernelkit.mean(m, 1, variant=variant)]
            for a, b in zip(first, again):
                assert torch.equal(a.view(torch.int16 if dtype != torch.float32 else torch.int32),
                                   b.view(torch.int16 if dtype != torch.float32 else torch.int32)), variant
    a, b = kernelkit.sum(m, 0), kernelkit.sum(m, 0)
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_special_values_match_torch(dtype):
    inf, nan = float("inf"), float("nan")
    rows = [[1.0, 2.0, inf], [1.0, -inf, 3.0], [inf, -inf, 0.0], [nan, 1.0, 2.0], [-inf, -inf, -inf], [3.0, 1.0, -2.0]]
    x = torch.tensor(rows, device="cuda", dtype=dtype)
    for op in OPS:
        for variant in RUNGS:
            got = getattr(kernelkit, op)(x, 1, variant=variant)
            want = getattr(torch, op)(x, 1)
            assert torch.equal(torch.isnan(got), torch.isnan(want)), (op, variant, got, want)
            fin = ~torch.isnan(want)
            assert torch.allclose(got[fin].float(), want[fin].float(), rtol=1e-2), (op, variant, got, want)
    big = torch.full((5000,), 60000.0 if dtype == torch.float16 else 3e38, device="cuda", dtype=dtype)
    assert torch.isinf(kernelkit.sum(big)).item() == torch.isinf(torch.sum(big)).item()
    assert kernelkit.mean(big).item() == pytest.approx(torch.mean(big).item(), rel=1e-2)
    large = random_input(100_003, dtype, 1, scale=1e4 if dtype == torch.float16 else 1e30)
    for op in OPS:
        check(op, large, getattr(kernelkit, op)(large), what=f"large magnitudes {op}")


def test_small_empty_and_dtypes_like_torch():
    e = torch.empty(0, 3, device="cuda", dtype=torch.float16)
    assert kernelkit.sum(e).item() == 0 and kernelkit.sum(e).dtype == torch.float16
    assert torch.equal(kernelkit.sum(e, 0), torch.zeros(3, device="cuda", dtype=torch.float16))
    assert torch.isnan(kernelkit.mean(e, 0)).all() and kernelkit.mean(e, 0).shape == (3,)
    assert kernelkit.sum(e, 1).shape == (0,) and kernelkit.amax(e, 1).shape == (0,)
    assert kernelkit.amin(torch.empty(2, 0, device="cuda"), (0,)).shape == (0,)
    with pytest.raises(IndexError, match="size 0"):
        kernelkit.amax(e, 0)
    with pytest.raises(RuntimeError, match="empty"):
        kernelkit.amin(e)
    for dt in DTYPES:
        x = torch.randn(4, 5, device="cuda", dtype=dt)
        for op in OPS:
            for dim, keepdim in ((None, False), (1, False), (0, True), ((0, 1), True), ((0, 1), False)):
                a = getattr(kernelkit, op)(x, dim, keepdim)
                b = getattr(torch, op)(x) if dim is None else getattr(torch, op)(x, dim, keepdim)
                assert a.dtype == b.dtype and a.shape == b.shape, (op, dim, a.shape, b.shape)


def test_bad_arguments_raise_clearly():
    x = torch.randn(3, 4, device="cuda")
    with pytest.raises(TypeError, match="x must have dtype"):
        kernelkit.sum(torch.ones(3, device="cuda", dtype=torch.int32))
    with pytest.raises(ValueError, match="CUDA"):
        kernelkit.sum(torch.ones(3))
    with pytest.raises(IndexError, match="out of range"):
        kernelkit.mean(x, 2)
    with pytest.raises(ValueError, match="more than once"):
        kernelkit.amax(x, (0, -2))
    with pytest.raises(TypeError, match="dim"):
        kernelkit.sum(x, 1.5)
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.sum(x, variant="nope")
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.sum(x, 0, out=torch.empty(3, device="cuda"))


def test_torch_compile_and_cuda_graph():
    f = torch.compile(lambda t: kernelkit.sum(t, 1) * 2 + kernelkit.amax(t), fullgraph=True)
    x = torch.randn(33, 1000, device="cuda")
    torch.testing.assert_close(f(x), x.sum(1) * 2 + x.amax(), rtol=1e-5, atol=1e-4)
    y = torch.randn(2**20, device="cuda")
    out = torch.empty((), device="cuda")
    kernelkit.sum(y, out=out)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.sum(y, out=out)
    y.copy_(torch.randn_like(y))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    check("sum", y, out, what="graph replay")


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device_while_the_first_is_current():
    """Kernels, partials and tickets on the input's device, whatever device is current."""
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    with torch.cuda.device(0):
        for dtype in DTYPES:
            x = random_input(2**24 + 3, dtype, 1).to("cuda:1")  # split rows: partials and tickets on cuda:1
            for op in OPS:
                got = getattr(kernelkit, op)(x)
                assert got.device == x.device
                check(op, x, got, what=f"cuda:1 {op}")
            m = x[: 4096 * 513].view(4096, 513)
            for dim in (0, 1):
                check("sum", m, kernelkit.sum(m, dim), dim, False, f"cuda:1 dim={dim}")
            for variant in RUNGS:
                check("mean", m, kernelkit.mean(m, 1, variant=variant), 1, False, f"cuda:1 {variant}")
        with pytest.raises(ValueError, match="cuda:0"):
            kernelkit.sum(x, out=torch.empty((), device="cuda:0", dtype=x.dtype))
