"""saxpy on the GPU: every rung x dtype x size x alignment, the serial debug launch, layouts, errors,
and the lane of the plain call against the checked path."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops._shared.plans import clear_plans
from kernelkit.ops.elementwise import ElementwiseLaunch
from kernelkit.ops.elementwise import saxpy as saxpy_module
from gpu_helpers import SIZES, assert_close, random_input

pytestmark = pytest.mark.gpu

CASES = [(v.name, d) for v in kernelkit.ladder("saxpy") for d in v.dtypes]
IDS = [f"{v}-{str(d)[6:]}" for v, d in CASES]
OFFSETS = ((0, 0), (1, 1), (1, 0), (0, 3), (2, 5))  # (x, y)


def _check(variant, dtype, n, ox, oy, alpha=-1.75):
    x, y = random_input(n, dtype, ox), random_input(n, dtype, oy)
    want = reference.saxpy(alpha, x, y)
    assert kernelkit.saxpy(alpha, x, y, variant=variant) is y
    assert_close(y, want, dtype, f"{variant} n={n} offsets={ox},{oy}")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_every_rung_matches_float64(variant, dtype, n):
    for ox, oy in OFFSETS:
        _check(variant, dtype, n, ox, oy)


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_small_every_rung(variant, dtype):
    for n in (5, 17, 1000):
        for ox, oy in OFFSETS:
            _check(variant, dtype, n, ox, oy)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_small_serial_variant_is_bit_identical(dtype):
    for ox, oy in OFFSETS:
        x, y = random_input(4097, dtype, ox), random_input(4097, dtype, oy)
        want = reference.saxpy(0.5, x, y)
        y2 = y.clone()
        kernelkit.saxpy(0.5, x, y, variant="serial")
        kernelkit.saxpy(0.5, x, y2)
        assert torch.equal(y, y2)
        assert_close(y, want, dtype, f"serial offsets={ox},{oy}")


@pytest.fixture
def serial_env(monkeypatch):
    """``turn_on()`` sets KERNELKIT_SERIAL=1 and forgets the plans (which read it when made); after
    the test the variable is restored and the plans forgotten again, so later tests launch in parallel."""

    def turn_on():
        monkeypatch.setenv("KERNELKIT_SERIAL", "1")
        clear_plans()

    yield turn_on
    monkeypatch.undo()
    clear_plans()


@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("saxpy")] + [None])
def test_small_env_serial_every_rung(variant, serial_env):
    """KERNELKIT_SERIAL=1: every rung launches <<<1, 1>>> and still gives the right answer; the
    plain call makes no lane (its launches stay serial)."""
    serial_env()
    for ox, oy in OFFSETS:
        _check(variant, torch.float16, 1003, ox, oy, alpha=3.0)
        _check(variant, torch.float16, 1003, ox, oy, alpha=3.0)
    assert not saxpy_module.LANES


def _saxpy_launches(fn, tmp_path):
    """(grid, block) of every saxpy kernel ``fn`` launches, as the CUDA profiler recorded them."""
    import json

    from torch.profiler import ProfilerActivity, profile

    fn()  # compile and load outside the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    return [(tuple(e["args"]["grid"]), tuple(e["args"]["block"])) for e in events
            if e.get("cat") == "kernel" and "saxpy" in e.get("name", "")]


def test_serial_launch_is_one_thread(serial_env, tmp_path):
    """The serial launch really is one block of one thread (the grid and block the profiler saw)."""
    x, y = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    one = [((1, 1, 1), (1, 1, 1))]
    assert _saxpy_launches(lambda: kernelkit.saxpy(2.0, x, y, variant="serial"), tmp_path) == one
    assert _saxpy_launches(lambda: kernelkit.saxpy(2.0, x, y, variant="vectorized"), tmp_path) != one
    assert _saxpy_launches(lambda: kernelkit.saxpy(2.0, x, y), tmp_path) != one  # the lane
    serial_env()
    assert _saxpy_launches(lambda: kernelkit.saxpy(2.0, x, y, variant="vectorized"), tmp_path) == one
    assert _saxpy_launches(lambda: kernelkit.saxpy(2.0, x, y, variant="monolithic"), tmp_path) == one
    assert _saxpy_launches(lambda: kernelkit.saxpy(2.0, x, y), tmp_path) == one


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_config_launches_match_float64(dtype):
    """Launch shapes other than the rule's (config=), on odd sizes and every alignment case."""
    for cfg in (ElementwiseLaunch(32), ElementwiseLaunch(128, 13), ElementwiseLaunch(1024), ElementwiseLaunch(64, 16)):
        for n in (1, 4097, 2**20 + 3):
            for ox, oy in OFFSETS:
                x, y = random_input(n, dtype, ox), random_input(n, dtype, oy)
                want = reference.saxpy(0.75, x, y)
                assert kernelkit.saxpy(0.75, x, y, config=cfg) is y
                assert_close(y, want, dtype, f"{cfg} n={n} offsets={ox},{oy}")


def test_config_errors():
    x, y = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    with pytest.raises(ValueError, match="vectorized"):
        kernelkit.saxpy(1.0, x, y, variant="grid_stride", config=ElementwiseLaunch(256))
    with pytest.raises(ValueError, match="threads an SM"):
        kernelkit.saxpy(1.0, x, y, config=ElementwiseLaunch(1024, 3))
    with pytest.raises(ValueError, match="no shared-memory size"):  # 2 an SM would need over 48 KB a block
        kernelkit.saxpy(1.0, x, y, config=ElementwiseLaunch(512, 2))
    with pytest.raises(TypeError, match="ElementwiseLaunch"):
        kernelkit.saxpy(1.0, x, y, config=(256, 6))


def test_layouts_aliasing_and_alpha_forms():
    x = torch.randn(37, 129, device="cuda")
    y = torch.randn(129, 37, device="cuda").t()  # non-contiguous y, updated in place
    want = reference.saxpy(2.0, x, y)
    kernelkit.saxpy(2.0, x, y)
    assert_close(y, want, torch.float32, "non-contiguous y")
    z = torch.randn(1000, device="cuda")
    want = reference.saxpy(0.5, z, z)
    kernelkit.saxpy(0.5, z, z)  # x is y
    assert_close(z, want, torch.float32, "x is y")
    w, v = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    want = reference.saxpy(3, w, v)
    kernelkit.saxpy(torch.tensor(3), w, v)  # int alpha in a CPU tensor
    assert_close(v, want, torch.float32, "tensor alpha")
    e = torch.empty(0, device="cuda")
    assert kernelkit.saxpy(1.0, e, e) is e


def test_matches_torch_add_():
    x, y = random_input(100_003, torch.float32, 1), random_input(100_003, torch.float32, 0)
    y2 = y.clone()
    kernelkit.saxpy(-0.3, x, y)
    y2.add_(x, alpha=-0.3)
    torch.testing.assert_close(y, y2, atol=1e-6, rtol=1e-6)


def test_bad_arguments_raise_clearly():
    x = torch.randn(10, device="cuda")
    with pytest.raises(TypeError, match="alpha must be a real number"):
        kernelkit.saxpy("2", x, x.clone())
    with pytest.raises(TypeError, match="alpha must be a number or a one-element CPU tensor"):
        kernelkit.saxpy(torch.tensor(2.0, device="cuda"), x, x.clone())
    with pytest.raises(ValueError, match="shape"):
        kernelkit.saxpy(1.0, x, torch.randn(11, device="cuda"))
    with pytest.raises(TypeError, match="y has dtype"):
        kernelkit.saxpy(1.0, x, x.half())
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        kernelkit.saxpy(1.0, x.cpu(), x)
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.saxpy(1.0, x, x.clone(), variant="nope")
    buf = torch.randn(11, device="cuda")
    with pytest.raises(ValueError, match="partially overlaps"):
        kernelkit.saxpy(1.0, buf[:10], buf[1:])


def test_torch_compile_and_cuda_graph():
    def f(x, y):
        kernelkit.saxpy(2.0, x, y)
        return y * 1

    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    want = reference.saxpy(2.0, x, y)
    assert_close(torch.compile(f, fullgraph=True)(x, y), want, torch.float32, "compiled")
    y0 = torch.randn(4097, device="cuda")
    x, y = torch.randn(4097, device="cuda"), y0.clone()
    kernelkit.saxpy(2.0, x, y)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.saxpy(2.0, x, y)
    y.copy_(y0)
    g.replay()
    torch.cuda.synchronize()
    assert_close(y, reference.saxpy(2.0, x, y0), torch.float32, "graph replay")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_lane_matches_the_checked_path(dtype):
    """The first plain call takes the checked path and makes the lane of (dtype, device); later plain
    calls of contiguous x and y take it. Against the checked path (variant="vectorized") bit for bit
    and against float64, on odd sizes, every alignment case, int and float alphas, and x is y."""
    clear_plans()
    dev = torch.cuda.current_device()
    x, y = random_input(4097, dtype, 1), random_input(4097, dtype, 0)
    want = reference.saxpy(2, x, y)
    assert not saxpy_module.LANES
    kernelkit.saxpy(2, x, y)
    assert_close(y, want, dtype, "first plain call")
    assert (dtype, dtype, dev, dev) in saxpy_module.LANES
    for n in (1, 5, 17, 4097, 2**20 + 3):
        for ox, oy in OFFSETS:
            for alpha in (3, -1.75):
                x, y = random_input(n, dtype, ox), random_input(n, dtype, oy)
                y_checked = random_input(n, dtype, oy).copy_(y)  # y's alignment: the same kernel and head
                want = reference.saxpy(alpha, x, y)
                kernelkit.saxpy(alpha, x, y_checked, variant="vectorized")
                assert kernelkit.saxpy(alpha, x, y) is y
                assert torch.equal(y, y_checked), f"lane differs from the checked path: n={n} offsets={ox},{oy}"
                assert_close(y, want, dtype, f"lane n={n} offsets={ox},{oy} alpha={alpha}")
    z = random_input(1001, dtype, 3)
    want = reference.saxpy(0.5, z, z)
    kernelkit.saxpy(0.5, z, z)  # x is y
    assert_close(z, want, dtype, "lane, x is y")
    e = torch.empty(0, device="cuda", dtype=dtype)
    assert kernelkit.saxpy(1.0, e, e) is e


def test_lane_only_for_the_plain_call_and_falls_through():
    """variant= and config= calls make no lane; with one made, inputs it does not take (tensor or
    bool alpha, non-contiguous y, partial overlap, mismatches) get the checked path's result or error."""
    clear_plans()
    x, y = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    kernelkit.saxpy(1.0, x, y, variant="vectorized")
    kernelkit.saxpy(1.0, x, y, variant="serial")
    kernelkit.saxpy(1.0, x, y, config=ElementwiseLaunch(256))
    assert not saxpy_module.LANES
    kernelkit.saxpy(1.0, x, y)
    assert len(saxpy_module.LANES) == 1
    w, v = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    want = reference.saxpy(3, w, v)
    kernelkit.saxpy(torch.tensor(3), w, v)
    assert_close(v, want, torch.float32, "tensor alpha after lane")
    a = torch.randn(37, 129, device="cuda")
    b = torch.randn(129, 37, device="cuda").t()
    want = reference.saxpy(2.0, a, b)
    kernelkit.saxpy(2.0, a, b)
    assert_close(b, want, torch.float32, "non-contiguous y after lane")
    with pytest.raises(TypeError, match="alpha must be a real number"):
        kernelkit.saxpy(True, x, y)
    buf = torch.randn(101, device="cuda")
    with pytest.raises(ValueError, match="partially overlaps"):
        kernelkit.saxpy(1.0, buf[:100], buf[1:])
    with pytest.raises(ValueError, match="shape"):
        kernelkit.saxpy(1.0, x, torch.randn(101, device="cuda")[:100].view(10, 10))
    with pytest.raises(TypeError, match="y has dtype"):
        kernelkit.saxpy(1.0, x, y.half())
    assert len(saxpy_module.LANES) == 1


@pytest.mark.slow
def test_more_than_2_31_elements():
    n = 2**31 + 7
    x = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-1, 1)
    y = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-1, 1)
    idx = [0, 2**31 - 2**20, n - 2**20]
    before = [reference.saxpy(2.0, x[lo:lo + 2**20], y[lo:lo + 2**20]) for lo in idx]
    kernelkit.saxpy(2.0, x, y)
    for lo, want in zip(idx, before):
        assert_close(y[lo:lo + 2**20], want, torch.float16, f"chunk {lo}")
    del x, y, before
    torch.cuda.empty_cache()
