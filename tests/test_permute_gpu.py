"""permute on the GPU: every rung x permutation x element size, deployment layouts, up to 6 dims,
offset and non-contiguous views, bit-exact against torch."""
import itertools
import random

import pytest
import torch

import kernelkit
from kernelkit.runtime.lanes import fixed_key
from kernelkit.ops.rearrangement.permute import TileConfig
from rearrange_helpers import BY_SIZE, EXTRA, assert_same_bits, poisoned, random_tensor

pytestmark = pytest.mark.gpu

RUNGS = [v.name for v in kernelkit.ladder("permute")]


@pytest.mark.parametrize("dtype", BY_SIZE, ids=str)
@pytest.mark.parametrize("variant", RUNGS)
def test_every_4d_permutation(variant, dtype):
    for shape in ((2, 3, 5, 7), (4, 8, 16, 8), (1, 16, 1, 24)):
        for offset in (0, 1):
            x = random_tensor(shape, dtype, offset)
            for perm in itertools.permutations(range(4)):
                out = poisoned([shape[d] for d in perm], dtype, offset)
                got = kernelkit.permute(x, perm, out=out, variant=variant)
                assert got is out
                assert_same_bits(out, x.permute(perm), f"{variant} {dtype} {shape} {perm} offset {offset}")


@pytest.mark.parametrize("dtype", BY_SIZE + EXTRA, ids=str)
@pytest.mark.parametrize("variant", RUNGS)
def test_deployment_layouts(variant, dtype):
    """NCHW <-> NHWC, the last-two swap and the batch-axis move, at aligned and odd sizes."""
    for shape in ((2, 3, 17, 19), (4, 64, 14, 14), (2, 16, 8, 8), (3, 24, 5, 8), (2, 3, 16, 16), (3, 4, 8, 32),
                  (2, 8, 16, 16), (2, 3, 32, 48)):  # RGB / RGBA / 8 channels: the skinny kernels
        x = random_tensor(shape, dtype)
        nhwc = kernelkit.permute(x, (0, 2, 3, 1), variant=variant)
        assert_same_bits(nhwc, x.permute(0, 2, 3, 1), f"NCHW->NHWC {shape}")
        assert_same_bits(kernelkit.permute(nhwc, (0, 3, 1, 2), variant=variant), x, f"NHWC->NCHW {shape}")
        assert_same_bits(kernelkit.permute(x, (0, 1, 3, 2), variant=variant), x.transpose(-2, -1), "last two")
    for shape in ((8, 128, 96), (5, 7, 3), (6, 10, 64)):  # (batch, seq, hidden) -> (seq, batch, hidden)
        x = random_tensor(shape, dtype)
        assert_same_bits(kernelkit.permute(x, (1, 0, 2), variant=variant), x.permute(1, 0, 2), f"batch {shape}")


@pytest.mark.parametrize("variant", RUNGS)
def test_five_and_six_dims(variant):
    rng = random.Random(5)
    for ndim in (5, 6):
        for _ in range(12):
            shape = [rng.choice([1, 2, 3, 4, 5]) for _ in range(ndim)]
            perm = list(range(ndim))
            rng.shuffle(perm)
            for dtype in (torch.uint8, torch.float32, torch.float64):
                x = random_tensor(shape, dtype, rng.choice([0, 1]))
                assert_same_bits(kernelkit.permute(x, perm, variant=variant), x.permute(perm), f"{shape} {perm}")


def test_seven_dims_that_merge_and_that_do_not():
    x = random_tensor((2, 3, 2, 3, 2, 3, 2), torch.float16)
    perm = (0, 1, 2, 3, 6, 4, 5)  # merges to 3 dims
    assert_same_bits(kernelkit.permute(x, perm), x.permute(perm), "mergeable 7-d")
    with pytest.raises(ValueError, match="up to 6"):
        kernelkit.permute(x, (6, 4, 2, 0, 5, 3, 1))


def test_non_contiguous_inputs():
    base = random_tensor((6, 16, 10, 12), torch.float32)
    views = {
        "sliced": base[1:5, ::2, 3:], "transposed": base.transpose(1, 3), "channels_last":
        base.to(memory_format=torch.channels_last), "expanded": base[:1].expand(3, 16, 10, 12),
        "offset": base.flatten()[3:3 + 5 * 16 * 10 * 12].view(5, 16, 10, 12),
    }
    for name, v in views.items():
        for variant in RUNGS:
            for perm in ((0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 2, 3)):
                assert_same_bits(kernelkit.permute(v, perm, variant=variant), v.permute(perm), f"{name} {perm}")


def test_large_nchw_to_nhwc():
    x = random_tensor((8, 64, 56, 56), torch.float16)
    for variant in RUNGS:
        assert_same_bits(kernelkit.permute(x, (0, 2, 3, 1), variant=variant), x.permute(0, 2, 3, 1), variant)


def test_empty_scalar_and_identity():
    assert kernelkit.permute(torch.empty(0, 3, 4, device="cuda"), (2, 0, 1)).shape == (4, 0, 3)
    s = torch.tensor(2.5, device="cuda")
    assert_same_bits(kernelkit.permute(s, ()), s, "0-d")
    x = random_tensor((3, 5, 7), torch.int32)
    assert_same_bits(kernelkit.permute(x, (0, 1, 2)), x, "identity")
    assert_same_bits(kernelkit.permute(x, (-3, -1, -2)), x.permute(0, 2, 1), "negative dims")


def test_bad_arguments_raise_clearly():
    x = torch.randn(2, 3, 4, device="cuda")
    with pytest.raises(ValueError, match="dims has 2 entries"):
        kernelkit.permute(x, (0, 1))
    with pytest.raises(ValueError, match="not a permutation"):
        kernelkit.permute(x, (0, 1, 1))
    with pytest.raises(IndexError, match="dims entry"):
        kernelkit.permute(x, (0, 1, 3))
    with pytest.raises(TypeError, match="sequence of ints"):
        kernelkit.permute(x, 0)
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        kernelkit.permute(x.cpu(), (0, 1, 2))
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.permute(x, (2, 1, 0), out=torch.empty(2, 3, 4, device="cuda"))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.permute(x, (2, 1, 0), variant="wide")


def test_torch_compile_and_graphs():
    f = torch.compile(lambda t: kernelkit.permute(t, (0, 2, 3, 1)) + 1, fullgraph=True)
    x = torch.randn(2, 8, 5, 6, device="cuda")
    torch.testing.assert_close(f(x), x.permute(0, 2, 3, 1) + 1, rtol=0, atol=0)
    out = torch.empty(2, 5, 6, 8, device="cuda")
    kernelkit.permute(x, (0, 2, 3, 1), out=out)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.permute(x, (0, 2, 3, 1), out=out)
    x.copy_(torch.randn_like(x))
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x.permute(0, 2, 3, 1))


def test_config_tile_on_layout_changes():
    """config= sets the wide tile of a permutation that merges to a batched transpose; a gather refuses it."""
    x = random_tensor((4, 64, 16, 24), torch.float16)
    for tile in ((64, 64, 256), (128, 64, 128), (64, 128, 256)):
        for perm in ((0, 2, 3, 1), (0, 1, 3, 2)):
            got = kernelkit.permute(x, perm, config=TileConfig(*tile))
            assert_same_bits(got, x.permute(perm), f"{tile} {perm}")
        y = x.permute(0, 2, 3, 1).contiguous()
        assert_same_bits(kernelkit.permute(y, (0, 3, 1, 2), config=TileConfig(*tile)), x, f"{tile} NHWC->NCHW")
    with pytest.raises(ValueError, match="copy or a gather"):
        kernelkit.permute(x, (3, 1, 0, 2), config=TileConfig(64, 64, 256))
    with pytest.raises(ValueError, match="no wide tile"):
        kernelkit.permute(x, (0, 2, 3, 1), variant="tiled", config=TileConfig(64, 64, 256))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device_while_the_first_is_current():
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    with torch.cuda.device(0):
        for dtype in BY_SIZE:
            x = random_tensor((2, 16, 7, 9), dtype, 1).to("cuda:1")
            for variant in RUNGS:
                for dims in ((0, 2, 3, 1), (3, 1, 0, 2), (1, 0, 2, 3)):
                    got = kernelkit.permute(x, dims, variant=variant)
                    assert got.device == x.device
                    assert_same_bits(got, x.permute(dims), f"cuda:1 {variant} {dtype} {dims}")


@pytest.mark.parametrize("dtype", BY_SIZE, ids=str)
def test_the_fixed_lane_replays_the_checked_paths_launch(dtype):
    """A plain call records its launch as the lane of (dtype, device, shape, dims); later plain calls replay
    it on new tensors, bit-exact; dims as a list reach the same lane; offset views take the checked path."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.rearrangement import permute as module

    clear_plans()
    for shape, dims in (((2, 16, 9, 7), (0, 2, 3, 1)), ((3, 37, 53), (0, 2, 1)), ((8, 5, 12, 64), (0, 2, 1, 3))):
        first = random_tensor(shape, dtype, 0)
        assert_same_bits(kernelkit.permute(first, dims), first.permute(dims).contiguous())
        assert fixed_key(first, dims) in module._lanes, shape
        for offset, d in ((0, dims), (0, list(dims)), (1, dims)):
            x = random_tensor(shape, dtype, offset)
            assert_same_bits(kernelkit.permute(x, d), x.permute(dims).contiguous())
