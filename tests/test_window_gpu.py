"""The sliding-window family on the GPU: every rung of every op against float64 references (torch's conv2d
in float64 over explicitly padded planes, torch's pooling in float64), at 1x1 images, kernels larger than
the image, every border, odd and prime sizes, offset (misaligned) views, batched planes, channels_last,
uint8 rounding and saturation; outputs are fresh tensors, so a kernel that skips an element leaves
whatever the allocator held (the cache is filled with NaN first, see _poison_allocator)."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.window._common import WindowConfig

pytestmark = pytest.mark.gpu

FLOATS = (torch.float32, torch.float16, torch.bfloat16)
DTYPES = (*FLOATS, torch.uint8)
BORDERS = ("zero", "replicate", "reflect")
SHAPES = [(1, 1), (1, 13), (13, 1), (5, 3), (7, 33), (31, 37), (2, 3, 67, 129), (257, 263)]


@pytest.fixture(autouse=True)
def _poison_allocator():
    """Fill the caching allocator's free blocks with NaN bytes, so that fresh outputs start poisoned."""
    junk = torch.full((64 << 20,), float("nan"), device="cuda")
    del junk
    yield


def _input(shape, dtype, offset=0):
    n = 1
    for s in shape:
        n *= s
    if dtype == torch.uint8:
        base = torch.randint(0, 256, (n + offset,), dtype=torch.uint8, device="cuda")
    else:
        base = (torch.randn(n + offset, device="cuda") * 3).to(dtype)
    return base[offset:].view(shape)


def _check(out, ref, x, what, raw=None):
    """Float outputs within the dtype's tolerance (scaled by the sum of |weights| for wide kernels);
    uint8 exact except within 5e-3 of a rounding tie, where float32 accumulation may round the other way."""
    assert out.shape == ref.shape and out.dtype == x.dtype, what
    o, r = out.double(), ref.double()
    if x.dtype == torch.uint8:
        diff = (o - r).abs()
        if raw is not None:
            frac = (raw - raw.floor() - 0.5).abs()
            near_tie = (frac < 5e-3) & (raw > -0.5) & (raw < 255.5)  # float32 sums of up to 961 taps
            ok = (diff == 0) | (near_tie & (diff <= 1))
        else:
            ok = diff == 0
        bad = (~ok).nonzero()
        assert bad.numel() == 0, f"{what}: {bad.shape[0]} wrong, first at {bad[:3].tolist()}"
        return
    rtol, atol = {torch.float32: (1e-5, 1e-4), torch.float16: (4e-3, 2e-2), torch.bfloat16: (2e-2, 1e-1)}[x.dtype]
    scale = r.abs().max().clamp(min=1.0)
    bad = ~((o - r).abs() <= atol * scale + rtol * r.abs())
    assert not torch.isnan(o).any(), f"{what}: NaN in the output (an element not written?)"
    assert int(bad.sum()) == 0, f"{what}: {int(bad.sum())} of {r.numel()} off; max err {float((o - r).abs().max())}"


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


# ------------------------------------------------------------------------------------------- pooling
POOL_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 0, 1, True), ((3, 2), (2, 1), (1, 0), 1, True),
    (1, 1, 0, 1, False), (5, 3, 2, 2, True), (7, 1, 3, 1, False), (3, 1, 1, 1, False), (2, 2, 1, 1, True),
]
POOL_RUNGS = [v.name for v in kernelkit.ladder("max_pool2d")]


def _pool_both(x, dtype, variant, label):
    for k, s, p, d, ceil in POOL_CASES:
        kh = k if isinstance(k, int) else k[0]
        if x.shape[2] + 2 * (p if isinstance(p, int) else p[0]) < kh:
            continue
        try:
            want = reference.max_pool2d(x, k, s, p, d, ceil)
        except RuntimeError:
            continue
        got = kernelkit.max_pool2d(x, k, s, p, d, ceil, variant=variant)
        assert torch.equal(got.double(), want.to(dtype).double()), f"max {label} {k} {s} {p} {d} {ceil}"
        if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
            assert got.is_contiguous(memory_format=torch.channels_last)
        if d == 1:
            for include in (True, False):
                for div in (None, 3):
                    want = reference.avg_pool2d(x, k, s, p, ceil, include, div)
                    got = kernelkit.avg_pool2d(x, k, s, p, ceil, include, div, variant=variant)
                    _check(got, want, x, f"avg {label} {k} {s} {p} {ceil} {include} {div}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("variant", POOL_RUNGS)
@pytest.mark.parametrize("channels_last", [False, True])
def test_pools(dtype, variant, channels_last):
    torch.manual_seed(5)
    for shape in ((1, 1, 1, 1), (2, 3, 7, 9), (1, 16, 33, 65), (3, 8, 56, 56), (1, 5, 13, 1)):
        x = _input(shape, dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        _pool_both(x, dtype, variant, shape)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("variant", POOL_RUNGS)
def test_pools_planar_rows_of_every_alignment(dtype, variant):
    """Planar rows whose spans sit at every offset from a 16-byte boundary: misaligned planes (offset
    views), odd widths (each row a different offset), widths of many vectors (the span kernels' vector
    body between the edge threads), and rows of one vector or less."""
    torch.manual_seed(7)
    for shape, offset in (((2, 3, 20, 64), 0), ((2, 3, 20, 64), 1), ((1, 2, 9, 131), 0), ((1, 2, 9, 131), 3),
                          ((1, 1, 6, 261), 5), ((3, 1, 11, 8), 0), ((2, 2, 5, 17), 7), ((1, 1, 2, 1030), 2)):
        _pool_both(_input(shape, dtype, offset), dtype, variant, f"{shape}+{offset}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pools_small_planes_and_long_rows(dtype):
    """The span kernels on small planes of odd widths (every row another offset from a 16-byte boundary,
    shrunken blocks), offset views, and 1xN rows (the block widened along the row), against the other rungs'
    references in float64."""
    torch.manual_seed(11)
    for shape, offset in (((8, 3, 17, 31), 0), ((8, 3, 17, 31), 5), ((4, 16, 27, 129), 3), ((1, 1, 2, 4099), 0),
                          ((1, 1, 2, 4099), 1), ((1, 1, 1, 517), 6)):
        x = _input(shape, dtype, offset)
        for k, s, p in ((2, 2, 0), (3, 2, 1), (3, 1, 1)):
            if shape[2] + 2 * p < k:
                continue
            for ceil in (False, True):
                want = reference.max_pool2d(x, k, s, p, 1, ceil)
                got = kernelkit.max_pool2d(x, k, s, p, 1, ceil)
                assert torch.equal(got.double(), want.to(dtype).double()), (shape, offset, k, s, p, ceil)
                for include in (True, False):
                    want = reference.avg_pool2d(x, k, s, p, ceil, include, None)
                    got = kernelkit.avg_pool2d(x, k, s, p, ceil, include)
                    _check(got, want, x, f"avg {shape}+{offset} {k} {s} {p} {ceil} {include}")


def test_max_pool_nan_and_3d():
    for variant in POOL_RUNGS:
        x = _input((4, 10, 40), torch.float32)
        x[1, 3, 3] = float("nan")
        x[2, 5, 17] = float("nan")
        for k, s in ((2, 2), (3, 2), (3, 1)):
            got, want = kernelkit.max_pool2d(x, k, s, variant=variant), torch.nn.functional.max_pool2d(x, k, s)
            assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())


def test_pool_many_planes_past_the_grid_limit():
    """More planes than the grid's z limit (65535): the generic kernels loop over them, the span kernels
    over their row groups."""
    x = _input((70000, 1, 4, 6), torch.float16)
    for variant in POOL_RUNGS:
        for k, s in ((2, 2), (3, 1)):
            got = kernelkit.max_pool2d(x, k, s, variant=variant)
            assert torch.equal(got.double(), reference.max_pool2d(x, k, s).to(x.dtype).double()), (variant, k)


# ------------------------------------------------------------------------------------- depthwise conv2d
DW_CASES = ((3, 1, 1, 1, True), (7, 1, 3, 1, False), (3, 2, 1, 1, True), (5, 1, 4, 2, True), (3, 1, 0, 1, False),
            ((3, 5), 1, (1, 2), 1, True), (5, 2, 2, 1, False), (5, 1, 2, 1, True), (7, 1, 0, 1, True),
            (3, 2, 0, 1, False))


def _dw_check(x, c, k, s, p, d, bias, variant, config=None):
    dtype = x.dtype
    kh, kw = (k, k) if isinstance(k, int) else k
    wt = (torch.randn(c, 1, kh, kw, device="cuda") / (kh * kw) ** 0.5).to(dtype)
    b = torch.randn(c, device="cuda").to(dtype) if bias else None
    try:
        want = reference.conv2d(x, wt, b, s, p, d, c)
    except RuntimeError:
        return
    got = kernelkit.conv2d(x, wt, b, s, p, d, c, variant=variant, config=config)
    _check(got, want, x, f"{variant} {tuple(x.shape)} k={k} s={s} p={p} d={d} {config}")
    cl = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    if cl and c > 1 and got.shape[-1] * got.shape[-2] > 1:
        assert got.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("variant", [v.name for v in kernelkit.ladder("conv2d")])
@pytest.mark.parametrize("channels_last", [False, True])
def test_depthwise_conv2d(dtype, variant, channels_last):
    """Channel counts below, at and past a 32-channel group (tails of 8 and of odd counts: the scalar
    channels_last loads), images of one pixel to several tiles, every compiled window and others."""
    torch.manual_seed(6)
    for (n, c, h, w) in ((1, 1, 1, 1), (2, 8, 13, 17), (3, 96, 14, 14), (2, 24, 7, 7), (1, 5, 9, 3),
                         (2, 40, 23, 37), (1, 21, 16, 16), (2, 64, 30, 9)):
        for k, s, p, d, bias in DW_CASES:
            x = _input((n, c, h, w), dtype)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            _dw_check(x, c, k, s, p, d, bias, variant)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("channels_last", [False, True])
def test_depthwise_tiles_of_every_shape(dtype, channels_last):
    """The tiled kernels under every warp grid the configuration allows (one warp to 8, tiles wider and
    taller than the image), on misaligned channels_last views (the scalar loads) and aligned ones."""
    from kernelkit.ops.window.conv2d import DwTile

    torch.manual_seed(8)
    for rx, wx, wy in ((7, 1, 1), (8, 2, 4), (8, 8, 1), (7, 3, 2), (8, 1, 8), (7, 2, 2)):
        for (n, c, h, w), offset in (((2, 48, 19, 45), 0), ((1, 32, 40, 17), 8), ((1, 40, 11, 11), 3)):
            x = _input((n, h, w, c), dtype, offset).permute(0, 3, 1, 2)  # channels_last strides
            if not channels_last:
                x = x.contiguous()
            for k, s, p in ((3, 1, 1), (7, 1, 3), (3, 2, 1), (5, 2, 0), (5, 1, 2)):
                if s == 2 and rx == 7:
                    continue
                cfg = DwTile(rx, wx, wy)
                if not cfg.fits(k, s, channels_last):
                    continue
                _dw_check(x, c, k, s, p, 1, True, "tiled", cfg)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_depthwise_register_tiles(dtype):
    """The register kernels (channels_last 3x3) under every compiled tile and 1 to 3 tiles a thread (a last
    chunk past the image), on odd sizes, images narrower and shorter than a tile, channel counts of 4 to 100,
    an offset view whose vectors stay aligned, paddings 0 to 2, with and without bias; a misaligned view
    takes another rung (checked only for its result)."""
    from kernelkit.ops.window.conv2d import REGS_TILES, DwRegs

    torch.manual_seed(12)
    for (n, c, h, w), offset in (((2, 12, 19, 23), 0), ((1, 4, 1, 2), 0), ((3, 100, 6, 5), 4), ((1, 8, 33, 1), 0),
                                 ((2, 36, 9, 64), 8)):
        x = _input((n, h, w, c), dtype, offset).permute(0, 3, 1, 2)  # channels_last strides
        for s in (1, 2):
            for p in (0, 1, 2):
                oh, ow = (h + 2 * p - 3) // s + 1, (w + 2 * p - 3) // s + 1
                if oh <= 0 or ow <= 0:
                    continue
                for rx, ry in REGS_TILES[s]:
                    for chunk in (1, 2, 3):
                        _dw_check(x, c, 3, s, p, 1, (rx + chunk) % 2 == 0, None, DwRegs(rx, ry, chunk))
    x = _input((1, 7, 9, 12), dtype, 2).permute(0, 3, 1, 2)  # 12 channels 2 elements past a vector
    _dw_check(x, 12, 3, 1, 1, 1, True, "registers")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_depthwise_register_columns(dtype):
    """The planar register kernels (NCHW 3x3) under every strip height, on planes of one row or column,
    narrower and shorter than a strip, odd sizes, an offset view (copied to contiguous first), paddings 0
    to 2, strides 1 and 2, with and without bias."""
    from kernelkit.ops.window.conv2d import COLUMNS_RY, DwColumns

    torch.manual_seed(13)
    for (n, c, h, w), offset in (((2, 3, 19, 23), 0), ((1, 2, 1, 9), 0), ((3, 5, 6, 5), 1), ((1, 4, 33, 1), 0),
                                 ((2, 7, 40, 17), 3)):
        x = _input((n, c, h, w), dtype, offset)
        for s in (1, 2):
            for p in (0, 1, 2):
                if (h + 2 * p - 3) // s + 1 <= 0 or (w + 2 * p - 3) // s + 1 <= 0:
                    continue
                for ry in COLUMNS_RY:
                    _dw_check(x, c, 3, s, p, 1, (ry + p) % 2 == 0, None, DwColumns(ry))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_depthwise_planar_bands(dtype):
    """The planar band kernels (NCHW) under bands of one strip to the whole plane, one plane or several a
    block (a last group past the planes), on odd and H = 1 planes, offset views, strides 1 and 2, every
    padding from none to past the window."""
    from kernelkit.ops.window.conv2d import DwPlanes

    torch.manual_seed(10)
    for (n, c, h, w), offset in (((2, 5, 19, 45), 0), ((1, 7, 40, 17), 3), ((3, 3, 1, 67), 1), ((2, 9, 7, 7), 0),
                                 ((1, 2, 33, 1), 5)):
        x = _input((n, c, h, w), dtype, offset)
        for k, s, p in ((3, 1, 1), (7, 1, 3), (3, 2, 1), (5, 2, 0), (5, 1, 2), (3, 1, 0), (3, 2, 2), (7, 1, 4)):
            oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
            if oh <= 0 or ow <= 0:
                continue
            for ry in (4, 8):
                every = -(-oh // ry)
                for cfg in (DwPlanes(ry, 1, 1), DwPlanes(ry, 1, 2), DwPlanes(ry, 1, every), DwPlanes(ry, 4, every),
                            DwPlanes(ry, 2, every)):
                    if cfg.fits(oh, ow, k, s):
                        _dw_check(x, c, k, s, p, 1, (ry + cfg.planes) % 2 == 0, None, cfg)


def test_depthwise_planar_rule_on_the_gpu():
    """The rule's bands on planes of many rows (several bands), many small planes (a group a block) and
    few channels at stride 2 (the planar kernels, not the direct ones)."""
    torch.manual_seed(11)
    for (n, c, h, w), k, s, p in (((1, 16, 300, 257), 3, 1, 1), ((2, 40, 127, 129), 5, 2, 2), ((4, 300, 7, 7), 7, 1, 3),
                                  ((2, 3, 55, 55), 3, 2, 1), ((1, 4, 1, 4099), 3, 1, 1)):
        for dtype in FLOATS:
            _dw_check(_input((n, c, h, w), dtype, 1), c, k, s, p, 1, True, None)


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16), ids=str)
@pytest.mark.parametrize("channels_last", [False, True])
def test_depthwise_network_layers(dtype, channels_last):
    """ConvNeXt and MobileNetV2 layer shapes at batch 2 (the benchmark's channel counts and sizes)."""
    torch.manual_seed(9)
    for (c, h), k, s, p in (((96, 56), 7, 1, 3), ((768, 7), 7, 1, 3), ((96, 112), 3, 2, 1), ((144, 56), 3, 1, 1),
                            ((960, 7), 3, 1, 1), ((576, 14), 3, 2, 1)):
        x = _input((2, c, h, h), dtype)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        _dw_check(x, c, k, s, p, 1, True, None)


def test_depthwise_config_errors():
    from kernelkit.ops.window.conv2d import DwColumns, DwPlanes, DwRegs, DwTile

    x = _input((1, 32, 9, 9), torch.float32)
    w = torch.randn(32, 1, 3, 3, device="cuda")
    nhwc = x.contiguous(memory_format=torch.channels_last)
    cases = [  # (error, input, conv2d's keywords besides groups=32)
        (TypeError, x, dict(padding=1, config=(8, 1, 1))),
        (ValueError, x, dict(padding=1, config=DwTile(5, 1, 1))),
        (ValueError, x, dict(padding=1, config=DwTile(8, 3, 3))),
        (ValueError, x, dict(padding=1, variant="direct", config=DwTile(8, 1, 1))),
        (ValueError, x, dict(padding=2, dilation=2, config=DwTile(8, 1, 1))),
        (ValueError, x, dict(padding=1, config=DwPlanes(4, 2, 1))),  # several planes a block only as whole planes
        (ValueError, x, dict(padding=1, config=DwPlanes(5, 1, 1))),
        (ValueError, x, dict(padding=1, variant="tiled", config=DwPlanes(4, 1, 1))),
        (ValueError, nhwc, dict(padding=1, config=DwPlanes(4, 1, 1))),
        (ValueError, x, dict(padding=1, config=DwRegs(4, 2, 1))),  # NCHW
        (ValueError, nhwc, dict(padding=1, config=DwRegs(4, 1, 1))),  # no such tile at stride 1
        (ValueError, nhwc, dict(padding=2, dilation=2, config=DwRegs(4, 2, 1))),
        (ValueError, nhwc, dict(padding=1, variant="tiled", config=DwRegs(4, 2, 1))),
        (ValueError, nhwc, dict(padding=1, config=DwColumns(8))),  # channels_last
        (ValueError, x, dict(padding=1, config=DwColumns(5))),
        (ValueError, x, dict(padding=3, config=DwColumns(8)), 7),  # no 7x7 columns
    ]
    for error, inp, kw, *k in cases:
        with pytest.raises(error):
            kernelkit.conv2d(inp, w if not k else torch.randn(32, 1, k[0], k[0], device="cuda"), groups=32, **kw)


def test_conv2d_other_cases_are_torch():
    x = _input((2, 4, 9, 9), torch.float32)
    w = torch.randn(8, 2, 3, 3, device="cuda")
    assert torch.equal(kernelkit.conv2d(x, w, None, 1, 1, 1, 2), torch.nn.functional.conv2d(x, w, None, 1, 1, 1, 2))


# ------------------------------------------------------------------------------------------ compile
def test_torch_compile_fullgraph():
    x = _input((2, 40, 50), torch.float16)
    k = torch.randn(5, 5, device="cuda")

    def f(t):
        return kernelkit.filter2d(t, k, border="reflect") + kernelkit.gaussian_blur(t, 5)

    got = torch.compile(f, fullgraph=True)(x)
    torch.testing.assert_close(got, f(x))
