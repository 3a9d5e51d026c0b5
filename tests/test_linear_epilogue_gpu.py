"""linear's fused epilogues on the GPU: every rung x activation (None, relu, gelu, gelu_tanh) x residual
(or none) x dtype against a float64 reference of the unfused expression, on odd shapes (x with leading
dims, a residual that is an offset view with a row stride larger than N, NaN-poisoned outputs); the GELU
forms against torch's to the output's rounding; the argument errors."""
import pytest
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from matmul_helpers import OUT_EPS, poisoned, values

pytestmark = pytest.mark.gpu

F32, F64 = torch.float32, torch.float64
TC_ONLY = ("wmma_global", "wmma_smem", "mma", "tma_wgmma", "ws", "persistent", "cute")
CASES = [(v.name, d) for v in kernelkit.ladder("linear") for d in v.dtypes if not v.unavailable()]
IDS = [f"{v}-{str(d)[6:]}" for v, d in CASES]
ACTS = (None, "relu", "gelu", "gelu_tanh")
REF_ACT = {None: lambda v: v, "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}


def _tf32(variant, dtype):
    return dtype == F32 and variant in TC_ONLY


def _residual(shape, dtype):
    """An offset view of shape (..., N) whose rows are N + 5 apart."""
    *lead, n = shape
    rows = 1
    for s in lead:
        rows *= s
    buf = values(rows * (n + 5) + 3, dtype)[3:].view(*lead, n + 5)
    return buf[..., 2:2 + n]


def _check(out, x, w, bias, act, res, tf32, what):
    """act(x @ w.T + bias) + res in float64. Bound: the sum's rounding, 2 (K + 2) u |x| |w| (2^-10 more
    for tf32), times 1.13 (the largest slope of GELU; ReLU's is 1); the activation and residual add in
    the accumulator type, 8 u (|pre| + |res|); the one rounding to the output dtype."""
    k = x.shape[-1]
    x2, wt = x.reshape(-1, k), w.t()
    pre = reference.matmul(x2, wt) + bias.double()
    mag = reference.matmul_magnitude(x2, wt) + bias.double().abs()
    ref = REF_ACT[act](pre)
    r = res.reshape(-1, w.shape[0]).double() if res is not None else torch.zeros_like(ref)
    ref = ref + r
    u = 2.0**-53 if x.dtype == F64 else 2.0**-24
    bound = (1.13 * (2 * (k + 2) * u * mag + (2.0**-10 * mag if tf32 else 0)) + 8 * u * (pre.abs() + r.abs())
             + OUT_EPS[out.dtype] * ref.abs() + 1e-300)
    o = out.reshape(ref.shape).double()
    bad = torch.nonzero(~((o - ref).abs() <= bound))
    if bad.numel():
        first = [tuple(i) for i in bad[:5].tolist()]
        raise AssertionError(f"{what}: {bad.shape[0]} of {ref.numel()} wrong; first at {first}: "
                             f"out={[float(o[i]) for i in first]} ref={[float(ref[i]) for i in first]}")


@pytest.mark.parametrize("variant,dtype", CASES, ids=IDS)
def test_every_rung_activation_and_residual(variant, dtype):
    tf32 = _tf32(variant, dtype)
    # 2-D x with M, N, K primes (K odd: the mma rung on 16-bit data); 3-D x with K a multiple of 8 (the TMA
    # rungs read it)
    for xshape, n in (((131, 97), 257), ((3, 37, 136), 263)):
        k = xshape[-1]
        x = values(int(torch.tensor(xshape).prod()), dtype).view(xshape)
        w = values(n * k, dtype).view(n, k)
        bias = values(n, dtype)
        for act in ACTS:
            for with_res in (False, True):
                res = _residual((*xshape[:-1], n), dtype) if with_res else None
                out = poisoned((*xshape[:-1], n), dtype)
                got = kernelkit.linear(x, w, bias, activation=act, residual=res, out=out, allow_tf32=tf32,
                                       variant=variant)
                assert got is out
                _check(out, x, w, bias, act, res, tf32, f"{variant} {dtype} {xshape}x{n} act={act} res={with_res}")


@pytest.mark.parametrize("rung", ["tma_wgmma", "ws", "persistent"])
def test_hopper_rungs_launch_the_fused_kernel(rung):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("sm_90 only")
    from kernelkit.ops.gemm import matmul as mm
    names = []
    real = mm.launch_tma

    def spy(*a, **kw):
        r = real(*a, **kw)
        names.append((a[0], r))
        return r
    mm.launch_tma = spy
    try:
        x, w = values(3 * 37 * 136, torch.bfloat16).view(3, 37, 136), values(263 * 136, torch.bfloat16).view(263, 136)
        kernelkit.linear(x, w, activation="gelu", residual=_residual((3, 37, 263), torch.bfloat16), variant=rung)
    finally:
        mm.launch_tma = real
    assert names == [(rung, None)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, F32])
@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu"])
def test_activation_matches_torch_to_the_output_rounding(dtype, act):
    """K = 1 and w = 1: the product is x exactly, so the fused result is act(x) rounded once, as torch's
    F.gelu rounds it: equal, or one unit in the last place apart where the two fp32 evaluations differ."""
    x = values(4099, dtype).view(4099, 1) * 3
    w = torch.ones(7, 1, device="cuda", dtype=dtype)
    got = kernelkit.linear(x, w, activation=act)
    want = REF_ACT[act](x).expand(4099, 7)
    diff = (got.double() - want.double()).abs()
    assert (diff <= OUT_EPS[dtype] * want.double().abs() * 2 + 1e-30).all()
    assert (diff == 0).double().mean() > 0.99


def test_in_place_residual_and_empty_sum():
    x, w, b = values(40 * 24, F32).view(40, 24), values(33 * 24, F32).view(33, 24), values(33, F32)
    r = values(40 * 33, F32).view(40, 33)
    want = F.gelu(x.double() @ w.double().t() + b.double()) + r.double()
    got = kernelkit.linear(x, w, b, activation="gelu", residual=r, out=r)  # out is the residual
    assert got is r and torch.allclose(got.double(), want, rtol=1e-5, atol=1e-5)
    z = kernelkit.linear(x[:, :0], w[:, :0], b, activation="gelu_tanh", residual=torch.ones(40, 33, device="cuda"))
    assert torch.allclose(z, F.gelu(b, approximate="tanh").expand(40, 33) + 1)


def test_errors_name_the_argument():
    x, w = torch.randn(4, 8, device="cuda"), torch.randn(5, 8, device="cuda")
    with pytest.raises(ValueError, match="activation must be None or one of 'relu', 'gelu', 'gelu_tanh'"):
        kernelkit.linear(x, w, activation="silu")
    with pytest.raises(TypeError, match="residual must be a torch.Tensor"):
        kernelkit.linear(x, w, residual=[1.0])
    with pytest.raises(TypeError, match="residual has dtype float16 but x has float32"):
        kernelkit.linear(x, w, residual=torch.zeros(4, 5, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match=r"residual must have the result's shape \(4, 5\)"):
        kernelkit.linear(x, w, residual=torch.zeros(5, device="cuda"))
    with pytest.raises(ValueError, match="residual must be a CUDA tensor"):
        kernelkit.linear(x, w, residual=torch.zeros(4, 5))
    with pytest.raises(ValueError, match="out partially overlaps residual"):
        buf = torch.zeros(4 * 5 + 1, device="cuda")
        kernelkit.linear(x, w, residual=buf[:20].view(4, 5), out=buf[1:].view(4, 5))
