"""layer_norm's and rms_norm's phased tiles on the GPU (NormTile.phased: persistent warp slices or CTAs a row
at any alignment, each thread keeping its weight and bias vectors shifted to its row phase in shared memory):
more rows than the resident groups take at once, x and out at the same phase and at another, weight and bias
at phases of their own, with and without them; and grids whose row stride changes a group's phase from row to
row (phased_grid forced small and odd), so that the slots are shifted again; against float64 into poisoned
outputs."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.reduction import norm, norm_configs
from kernelkit.ops.reduction._rows import WINDOW
from gpu_helpers import assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
LENS = (127, 257, 509, 1023, 1025, 4097, 8191)


def _check(x, len_, w, b, dtype, cfg, oo, label):
    out = poisoned_like(x, oo)
    kernelkit.layer_norm(x, (len_,), w, b, out=out, config=cfg)
    assert_close(out, reference.layer_norm(x, (len_,), w, b), dtype, f"layer_norm {label}")
    out = poisoned_like(x, oo)
    kernelkit.rms_norm(x, (len_,), w, out=out, config=cfg)
    assert_close(out, reference.rms_norm(x, (len_,), w), dtype, f"rms_norm {label}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_phased_rows_loop(dtype):
    """The rule's phased tiles on rows at any alignment, with more rows than their resident CTAs hold (every
    group loops over several rows of its one phase)."""
    for len_ in LENS:
        cfg = norm.config_for("auto", dtype, len_, form=WINDOW, sm=torch.cuda.get_device_capability()[0] * 10)
        if not (isinstance(cfg, norm.NormTile) and cfg.phased):
            continue
        units = 1 if cfg.threads > 32 else cfg.block // cfg.threads
        rows = units * 132 * 24 + 5  # past every H100 / H200 residency of these tiles
        for xo, oo, wo, bo in ((1, 1, 0, 0), (3, 5, 2, 7), (7, 7, 1, 0)):
            x = (random_input(rows * len_, dtype, xo, scale=2.0) + 0.5).view(rows, len_)
            w, b = random_input(len_, dtype, wo), random_input(len_, dtype, bo)
            label = f"{cfg} {rows}x{len_} x+{xo} out+{oo} w+{wo} b+{bo}"
            _check(x, len_, w, b, dtype, cfg, oo, label)
            if xo == 1:
                _check(x, len_, None, None, dtype, cfg, oo, label + " no weight")
                _check(x, len_, w, None, dtype, cfg, oo, label + " no bias")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_phase_changes_shift_again(dtype, monkeypatch):
    """Grids of 1, 3 and 7 CTAs: each group's rows cycle through the phases, and its slots follow."""
    for grid in (1, 3, 7):
        monkeypatch.setattr(norm_configs, "phased_grid", lambda rows, units, resident, phases, g=grid: g)
        for len_, threads, vecs in ((509, 32, 4), (1025, 64, 3), (4097, 160, 4)):
            n = 16 // dtype.itemsize
            vecs = max(vecs, -(-(len_ + n - 1) // (threads * n)))
            cfg = norm.NormTile(threads, vecs, phased=True)
            rows = 301
            x = (random_input(rows * len_, dtype, 1) * 3 + 20).view(rows, len_)
            w, b = random_input(len_, dtype, 3), random_input(len_, dtype, 6)
            _check(x, len_, w, b, dtype, cfg, 1, f"{cfg} grid={grid} {rows}x{len_}")
            _check(x, len_, w, b, dtype, cfg, 4, f"{cfg} grid={grid} {rows}x{len_} out+4")
