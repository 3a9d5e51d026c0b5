"""The sliding-window family on the GPU (filter2d, gaussian_blur, box_filter, sobel, median_blur, and
torch.compile over them): every rung of every op against float64 references (torch's conv2d in float64
over explicitly padded planes), at 1x1 images, kernels larger than the image, every border, odd and prime
sizes, offset (misaligned) views, batched planes, channels_last, uint8 rounding and saturation; outputs are
fresh tensors, so a kernel that skips an element leaves whatever the allocator held (the cache is filled
with NaN first, see _poison_allocator). Pooling is tested in test_pool_gpu.py, the depthwise conv2d in
test_depthwise_gpu.py."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.window._common import WindowConfig, planes_of
from window_helpers import FLOATS, _check, _input, poison_allocator

pytestmark = pytest.mark.gpu

DTYPES = (*FLOATS, torch.uint8)
BORDERS = ("zero", "replicate", "reflect")
SHAPES = [(1, 1), (1, 13), (13, 1), (5, 3), (7, 33), (31, 37), (2, 3, 67, 129), (257, 263)]


@pytest.fixture(autouse=True)
def _poison_allocator():
    """Fresh outputs start as NaN bytes (see window_helpers.poison_allocator)."""
    poison_allocator()
    yield


def _raw(fn, x, *a, **k):
    """The float64 value before uint8 rounding (the reference on the input as float64)."""
    return fn(x.double(), *a, **k) if x.dtype == torch.uint8 else None


# ---------------------------------------------------------------------------------------------- filter2d
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("filter2d")])
def test_filter2d_every_rung(variant, dtype):
    torch.manual_seed(1)
    for shape in SHAPES:
        for k in (1, 3, 5, 7, 9, 31):
            for border in BORDERS:
                kernel = torch.randn(k, k, device="cuda") / k
                x = _input(shape, dtype, offset=1 if k == 5 else 0)
                out = kernelkit.filter2d(x, kernel, border=border, variant=variant)
                ref = reference.filter2d(x, kernel, border)
                _check(out, ref, x, f"{variant} {shape} k={k} {border}", _raw(reference.filter2d, x, kernel, border))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_filter2d_non_square_offsets_and_host_weights(dtype):
    torch.manual_seed(2)
    for offset in (0, 1, 3, 7):
        for kh, kw in ((1, 7), (7, 1), (3, 11), (31, 1)):
            x = _input((3, 45, 77), dtype, offset)
            kernel = torch.randn(kh, kw) / (kh * kw) ** 0.5  # a CPU tensor: copied once, then cached
            for variant in (None, "naive", "vector"):
                out = kernelkit.filter2d(x, kernel, border="reflect", variant=variant)
                _check(out, reference.filter2d(x, kernel.cuda(), "reflect"), x, f"{variant} {kh}x{kw} +{offset}",
                       _raw(reference.filter2d, x, kernel.cuda(), "reflect"))


def test_filter2d_weights_follow_in_place_updates():
    """A CPU weight tensor changed in place is copied again (its version moved)."""
    x = _input((40, 40), torch.float32)
    k = torch.ones(3, 3)
    a = kernelkit.filter2d(x, k)
    k.mul_(2)
    b = kernelkit.filter2d(x, k)
    torch.testing.assert_close(b, 2 * a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_filter2d_channels_last(dtype, channels):
    torch.manual_seed(3)
    for shape in ((1, 1), (9, 17), (64, 131)):
        for k in (3, 5, 7, 9):
            x = _input((*shape, channels), dtype, offset=channels % 2)
            kernel = torch.randn(k, k, device="cuda") / k
            for variant in ("naive", "vector", "registers", "best"):
                out = kernelkit.filter2d(x, kernel, border="reflect", channels_last=True, variant=variant)
                ref = reference.filter2d(x, kernel, "reflect", channels_last=True)
                raw = reference.filter2d(x.double(), kernel, "reflect", channels_last=True) if dtype == torch.uint8 else None
                _check(out, ref, x, f"{variant} HWC {shape}x{channels} k={k}", raw)


def test_filter2d_uint8_saturates():
    x = torch.full((1, 20, 20), 250, dtype=torch.uint8, device="cuda")
    for variant in ("naive", "shared", "vector", "registers", "best"):
        hi = kernelkit.filter2d(x, torch.full((3, 3), 1.0, device="cuda"), border="replicate", variant=variant)
        lo = kernelkit.filter2d(x, torch.full((3, 3), -1.0, device="cuda"), border="replicate", variant=variant)
        assert int(hi.min()) == 255 and int(lo.max()) == 0, variant


def test_filter2d_non_contiguous_and_empty():
    x = _input((30, 50), torch.float32).t()  # rows not contiguous: copied
    k = torch.randn(5, 5, device="cuda")
    _check(kernelkit.filter2d(x, k), reference.filter2d(x, k, "zero"), x, "transposed view")
    assert kernelkit.filter2d(torch.empty(0, 5, device="cuda"), k).shape == (0, 5)


def test_filter2d_config():
    x = _input((70, 300), torch.float16)
    k = torch.randn(5, 5, device="cuda") / 5
    for rows in (1, 4):
        out = kernelkit.filter2d(x, k, config=WindowConfig(rows))
        _check(out, reference.filter2d(x, k, "zero"), x, f"config rows={rows}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("offset", [0, 1])
def test_pipelined_many_tiles_per_block(dtype, offset):
    """More tiles than resident blocks: each persistent block computes several tiles, alternating its two
    buffers, with the next tile's copies in flight; offset 1 with an odd width puts every row at another
    misalignment (the unaligned kernels' per-row shift). Every pipelined kernel shape: filter2d 3/5/7,
    Gaussian 5 and 7 (and 3 x 15), Sobel, planar and HWC."""
    torch.manual_seed(7)
    x = _input((4, 517, 1031), dtype, offset)
    for k in (3, 5, 7):
        kernel = torch.randn(k, k, device="cuda") / k
        for border in BORDERS:
            out = kernelkit.filter2d(x, kernel, border=border, variant="pipelined")
            _check(out, reference.filter2d(x, kernel, border), x, f"filter2d k={k} {border} +{offset}",
                   _raw(reference.filter2d, x, kernel, border))
    for ks in (5, 7, [3, 15]):
        out = kernelkit.gaussian_blur(x, ks, variant="pipelined")
        _check(out, reference.gaussian_blur(x, ks), x, f"gaussian {ks} +{offset}", _raw(reference.gaussian_blur, x, ks))
    _check(kernelkit.sobel(x), reference.sobel(x, "reflect"), x, f"sobel +{offset}", _raw(reference.sobel, x, "reflect"))
    for c in (1, 3, 4):
        xc = _input((2, 301, 577, c), dtype, offset)
        out = kernelkit.gaussian_blur(xc, 5, channels_last=True, variant="pipelined")
        _check(out, reference.gaussian_blur(xc, 5, channels_last=True), xc, f"HWC x{c} gaussian +{offset}",
               reference.gaussian_blur(xc.double(), 5, channels_last=True) if dtype == torch.uint8 else None)
        kernel = torch.randn(5, 5, device="cuda") / 5
        out = kernelkit.filter2d(xc, kernel, border="reflect", channels_last=True, variant="pipelined")
        _check(out, reference.filter2d(xc, kernel, "reflect", channels_last=True), xc, f"HWC x{c} filter2d +{offset}",
               reference.filter2d(xc.double(), kernel, "reflect", channels_last=True) if dtype == torch.uint8 else None)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unaligned_rows_give_the_aligned_bits(dtype):
    """The pipelined kernels on a view whose rows start at every misalignment (odd width, one element in)
    give the same bits as on the same values held in rows that all start on 16 bytes (a padded row pitch):
    the unaligned kernels copy such rows in 8- or 4-byte pieces (floats) or shift them within a word
    (16-bit, uint8) and compute in the same order as the aligned ones."""
    from kernelkit.ops.window._common import rows_aligned

    torch.manual_seed(11)
    odd = _input((3, 67, 1031), dtype, offset=1)
    pitch = 1040  # 1040 elements: a multiple of 16 bytes in every dtype
    padded = torch.zeros((3, 67, pitch), dtype=dtype, device="cuda")[..., :1031]
    padded.copy_(odd)
    assert not rows_aligned(planes_of(odd, False, "t")) and rows_aligned(planes_of(padded, False, "t"))
    kernel = torch.randn(5, 5, device="cuda") / 5
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[odd.element_size()]
    for name, fn in (("filter2d 5x5", lambda x: kernelkit.filter2d(x, kernel, border="reflect", variant="pipelined")),
                     ("gaussian 7", lambda x: kernelkit.gaussian_blur(x, 7, variant="pipelined")),
                     ("gaussian 3x9", lambda x: kernelkit.gaussian_blur(x, [3, 9], variant="pipelined")),
                     ("sobel", lambda x: kernelkit.sobel(x, variant="pipelined"))):
        assert torch.equal(fn(odd).view(bits), fn(padded).view(bits)), f"{name} {dtype}"


@pytest.mark.parametrize("offset", [0, 1])
def test_wide_tiles(monkeypatch, offset):
    """filter2d's wide tiles (64 x 4 threads, 8 rows a thread, one block an SM), forced onto small and odd
    fp32 planes (the rule takes them only where every SM walks 32 tiles): 3x3 and 5x5, every border,
    batched planes, widths around the 256-float tile, rows at every misalignment (offset 1, odd widths)."""
    from kernelkit.ops.window import filter2d as f2

    monkeypatch.setattr(f2, "WIDE_TILES_PER_SM", 0)
    f2._plans.clear()
    torch.manual_seed(9)
    for shape in ((1, 1), (7, 255), (33, 257), (3, 70, 513), (131, 1024)):
        x = _input(shape, torch.float32, offset)
        for k in f2.WIDE_K:
            kernel = torch.randn(k, k, device="cuda") / k
            plan = f2._plan("best", torch.float32, planes_of(x, False, "t"), k, k, None, x.get_device())
            assert plan[1].endswith(f", {f2.WIDE_BX}>") and plan[5] == {"block": (64, 4), "per_sm": 1}, plan[1]
            for border in BORDERS:
                out = kernelkit.filter2d(x, kernel, border=border)
                _check(out, reference.filter2d(x, kernel, border), x, f"wide {shape} k={k} {border} +{offset}")
    f2._plans.clear()


# ------------------------------------------------------------------------- gaussian_blur and box_filter
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("gaussian_blur")])
def test_gaussian_blur_every_rung(variant, dtype):
    torch.manual_seed(4)
    for shape in SHAPES:
        for ks, sigma in ((1, None), (3, None), (5, None), (7, 1.5), ([3, 9], None), ([11, 5], [2.0, 0.7]), (31, None)):
            x = _input(shape, dtype, offset=3 if ks == 5 else 0)
            out = kernelkit.gaussian_blur(x, ks, sigma, variant=variant)
            _check(out, reference.gaussian_blur(x, ks, sigma), x, f"{variant} {shape} {ks}",
                   _raw(reference.gaussian_blur, x, ks, sigma))


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_gaussian_blur_hwc_uint8(channels):
    x = _input((67, 129, channels), torch.uint8, offset=1)
    for variant in ("dense", "two_pass", "fused", "pipelined"):
        out = kernelkit.gaussian_blur(x, 5, channels_last=True, variant=variant)
        _check(out, reference.gaussian_blur(x, 5, channels_last=True), x, f"{variant} HWC x{channels}",
               reference.gaussian_blur(x.double(), 5, channels_last=True))


def test_gaussian_blur_matches_torchvision_where_installed():
    tvf = pytest.importorskip("torchvision.transforms.functional")
    x = _input((3, 64, 80), torch.float32)
    torch.testing.assert_close(kernelkit.gaussian_blur(x, [5, 7], [1.2, 0.8]), tvf.gaussian_blur(x, [5, 7], [1.2, 0.8]),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("box_filter")])
def test_box_filter_every_rung(variant, dtype):
    for shape in SHAPES:
        for ks in (1, 3, (5, 3), 9, 31):
            for border in BORDERS:
                x = _input(shape, dtype)
                out = kernelkit.box_filter(x, ks, border=border, variant=variant)
                _check(out, reference.box_filter(x, ks, border), x, f"{variant} {shape} {ks} {border}",
                       _raw(reference.box_filter, x, ks, border))
    x = _input((20, 30), torch.float32)
    _check(kernelkit.box_filter(x, 3, normalize=False), reference.box_filter(x, 3, normalize=False), x, "sum")
    if dtype == torch.uint8:  # sums past 255 saturate (the pipelined stores clamp unless the weights are a mean)
        x = _input((33, 70), dtype)
        _check(kernelkit.box_filter(x, 3, normalize=False, variant=variant),
               reference.box_filter(x, 3, normalize=False), x, f"{variant} uint8 sum")


# ------------------------------------------------------------------------------------ sobel and median
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("sobel")])
def test_sobel(dtype, variant):
    for shape in SHAPES:
        for border in BORDERS:
            for offset in (0, 1):
                x = _input(shape, dtype, offset=offset)
                _check(kernelkit.sobel(x, border=border, variant=variant), reference.sobel(x, border), x,
                       f"sobel {shape} {border} +{offset}", _raw(reference.sobel, x, border))
    for c in (1, 2, 3, 4):
        x = _input((33, 65, c), dtype)
        _check(kernelkit.sobel(x, channels_last=True, variant=variant), reference.sobel(x, channels_last=True), x,
               f"HWC x{c}", reference.sobel(x.double(), channels_last=True) if dtype == torch.uint8 else None)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_median_blur_is_exact(dtype):
    for shape in SHAPES:
        for k in (3, 5):
            x = _input(shape, dtype, offset=2)
            out = kernelkit.median_blur(x, k)
            assert torch.equal(out.double(), reference.median_blur(x, k).to(x.dtype).double()), f"{shape} k={k}"
    for c in (1, 3, 4):
        x = _input((17, 41, c), dtype)
        assert torch.equal(kernelkit.median_blur(x, 5, channels_last=True).double(),
                           reference.median_blur(x, 5, channels_last=True).to(x.dtype).double())


# ------------------------------------------------------------------------------------------ compile
def test_torch_compile_fullgraph():
    x = _input((2, 40, 50), torch.float16)
    k = torch.randn(5, 5, device="cuda")

    def f(t):
        return kernelkit.filter2d(t, k, border="reflect") + kernelkit.gaussian_blur(t, 5)

    got = torch.compile(f, fullgraph=True)(x)
    torch.testing.assert_close(got, f(x))
