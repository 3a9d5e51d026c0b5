"""invert_colors on the GPU: every rung x shape x byte offset, exact against the reference, and the
lane of the plain call against the checked path."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops._shared.plans import clear_plans
from kernelkit.ops.elementwise import ElementwiseLaunch
from kernelkit.ops.elementwise import invert_colors as invert_module

pytestmark = pytest.mark.gpu

RUNGS = [v.name for v in kernelkit.ladder("invert_colors")]
SHAPES = [(1, 1, 4), (3, 5, 4), (7, 33, 4), (2, 17, 129, 4), (513, 1031, 4), (2048, 2048, 4)]


def _image(shape, byte_offset=0):
    """Random RGBA pixels as a view ``byte_offset`` bytes into a fresh buffer (misaligned when > 0)."""
    n = 1
    for s in shape:
        n *= s
    base = torch.randint(0, 256, (n + byte_offset,), dtype=torch.uint8, device="cuda")
    return base[byte_offset:].view(shape)


def _exact(out, image, what):
    want = reference.invert_colors(image).to(torch.uint8)
    bad = (out != want).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} bytes wrong, first at {bad[:4].tolist()}"


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("variant", RUNGS)
def test_every_rung_is_exact(variant, shape):
    for offset in (0, 4, 1, 7):  # a pixel off, and byte offsets that break 4-byte alignment
        img = _image(shape, offset)
        keep = img.clone()
        out = kernelkit.invert_colors(img, variant=variant)
        _exact(out, keep, f"{variant} {shape} offset {offset}")
        assert torch.equal(img, keep), "input modified"
        img2 = img.clone()
        assert kernelkit.invert_colors(img2, inplace=True, variant=variant) is img2
        _exact(img2, keep, f"{variant} in place")


@pytest.mark.parametrize("variant", RUNGS)
def test_small_every_rung(variant):
    for shape in ((1, 1, 4), (3, 5, 4), (9, 31, 4)):
        for offset in (0, 1, 4, 12):
            img = _image(shape, offset)
            _exact(kernelkit.invert_colors(img, variant=variant), img, f"{variant} {shape} +{offset}")


@pytest.mark.parametrize("config", [ElementwiseLaunch(32), ElementwiseLaunch(1024), ElementwiseLaunch(128, 13)],
                         ids=str)
def test_config_launches_are_exact(config):
    """Launch shapes other than the rule's (config=), out of place and in place, at byte offsets."""
    for shape in ((1, 1, 4), (9, 31, 4), (513, 1031, 4)):
        for offset in (0, 1, 4, 7):
            img = _image(shape, offset)
            keep = img.clone()
            _exact(kernelkit.invert_colors(img, config=config), keep, f"{config} {shape} +{offset}")
            assert kernelkit.invert_colors(img, inplace=True, config=config) is img
            _exact(img, keep, f"{config} {shape} +{offset} in place")
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.invert_colors(img, variant="uchar4", config=config)


def test_alpha_unchanged_and_involution():
    img = _image((64, 64, 4))
    out = kernelkit.invert_colors(img)
    assert torch.equal(out[..., 3], img[..., 3])
    assert torch.equal(out[..., :3], 255 - img[..., :3])
    assert torch.equal(kernelkit.invert_colors(out), img)


def test_noncontiguous_and_empty():
    img = _image((40, 30, 4))
    crop = img[5:30, 3:20]  # non-contiguous view
    _exact(kernelkit.invert_colors(crop), crop, "crop")
    c2 = img.clone()
    kernelkit.invert_colors(c2[5:30, 3:20], inplace=True)
    _exact(c2[5:30, 3:20], crop, "crop in place")
    assert torch.equal(c2[:5], img[:5]), "in-place crop touched pixels outside it"
    assert kernelkit.invert_colors(torch.empty(0, 7, 4, dtype=torch.uint8, device="cuda")).shape == (0, 7, 4)


def test_bad_arguments_raise_clearly():
    with pytest.raises(TypeError, match="image must have dtype uint8"):
        kernelkit.invert_colors(torch.zeros(2, 2, 4, device="cuda"))
    with pytest.raises(ValueError, match=r"\(\.\.\., H, W, 4\)"):
        kernelkit.invert_colors(torch.zeros(2, 2, 3, dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match=r"\(\.\.\., H, W, 4\)"):
        kernelkit.invert_colors(torch.zeros(8, 4, dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match="CUDA tensor"):
        kernelkit.invert_colors(torch.zeros(2, 2, 4, dtype=torch.uint8))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.invert_colors(_image((2, 2, 4)), variant="nope")


def test_torch_compile():
    img = _image((16, 16, 4))
    f = torch.compile(lambda t: kernelkit.invert_colors(t), fullgraph=True)
    _exact(f(img), img, "compiled")


def test_lane_matches_the_checked_path():
    """The first plain call takes the checked path and makes the lane of the device; later plain calls
    of contiguous (..., H, W, 4) images take it, out of place and in place (where a byte offset moves
    the head), exactly as the checked path (variant="fast")."""
    clear_plans()
    dev = torch.cuda.current_device()
    img = _image((3, 5, 4), 1)
    _exact(kernelkit.invert_colors(img), img, "first plain call")
    assert (torch.uint8, dev) in invert_module.SPEC.lanes
    for shape in ((1, 1, 4), (3, 5, 4), (7, 33, 4), (2, 17, 129, 4), (513, 1031, 4), (0, 7, 4)):
        for offset in (0, 1, 4, 7, 13):
            img = _image(shape, offset)
            keep = img.clone()
            checked = kernelkit.invert_colors(img, variant="fast")
            laned = kernelkit.invert_colors(img)
            assert laned.shape == img.shape and torch.equal(laned, checked), f"{shape} +{offset}"
            _exact(laned, keep, f"lane {shape} +{offset}")
            assert torch.equal(img, keep), "input modified"
            assert kernelkit.invert_colors(img, inplace=True) is img
            _exact(img, keep, f"lane {shape} +{offset} in place")


def test_lane_only_for_the_plain_call_and_falls_through():
    """variant= and config= calls make no lane; with one made, images it does not take (non-contiguous,
    wrong shape or dtype) get the checked path's result or error."""
    clear_plans()
    img = _image((40, 30, 4))
    kernelkit.invert_colors(img, variant="fast")
    kernelkit.invert_colors(img, config=ElementwiseLaunch(256))
    assert not invert_module.SPEC.lanes
    kernelkit.invert_colors(img)
    assert len(invert_module.SPEC.lanes) == 1
    crop = img[5:30, 3:20]
    _exact(kernelkit.invert_colors(crop), crop, "crop after lane")
    with pytest.raises(ValueError, match=r"\(\.\.\., H, W, 4\)"):
        kernelkit.invert_colors(torch.zeros(2, 2, 3, dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match=r"\(\.\.\., H, W, 4\)"):
        kernelkit.invert_colors(torch.zeros(8, 4, dtype=torch.uint8, device="cuda"))
    with pytest.raises(TypeError, match="image must have dtype uint8"):
        kernelkit.invert_colors(torch.zeros(2, 2, 4, device="cuda"))
    assert len(invert_module.SPEC.lanes) == 1


def test_fixed_lane_replays_the_plain_call_of_a_shape():
    """A plain out-of-place call on an aligned contiguous image records its launch as the fixed lane of its
    shape; later such calls replay it with their own addresses (any contents), and images it does not take
    (misaligned, another shape, in place) fall through to the checked path, all exact."""
    clear_plans()
    dev = torch.cuda.current_device()
    img = _image((37, 41, 4))
    _exact(kernelkit.invert_colors(img), img, "recording call")
    assert (torch.uint8, dev, img.shape, 0) in invert_module._FIXED
    for i in range(3):
        other = _image((37, 41, 4))
        got = kernelkit.invert_colors(other)
        assert got.data_ptr() != other.data_ptr()
        _exact(got, other, f"replay {i}")
    for img2 in (_image((37, 41, 4), 3), _image((41, 37, 4))):
        _exact(kernelkit.invert_colors(img2), img2, f"falls through {tuple(img2.shape)}")
    keep = img.clone()
    assert kernelkit.invert_colors(img, inplace=True) is img
    _exact(img, keep, "in place after the fixed lane")


@pytest.mark.slow
def test_more_than_2_31_bytes():
    img = torch.randint(0, 256, (2, 16384, 16385, 4), dtype=torch.uint8, device="cuda")  # 2.15e9 bytes
    out = kernelkit.invert_colors(img)
    for i, r in ((0, 0), (1, 8191), (1, 16383)):
        _exact(out[i, r], img[i, r], f"image {i} row {r}")
    del img, out
    torch.cuda.empty_cache()
