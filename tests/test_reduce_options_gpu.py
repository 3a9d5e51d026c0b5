"""sum, mean, amax, amin on the GPU through their options and their lanes: config= (reduce_fast at a
given block, loads in flight and grid; its refusals; under torch.compile), the lane a plain call makes
(the checked path's bits and layout; made only where it takes the call) and dtype= for sum and mean (fp32
accumulation written in the dtype asked for, on every rung and path, like torch, under torch.compile and
CUDA graphs)."""
import pytest
import torch

import kernelkit
from kernelkit.ops.reduction.reduce import FULL, ROWS, ReduceConfig
from gpu_helpers import random_input
from reduce_helpers import DTYPES, OPS, RUNGS, check, run

pytestmark = pytest.mark.gpu

# the rule's two launches, a tuner's candidate, and extremes: one warp a block, 16 loads in flight, a long grid
CONFIGS = [FULL, ROWS, ReduceConfig(256, 4, 8), ReduceConfig(32, 1, 1), ReduceConfig(128, 16, 3),
           ReduceConfig(64, 3, 32)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_config_launches_reduce_fast_at_that_shape(op, dtype):
    """config= runs reduce_fast with its block, loads in flight and grid: whole tensors (one row split
    over many blocks, or one block), long rows, and short rows (which the rule gives a warp each)."""
    for cfg in CONFIGS:
        for shape, dim in (((2**20 + 3,), None), ((5,), None), ((3, 70001), 1), ((100, 33), 1), ((4, 6, 50), (1, 2)),
                           ((7, 9, 11), (0, 2))):
            n = torch.Size(shape).numel()
            x = random_input(n + 1, dtype, 1)[:n].view(shape)
            check(op, x, run(op, x, dim, config=cfg), dim, False, f"{cfg} {shape} dim={dim}")


def test_config_refusals():
    x = torch.randn(64, 33, device="cuda")
    with pytest.raises(ValueError, match="no configuration"):
        kernelkit.sum(x, variant="vector", config=ReduceConfig(256, 2, 8))
    with pytest.raises(ValueError, match="reads columns"):
        kernelkit.sum(x, 0, config=ReduceConfig(256, 2, 8))  # a leading dim: reduce_cols
    with pytest.raises(TypeError, match="ReduceConfig"):
        kernelkit.sum(x, config=(256, 2, 8))
    with pytest.raises(ValueError, match="power of two"):
        ReduceConfig(96, 2, 8)
    with pytest.raises(ValueError, match="unroll"):
        ReduceConfig(256, 0, 8)


def test_torch_compile_with_config():
    cfg = ReduceConfig(256, 4, 8)
    f = torch.compile(lambda t: kernelkit.sum(t, 1, config=cfg) + 1, fullgraph=True)
    x = torch.randn(33, 5000, device="cuda")
    torch.testing.assert_close(f(x), x.sum(1) + 1, rtol=1e-5, atol=1e-3)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    as_int = torch.int32 if a.dtype == torch.float32 else torch.int16
    return a.shape == b.shape and a.stride() == b.stride() and torch.equal(a.view(as_int), b.view(as_int))


LANE_CASES = [((4097,), None, False), ((4096,), None, True), ((37, 129), -1, False), ((37, 129), 0, True),
              ((5, 7, 33), (0, 2), False), ((3, 1, 4097), [2], True), ((2**20 + 3,), None, False),
              ((4, 1), 1, False), ((1, 1), None, True), ((), None, False), ((3, 2**22 + 1), 1, False),
              ((513, 1025), 0, False)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_the_lane_gives_the_checked_paths_result(op, dtype):
    """A plain call takes the checked path and makes the lane of its (shape, strides, dtype, device, dim,
    keepdim); the next call takes it: the bits and layout of the checked path (out= given, which makes no
    lane), against float64; views off a 16-byte boundary and a transposed input too."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import reduce

    clear_plans()
    fn = getattr(kernelkit, op)
    for shape, dim, keepdim in LANE_CASES:
        n = torch.Size(shape).numel()
        for offset in (0, 1):
            x = random_input(n, dtype, offset).view(shape)
            inputs = [x] + ([x.t()] if len(shape) == 2 else [])
            for t in inputs:
                first = fn(t, dim, keepdim)
                key_dim = tuple(dim) if isinstance(dim, list) else dim
                assert (op, t.shape, t.stride(), dtype, t.device, key_dim, keepdim) in reduce._lanes
                second = fn(t, dim, keepdim)
                checked = run(op, t, dim, keepdim)
                assert _same_bits(first, checked) and _same_bits(second, checked), (shape, dim, offset)
                d = tuple(dim) if isinstance(dim, list) else dim
                check(op, t, second, d, keepdim, f"lane {shape} dim={dim} offset={offset}")


def test_a_lane_only_where_it_takes_the_call():
    """No lane after calls with out=, variant= or config=; one after a plain call; calls the checked path
    refuses still raise with a lane there (dim as a bool or a float, equal to an int as a key)."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import reduce

    clear_plans()
    x = torch.randn(8, 256, device="cuda")
    kernelkit.sum(x, 1, out=torch.empty(8, device="cuda"))
    kernelkit.sum(x, 1, variant="fast")
    kernelkit.sum(x, 1, config=ROWS)
    kernelkit.sum(x, 1, 1)  # keepdim as an int: the checked path reads its truth
    assert not reduce._lanes
    kernelkit.sum(x, 1)
    assert list(reduce._lanes) == [("sum", x.shape, x.stride(), torch.float32, x.device, 1, False)]
    for bad_dim in (True, 1.0):
        with pytest.raises(TypeError, match="dim must be"):
            kernelkit.sum(x, bad_dim)
    with pytest.raises(ValueError, match="CUDA tensor"):
        kernelkit.sum(x.cpu(), 1)
    with pytest.raises(RuntimeError, match="empty"):
        kernelkit.amax(torch.empty(0, device="cuda"))


# ---- dtype= (sum, mean): fp32 accumulation written in the dtype asked for -------------------------
DTYPE_CASES = [(op, r, d, rd) for op in ("sum", "mean") for r in RUNGS for d in DTYPES for rd in DTYPES if rd != d]
DTYPE_IDS = [f"{o}-{r}-{str(d)[6:]}-to-{str(rd)[6:]}" for o, r, d, rd in DTYPE_CASES]
DTYPE_SHAPES = [((4097,), None, False), ((70001,), None, True), ((2**20 + 3,), None, False), ((37, 129), 1, False),
                ((37, 129), 0, True), ((5, 7, 33), 1, False), ((4, 6, 5), (0, 2), False), ((3, 2**22 + 1), 1, False),
                ((100000, 33), 1, False), ((4096, 256), 0, False), ((3, 5000, 40), 1, False), ((513, 1025), 0, False),
                ((), None, False), ((0, 3), 0, False)]


@pytest.mark.parametrize("op,variant,dtype,rdtype", DTYPE_CASES, ids=DTYPE_IDS)
def test_dtype_argument_every_rung(op, variant, dtype, rdtype):
    """dtype= on every rung and path (full, rows, warp rows, split rows, columns with and without a split,
    moved dims, 0-d, empty): the result in rdtype against float64 with rdtype's tolerance, into a
    poisoned out= of rdtype, and the same result without out=; offset views too."""
    for shape, dim, keepdim in DTYPE_SHAPES:
        n = torch.Size(shape).numel()
        for offset in (0, 1):
            x = random_input(max(n, 1), dtype, offset)[:n].view(shape)
            what = f"{variant} {shape} dim={dim} offset={offset} dtype={rdtype}"
            got = run(op, x, dim, keepdim, variant, dtype=rdtype)
            check(op, x, got, dim, keepdim, what, dtype=rdtype)
            fresh = run(op, x, dim, keepdim, variant, poison=False, dtype=rdtype)
            assert fresh.dtype == rdtype and fresh.is_contiguous() and _same_bits(fresh, got), what


@pytest.mark.parametrize("op", ("sum", "mean"))
def test_dtype_argument_is_the_fp32_result_rounded(op):
    """The kernels write fp32 from the accumulator; any other dtype is that result rounded: the same bits
    as the fp32 result cast, and dtype= equal to x's dtype is the plain call's result."""
    fn = getattr(kernelkit, op)
    for dtype in DTYPES:
        x = random_input(2**20 + 5, dtype, 1)
        m = x[: 1024 * 1000].view(1024, 1000)
        for args in ((x,), (m, 1), (m, 0)):
            wide = fn(*args, dtype=torch.float32)
            assert wide.dtype == torch.float32
            for rd in DTYPES:
                got = fn(*args, dtype=rd)
                assert torch.equal(got, wide.to(rd)), (op, dtype, rd, len(args))
            assert torch.equal(fn(*args, dtype=dtype), fn(*args)), (op, dtype)


def test_dtype_float32_keeps_a_16_bit_sum_that_overflows_its_dtype():
    """As torch.sum(x, dtype=torch.float32): a float16 sum past 65504 is inf in float16, finite in fp32."""
    x = torch.full((5000,), 60000.0, device="cuda", dtype=torch.float16)
    assert torch.isinf(kernelkit.sum(x)).item() and torch.isinf(torch.sum(x)).item()
    wide = kernelkit.sum(x, dtype=torch.float32)
    assert wide.dtype == torch.float32 and wide.item() == 3e8 == torch.sum(x, dtype=torch.float32).item()
    assert kernelkit.mean(x, dtype=torch.float32).item() == pytest.approx(60000.0, rel=1e-6)  # 3e8 * fp32(1/5000)
    rows = x.view(50, 100)
    assert torch.equal(kernelkit.sum(rows, 1, dtype=torch.float32), torch.full((50,), 6e6, device="cuda"))
    assert torch.equal(kernelkit.sum(rows, 0, dtype=torch.float32), torch.full((100,), 3e6, device="cuda"))


def test_dtype_argument_like_torch():
    """Result dtype and shape as torch's for every (input, dtype) pair; out= must have the dtype asked for;
    a non-contiguous out= is written too; no lane is made by a dtype= call."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import reduce

    for dt in DTYPES:
        x = torch.randn(4, 5, device="cuda", dtype=dt)
        for op in ("sum", "mean"):
            for rd in DTYPES:
                for dim, keepdim in ((None, False), (1, False), (0, True), ((0, 1), True)):
                    a = getattr(kernelkit, op)(x, dim, keepdim, dtype=rd)
                    fn = getattr(torch, op)
                    b = fn(x, dtype=rd) if dim is None else fn(x, dim, keepdim, dtype=rd)
                    assert a.dtype == b.dtype == rd and a.shape == b.shape, (op, dim, rd)
                    check(op, x, a, dim, keepdim, f"{op} {dt} dim={dim} dtype={rd}", dtype=rd)
    x = torch.randn(64, 33, device="cuda", dtype=torch.float16)
    with pytest.raises(TypeError, match="out has dtype float16, expected float32"):
        kernelkit.sum(x, 1, out=torch.empty(64, device="cuda", dtype=torch.float16), dtype=torch.float32)
    with pytest.raises(TypeError, match="dtype must be float32, float16 or bfloat16"):
        kernelkit.mean(x, dtype=torch.float64)
    out = torch.full((33, 2), float("nan"), device="cuda")[:, 0]  # stride 2
    assert kernelkit.sum(x, 0, out=out, dtype=torch.float32) is out
    check("sum", x, out, 0, False, "non-contiguous out", dtype=torch.float32)
    clear_plans()
    kernelkit.sum(x, 1, dtype=torch.float32)
    kernelkit.mean(x, dtype=torch.bfloat16)
    assert not reduce._lanes
    assert kernelkit.sum(x, 1).dtype == torch.float16 and len(reduce._lanes) == 1


def test_dtype_argument_under_torch_compile_and_cuda_graphs():
    f = torch.compile(lambda t: kernelkit.sum(t, 1, dtype=torch.float32) + kernelkit.mean(t, dtype=torch.float32),
                      fullgraph=True)
    x = torch.randn(33, 1000, device="cuda", dtype=torch.float16)
    got = f(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, x.float().sum(1) + x.float().mean(), rtol=1e-4, atol=1e-3)
    y = torch.randn(2**20, device="cuda", dtype=torch.bfloat16)
    out = torch.empty((), device="cuda", dtype=torch.float32)
    kernelkit.sum(y, out=out, dtype=torch.float32)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.sum(y, out=out, dtype=torch.float32)
    y.copy_(torch.randn_like(y))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    check("sum", y, out, what="graph replay, dtype=float32", dtype=torch.float32)
