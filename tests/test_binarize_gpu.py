"""binarize on the GPU: every rung x size x byte offset x threshold, exact against the reference, and
the lane of the plain call against the checked path."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops._shared.plans import clear_plans
from kernelkit.ops.elementwise import ElementwiseLaunch
from kernelkit.ops.elementwise import binarize as binarize_module

pytestmark = pytest.mark.gpu

RUNGS = [v.name for v in kernelkit.ladder("binarize")]
SIZES = (1, 3, 17, 4097, 2**20 + 3, 2**24)


def _gray(n, byte_offset=0):
    base = torch.randint(0, 256, (n + byte_offset,), dtype=torch.uint8, device="cuda")
    return base[byte_offset:]


def _exact(out, image, t, what):
    want = reference.binarize(image, t).to(torch.uint8)
    bad = (out != want).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} wrong, first at {bad[:4].flatten().tolist()}"


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant", RUNGS)
def test_every_rung_is_exact(variant, n):
    for offset in (0, 1, 4, 13):
        img = _gray(n, offset)
        for t in (0, 127, 254):
            _exact(kernelkit.binarize(img, t, variant=variant), img, t, f"{variant} n={n} +{offset} t={t}")


@pytest.mark.parametrize("variant", RUNGS)
def test_small_every_rung(variant):
    for n in (5, 33, 1000):
        for offset in (0, 3, 8):
            img = _gray(n, offset)
            _exact(kernelkit.binarize(img, 100, variant=variant), img, 100, f"{variant} n={n} +{offset}")


@pytest.mark.parametrize("config", [ElementwiseLaunch(32), ElementwiseLaunch(1024), ElementwiseLaunch(128, 13)],
                         ids=str)
def test_config_launches_are_exact(config):
    """Launch shapes other than the rule's (config=), at byte offsets."""
    for n in (1, 17, 4097, 2**20 + 3):
        for offset in (0, 1, 13):
            img = _gray(n, offset)
            _exact(kernelkit.binarize(img, 99, config=config), img, 99, f"{config} n={n} +{offset}")
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.binarize(img, 99, variant="byte", config=config)


@pytest.mark.parametrize("t", [-5, -0.5, 0, 0.5, 127.5, 200, 254.9, 255, 300])
def test_thresholds_compare_as_numbers(t):
    """As torch for thresholds in range; out-of-range ints compare as numbers (torch would wrap
    -5 to 251 and 300 to 44 in uint8 arithmetic)."""
    img = torch.arange(256, dtype=torch.uint8, device="cuda").repeat(5)
    want = (img.int() > t).to(torch.uint8) * 255
    assert torch.equal(kernelkit.binarize(img, t), want), f"threshold {t}"
    if 0 <= t <= 255:
        assert torch.equal(kernelkit.binarize(img, t), (img > t).to(torch.uint8) * 255)


def test_shapes_noncontiguous_empty():
    img = torch.randint(0, 256, (37, 129), dtype=torch.uint8, device="cuda")
    out = kernelkit.binarize(img.t(), 90)
    assert out.shape == (129, 37)
    _exact(out, img.t(), 90, "transposed")
    assert kernelkit.binarize(torch.empty(0, 4, dtype=torch.uint8, device="cuda"), 3).shape == (0, 4)


def test_bad_arguments_raise_clearly():
    img = torch.zeros(4, 4, dtype=torch.uint8, device="cuda")
    with pytest.raises(TypeError, match="image must have dtype uint8"):
        kernelkit.binarize(img.float(), 1)
    with pytest.raises(TypeError, match="threshold must be a real number"):
        kernelkit.binarize(img, "1")
    with pytest.raises(TypeError, match="threshold must be a real number"):
        kernelkit.binarize(img, float("nan"))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.binarize(img, 1, variant="nope")


def test_torch_compile():
    img = _gray(1000)
    f = torch.compile(lambda t: kernelkit.binarize(t, 42), fullgraph=True)
    _exact(f(img), img, 42, "compiled")


def test_lane_matches_the_checked_path():
    """The first plain call takes the checked path and makes the lane of the device; later plain calls
    of contiguous images with a threshold in [0, 255) take it, exactly as the checked path
    (variant="fast"); other thresholds (no kernel) and non-contiguous images keep the checked path."""
    clear_plans()
    dev = torch.cuda.current_device()
    img = _gray(1000, 3)
    _exact(kernelkit.binarize(img, 7), img, 7, "first plain call")
    assert (torch.uint8, dev) in binarize_module.SPEC.lanes
    for n in (1, 3, 17, 4097, 2**20 + 3):
        for offset in (0, 1, 4, 13):
            img = _gray(n, offset)
            for t in (0, 127, 127.5, 254, 254.9):
                laned = kernelkit.binarize(img, t)
                assert torch.equal(laned, kernelkit.binarize(img, t, variant="fast")), f"n={n} +{offset} t={t}"
                _exact(laned, img, t, f"lane n={n} +{offset} t={t}")
    gray = torch.arange(256, dtype=torch.uint8, device="cuda").repeat(5)
    for t in (-5, -0.5, 255, 300, 1e9):
        assert torch.equal(kernelkit.binarize(gray, t), (gray.int() > t).to(torch.uint8) * 255), f"threshold {t}"
    square = torch.randint(0, 256, (37, 129), dtype=torch.uint8, device="cuda")
    _exact(kernelkit.binarize(square.t(), 90), square.t(), 90, "transposed after lane")
    with pytest.raises(TypeError, match="threshold must be a real number"):
        kernelkit.binarize(gray, float("nan"))
    kernelkit.binarize(gray, 1, variant="byte")
    assert len(binarize_module.SPEC.lanes) == 1
    clear_plans()
    kernelkit.binarize(gray, 1, variant="fast")
    kernelkit.binarize(gray, 1, config=ElementwiseLaunch(256))
    assert not binarize_module.SPEC.lanes
