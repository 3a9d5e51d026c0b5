"""add on the GPU: every rung x dtype x size x misalignment against float64, layouts, errors, graphs,
and the lane of the plain call against the checked path."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops._shared.plans import clear_plans
from kernelkit.ops.elementwise import ElementwiseLaunch
from kernelkit.ops.elementwise import add as add_module
from gpu_helpers import SIZES, assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

CASES = [(v.name, d) for v in kernelkit.ladder("add") for d in v.dtypes]
IDS = [f"{v}-{str(d)[6:]}" for v, d in CASES]
# (a, b, out) offsets in elements: aligned, misaligned alike, misaligned differently (the shuffle path)
OFFSETS = ((0, 0, 0), (1, 1, 1), (3, 3, 3), (1, 2, 0), (0, 3, 1), (2, 0, 5))


def _check(variant, dtype, n, offsets):
    a, b = random_input(n, dtype, offsets[0]), random_input(n, dtype, offsets[1])
    out = poisoned_like(a, offsets[2])
    got = kernelkit.add(a, b, out=out, variant=variant)
    assert got is out
    assert_close(out, reference.add(a, b), dtype, f"{variant} n={n} offsets={offsets}")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_every_rung_matches_float64(variant, dtype, n):
    for offsets in OFFSETS:
        _check(variant, dtype, n, offsets)


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_small_every_rung(variant, dtype):
    """Small sizes around the vector width and warp boundaries (also the compute-sanitizer case)."""
    for n in (5, 17, 255, 1000):
        for offsets in OFFSETS:
            _check(variant, dtype, n, offsets)


@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("add")])
@pytest.mark.parametrize("shape", [(37, 129), (3, 5, 7), (1, 2**17 + 1), (600_000, 3), (129, 1), ()])
def test_shapes(variant, shape):
    """2D rung: rows past the 65535 x 8 grid (600000 rows), one-column, 0-d tensors."""
    a = torch.randn(shape, device="cuda")
    b = torch.randn(shape, device="cuda")
    assert_close(kernelkit.add(a, b, variant=variant), reference.add(a, b), torch.float32, f"{variant} {shape}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("config", [ElementwiseLaunch(32), ElementwiseLaunch(128, 13), ElementwiseLaunch(512),
                                    ElementwiseLaunch(64, 16)], ids=str)
def test_config_launches_match_float64(config, dtype):
    """Launch shapes other than the rule's (config=) for both kernels of the fast rung."""
    for n in (1, 17, 4097, 2**20 + 3):
        for offsets in OFFSETS:
            a, b = random_input(n, dtype, offsets[0]), random_input(n, dtype, offsets[1])
            out = poisoned_like(a, offsets[2])
            assert kernelkit.add(a, b, out=out, config=config) is out
            assert_close(out, reference.add(a, b), dtype, f"{config} n={n} offsets={offsets}")


def test_config_errors():
    """1024-thread blocks run the aligned kernel, not the shuffle kernel (launch bound 512)."""
    big = ElementwiseLaunch(1024)
    a, b = random_input(4097, torch.float32, 1), random_input(4097, torch.float32, 1)
    out = poisoned_like(a, 1)
    kernelkit.add(a, b, out=out, config=big)
    assert_close(out, reference.add(a, b), torch.float32, "1024 threads, misaligned alike")
    with pytest.raises(ValueError, match="shuffle kernel"):
        kernelkit.add(a, random_input(4097, torch.float32, 2), config=big)
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.add(a, b, variant="1d", config=ElementwiseLaunch(256))
    with pytest.raises(ValueError, match="threads an SM"):
        kernelkit.add(a, b, config=ElementwiseLaunch(1024, 3))


def test_noncontiguous_inplace_and_empty():
    a = torch.randn(37, 129, device="cuda")
    b = torch.randn(129, 37, device="cuda").t()  # non-contiguous
    assert_close(kernelkit.add(a.t(), b.t()), reference.add(a.t(), b.t()), torch.float32, "transposed")
    out = poisoned_like(a).t()
    kernelkit.add(a.t(), b.t(), out=out)
    assert_close(out, reference.add(a.t(), b.t()), torch.float32, "non-contiguous out")
    x, y = a.clone(), b.contiguous()
    kernelkit.add(x, y, out=x)
    assert_close(x, reference.add(a, b), torch.float32, "in place into a")
    z = a.clone()
    kernelkit.add(z, z, out=z)
    assert_close(z, reference.add(a, a), torch.float32, "a + a into a")
    assert kernelkit.add(torch.empty(0, 5, device="cuda"), torch.empty(0, 5, device="cuda")).shape == (0, 5)


def test_matches_torch():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        a, b = random_input(100_003, dtype, 1), random_input(100_003, dtype, 2)
        torch.testing.assert_close(kernelkit.add(a, b), a + b, atol=0, rtol=0)


def test_bad_arguments_raise_clearly():
    a = torch.randn(10, device="cuda")
    with pytest.raises(ValueError, match="does not broadcast"):
        kernelkit.add(a, torch.randn(1, device="cuda"))
    with pytest.raises(TypeError, match="does not promote"):
        kernelkit.add(a, a.half())
    with pytest.raises(ValueError, match="a must be a CUDA tensor"):
        kernelkit.add(a.cpu(), a)
    with pytest.raises(TypeError, match="must have dtype float32 or float16 or bfloat16"):
        kernelkit.add(a.int(), a.int())
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.add(a, a, out=torch.empty(11, device="cuda"))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.add(a, a, variant="nope")
    buf = torch.randn(11, device="cuda")
    with pytest.raises(ValueError, match="partially overlaps"):
        kernelkit.add(buf[:10], a, out=buf[1:])


def test_torch_compile_and_cuda_graph():
    f = torch.compile(lambda x, y: kernelkit.add(x, y) * 2, fullgraph=True)
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    assert_close(f(a, b), reference.add(a, b) * 2, torch.float32, "compiled")
    out = torch.empty_like(a)
    kernelkit.add(a, b, out=out)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.add(a, b, out=out)
    a.copy_(torch.randn_like(a))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, reference.add(a, b), torch.float32, "graph replay")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_lane_matches_the_checked_path(dtype):
    """The first plain call takes the checked path and makes the lane of (dtype, device); every later
    plain call of contiguous inputs takes the lane. Both, on odd sizes and offset views (the aligned
    and the shuffle kernel), give the float64 result bit for bit alike."""
    clear_plans()
    dev = torch.cuda.current_device()
    first = True
    for n in (1, 5, 17, 255, 4097, 2**20 + 3):
        for offsets in OFFSETS:
            a, b = random_input(n, dtype, offsets[0]), random_input(n, dtype, offsets[1])
            checked = kernelkit.add(a, b, out=poisoned_like(a))  # out= never takes the lane
            if first:
                assert not add_module.LANES
                assert_close(kernelkit.add(a, b), reference.add(a, b), dtype, "first plain call")
                first = False
            assert (dtype, dtype, dev, dev) in add_module.LANES
            laned = kernelkit.add(a, b)
            assert laned.shape == a.shape and laned.is_contiguous()
            assert torch.equal(laned, checked), f"lane differs from the checked path: n={n} offsets={offsets}"
            assert_close(laned, reference.add(a, b), dtype, f"lane n={n} offsets={offsets}")
    for shape in ((37, 129), (3, 5, 7), (), (0, 5)):  # 0-d and empty tensors through the lane
        a, b = torch.randn(shape, device="cuda", dtype=dtype), torch.randn(shape, device="cuda", dtype=dtype)
        got = kernelkit.add(a, b)
        assert got.shape == a.shape
        assert_close(got, reference.add(a, b), dtype, f"lane {shape}")


def test_lane_only_for_the_plain_call_and_falls_through():
    """variant=, config= and out= calls make no lane; with one made, inputs it does not take
    (non-contiguous, mismatched, on the CPU) get the checked path's result or error."""
    clear_plans()
    a, b = torch.randn(37, 129, device="cuda"), torch.randn(37, 129, device="cuda")
    kernelkit.add(a, b, variant="fast")
    kernelkit.add(a, b, config=ElementwiseLaunch(256))
    kernelkit.add(a, b, out=torch.empty_like(a))
    assert not add_module.LANES
    kernelkit.add(a, b)
    assert len(add_module.LANES) == 1
    assert_close(kernelkit.add(a.t(), b.t()), reference.add(a.t(), b.t()), torch.float32, "transposed after lane")
    with pytest.raises(ValueError, match="does not broadcast"):
        kernelkit.add(a, b[:, :-1])
    with pytest.raises(TypeError, match="does not promote"):
        kernelkit.add(a, b.half())
    with pytest.raises(ValueError, match="a must be a CUDA tensor"):
        kernelkit.add(a.cpu(), b.cpu())
    assert len(add_module.LANES) == 1
    clear_plans()
    assert not add_module.LANES


def test_lane_in_a_cuda_graph():
    a, b = torch.randn(4097, device="cuda"), torch.randn(4097, device="cuda")
    kernelkit.add(a, b)  # makes the lane outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = kernelkit.add(a, b)
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, reference.add(a, b), torch.float32, "lane in a graph")


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["1d", "fast"])
def test_more_than_2_31_elements(variant):
    n = 2**31 + 7
    a = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-4, 4)
    b = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-4, 4)
    out = kernelkit.add(a, b, variant=variant)
    for lo in (0, 2**31 - 2**20, n - 2**20):  # both ends and across 2^31
        hi = min(n, lo + 2**21)
        assert_close(out[lo:hi], reference.add(a[lo:hi], b[lo:hi]), torch.float16, f"chunk {lo}")
    del a, b, out
    torch.cuda.empty_cache()
