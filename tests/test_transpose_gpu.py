"""transpose on the GPU: every rung x element size x odd/batched/offset shape, bit-exact against torch."""
import pytest
import torch

import kernelkit
from kernelkit.runtime.lanes import fixed_key
from kernelkit.ops.rearrangement.transpose import TileConfig
from rearrange_helpers import BY_SIZE, EXTRA, assert_same_bits, poisoned, random_tensor

pytestmark = pytest.mark.gpu

RUNGS = [v.name for v in kernelkit.ladder("transpose") if not v.unavailable()]  # test_cute_gpu says why
SHAPES = [(1, 1), (1, 7), (7, 1), (2, 3), (37, 53), (31, 33), (64, 64), (128, 256), (129, 257), (1000, 3),
          (3, 1000), (96, 520), (3, 37, 53), (2, 64, 128), (5, 1, 16), (4, 48, 16),
          # 2..8 rows or columns: the best rung's skinny kernels (where 16-byte vectors fit the other side)
          (3, 4096), (4096, 3), (7, 512), (512, 5), (2, 3, 512), (2, 512, 8), (8, 2048), (2, 64)]


def _expect_refusal(variant: str, x: torch.Tensor, out: torch.Tensor) -> bool:
    """The wide rung refuses transposes its 16-byte vectors do not fit (the default falls back)."""
    if variant != "wide" or x.dim() < 2 or x.shape[-1] == 1 or x.shape[-2] == 1:
        return False
    v = 16 // x.dtype.itemsize
    r, c = x.shape[-2], x.shape[-1]
    aligned = x.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0
    return not (aligned and r % v == 0 and c % v == 0)


@pytest.mark.parametrize("dtype", BY_SIZE, ids=str)
@pytest.mark.parametrize("variant", RUNGS)
def test_every_rung_every_size_every_shape(variant, dtype):
    for shape in SHAPES:
        for offset in (0, 1, 3):
            x = random_tensor(shape, dtype, offset)
            out = poisoned((*shape[:-2], shape[-1], shape[-2]), dtype, offset)
            what = f"{variant} {dtype} {shape} offset {offset}"
            if _expect_refusal(variant, x, out):
                with pytest.raises(ValueError, match="multiples of"):
                    kernelkit.transpose(x, out=out, variant=variant)
                continue
            got = kernelkit.transpose(x, out=out, variant=variant)
            assert got is out, what
            assert_same_bits(out, x.transpose(-2, -1), what)
            assert_same_bits(kernelkit.transpose(x, variant=variant), x.transpose(-2, -1), what + " (new out)")


@pytest.mark.parametrize("dtype", BY_SIZE + EXTRA, ids=str)
def test_default_every_dtype(dtype):
    for shape in ((256, 64), (37, 53), (3, 40, 24)):
        x = random_tensor(shape, dtype)
        assert_same_bits(kernelkit.transpose(x), x.transpose(-2, -1), f"{dtype} {shape}")


@pytest.mark.parametrize("variant", RUNGS)
def test_every_dim_pair_of_a_4d_tensor(variant):
    x = random_tensor((3, 8, 16, 24), torch.float32)
    for d0 in range(-4, 4):
        for d1 in range(-4, 4):
            ref = x.transpose(d0, d1)
            try:
                got = kernelkit.transpose(x, d0, d1, variant=variant)
            except ValueError as exc:  # the wide rung on a transpose its vectors cannot cover
                assert variant == "wide" and "multiples of" in str(exc)
                continue
            assert_same_bits(got, ref, f"{variant} dims {d0},{d1}")


def test_non_contiguous_and_expanded_inputs():
    x = random_tensor((64, 96), torch.float16)
    cases = {
        "t": x.t(), "rows::2": x[::2], "cols::2": x[:, ::2], "slice": x[3:50, 5:77],
        "expand": x[:1].expand(40, 96), "batched-t": random_tensor((4, 32, 48), torch.float16).transpose(1, 2),
        "channels_last": random_tensor((2, 16, 8, 8), torch.float16).to(memory_format=torch.channels_last),
    }
    for name, v in cases.items():
        for variant in RUNGS:
            try:
                got = kernelkit.transpose(v, variant=variant)
            except ValueError:
                assert variant == "wide"
                continue
            assert_same_bits(got, v.transpose(-2, -1), f"{name} {variant}")


def test_large_square_all_sizes():
    for dtype in BY_SIZE:
        x = random_tensor((1024, 2048), dtype)
        for variant in ("padded", "wide", "best"):
            assert_same_bits(kernelkit.transpose(x, variant=variant), x.t(), f"{dtype} {variant}")


def test_empty_and_degenerate():
    for shape in ((0, 5), (5, 0), (2, 0, 3)):
        x = torch.empty(shape, device="cuda")
        assert kernelkit.transpose(x).shape == x.transpose(-2, -1).shape
    s = torch.tensor(3.0, device="cuda")  # 0-d: dims 0 / -1 only, as torch
    assert_same_bits(kernelkit.transpose(s, 0, -1), s.transpose(0, -1).contiguous(), "0-d")
    v = random_tensor((17,), torch.float32)
    assert_same_bits(kernelkit.transpose(v, 0, 0), v, "1-d")
    with pytest.raises(IndexError, match="dim0"):
        kernelkit.transpose(v)  # dim0=-2 does not exist in 1-d, as in torch


def test_conjugate_views_resolve():
    z = torch.randn(8, 12, dtype=torch.complex64, device="cuda")
    assert torch.equal(kernelkit.transpose(z.conj()), z.conj().t().contiguous())


def test_bad_arguments_raise_clearly():
    x = torch.randn(4, 6, device="cuda")
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        kernelkit.transpose(x.cpu())
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        kernelkit.transpose([[1.0]])
    with pytest.raises(IndexError, match="dim1"):
        kernelkit.transpose(x, 0, 2)
    with pytest.raises(TypeError, match="dim0 must be an int"):
        kernelkit.transpose(x, 0.5, 1)
    with pytest.raises(ValueError, match="out has shape"):
        kernelkit.transpose(x, out=torch.empty(4, 6, device="cuda"))
    with pytest.raises(TypeError, match="out has dtype"):
        kernelkit.transpose(x, out=torch.empty(6, 4, device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="shares memory"):
        kernelkit.transpose(x, out=x.view(6, 4))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.transpose(x, variant="nope")


def test_non_contiguous_out():
    x = random_tensor((40, 24), torch.float32)
    out = poisoned((48, 40), torch.float32)[::2]
    kernelkit.transpose(x, out=out)
    assert_same_bits(out.contiguous(), x.t(), "strided out")  # random bits hold NaNs: compare bytes


def test_torch_compile_fullgraph():
    f = torch.compile(lambda t: kernelkit.transpose(t, 0, 1) * 2, fullgraph=True)
    x = torch.randn(33, 65, device="cuda")
    torch.testing.assert_close(f(x), x.t() * 2, rtol=0, atol=0)


def test_cuda_graph_capture():
    x = random_tensor((300, 200), torch.float16)
    out = torch.empty(200, 300, device="cuda", dtype=torch.float16)
    kernelkit.transpose(x, out=out)  # compile and load outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.transpose(x, out=out)
    x.copy_(random_tensor((300, 200), torch.float16))
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert_same_bits(out, x.t(), "graph replay")


@pytest.mark.slow
def test_more_than_2_32_elements():
    x = random_tensor((65537, 65544), torch.uint8)  # 4.3e9 bytes: 64-bit offsets and tile indices
    got = kernelkit.transpose(x)
    for lo in range(0, 65544, 8192):
        assert_same_bits(got[lo:lo + 8192], x[:, lo:lo + 8192].t(), f"block {lo}")


# Tiles a tuner passes (beside the rungs' own), by element size.
TILES = {1: [(128, 128, 256), (128, 256, 512), (256, 128, 256), (128, 128, 128)],
         2: [(128, 64, 256), (64, 64, 256), (128, 128, 512), (128, 64, 128)],
         4: [(64, 64, 256), (32, 32, 128), (64, 128, 256), (64, 64, 512)],
         8: [(32, 64, 256), (16, 64, 128), (64, 32, 256), (16, 128, 256)]}


@pytest.mark.parametrize("dtype", BY_SIZE, ids=str)
def test_config_tiles(dtype):
    """config= launches transpose_wide with the given tile, on the wide and best rungs, bit for bit."""
    v = 16 // dtype.itemsize
    for tile in TILES[dtype.itemsize]:
        cfg = TileConfig(*tile)
        for shape in ((16 * v, 8 * v), (2, 24 * v, 40 * v), (1000 // v * v, 3 * v)):
            for offset in (0, v):  # whole vectors in: still 16-byte aligned
                x = random_tensor(shape, dtype, offset)
                for variant in ("wide", "best"):
                    out = poisoned((*shape[:-2], shape[-1], shape[-2]), dtype, offset)
                    kernelkit.transpose(x, out=out, variant=variant, config=cfg)
                    assert_same_bits(out, x.transpose(-2, -1), f"{cfg} {variant} {shape} offset {offset}")


def test_config_refusals():
    x = random_tensor((64, 128), torch.float32)
    cfg = TileConfig(32, 32, 128)
    with pytest.raises(ValueError, match="no wide tile"):
        kernelkit.transpose(x, variant="padded", config=cfg)
    with pytest.raises(ValueError, match="multiples of"):  # the wide rung's vectors do not fit
        kernelkit.transpose(random_tensor((37, 53), torch.float32), variant="wide", config=cfg)
    with pytest.raises(ValueError, match="power of two"):  # the best rung's window tile: odd input rows
        kernelkit.transpose(random_tensor((32, 53), torch.float32), config=TileConfig(32, 48, 128))
    with pytest.raises(ValueError, match="takes 128 threads"):  # its skew tile: output rows off 16 bytes
        kernelkit.transpose(random_tensor((37, 53), torch.float32), config=TileConfig(32, 64, 256))
    with pytest.raises(ValueError, match="multiples of"):  # 8-byte elements take no window tile
        kernelkit.transpose(random_tensor((37, 53), torch.float64), config=cfg)
    with pytest.raises(ValueError, match="cannot run"):
        kernelkit.transpose(x, config=TileConfig(32, 48, 128))
    with pytest.raises(ValueError, match="copy or a gather"):
        kernelkit.transpose(x, 0, 0, config=cfg)
    with pytest.raises(TypeError, match="TileConfig"):
        kernelkit.transpose(x, config=(32, 32, 128))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device_while_the_first_is_current():
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    with torch.cuda.device(0):
        for dtype in BY_SIZE:
            for shape in ((37, 53), (256, 512), (2, 3, 512), (3, 8, 16, 24)):
                x = random_tensor(shape, dtype, 1).to("cuda:1")
                for variant in RUNGS:
                    try:
                        got = kernelkit.transpose(x, variant=variant)
                    except ValueError:
                        assert variant == "wide"
                        continue
                    assert got.device == x.device
                    assert_same_bits(got, x.transpose(-2, -1), f"cuda:1 {variant} {dtype} {shape}")
        x = random_tensor((40, 24), torch.float32).to("cuda:1")
        with pytest.raises(ValueError, match="cuda:0"):
            kernelkit.transpose(x, out=torch.empty(24, 40, device="cuda:0"))


@pytest.mark.parametrize("dtype", BY_SIZE + (torch.bfloat16,), ids=str)
def test_odd_shapes_take_the_window_and_skew_tiles(dtype):
    """Shapes the wide tile cannot take (odd and prime sizes, rows off 16-byte boundaries, offset views)
    on the default rung: the window and skew tiles (16-byte accesses at any alignment; 8-byte elements: the
    padded tile), partial tiles on both edges, batches, input and output at different places within 16 bytes,
    bit for bit, with poisoned outputs (an unwritten element shows)."""
    shapes = ((65, 67), (127, 4099), (4097, 129), (191, 193), (3, 67, 131), (2, 1021, 64), (64, 197, 65),
              (1000, 31), (31, 1000), (2, 67, 300), (300, 67), (129, 16), (16, 129))
    for shape in shapes:
        for in_off, out_off in ((0, 0), (1, 0), (0, 3), (5, 7), (3, 1)):
            x = random_tensor(shape, dtype, in_off)
            out = poisoned((*shape[:-2], shape[-1], shape[-2]), dtype, out_off)
            kernelkit.transpose(x, -2, -1, out=out)
            assert_same_bits(out, x.transpose(-2, -1), f"{dtype} {shape} offsets {in_off}, {out_off}")
    x = random_tensor((6, 67, 97), dtype)  # a permutation that merges to a batched transpose of odd sides
    assert_same_bits(kernelkit.permute(x, (2, 0, 1)), x.permute(2, 0, 1), f"{dtype} permute")


@pytest.mark.parametrize("dtype", (torch.uint8, torch.bfloat16, torch.float32), ids=str)
def test_window_tiles_through_config(dtype):
    """config= on the best rung launches transpose_window with each candidate tile (and a 512-thread one)
    where the shape takes no wide tile: misaligned input rows, and for 1-byte elements misaligned output
    rows (2- and 4-byte elements take the skew tile there), bit for bit."""
    from kernelkit.ops.rearrangement._launch import WINDOW_TILES

    e = dtype.itemsize
    v = 16 // e
    tiles = list(WINDOW_TILES[e]) + [TileConfig(16 * v, 64 // e * 2, 512)]
    window_out = ((0, 0), (1, 2), (v // 2, 0)) if e == 1 else ((1, 0), (v // 2, 0))  # aligned output rows
    shapes = ((3 * v + 1, 5 * v), (5 * v, 3 * v + 1), (2, 37, 41), (300, 9)) if e == 1 else \
        ((5 * v, 3 * v + 1), (2, 4 * v, 41), (8 * v, 9))
    for cfg in tiles:
        assert cfg.check_window(e) is None, cfg
        for shape in shapes:
            for in_off, out_off in window_out:
                x = random_tensor(shape, dtype, in_off)
                out = poisoned((*shape[:-2], shape[-1], shape[-2]), dtype, out_off)
                kernelkit.transpose(x, out=out, config=cfg)
                assert_same_bits(out, x.transpose(-2, -1), f"{cfg} {shape} offsets {in_off}, {out_off}")


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float32), ids=str)
def test_skew_tiles_through_config(dtype):
    """config= on the best rung launches transpose_skew with each candidate tile where output rows start off
    16-byte boundaries: sides around a tile's step of rows, a narrow side, batches, aligned and shifted
    input rows, every place of the output within 16 bytes, bit for bit with poisoned outputs."""
    from kernelkit.ops.rearrangement._launch import SKEW_TILES

    e = dtype.itemsize
    v = 16 // e
    for cfg in SKEW_TILES[e]:
        a = cfg.skew_rows(e)
        assert cfg.check_skew(e) is None, cfg
        for shape in ((a + 1, cfg.cols + 3), (2 * a - 1, 8 * v), (3, 2 * a + v + 1, 2 * v + 1),
                      (4 * a + 3, 5)):
            for in_off, out_off in ((0, 1), (1, v - 1), (v // 2, 3)):
                x = random_tensor(shape, dtype, in_off)
                out = poisoned((*shape[:-2], shape[-1], shape[-2]), dtype, out_off)
                kernelkit.transpose(x, out=out, config=cfg)
                assert_same_bits(out, x.transpose(-2, -1), f"{cfg} {shape} offsets {in_off}, {out_off}")


@pytest.mark.parametrize("dtype", BY_SIZE, ids=str)
def test_the_fixed_lane_replays_the_checked_paths_launch(dtype):
    """A plain call records its launch as the lane of (dtype, device, shape, dims); later plain calls of that
    key replay it on new tensors, bit-exact, while offset views and other dims take the checked path."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.rearrangement import transpose as module

    clear_plans()
    for shape in ((37, 53), (129, 257), (3, 4096), (2, 64, 128), (4096, 3)):
        first = random_tensor(shape, dtype, 0)
        assert_same_bits(kernelkit.transpose(first), first.transpose(-2, -1).contiguous())
        assert fixed_key(first, (-2, -1)) in module._lanes, shape
        for offset in (0, 0, 1):
            x = random_tensor(shape, dtype, offset)
            got = kernelkit.transpose(x)
            assert got.is_contiguous() and got.shape == x.transpose(-2, -1).shape
            assert_same_bits(got, x.transpose(-2, -1).contiguous())
        x = random_tensor(shape, dtype, 0)
        assert_same_bits(kernelkit.transpose(x, 0, -1), x.transpose(0, -1).contiguous())
