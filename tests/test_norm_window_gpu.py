"""layer_norm's and rms_norm's window forms on the GPU: rows at every start alignment (x, out, weight and
bias offset views of 0..7 elements), odd and prime lengths, every dtype, against float64 with
NaN-poisoned outputs whose guard elements around the view must stay NaN."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from gpu_helpers import assert_close, random_input
from gpu_helpers import check_guarded as check, guarded_out
from test_softmax_window_gpu import rows_for

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
LENS = (1, 3, 7, 31, 257, 1021, 2053, 4099, 5120, 8191, 16411, 32001, 40009, 151937)


def ref(op, x, w, b):
    if op == "layer_norm":
        return reference.layer_norm(x, (x.shape[-1],), w, b)
    return reference.rms_norm(x, (x.shape[-1],), w)


def run(op, x, w, b, out):
    if op == "layer_norm":
        return kernelkit.layer_norm(x, (x.shape[-1],), w, b, out=out)
    return kernelkit.rms_norm(x, (x.shape[-1],), w, out=out)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_every_alignment(op, dtype):
    for len_ in LENS:
        rows = rows_for(len_)
        for xo, oo, wo in ((0, 0, 0), (1, 1, 0), (3, 3, 5), (7, 7, 1), (2, 5, 0), (0, 0, 3), (6, 1, 7)):
            x = (random_input(rows * len_, dtype, xo, scale=2.0) + 0.5).view(rows, len_)
            w = random_input(len_, dtype, wo, scale=1.0)
            b = random_input(len_, dtype, (wo + 3) % 8, scale=1.0)
            buf, out = guarded_out(x.shape, dtype, oo)
            run(op, x, w, b, out)
            check(buf, out, ref(op, x, w, b), dtype, f"{op} len={len_} x+{xo} out+{oo} w+{wo}")
        x = random_input(rows * len_, dtype, 1).view(rows, len_)
        assert_close(run(op, x, None, None, None), ref(op, x, None, None), dtype, f"{op} no weight len={len_}")
