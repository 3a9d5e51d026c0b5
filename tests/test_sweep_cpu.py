"""benchmarks/sweep.py without a GPU: its case list (benchmarks/sweep_cases.py) covers what it promises, and
its records have the format."""
import importlib.util
import math
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("sweep", Path(__file__).resolve().parents[1] / "benchmarks" / "sweep.py")
sweep = importlib.util.module_from_spec(_spec)
sys.modules["sweep"] = sweep  # dataclasses look their module up
_spec.loader.exec_module(sweep)
sweep_cases = sys.modules["sweep_cases"]  # imported by sweep.py from its folder


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % p for p in range(2, math.isqrt(n) + 1))


def test_row_lengths_cover_tiny_to_vocabulary_sizes():
    for op in sweep.ROW_OPS:
        cs = [c for c in sweep.cases([op]) if c.op == op]
        lengths = sorted({c.shape[-1] for c in cs})
        assert len(lengths) >= 40 and lengths[0] == 1 and lengths[-1] >= 300000
        assert sum(map(_is_prime, lengths)) >= 8 and sum(n % 2 for n in lengths) >= 15
        for n in (768, 1024, 4096, 5120, 8192, 12288, 14336, 18432,  # hidden sizes
                  32000, 32001, 50257, 128256, 151936, 262144, 300001):  # vocabularies
            assert n in lengths, n
        for n in lengths:  # every length in every dtype, about 2^27 elements a case
            got = [c for c in cs if c.shape[-1] == n]
            assert sorted(c.dtype for c in got) == sorted(sweep_cases.DTYPES)
            want = 2**27 if n >= sweep_cases.SHORT_ROW else 2**24  # torch's norms run rows of a few elements at 1-5 GB/s
            assert all(abs(c.numel() - want) <= n for c in got)


def test_rearrangements_reductions_and_gelu():
    cs = sweep.cases()
    shapes = {(c.op, c.shape) for c in cs if c.op in ("transpose", "permute")}
    assert len(shapes) >= 10
    for s in ((12345, 6789), (4097, 4095), (50257, 768), (64, 197, 768)):
        assert ("transpose", s) in shapes
    odd = [s for _, s in shapes if any(n % 2 for n in s)]
    assert len(odd) >= 8
    red = [c for c in cs if c.op in sweep.REDUCE_OPS]
    along = {(c.shape, c.kwargs["dim"]) for c in red}
    assert len(along) >= 10 and any(d == 0 and len(s) > 1 for s, d in along)
    assert any(0 < d < len(s) - 1 for s, d in along) and any(d == len(s) - 1 and len(s) > 1 for s, d in along)
    for op in sweep.REDUCE_OPS:
        assert {(c.shape, c.kwargs["dim"], c.dtype) for c in red if c.op == op} == \
            {(s, d, dt) for s, d in along for dt in sweep_cases.DTYPES}
    for s, d in along:  # the result much smaller than the input
        assert s[d] >= 127
    gelu = {(c.kwargs["approximate"], c.dtype) for c in cs if c.op == "gelu"}
    assert gelu == {(a, dt) for a in ("none", "tanh") for dt in sweep_cases.DTYPES}


def test_quick_is_a_small_subset_with_every_op():
    full, quick = sweep.cases(), sweep.cases(quick=True)
    assert set(quick) <= set(full) and len(quick) < len(full) / 4
    assert {c.op for c in quick} == set(sweep.OPS)
    assert [c.op for c in sweep.cases(["gelu", "sum"])] == sorted([c.op for c in sweep.cases(["gelu", "sum"])],
                                                                   key=["gelu", "sum"].index)
    with pytest.raises(ValueError, match="unknown op"):
        sweep.cases(["nope"])


def test_record_format_and_bytes():
    c = sweep.Case("sum", "bfloat16", (8192, 8192), (("dim", 0),))
    assert c.nbytes() == 8192 * 8192 * 2 + 8192 * 2 and c.row_len == 8192
    r = sweep.record(c, kk_us=100.0, torch_us=110.0, copy_us=95.0, agrees=True)
    for k in ("op", "dtype", "shape", "kernelkit_gbs", "torch_gbs", "copy_gbs"):
        assert k in r
    assert (r["op"], r["dtype"], r["shape"], r["params"]) == ("sum", "bfloat16", [8192, 8192], {"dim": 0})
    assert r["kernelkit_gbs"] == pytest.approx(c.nbytes() / 100e3, abs=0.1)
    assert r["pct_copy"] == 95.0 and r["vs_torch"] == 1.1
    ln = sweep.Case("layer_norm", "float32", (4, 5), ())
    assert ln.nbytes() == 2 * 20 * 4 + 2 * 5 * 4
    p = sweep.record(sweep.Case("permute", "float32", (2, 3, 4), (("dims", (0, 2, 1)),)), 1.0, 1.0, 1.0, False)
    assert p["params"] == {"dims": [0, 2, 1]} and p["agrees"] is False


def test_device_tag():
    assert sweep.device_tag("NVIDIA H100 80GB HBM3") == "h100"
    assert sweep.device_tag("NVIDIA H200") == "h200"
    assert sweep.device_tag("NVIDIA A100-SXM4-80GB") == "a100"
    assert sweep.device_tag("Some GPU") == "some-gpu"


def test_window_cases():
    """The sliding windows: 1xN, small and odd images with kernels of 3 to 31; pooling and depthwise
    conv2d on odd shapes, depthwise in both layouts; bytes as the input read once and the output written
    once."""
    cs = sweep.cases(sweep.WINDOW_OPS)
    f2d = {(c.shape, c.kwargs["size"]) for c in cs if c.op == "filter2d"}
    sizes = {k for _, k in f2d}
    assert min(sizes) == 3 and max(sizes) == 31 and len(sizes) >= 4
    images = {s for s, _ in f2d}
    assert any(h == 1 for h, _ in images) and any(h * w < 1000 for h, w in images)
    assert sum(1 for h, w in images if h % 2 and w % 2) >= 3
    assert {c.dtype for c in cs if c.op == "gaussian_blur"} == {"float32", "uint8"}
    pools = {(c.kwargs["kernel"], c.kwargs["stride"]) for c in cs if c.op == "max_pool2d"}
    assert {(2, 2), (3, 2), (3, 1)} <= pools
    dw = [c for c in cs if c.op == "conv2d"]
    assert {c.kwargs["layout"] for c in dw} == {"nchw", "channels_last"}
    assert {(c.kwargs["kernel"], c.kwargs["stride"]) for c in dw} >= {(3, 1), (7, 1), (3, 2)}
    assert all(any(n % 2 for n in c.shape[2:]) for c in dw)
    p = sweep.Case("max_pool2d", "bfloat16", (2, 3, 9, 11), (("kernel", 3), ("stride", 2), ("padding", 1)))
    assert p.nbytes() == (2 * 3 * 9 * 11 + 2 * 3 * 5 * 6) * 2 and p.row_len == 11
    g = sweep.Case("gaussian_blur", "uint8", (17, 31), (("size", 7),))
    assert g.nbytes() == 2 * 17 * 31


def test_window_table_cases():
    """benchmarks/window_table.py covers the issue's benchmark list."""
    spec = importlib.util.spec_from_file_location("window_table", Path(__file__).resolve().parents[1] /
                                                  "benchmarks" / "window_table.py")
    wt = importlib.util.module_from_spec(spec)
    sys.modules["window_table"] = wt
    spec.loader.exec_module(wt)
    cs = wt.cases()
    f = {(c.op, c.kwargs.get("size"), c.dtype, c.shape) for c in cs if c.group == "filters"}
    assert {("filter2d", k, "float32", (8192, 8192)) for k in (5, 15, 31)} <= f
    assert ("gaussian_blur", 7, "float32", (8192, 8192)) in f and ("sobel", None, "float32", (8192, 8192)) in f
    assert ("gaussian_blur", 5, "uint8", (2160, 3840, 3)) in f
    pools = {(c.op, c.kwargs["kernel"], c.kwargs["stride"], c.dtype, c.layout) for c in cs if c.group == "pool"}
    for op in ("max_pool2d", "avg_pool2d"):
        for k, s in ((2, 2), (3, 2)):
            for dt in ("float32", "float16", "bfloat16"):
                assert {(op, k, s, dt, "nchw"), (op, k, s, dt, "channels_last")} <= pools
    dw = {(c.shape, c.kwargs["kernel"], c.kwargs["stride"], c.dtype, c.layout) for c in cs if c.group == "depthwise"}
    for shape, k, s in (((64, 96, 56, 56), 7, 1), ((64, 768, 7, 7), 7, 1), ((64, 96, 112, 112), 3, 2),
                        ((64, 960, 7, 7), 3, 1)):
        for dt in ("float16", "bfloat16"):
            assert {(shape, k, s, dt, "nchw"), (shape, k, s, dt, "channels_last")} <= dw
    c = next(c for c in cs if c.group == "depthwise" and c.kwargs["stride"] == 2)
    assert c.nbytes() == (64 * 96 * 112 * 112 + 64 * 96 * 56 * 56) * 2
    r = wt.record(c, 100.0, 200.0, 50.0, True, {"direct": 400.0})
    assert r["vs_torch"] == 2.0 and r["pct_copy"] == 50.0 and r["rungs"]["direct"]["pct_copy"] == 12.5
    s = wt.summary([r, {**r, "vs_torch": 0.5, "layout": "nchw"}])
    assert s["depthwise_geomean_vs_torch"]["all"] == 1.0 and s["depthwise_least_vs_torch"]["vs_torch"] == 0.5
