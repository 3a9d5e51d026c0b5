"""ReLU on the GPU: every rung of the shared unary ladder x dtype x size x alignment, NaN, layouts."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.elementwise import ElementwiseLaunch
from gpu_helpers import SIZES, assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

CASES = [(v.name, d) for v in kernelkit.ladder("relu") for d in v.dtypes]
IDS = [f"{v}-{str(d)[6:]}" for v, d in CASES]
CONFIGS = (ElementwiseLaunch(32), ElementwiseLaunch(128, 13), ElementwiseLaunch(1024), ElementwiseLaunch(64, 16))


def _check(variant, dtype, n, offset, out_offset):
    v = kernelkit.get_op("relu").variant(variant)
    x = random_input(n, dtype, offset)
    out = poisoned_like(x, out_offset)
    if v.align and n > 0 and (x.data_ptr() % v.align or out.data_ptr() % v.align):
        with pytest.raises(ValueError, match="aligned"):
            kernelkit.relu(x, out=out, variant=variant)
        return
    assert kernelkit.relu(x, out=out, variant=variant) is out
    assert_close(out, reference.relu(x), dtype, f"{variant} n={n} offsets={offset},{out_offset}")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_every_rung_matches_float64(variant, dtype, n):
    for offset, out_offset in ((0, 0), (1, 1), (3, 0), (0, 2)):
        _check(variant, dtype, n, offset, out_offset)


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_small_every_rung(variant, dtype):
    for n in (5, 17, 1000):
        for offset, out_offset in ((0, 0), (1, 1), (3, 0)):
            _check(variant, dtype, n, offset, out_offset)


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_nan_inf_and_signed_zero(variant, dtype):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, -1.5, 2.5, 1e-3] * 16,
                     device="cuda", dtype=dtype)
    got = kernelkit.relu(x, variant=variant)
    want = torch.relu(x)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    ok = ~torch.isnan(want)
    assert torch.equal(got[ok], want[ok])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_config_launches_match_float64(config, dtype):
    """Launch shapes other than the rule's (config=), on odd sizes and offsets."""
    for n in (1, 3, 4097, 2**20 + 3):
        for offset, out_offset in ((0, 0), (1, 1), (3, 0), (0, 2)):
            x = random_input(n, dtype, offset)
            out = poisoned_like(x, out_offset)
            assert kernelkit.relu(x, out=out, config=config) is out
            assert_close(out, reference.relu(x), dtype, f"{config} n={n} offsets={offset},{out_offset}")
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.relu(x, variant="scalar", config=config)


def test_shapes_noncontiguous_inplace_empty():
    x = torch.randn(37, 129, device="cuda")
    assert_close(kernelkit.relu(x.t()), reference.relu(x.t()), torch.float32, "transposed")
    out = poisoned_like(x).t()
    kernelkit.relu(x.t(), out=out)
    assert_close(out, reference.relu(x.t()), torch.float32, "non-contiguous out")
    y = x.clone()
    kernelkit.relu(y, out=y)
    assert_close(y, reference.relu(x), torch.float32, "in place")
    assert kernelkit.relu(torch.empty(0, 3, device="cuda")).shape == (0, 3)


def test_bad_arguments_raise_clearly():
    x = torch.randn(10, device="cuda")
    with pytest.raises(TypeError, match="x must have dtype"):
        kernelkit.relu(x.int())
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        kernelkit.relu(x.cpu())
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.relu(x, out=torch.empty(3, device="cuda"))
    with pytest.raises(TypeError, match="supports float32"):
        kernelkit.relu(x.half(), variant="float4")


def test_gelu_still_works_on_the_shared_ladder():
    x = random_input(4097, torch.float16, 1)
    assert_close(kernelkit.gelu(x), reference.gelu(x), torch.float16, "gelu")


def test_torch_compile():
    f = torch.compile(lambda t: kernelkit.relu(t) + 1, fullgraph=True)
    x = torch.randn(1000, device="cuda")
    assert_close(f(x), reference.relu(x) + 1, torch.float32, "compiled")


@pytest.mark.slow
def test_more_than_2_31_elements():
    n = 2**31 + 7
    x = torch.empty(n, device="cuda", dtype=torch.float16).uniform_(-4, 4)
    out = kernelkit.relu(x)
    for lo in (0, 2**31 - 2**20, n - 2**20):
        hi = min(n, lo + 2**21)
        assert_close(out[lo:hi], reference.relu(x[lo:hi]), torch.float16, f"chunk {lo}")
    del x, out
    torch.cuda.empty_cache()
