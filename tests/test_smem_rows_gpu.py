"""Rows kept whole in shared memory (softmax_smem, norm_smem; sm_90): every configuration, forced onto
rows it holds exactly, rows a vector shorter, rows that leave a cluster's last CTA empty and rows that
end inside a chunk, with more rows than resident CTAs (each ring wraps around several times), against
float64 with poisoned outputs; special values and large magnitudes."""
import sys

import pytest
import torch

import kernelkit
from kernelkit import reference
from gpu_helpers import assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _need_sm90():
    from kernelkit.ops.reduction._rows import has_clusters

    if not has_clusters(0):
        pytest.skip("bulk copies need sm_90")


def _configs(mod, dtype):
    return mod.smem_configs(dtype)


def _lengths(dtype, cfg):
    from kernelkit.ops.reduction._rows import per_vec, smem_rows_capacity

    n, cap = per_vec(dtype), smem_rows_capacity(dtype, cfg)
    chunk, cluster = cfg[0] * cfg[1] * n, cfg[4]
    lens = {cap, cap - n, cap // 2 + 3 * n, chunk + n}
    if cluster > 1:
        lens.add(cap // cluster - n)  # the last CTA's slice is empty
    return sorted(lens)


@pytest.fixture(autouse=True)
def _fresh_plans():
    """Forced configurations must not outlive a test in the launch-plan caches, even a failing one
    (a stale 32K-capacity plan once served later tests' 64K rows)."""
    yield
    for name in ("kernelkit.ops.reduction.norm", "kernelkit.ops.reduction.softmax"):
        sys.modules[name]._plans.clear()


def _force(monkeypatch, mod, cfg):
    monkeypatch.setattr(mod, "_smem_for", lambda *_a, c=cfg: c)
    if hasattr(mod, "_cluster_rows_for"):  # the norms' fp16 64K rows, checked before _smem_for
        monkeypatch.setattr(mod, "_cluster_rows_for", lambda *_a: None)
    mod._plans.clear()


def _forced_lengths(monkeypatch, mod, dtype):
    """Every configuration of mod forced in turn, with each row length it is tested at: (cfg, len_)."""
    for cfg in _configs(mod, dtype):
        _force(monkeypatch, mod, cfg)
        for len_ in _lengths(dtype, cfg):
            yield cfg, len_


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_every_smem_configuration(dtype, monkeypatch):
    _need_sm90()
    rows = 301
    for cfg, len_ in _forced_lengths(monkeypatch, sys.modules["kernelkit.ops.reduction.norm"], dtype):
        x = (random_input(rows * len_, dtype) + 0.7).view(rows, len_)
        w, b = random_input(len_, dtype), random_input(len_, dtype)
        for wb in ((w, b), (w, None), (None, None)):
            got = kernelkit.layer_norm(x, (len_,), *wb, out=poisoned_like(x))
            assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype, f"layer_norm {cfg} len={len_} wb={wb[0] is not None},{wb[1] is not None}")
        got = kernelkit.rms_norm(x, (len_,), w, out=poisoned_like(x))
        assert_close(got, reference.rms_norm(x, (len_,), w), dtype, f"rms_norm {cfg} len={len_}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_every_smem_configuration(dtype, monkeypatch):
    _need_sm90()
    rows = 301
    for cfg, len_ in _forced_lengths(monkeypatch, sys.modules["kernelkit.ops.reduction.softmax"], dtype):
        x = random_input(rows * len_, dtype).view(rows, len_)
        got = kernelkit.softmax(x, out=poisoned_like(x))
        assert_close(got, reference.softmax(x), dtype, f"softmax {cfg} len={len_}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_smem_special_values_and_large_magnitudes(dtype, monkeypatch):
    """Rows with +inf, -inf, NaN, all -inf (softmax: as torch gives them) and large means (norms: no
    cancellation), through each op's default 64K-row path and every spare configuration's first."""
    _need_sm90()
    len_ = 65536
    inf, nan = float("inf"), float("nan")
    x = torch.randn(12, len_, device="cuda", dtype=torch.float32) * 3
    x[0, 7] = inf
    x[1, :] = -inf
    x[2, len_ // 3] = nan
    x[3, ::2] = -inf
    x[4, -1] = 80.0
    x[5] *= 1e4
    x = x.to(dtype)
    from kernelkit.ops.reduction._rows import smem_rows_capacity

    smx = sys.modules["kernelkit.ops.reduction.softmax"]
    for cfg in [c for c in _configs(smx, dtype) if smem_rows_capacity(dtype, c) >= len_][:2]:
        _force(monkeypatch, smx, cfg)
        got, want = kernelkit.softmax(x), torch.softmax(x.double(), -1)
        assert torch.equal(torch.isnan(got), torch.isnan(want)), cfg
        assert_close(got, reference.softmax(x), dtype, f"softmax special {cfg}")
    nrm = sys.modules["kernelkit.ops.reduction.norm"]
    # mean 25x the spread: E[x^2] - E[x]^2 in fp32 would lose 4 digits here, past the fp32 tolerance;
    # the two passes must not. (Much larger ratios leave too few bits of the mean itself in fp32, for
    # any fp32 kernel: at 50x, one ulp of the mean times |weight| ~ 4 is the whole tolerance.)
    y = (torch.randn(6, len_, device="cuda") * 2 + 50).to(dtype)
    w, b = random_input(len_, dtype, scale=1.0), random_input(len_, dtype, scale=1.0)
    for cfg in [c for c in _configs(nrm, dtype) if smem_rows_capacity(dtype, c) >= len_]:
        _force(monkeypatch, nrm, cfg)
        assert_close(kernelkit.layer_norm(y, (len_,), w, b), reference.layer_norm(y, (len_,), w, b), dtype,
                     f"layer_norm large mean {cfg}")
