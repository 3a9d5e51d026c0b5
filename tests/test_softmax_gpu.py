"""softmax on the GPU: every rung x dtype x row length (every bucket, clusters, the fallback) against
float64, special values against torch, any dim, views, poisoned outputs."""
import pytest
import torch

import kernelkit
from kernelkit.runtime.lanes import fixed_key
from kernelkit import reference
from gpu_helpers import assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
RUNGS = [v.name for v in kernelkit.ladder("softmax")]
CASES = [(r, d) for r in RUNGS for d in DTYPES]
IDS = [f"{r}-{str(d)[6:]}" for r, d in CASES]

# every capacity boundary of the tables (and one past), plus odd lengths for the element-wise path
SMALL_LENS = (1, 3, 127, 128, 129, 1000, 1024, 1025, 2048, 2049, 4100, 8192, 16385, 32768, 40000)
LARGE_LENS = (65536, 65537, 131072, 200003, 262144, 262145)


def rows_for(len_: int) -> int:
    return max(1, min(67, 2**20 // len_))


def check_rows(variant, dtype, lens, offsets=(0, 1)):
    for len_ in lens:
        rows = rows_for(len_)
        for offset in offsets:  # offset 1: misaligned rows (the element-wise path)
            x = random_input(rows * len_, dtype, offset).view(rows, len_)
            out = poisoned_like(x, offset)
            got = kernelkit.softmax(x, -1, out=out, variant=variant)
            assert got is out
            assert_close(out, reference.softmax(x, -1), dtype, f"{variant} rows={rows} len={len_} offset={offset}")


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_small_every_rung_every_length(variant, dtype):
    check_rows(variant, dtype, SMALL_LENS)


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_long_rows_every_rung(variant, dtype):
    check_rows(variant, dtype, LARGE_LENS, offsets=(0,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_many_rows(dtype):
    for shape in ((65536, 1024), (3000, 4096), (100000, 7)):
        x = random_input(shape[0] * shape[1], dtype).view(shape)
        assert_close(kernelkit.softmax(x), reference.softmax(x), dtype, f"{shape}")


def special_rows(len_: int, dtype) -> torch.Tensor:
    inf, nan = float("inf"), float("nan")
    x = torch.randn(8, len_, device="cuda") * 3
    x[1, len_ // 3] = inf  # one +inf: NaN row (torch's exp(inf - inf))
    x[2, :] = -inf  # all -inf: NaN row
    x[3, : (len_ * 3) // 4] = -inf  # a -inf prefix (a cluster slice with nothing else): zeros there
    x[4, len_ // 2] = nan
    x[5, ::2] = -inf
    x[6, -1] = 80.0  # one dominant element
    x[7] *= 1e4  # large magnitudes
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_special_values_match_torch(dtype):
    for len_ in (5, 1000, 3000, 40000):
        x = special_rows(len_, dtype)
        want = torch.softmax(x, -1)
        ref = reference.softmax(x, -1)
        for variant in RUNGS:
            got = kernelkit.softmax(x, variant=variant)
            assert torch.equal(torch.isnan(got), torch.isnan(want)), (variant, len_)
            assert_close(got, ref, dtype, f"{variant} special len={len_}")


def test_any_dim_views_and_in_place():
    x = torch.randn(37, 129, device="cuda")
    for dim in (0, 1, -2):
        assert_close(kernelkit.softmax(x, dim), reference.softmax(x, dim), torch.float32, f"dim {dim}")
    y = torch.randn(4, 300, 5, device="cuda", dtype=torch.float16)
    assert_close(kernelkit.softmax(y, 1), reference.softmax(y, 1), torch.float16, "middle dim")
    xt = x.t()
    assert_close(kernelkit.softmax(xt, -1), reference.softmax(xt, -1), torch.float32, "transposed")
    out = poisoned_like(x).t()
    kernelkit.softmax(xt, 1, out=out)
    assert_close(out, reference.softmax(xt, 1), torch.float32, "non-contiguous out")
    z = x.clone()
    kernelkit.softmax(z, out=z)
    assert_close(z, reference.softmax(x, -1), torch.float32, "in place")
    s = torch.tensor(2.5, device="cuda")
    assert kernelkit.softmax(s, 0).item() == 1.0
    assert kernelkit.softmax(torch.empty(0, 5, device="cuda")).shape == (0, 5)
    assert kernelkit.softmax(torch.empty(5, 0, device="cuda"), 0).shape == (5, 0)
    assert kernelkit.softmax(x.half()).dtype == torch.float16


def test_same_bits_every_time():
    x = torch.randn(64, 40000, device="cuda", dtype=torch.float16)
    a = kernelkit.softmax(x)
    for _ in range(3):
        assert torch.equal(a, kernelkit.softmax(x))


def test_bad_arguments_raise_clearly():
    x = torch.randn(3, 4, device="cuda")
    with pytest.raises(TypeError, match="x must have dtype"):
        kernelkit.softmax(torch.ones(3, device="cuda", dtype=torch.int64))
    with pytest.raises(IndexError, match="out of range"):
        kernelkit.softmax(x, 2)
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.softmax(x, out=torch.empty(4, 3, device="cuda"))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.softmax(x, variant="nope")


def test_torch_compile_and_cuda_graph():
    f = torch.compile(lambda t: kernelkit.softmax(t) * 2, fullgraph=True)
    x = torch.randn(33, 1000, device="cuda")
    assert_close(f(x), reference.softmax(x) * 2, torch.float32, "compiled")
    y = torch.randn(64, 40000, device="cuda")
    out = torch.empty_like(y)
    kernelkit.softmax(y, out=out)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.softmax(y, out=out)
    y.copy_(torch.randn_like(y))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, reference.softmax(y), torch.float32, "graph replay (cluster kernel)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_configuration(dtype):
    """Every configuration the rules can choose (each instantiation a rung lists), forced by config= onto
    rows it holds exactly and rows a vector shorter (16-byte vectors), and onto misaligned rows of the
    longest and an odd length (the element-wise form); packed configurations onto rows up to their
    group x elems elements."""
    from kernelkit.ops._shared.launch_rules import compute_capability
    from kernelkit.ops.reduction import softmax as sm
    from kernelkit.ops.reduction._rows import per_vec

    n = per_vec(dtype)
    cfgs = dict.fromkeys(c for rung in RUNGS for c in sm.configs(dtype, rung))
    for cfg in cfgs:
        if getattr(cfg, "cluster", 1) > 1 and compute_capability(torch.cuda.current_device()) < 90:
            continue
        if isinstance(cfg, sm.SoftmaxPacked):  # whole short rows of up to group x elems, at any alignment
            cap = cfg.capacity(dtype)
            cases = ((0, {cap, max(1, cap - n)}), (1, {cap, max(1, cap // 2 + 1)}))
        else:
            cap = cfg.capacity(dtype) if isinstance(cfg, sm.SoftmaxTile) else 4099
            # offset 1: the window forms, holding rows N - 1 shorter than the capacity
            short = cap - n + 1 if isinstance(cfg, sm.SoftmaxTile) else cap
            cases = ((0, {cap, max(n, cap - n)}), (1, {short, max(1, cap - n - 1)}))
        for offset, lens in cases:
            for len_ in sorted(lens):
                rows = max(3, min(40, 2**21 // len_))
                x = random_input(rows * len_, dtype, offset).view(rows, len_)
                got = kernelkit.softmax(x, out=poisoned_like(x, offset), config=cfg)
                assert_close(got, reference.softmax(x), dtype, f"{cfg} len={len_} offset={offset}")


def test_config_that_cannot_run_the_input_raises():
    from kernelkit.ops.reduction import softmax as sm

    x = torch.randn(4, 4096, device="cuda")
    with pytest.raises(ValueError, match="holds 2048 elements, the row needs 4096"):
        kernelkit.softmax(x, config=sm.SoftmaxTile(128, 4))
    with pytest.raises(ValueError, match="not both"):
        kernelkit.softmax(x, variant="auto", config=sm.SoftmaxTile(256, 4))
    with pytest.raises(TypeError, match="config must be"):
        kernelkit.softmax(x, config=(256, 4, 1))
    assert_close(kernelkit.softmax(x, config=sm.Loop("three_pass")), reference.softmax(x), torch.float32, "loop")


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    as_int = torch.int32 if a.dtype == torch.float32 else torch.int16
    return a.shape == b.shape and a.stride() == b.stride() and torch.equal(a.view(as_int), b.view(as_int))


def test_the_lane_gives_the_checked_paths_result():
    """A plain call takes the checked path and records its launch as the fixed lane of its (dtype, device,
    shape, dim) where x starts on a 16-byte boundary and the launch is a plain one; the next calls take
    the lane: the bits and layout of the checked path (out= given, which makes no lane), against
    float64. Views off a 16-byte boundary take the checked path."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import softmax as sm

    clear_plans()
    for dtype in DTYPES:
        for len_ in (1, 3, 128, 129, 1000, 4096, 40000, 65536):
            for rows, offset in ((1, 0), (5, 1), (37, 0), (3, 3), (2, 8)):
                x = random_input(rows * len_, dtype, offset).view(rows, len_)
                first = kernelkit.softmax(x)
                if x.data_ptr() % 16 == 0 and len_ <= 4096:  # a plain launch (longer rows may take clusters)
                    assert fixed_key(x, -1) in sm._lanes, (dtype, len_, rows)
                second = kernelkit.softmax(x)
                checked = kernelkit.softmax(x, out=poisoned_like(x))
                assert same_bits(first, checked) and same_bits(second, checked), (len_, rows, offset)
                assert_close(second, reference.softmax(x), dtype, f"lane rows={rows} len={len_} offset={offset}")
    y = random_input(4099, torch.float32)  # 1-D: dim 0 is the last
    assert same_bits(kernelkit.softmax(y, 0), kernelkit.softmax(y, out=poisoned_like(y)))
    assert same_bits(kernelkit.softmax(y, 0), kernelkit.softmax(y, -1))


def test_a_lane_only_where_it_takes_the_call():
    """No lane after calls with out=, variant=, config=, another dim, a non-contiguous, empty or 0-d
    input; one after a plain call; a call the checked path refuses still raises with a lane there."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import softmax as sm

    clear_plans()
    x = torch.randn(8, 256, device="cuda")
    kernelkit.softmax(x, out=torch.empty_like(x))
    kernelkit.softmax(x, variant="auto")
    kernelkit.softmax(x, config=sm.SoftmaxTile(32, 2))
    kernelkit.softmax(x, 0)
    kernelkit.softmax(torch.randn(256, 8, device="cuda").t())
    kernelkit.softmax(torch.empty(0, 256, device="cuda"))
    kernelkit.softmax(torch.tensor(1.5, device="cuda"), 0)
    assert not sm._lanes
    kernelkit.softmax(x)
    assert list(sm._lanes) == [fixed_key(x, -1)]
    for bad_dim in (True, 1.0):
        with pytest.raises(TypeError, match="dim must be an int"):
            kernelkit.softmax(x, bad_dim)
    with pytest.raises(ValueError, match="CUDA tensor"):
        kernelkit.softmax(x.cpu())
    xt = torch.randn(256, 8, device="cuda").t()  # not contiguous: the checked path, through a copy
    assert_close(kernelkit.softmax(xt), reference.softmax(xt), torch.float32, "non-contiguous beside a lane")


@pytest.mark.parametrize("dtype", DTYPES)
def test_packed_rows(dtype):
    """Rows of up to 16 vectors move in blocks of whole rows through shared memory (softmax's packed_rows):
    every length up to the rule's last, row counts that leave the last block short, x and out at the same
    phase or another, special values, against float64 into poisoned outputs."""
    from kernelkit.ops.reduction import softmax as sm

    n = 16 // torch.tensor([], dtype=dtype).element_size()
    for len_ in range(1, 16 * n - n + 2):
        assert isinstance(sm.config_for("auto", dtype, len_, sm=90, form=2), sm.SoftmaxPacked)
        rows = 2 * (256 * 4 * n // len_) + 3
        for xo, oo in ((0, 0), (1, 1), (3, 0)):
            x = random_input(rows * len_, dtype, xo).view(rows, len_) * 3
            if len_ > 2:
                x[1, len_ // 2] = float("inf")
                x[2, :] = float("-inf")
                x[3, 0] = float("nan")
            out = poisoned_like(x, oo)
            kernelkit.softmax(x, -1, out=out)
            want = torch.softmax(x.double(), -1)
            assert torch.equal(torch.isnan(out), torch.isnan(want)), (len_, xo, oo)
            keep = ~torch.isnan(want).any(-1)
            assert_close(out[keep], reference.softmax(x[keep], -1), dtype, f"packed {rows}x{len_} x+{xo} out+{oo}")
