"""max_pool2d and avg_pool2d on the GPU: every rung against torch's pooling in float64 (padding, dilation,
ceil_mode, divisors, channels_last, planar rows at every alignment, small planes and long rows, NaN inputs,
more planes than the grid's z limit), on fresh outputs poisoned with NaN (see _poison_allocator)."""
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
