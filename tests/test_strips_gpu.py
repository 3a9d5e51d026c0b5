"""The separable filters' register strips on one-channel uint8 images (csrc/window/sep_strips.cu): inputs
whose rows start 16-byte aligned with W a multiple of 16, at widths around one strip and several, heights
below the kernel and across strip bands, every border, planar and one-channel HWC, batched planes, kernels
of 1 to 7 taps (non-square: zero-padded to the compiled K), clamped sums and bounded means; each against
the float64 reference, and checked to have taken the strips. Outputs start poisoned."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.window import _strips
from kernelkit.ops.window._common import planes_of
from window_helpers import _check, _input, poison_allocator

pytestmark = pytest.mark.gpu

BORDERS = ("zero", "replicate", "reflect")
# (shape, channels_last): widths of 16 to 1008 elements, one strip's 480 exactly and past it
SHAPES = [((1, 16), False), ((2, 48), False), ((7, 480), False), ((37, 496), False), ((3, 29, 1008), False),
          ((5, 16, 1), True), ((2, 41, 336, 1), True), ((131, 2080), False), ((6, 4096), False)]


@pytest.fixture(autouse=True)
def _poison():
    poison_allocator()
    yield


def _takes(x, cl, ks):
    kh, kw = (ks, ks) if isinstance(ks, int) else (ks[1], ks[0])
    return _strips.strips_take(planes_of(x, cl, "test"), kh, kw)


@pytest.mark.parametrize("variant", ["strips", "best"])
def test_gaussian_strips(variant):
    torch.manual_seed(11)
    for shape, cl in SHAPES:
        for ks in (1, 3, 5, 7, [3, 7], [7, 1]):
            x = _input(shape, torch.uint8)
            assert _takes(x, cl, ks), (shape, ks)
            out = kernelkit.gaussian_blur(x, ks, channels_last=cl, variant=variant)
            _check(out, reference.gaussian_blur(x, ks, channels_last=cl), x, f"{variant} {shape} {ks}",
                   reference.gaussian_blur(x.double(), ks, channels_last=cl))


def test_box_strips_every_border():
    torch.manual_seed(12)
    for shape, cl in SHAPES:
        for ks in (3, (5, 3), 7):
            for border in BORDERS:
                for normalize in (True, False):  # sums saturate: the unbounded kernels clamp
                    x = _input(shape, torch.uint8)
                    out = kernelkit.box_filter(x, ks, border=border, normalize=normalize, channels_last=cl,
                                               variant="strips")
                    ref = reference.box_filter(x, ks, border, normalize=normalize, channels_last=cl)
                    _check(out, ref, x, f"{shape} {ks} {border} {normalize}",
                           reference.box_filter(x.double(), ks, border, normalize=normalize, channels_last=cl))


def test_strips_many_bands_and_strips():
    """More strips than resident warps (each warp takes several, down and across), a plane pitch that is a
    multiple of 16 but not of the row, and an offset view of 16 bytes."""
    torch.manual_seed(13)
    base = torch.randint(0, 256, (16 + 3 * 1201 * 2400,), dtype=torch.uint8, device="cuda")
    x = base[16:].view(3, 1201, 2400)
    assert _takes(x, False, 5)
    _check(kernelkit.gaussian_blur(x, 5), reference.gaussian_blur(x, 5), x, "3x1201x2400 +16",
           reference.gaussian_blur(x.double(), 5))


def test_strips_decline_what_they_cannot_take():
    """Rows that do not start 16-byte aligned, W * C not a multiple of 16, several channels, kernels past 7
    and other dtypes run the pipelined rung (and stay correct through `best`)."""
    for shape, cl, ks, offset in (((9, 33), False, 5, 0), ((9, 48), False, 5, 1), ((9, 16, 3), True, 5, 0),
                                  ((9, 48), False, 9, 0)):
        x = _input(shape, torch.uint8, offset)
        assert not _takes(x, cl, ks)
        _check(kernelkit.gaussian_blur(x, ks, channels_last=cl), reference.gaussian_blur(x, ks, channels_last=cl),
               x, f"{shape} {ks} +{offset}", reference.gaussian_blur(x.double(), ks, channels_last=cl))
    assert not _strips.strips_take(planes_of(torch.zeros(4, 32, device="cuda"), False, "t"), 3, 3)
