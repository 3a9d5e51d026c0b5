"""GELU on the GPU: every rung x dtype x size x alignment against float64, plus compile and graphs."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.elementwise import ElementwiseLaunch
from gpu_helpers import SIZES, assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

CASES = [(v.name, d) for v in kernelkit.ladder("gelu") for d in v.dtypes if not v.unavailable()]  # test_cute_gpu: why
CONFIGS = (ElementwiseLaunch(32), ElementwiseLaunch(128, 13), ElementwiseLaunch(1024), ElementwiseLaunch(64, 16))


@pytest.mark.parametrize("approximate", ["tanh", "none"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant,dtype", CASES, ids=[f"{v}-{str(d)[6:]}" for v, d in CASES])
def test_every_rung_matches_float64(variant, dtype, n, approximate):
    v = kernelkit.get_op("gelu").variant(variant)
    for offset in (0, 1, 3):
        x = random_input(n, dtype, offset)
        out = poisoned_like(x, offset)
        misaligned = v.align and (x.data_ptr() % v.align or out.data_ptr() % v.align)
        if misaligned and n > 0:
            with pytest.raises(ValueError, match="aligned"):
                kernelkit.gelu(x, approximate=approximate, out=out, variant=variant)
            continue
        got = kernelkit.gelu(x, approximate=approximate, out=out, variant=variant)
        assert got is out
        assert_close(out, reference.gelu(x, approximate), dtype, f"{variant} n={n} offset={offset}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_default_handles_input_and_output_misaligned_differently(dtype):
    x = random_input(100_003, dtype, offset=1)
    for out_offset in (0, 2, 5):
        out = poisoned_like(x, out_offset)
        kernelkit.gelu(x, out=out)
        assert_close(out, reference.gelu(x), dtype, f"out offset {out_offset}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_config_launches_match_float64(config, dtype):
    """Launch shapes other than the rule's (config=), on odd sizes, offsets and both forms."""
    for n in (1, 3, 4097, 2**20 + 3):
        for offset, out_offset in ((0, 0), (1, 1), (1, 0), (0, 3)):
            x = random_input(n, dtype, offset)
            out = poisoned_like(x, out_offset)
            for approximate in ("tanh", "none"):
                kernelkit.gelu(x, approximate=approximate, out=out, config=config)
                assert_close(out, reference.gelu(x, approximate), dtype, f"{config} n={n} offsets={offset},{out_offset}")


def test_config_errors():
    x = torch.randn(100, device="cuda")
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.gelu(x, variant="scalar", config=ElementwiseLaunch(256))
    with pytest.raises(ValueError, match="threads an SM"):
        kernelkit.gelu(x, config=ElementwiseLaunch(1024, 3))
    with pytest.raises(TypeError, match="ElementwiseLaunch"):
        kernelkit.gelu(x, config={"block": 256})


def test_shapes_noncontiguous_and_inplace():
    x = torch.randn(37, 129, device="cuda")
    assert_close(kernelkit.gelu(x), reference.gelu(x), torch.float32, "2d")
    xt = x.t()  # non-contiguous
    assert_close(kernelkit.gelu(xt), reference.gelu(xt), torch.float32, "transposed")
    out = poisoned_like(x).t()  # non-contiguous out
    kernelkit.gelu(xt, out=out)
    assert_close(out, reference.gelu(xt), torch.float32, "non-contiguous out")
    y = x.clone()
    kernelkit.gelu(y, out=y)
    assert_close(y, reference.gelu(x), torch.float32, "in place")
    assert kernelkit.gelu(torch.empty(0, 5, device="cuda")).shape == (0, 5)


def test_matches_torch_semantics():
    x = torch.randn(4099, device="cuda", dtype=torch.float16) * 4
    for approx in ("tanh", "none"):
        torch.testing.assert_close(
            kernelkit.gelu(x, approximate=approx), torch.nn.functional.gelu(x, approximate=approx),
            atol=2e-3, rtol=2e-3,
        )


def test_bad_arguments_raise_clearly():
    x = torch.randn(10, device="cuda")
    with pytest.raises(TypeError, match="x must have dtype"):
        kernelkit.gelu(torch.ones(3, device="cuda", dtype=torch.int32))
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.gelu(x, out=torch.empty(11, device="cuda"))
    with pytest.raises(TypeError, match="out has dtype"):
        kernelkit.gelu(x, out=torch.empty(10, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="approximate"):
        kernelkit.gelu(x, approximate="fast")
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.gelu(x, variant="nope")
    with pytest.raises(TypeError, match="supports float32"):
        kernelkit.gelu(x.half(), variant="float4")


def test_torch_compile_fullgraph():
    f = torch.compile(lambda t: kernelkit.gelu(t) * 2, fullgraph=True)
    x = torch.randn(1000, device="cuda")
    assert_close(f(x), reference.gelu(x) * 2, torch.float32, "compiled")


def test_cuda_graph_capture():
    x = torch.randn(4097, device="cuda")
    out = torch.empty_like(x)
    kernelkit.gelu(x, out=out)  # compile and load outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.gelu(x, out=out)
    x.copy_(torch.randn_like(x))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, reference.gelu(x), torch.float32, "graph replay")


@pytest.mark.slow
def test_more_than_2_31_elements():
    n = 2**31 + 7
    x = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-4, 4)
    out = kernelkit.gelu(x)
    for lo in range(0, n, 2**28):  # check in chunks: a float64 copy of the whole would not fit
        hi = min(n, lo + 2**28)
        assert_close(out[lo:hi], reference.gelu(x[lo:hi]), torch.float16, f"chunk {lo}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_erf_form_of_16_bit_types_over_its_whole_range(dtype):
    """The 16-bit erf form (a fitted erfc, not erff) on every value from -16 to 16 at the type's spacing
    near zero, against float64, at an odd size and an offset; infinities and NaN as torch gives them."""
    x = torch.arange(-16, 16, 1 / 512, device="cuda", dtype=torch.float64).to(dtype)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 1e-6, -1e-6], device="cuda", dtype=dtype)])[1:]  # odd length
    for offset in (0, 3):
        xs = torch.cat([torch.zeros(offset, device="cuda", dtype=dtype), x])[offset:]
        out = poisoned_like(xs)
        kernelkit.gelu(xs, approximate="none", out=out)
        assert_close(out, reference.gelu(xs, "none"), dtype, f"erf form, offset {offset}")
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0], device="cuda", dtype=dtype)
    torch.testing.assert_close(kernelkit.gelu(special, approximate="none"),
                               torch.nn.functional.gelu(special, approximate="none"), equal_nan=True)
