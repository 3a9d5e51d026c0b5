"""softmax's window forms on the GPU: rows at every start alignment (x and out offset views of 0..7
elements, the same phase and different ones), odd and prime lengths from 1 to 300001, every dtype, each
named rung, against float64 with NaN-poisoned outputs whose guard elements around the view must stay NaN."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from gpu_helpers import assert_close, check_guarded as check, guarded_out, random_input

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
LENS = (1, 2, 3, 7, 13, 31, 100, 257, 1021, 2053, 4099, 8191, 16411, 32001, 50257, 65537, 151937, 300001)


def rows_for(len_):
    return max(1, min(37, 2**20 // len_))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_every_alignment_same_phase(dtype):
    """x and out at the same offset (the window form's vector stores), and out fresh (lane path)."""
    for len_ in LENS:
        rows = rows_for(len_)
        for offset in range(8):
            x = random_input(rows * len_, dtype, offset).view(rows, len_)
            buf, out = guarded_out(x.shape, dtype, offset)
            kernelkit.softmax(x, -1, out=out)
            check(buf, out, reference.softmax(x, -1), dtype, f"len={len_} offset={offset}")
        x = random_input(rows * len_, dtype, 3).view(rows, len_)
        assert_close(kernelkit.softmax(x), reference.softmax(x, -1), dtype, f"fresh out len={len_}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_every_alignment_other_phase(dtype):
    """x and out at different offsets (loads by window vectors, stores element by element)."""
    for len_ in (1, 7, 257, 4099, 32001, 50257):
        rows = rows_for(len_)
        for xo, oo in ((0, 1), (1, 0), (3, 6), (7, 2), (5, 0)):
            x = random_input(rows * len_, dtype, xo).view(rows, len_)
            buf, out = guarded_out(x.shape, dtype, oo)
            kernelkit.softmax(x, -1, out=out)
            check(buf, out, reference.softmax(x, -1), dtype, f"len={len_} x+{xo} out+{oo}")


@pytest.mark.parametrize("rung", ["warp_rows", "cta_row", "cluster_row", "auto"])
def test_each_named_rung_at_odd_offsets(rung):
    for dtype in DTYPES:
        for len_ in (5, 129, 1000, 5003, 40009):
            rows = rows_for(len_)
            x = random_input(rows * len_, dtype, 1).view(rows, len_)
            buf, out = guarded_out(x.shape, dtype, 1)
            kernelkit.softmax(x, -1, out=out, variant=rung)
            check(buf, out, reference.softmax(x, -1), dtype, f"{rung} len={len_}")


def test_special_values_at_an_offset():
    inf, nan = float("inf"), float("nan")
    for dtype in DTYPES:
        for len_ in (7, 1001, 50257):
            x = torch.randn(6, len_ + 1, device="cuda") * 3
            x[1, len_ // 3] = inf
            x[2, :] = -inf
            x[3, : (len_ * 3) // 4] = -inf
            x[4, len_ // 2] = nan
            x = x.to(dtype).flatten()[1:1 + 6 * len_].view(6, len_)
            got, want = kernelkit.softmax(x), torch.softmax(x, -1)
            assert torch.equal(torch.isnan(got), torch.isnan(want)), len_
            assert_close(got, reference.softmax(x, -1), dtype, f"special len={len_}")
