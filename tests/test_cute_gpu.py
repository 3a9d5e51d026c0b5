"""The CuTe rungs on the GPU, beyond the cases their ops' GPU tests run for every rung: the gelu rung with the
input misaligned against the output, transposes of every element size at shapes off the tile, GEMMs over
many K stages with edges everywhere. Against float64 (bit for bit for transpose), outputs poisoned. The
``small`` tests are the compute-sanitizer workload."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.elementwise import ElementwiseLaunch
from kernelkit.ops.gemm import MatmulTile
from kernelkit.runtime import cute_headers
from gpu_helpers import assert_close, poisoned_like, random_input
from matmul_helpers import check_matmul, operand, poisoned
from rearrange_helpers import BY_SIZE, EXTRA, assert_same_bits, random_tensor
from rearrange_helpers import poisoned as poisoned_bits

MISSING = cute_headers.missing()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(MISSING is not None, reason=f"CuTe headers missing: {MISSING}")]
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def _gelu(n: int, dtype, x_off: int, out_off: int, approximate: str) -> None:
    x = random_input(n, dtype, x_off)
    out = poisoned_like(x, out_off)
    assert kernelkit.gelu(x, approximate=approximate, out=out, variant="cute") is out
    assert_close(out, reference.gelu(x, approximate), dtype, f"cute {dtype} n={n} offsets {x_off},{out_off}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_small_gelu_any_alignment_of_either_tensor(dtype, approximate):
    for n in (1, 2, 7, 8, 9, 31, 4097):
        for x_off, out_off in ((0, 0), (1, 1), (0, 1), (1, 0), (3, 5), (7, 2)):
            _gelu(n, dtype, x_off, out_off, approximate)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gelu_large_and_in_place(dtype):
    for x_off, out_off in ((0, 0), (1, 0), (2, 3)):
        _gelu(2**22 + 5, dtype, x_off, out_off, "tanh")
    x = random_input(100_003, dtype, 1)
    want = reference.gelu(x)
    assert kernelkit.gelu(x, out=x, variant="cute") is x
    assert_close(x, want, dtype, "in place")


@pytest.mark.parametrize("dtype", BY_SIZE + EXTRA, ids=str)
def test_small_transpose_every_element_size(dtype):
    for shape in ((1, 1), (1, 33), (33, 1), (31, 33), (32, 32), (64, 96), (65, 97), (3, 40, 70), (2, 1, 5)):
        for offset in (0, 1):
            x = random_tensor(shape, dtype, offset)
            out = poisoned_bits((*shape[:-2], shape[-1], shape[-2]), dtype, offset)
            assert kernelkit.transpose(x, out=out, variant="cute") is out
            assert_same_bits(out, x.transpose(-2, -1), f"cute {dtype} {shape} offset {offset}")


@pytest.mark.parametrize("dtype", BY_SIZE, ids=str)
def test_transpose_large_strided_and_permuted(dtype):
    x = random_tensor((1000, 1537), dtype, 3)
    assert_same_bits(kernelkit.transpose(x, variant="cute"), x.t(), f"{dtype} 1000x1537")
    nchw = random_tensor((2, 24, 33, 47), dtype)  # NCHW -> NHWC: a batched (C, H*W) transpose
    assert_same_bits(kernelkit.transpose(nchw, 1, 3, variant="cute"), nchw.transpose(1, 3), f"{dtype} NCHW dims 1,3")
    view = random_tensor((300, 500), dtype)[7:250:2, 3:480]  # both strides free
    assert_same_bits(kernelkit.transpose(view, variant="cute"), view.t(), f"{dtype} strided view")


def _mm(m, n, k, dtype, ta=False, tb=False, oa=0, ob=0, oc=0, batch=()):
    a = operand((*batch, m, k), dtype, ta, oa)
    b = operand((*batch, k, n), dtype, tb, ob)
    out = poisoned((*batch, m, n), dtype, oc)
    assert kernelkit.matmul(a, b, out=out, variant="cute") is out
    check_matmul(out, a, b, False, f"cute {dtype} {batch}{m}x{n}x{k} t={ta},{tb} offsets {oa},{ob},{oc}")


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16), ids=str)
def test_small_matmul_layouts_edges_offsets(dtype):
    for ta in (False, True):
        for tb in (False, True):
            _mm(130, 67, 41, dtype, ta, tb)  # partial tiles in M, N and the K stage
            _mm(1, 9, 8, dtype, ta, tb)
    _mm(33, 129, 100, dtype, oa=1, ob=2, oc=1)  # misaligned: element loads
    _mm(40, 24, 36, dtype, True, True, oa=8, ob=16, batch=(2,))


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16), ids=str)
def test_matmul_many_k_stages_and_tiles(dtype):
    _mm(1031, 517, 1000, dtype)  # 32 K stages, partial last tiles, grouped block order over 9 x 5 tiles
    _mm(257, 1024, 2049, dtype, ta=True, tb=True)
    _mm(512, 512, 4096, dtype, tb=True)
    _mm(129, 255, 96, dtype, batch=(3,))
    x, w, bias = operand((3, 257, 96), dtype), operand((200, 96), dtype), operand((1, 200), dtype)[0]
    out = kernelkit.linear(x, w, bias, variant="cute")
    check_matmul(out.view(-1, 200), x.reshape(-1, 96), w.t(), False, "linear cute", bias=bias)


def test_config_and_dtype_errors():
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    with pytest.raises(TypeError, match="supports float16, bfloat16"):
        kernelkit.matmul(a.float(), a.float(), variant="cute")
    with pytest.raises(ValueError, match="config= applies"):
        kernelkit.matmul(a, a, variant="cute", config=MatmulTile(64, 64, 32, 32))
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.gelu(a, variant="cute", config=ElementwiseLaunch(256))
