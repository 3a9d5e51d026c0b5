"""The depthwise conv2d on the GPU: every rung and launch shape (channel-group tiles, register tiles,
planar columns and bands) against torch's conv2d in float64, on NCHW and channels_last inputs, offset
views and network layer shapes, with the configuration errors; conv2d's other cases are torch's own.
Fresh outputs are poisoned with NaN first (see _poison_allocator)."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from window_helpers import FLOATS, _check, _input, poison_allocator

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _poison_allocator():
    """Fresh outputs start as NaN bytes (see window_helpers.poison_allocator)."""
    poison_allocator()
    yield


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
    block (a last group past the planes), segments of 32 and 64 columns (a last one partial), on odd and
    H = 1 planes, offset views, strides 1 and 2, every padding from none to past the window."""
    from kernelkit.ops.window.conv2d import DwPlanes

    torch.manual_seed(10)
    for (n, c, h, w), offset in (((2, 5, 19, 45), 0), ((1, 7, 40, 17), 3), ((3, 3, 1, 67), 1), ((2, 9, 7, 7), 0),
                                 ((1, 2, 33, 1), 5), ((1, 3, 6, 203), 1)):
        x = _input((n, c, h, w), dtype, offset)
        for k, s, p in ((3, 1, 1), (7, 1, 3), (3, 2, 1), (5, 2, 0), (5, 1, 2), (3, 1, 0), (3, 2, 2), (7, 1, 4)):
            oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
            if oh <= 0 or ow <= 0:
                continue
            for ry in (4, 8):
                every = -(-oh // ry)
                for cfg in (DwPlanes(ry, 1, 1), DwPlanes(ry, 1, 2), DwPlanes(ry, 1, every), DwPlanes(ry, 4, every),
                            DwPlanes(ry, 2, every), DwPlanes(ry, 1, 1, 32), DwPlanes(ry, 1, 2, 64)):  # segments
                    if cfg.fits(oh, ow, k, s):
                        _dw_check(x, c, k, s, p, 1, (ry + cfg.planes) % 2 == 0, None, cfg)


def test_depthwise_planar_rule_on_the_gpu():
    """The rule's bands on planes of many rows (several bands), many small planes (a group a block), few
    channels at stride 2 (the planar kernels, not the direct ones) and rows too wide for one strip (segments
    of the row)."""
    torch.manual_seed(11)
    for (n, c, h, w), k, s, p in (((1, 16, 300, 257), 3, 1, 1), ((2, 40, 127, 129), 5, 2, 2), ((4, 300, 7, 7), 7, 1, 3),
                                  ((2, 3, 55, 55), 3, 2, 1), ((1, 4, 1, 4099), 3, 1, 1), ((2, 40, 1, 4099), 7, 1, 3),
                                  ((1, 16, 3, 8191), 5, 1, 2), ((1, 16, 5, 4099), 5, 2, 2)):  # the last three: segments
        for dtype in FLOATS:
            _dw_check(_input((n, c, h, w), dtype, 1), c, k, s, p, 1, True, None)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_depthwise_wide_short_planes(dtype):
    """Rows too wide for one strip run on segments of the band (planar kernels), a single output row on the
    direct kernels in either layout (3 x 3 keeps its register kernels): which kernel runs, and the result."""
    from kernelkit.runtime.launch import recording

    torch.manual_seed(12)
    for (n, c, h, w), k, s, p, cl, kernel in (
            ((2, 40, 3, 8191), 5, 1, 2, False, "dw_planes"), ((1, 24, 5, 4099), 7, 1, 3, False, "dw_planes"),
            ((2, 40, 1, 4099), 7, 1, 3, False, "dw_direct"), ((2, 40, 1, 4099), 5, 1, 2, True, "dw_direct"),
            ((1, 16, 2, 3001), 5, 2, 2, False, "dw_direct"), ((2, 40, 1, 4099), 3, 1, 1, False, "dw_columns")):
        x = _input((n, c, h, w), dtype, 1)
        if cl:
            x = x.contiguous(memory_format=torch.channels_last)
        with recording() as rec:
            _dw_check(x, c, k, s, p, 1, True, None)
        assert kernel in [r[7] for r in rec], ((n, c, h, w), k, s, [r[7] for r in rec])


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
