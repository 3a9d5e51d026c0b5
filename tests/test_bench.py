"""kernelkit.bench: statistics, cache handling, plots and reports on CPU; real timings under ``gpu``."""
import io
import json
import math
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from rich.console import Console

try:
    import kernelkit  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelkit.bench import (RooflinePoint, Timing, ceilings, copy_bandwidth, environment,  # noqa: E402
                             matmul_rate, plot_bandwidth_bars, plot_roofline, render_table, report,
                             summarize_times, timing, write_json)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


# ---------------------------------------------------------------- timing (pure)
def test_summarize_times_matches_numpy_percentiles():
    times = [5.0, 1.0, 3.0, 2.0, 4.0, 9.0, 0.5]
    t = summarize_times(times)
    assert (t.reps, t.min_ms) == (7, 0.5)
    assert (t.median_ms, t.p20_ms, t.p80_ms) == pytest.approx(
        (np.median(times), np.percentile(times, 20), np.percentile(times, 80)))
    assert t.min_ms <= t.p20_ms <= t.median_ms <= t.p80_ms
    assert (t.median_us, t.p80_us, t.seconds) == pytest.approx(
        (t.median_ms * 1e3, t.p80_ms * 1e3, t.median_ms * 1e-3))


def test_summarize_times_interpolates_and_validates():
    t = summarize_times([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (t.median_ms, t.p20_ms, t.p80_ms) == pytest.approx((3.0, 1.8, 4.2))
    assert summarize_times([2.5]) == Timing(2.5, 2.5, 2.5, 2.5, 1)
    with pytest.raises(ValueError):
        summarize_times([])
    with pytest.raises(ValueError):
        summarize_times([1.0, float("nan")])
    with pytest.raises(Exception):
        t.median_ms = 2.0  # frozen


def test_timing_rules():
    l2 = 50 << 20
    cases = [(True, 10 << 30), (False, 1), (None, 8 * l2), (None, 8 * l2 + 1), (None, None)]
    assert [timing.should_flush_l2(f, ws, l2) for f, ws in cases] == [True, False, True, False, True]
    # adaptive reps: capped by the time budget, never below ten
    cases = [(100, 1.0), (100, 50.0), (100, 1000.0), (5, 1000.0), (100, None)]
    assert [timing.plan_reps(r, ms, 2.0) for r, ms in cases] == [100, 40, 10, 5, 100]
    # the rep index goes to functions with exactly one required positional parameter
    assert [timing._wants_index(f) for f in (lambda: 0, lambda i: 0, lambda i=0: 0)] == [False, True, False]
    with pytest.raises(TypeError):
        timing._wants_index(lambda a, b: None)


def _fake_event(enable_timing=False):
    ev = types.SimpleNamespace(t=None)
    ev.record = lambda stream=None: setattr(ev, "t", time.perf_counter())
    ev.elapsed_time = lambda end: (end.t - ev.t) * 1e3
    return ev


def _fake_cuda(monkeypatch) -> list:
    """CUDA faked for the timing loop: events read the host clock; returns the list each L2 flush
    appends to."""
    flushes = []
    fakes = {"is_available": lambda: True, "current_device": lambda: 0, "Event": _fake_event,
             "current_stream": lambda device=None: object(), "synchronize": lambda device=None: None,
             "get_device_properties": lambda d: types.SimpleNamespace(L2_cache_size=1 << 20),
             "_sleep": lambda cycles: flushes.append(("sleep", cycles))}
    for name, fake in fakes.items():
        monkeypatch.setattr(timing.torch.cuda, name, fake)
    monkeypatch.setattr(timing, "_l2_flush", lambda d: lambda: flushes.append(1))
    return flushes


def _flush_count(log) -> int:
    return sum(1 for x in log if x == 1)


def test_time_cuda_control_flow_on_cpu(monkeypatch):
    """time_cuda's loop with CUDA faked: events read the host clock, flushes are counted, and every timed
    call follows a flush (where asked) and a GPU spin covering the host's issue of the call."""
    seen, calls = [], []
    log = _fake_cuda(monkeypatch)
    t = timing.time_cuda(lambda i: seen.append(i), warmup=3, reps=12, working_set_bytes=1024)
    assert t.reps == 12 and t.median_ms >= 0 and seen == [0, 1, 2] + list(range(12))
    assert _flush_count(log) == 2 + 12  # warm-up after the first call, then every rep
    timed = log[2:]  # after the warm-up's flushes: (flush, spin) before each timed call
    assert timed == [1, ("sleep", timing.HOST_COVER_CYCLES)] * 12
    # a working set far above L2 is not flushed; a zero-argument fn is called bare
    t = timing.time_cuda(lambda: calls.append(1), warmup=2, reps=11, working_set_bytes=1 << 30)
    assert t.reps == 11 and len(calls) == 13 and _flush_count(log) == 14
    del log[:]
    timing.time_cuda(lambda: None, warmup=1, reps=10, flush_l2=False, cover_host=False)
    assert log == []
    # reps shrink to fit max_seconds (10 ms per call, 0.15 s budget), never below ten
    t = timing.time_cuda(lambda: time.sleep(0.01), warmup=3, reps=1000, max_seconds=0.15, flush_l2=False)
    assert 10 <= t.reps <= 15 and t.median_ms >= 9.0


def test_time_interleaved_runs_functions_in_turn(monkeypatch):
    """Each repetition runs every function once, in order, each after its own flush; each gets its own
    Timing, and a slow function's times do not leak into a fast one's."""
    order = []
    flushes = _fake_cuda(monkeypatch)
    fast = lambda i: order.append(("a", i))  # noqa: E731
    slow = lambda: (order.append(("b", None)), time.sleep(0.004))  # noqa: E731
    ta, tb = timing.time_interleaved([fast, slow], warmup=2, reps=10, working_set_bytes=1024)
    assert ta.reps == tb.reps == 10
    timed = order[4:]  # after warm-up: a0 b, a1 b
    assert timed == [x for i in range(10) for x in (("a", i), ("b", None))]
    assert _flush_count(flushes) == 2 + 20  # the second warm-up round, then before every timed call
    assert tb.median_ms >= 3.5 > ta.median_ms
    with pytest.raises(ValueError):
        timing.time_interleaved([])

def test_time_interleaved_shuffled_order(monkeypatch):
    """shuffle=True: every round still runs each function once, in an order drawn anew each round from a
    fixed seed (the same orders every run), and each Timing stays with its own function."""
    _fake_cuda(monkeypatch)

    def run_once():
        order = []
        fns = [lambda i, k=k: order.append((k, i)) for k in "abc"]
        fns.append(lambda: (order.append(("slow", None)), time.sleep(0.004)))
        times = timing.time_interleaved(fns, warmup=1, reps=12, working_set_bytes=1024, shuffle=True)
        return order[4:], times  # past the warm-up round (called in order)

    timed, times = run_once()
    rounds = [timed[4 * r:4 * r + 4] for r in range(12)]
    assert all(sorted(k for k, _ in rnd) == ["a", "b", "c", "slow"] for rnd in rounds)
    assert all(i == r for r, rnd in enumerate(rounds) for k, i in rnd if k != "slow")
    assert len({tuple(k for k, _ in rnd) for rnd in rounds}) > 1  # the order changes between rounds
    assert timed == run_once()[0]  # and is the same from run to run
    assert times[3].median_ms >= 3.5 > max(t.median_ms for t in times[:3])


# ---------------------------------------------------------------- ceilings cache
FAKE_INFO = {"device": "NVIDIA H100 80GB HBM3", "cc": "9.0", "sm_count": 132, "torch_cuda": "13.0"}


@pytest.fixture
def fake_ceilings(monkeypatch, tmp_path):
    """Redirect the cache to tmp_path and replace measurements by counting fakes."""
    calls = {"copy": [], "matmul": []}

    def copy(nbytes):
        calls["copy"].append(nbytes)
        return 3000.0 if nbytes is None else 1000.0 + len(calls["copy"])

    def mm(kind):
        calls["matmul"].append(kind)
        if kind == "int8" and os.environ.get("FAKE_NO_INT8"):
            raise RuntimeError("int8 unsupported")
        return {"fp16": 700.0, "bf16": 710.0, "tf32": 400.0, "fp32": 50.0, "int8": 1400.0}[kind]

    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ceilings, "_device_info", lambda: dict(FAKE_INFO))
    monkeypatch.setattr(ceilings, "_measure_copy", copy)
    monkeypatch.setattr(ceilings, "_measure_matmul", mm)
    return calls


def test_ceilings_round_trip(fake_ceilings, tmp_path, monkeypatch):
    path = ceilings.cache_path()
    assert path == tmp_path / "cache" / "ceilings-NVIDIA_H100_80GB_HBM3-13.0.json"
    assert copy_bandwidth() == 3000.0 and matmul_rate(torch.float16) == 700.0
    doc = json.loads(path.read_text())
    assert doc["copy_gbs"]["large"] == 3000.0 and doc["matmul_tflops"]["fp16"] == 700.0
    # second calls come from the file, aliases share one entry
    assert copy_bandwidth(None) == 3000.0 and matmul_rate("fp16") == matmul_rate("float16") == 700.0
    assert fake_ceilings["copy"] == [None] and fake_ceilings["matmul"] == ["fp16"]
    assert not list(path.parent.glob("*.tmp"))
    monkeypatch.delenv("KERNELKIT_CACHE_DIR")
    assert ceilings.cache_dir() == Path.home() / ".cache" / "kernelkit"


def test_ceilings_corrupt_file_is_remeasured(fake_ceilings):
    path = ceilings.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert copy_bandwidth() == 3000.0 and fake_ceilings["copy"] == [None]
    assert json.loads(path.read_text())["copy_gbs"]["large"] == 3000.0
    path.write_text(json.dumps({"schema": 1, "copy_gbs": [1, 2]}))  # wrong shape
    assert copy_bandwidth() == 3000.0 and fake_ceilings["copy"] == [None, None]
    path.write_text(json.dumps({"schema": 1, "device": {"device": "other"}, "copy_gbs": {"large": 1.0},
                                "copy_gbs_by_size": {}, "matmul_tflops": {}}))  # another GPU
    assert copy_bandwidth() == 3000.0 and fake_ceilings["copy"] == [None, None, None]


def test_copy_bandwidth_by_size_is_capped(fake_ceilings):
    assert copy_bandwidth(4096) == copy_bandwidth(4096)  # second one from the cache
    for n in range(1, ceilings.MAX_SIZED_ENTRIES + 6):
        copy_bandwidth(10_000 + n)
    doc = json.loads(ceilings.cache_path().read_text())
    assert len(doc["copy_gbs_by_size"]) == ceilings.MAX_SIZED_ENTRIES
    assert "4096" not in doc["copy_gbs_by_size"]  # oldest evicted
    with pytest.raises(ValueError):
        copy_bandwidth(0)


def test_device_ceilings_and_force(fake_ceilings, monkeypatch):
    monkeypatch.setenv("FAKE_NO_INT8", "1")
    c = ceilings.measure_all()
    assert c["device"] == FAKE_INFO["device"] and c["sm_count"] == 132 and c["copy_gbs"] == 3000.0
    assert c["matmul_tflops"]["tf32"] == 400.0 and c["matmul_tflops"]["int8"] is None
    n_before = len(fake_ceilings["matmul"]) + 1  # only the failed int8 is retried
    assert ceilings.device_ceilings() and len(fake_ceilings["matmul"]) == n_before
    ceilings.measure_all(force=True)
    assert fake_ceilings["copy"] == [None, None]
    kinds = [ceilings._kind(k) for k in (torch.bfloat16, torch.float32, "TF32", "torch.int8", "half")]
    assert kinds == ["bf16", "fp32", "tf32", "int8", "fp16"]  # torch.float32 is strict fp32
    for bad in (torch.float64, "fp8"):
        with pytest.raises(ValueError):
            ceilings._kind(bad)
    saved = torch.backends.cuda.matmul.fp32_precision  # tf32 switch is restored
    with ceilings._fp32_matmul_mode(True):
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    assert torch.backends.cuda.matmul.fp32_precision == saved


# ---------------------------------------------------------------- plots
POINTS = [RooflinePoint("naive", flops=1e9, bytes=8e9, seconds=8e-3),
          RooflinePoint("vectorized", flops=1e9, bytes=8e9, seconds=3.2e-3),
          RooflinePoint("tiled gemm", flops=2 * 4096**3, bytes=3 * 2 * 4096**2, seconds=2.5e-4)]


def test_roofline_png_written(tmp_path):
    def _is_png(p: Path) -> bool:
        return p.is_file() and p.stat().st_size > 1000 and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    out = plot_roofline(POINTS, copy_gbs=3000.0, peak_tflops=700.0, title="test",
                        path=tmp_path / "sub" / "roof.png")
    assert _is_png(Path(out))
    assert POINTS[1].gbs == pytest.approx(2500.0) and POINTS[0].intensity == pytest.approx(0.125)
    # a 0-FLOP point, no compute roof, and the standalone bar chart
    pts = POINTS + [RooflinePoint("copy-like", flops=0, bytes=1e9, seconds=1e-3)]
    assert _is_png(plot_roofline(pts, copy_gbs=3000.0, peak_tflops=None, title="t",
                                 path=tmp_path / "a.png", bandwidth_panel=False))
    assert _is_png(plot_bandwidth_bars(pts, copy_gbs=3000.0, title="t", path=tmp_path / "b.png"))
    with pytest.raises(ValueError):
        plot_roofline([], copy_gbs=1.0, peak_tflops=None, title="t", path=tmp_path / "c.png")
    with pytest.raises(ValueError):
        plot_bandwidth_bars(POINTS, copy_gbs=0.0, title="t", path=tmp_path / "d.png")


# ---------------------------------------------------------------- report
ENV_KEYS = {"date", "hostname", "device", "cc", "sm_count", "l2_bytes", "torch", "torch_cuda",
            "cuda_core", "nvrtc", "driver", "python", "kernelkit"}


def test_environment_and_write_json_atomic(tmp_path, monkeypatch):
    env = environment()
    assert ENV_KEYS <= set(env) and env["torch"] == torch.__version__
    if not torch.cuda.is_available():  # works without a GPU, device fields None
        assert env["device"] is None and env["sm_count"] is None and env["cc"] is None
    payload = {"op": "gelu", "t": Timing(1.0, 0.5, 0.8, 1.2, 10), "dtype": torch.float16,
               "bad": math.inf, "x": np.float32(2.0)}
    path = write_json(tmp_path / "out" / "res.json", payload)
    assert ENV_KEYS <= set((doc := json.loads(path.read_text()))["environment"])
    assert doc["op"] == "gelu" and doc["t"]["median_ms"] == 1.0 and doc["bad"] is None
    assert doc["dtype"] == "torch.float16" and doc["x"] == 2.0
    before = path.read_text()
    monkeypatch.setattr(report.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError("full")))
    with pytest.raises(OSError):
        write_json(path, {"op": "other"})
    assert path.read_text() == before  # old file intact
    assert sorted(p.name for p in path.parent.iterdir()) == ["res.json"]  # temp removed


def test_render_table():
    rows = [{"rung": "naive", "us": 12.3456, "gbs": 1000.0}, {"rung": "fast", "us": 3.2}]
    table = render_table(rows, [("rung", "rung", None), ("us", "time (us)", ".2f"),
                                ("gbs", "GB/s", lambda v: f"{v:.0f}!")], title="gelu")
    assert table.row_count == 2 and [c.header for c in table.columns] == ["rung", "time (us)", "GB/s"]
    Console(file=(buf := io.StringIO()), width=100).print(table)
    text = buf.getvalue()
    assert "12.35" in text and "1000!" in text and "gelu" in text
    assert "-" in next(line for line in text.splitlines() if "fast" in line)  # missing value


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
@needs_cuda
def test_time_cuda_real_op():
    x = torch.randn(1 << 22, device="cuda")
    t = timing.time_cuda(lambda: torch.nn.functional.gelu(x), working_set_bytes=8 * x.numel())
    assert t.median_ms > 0 and t.reps >= 10 and t.min_ms <= t.median_ms <= t.p80_ms


@pytest.mark.gpu
@needs_cuda
def test_copy_bandwidth_large(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    assert copy_bandwidth(None) > 100.0 and ceilings.cache_path().is_file()


@pytest.mark.gpu
@needs_cuda
def test_run_ladder_pairs_every_rung_with_torch():
    """Every timed rung carries a vs_torch from its own interleaved run; the torch row is the run
    beside the default rung, so the default rung's vs_torch equals the two rows' time ratio."""
    import kernelkit
    from kernelkit.bench.ladder_run import run_ladder

    res = run_ladder("relu", (4097,), torch.float32, with_compile=False, max_seconds=0.02)
    rows = {r["name"]: r for r in res["rows"]}
    timed = [r for r in res["rows"] if r["name"] != "torch eager" and r["median_us"]]
    assert {r["name"] for r in timed} == {v.name for v in kernelkit.ladder("relu") if torch.float32 in v.dtypes}
    assert all(r["vs_torch"] > 0 for r in timed)
    fast, eager = rows["fast"], rows["torch eager"]
    assert fast["vs_torch"] == pytest.approx(eager["median_us"] / fast["median_us"])
    # the same-bytes copy timed in the same loop: every timed rung and the torch row carry its ratio, and the
    # torch row's is the default rung's run's (the same copy median divided by each one's own time)
    assert all(r["pct_copy_paired"] > 0 for r in timed + [eager])
    assert eager["pct_copy_paired"] / fast["pct_copy_paired"] == pytest.approx(fast["median_us"] / eager["median_us"])


def test_reduction_check_is_relative_to_the_magnitudes_summed():
    """The ladder check of a sum judges it against sum |x| (fp32 accumulation error), not against its
    own value: 2^28 random values sum to near zero and a result-relative tolerance failed every rung
    (torch's fp32 sum too). Here an fp32-sized error on a near-zero sum passes, a large one fails."""
    from kernelkit.reference import mismatches
    from kernelkit.reference.reduction import accumulation_magnitude, reduction_mismatches

    x = torch.tensor([1e6, -1e6, 0.5], dtype=torch.float64)
    ref = x.sum()
    mag = accumulation_magnitude("sum", x)
    assert float(mag) == 2e6 + 0.5
    assert float(accumulation_magnitude("mean", x)) == (2e6 + 0.5) / 3
    assert float(accumulation_magnitude("amax", x)) == 0.0
    assert reduction_mismatches(ref + 0.25, ref, mag, torch.float32).numel() == 0  # 1.25e-7 of the magnitude
    assert reduction_mismatches(ref + 50.0, ref, mag, torch.float32).numel() == 1
    assert mismatches((ref + 0.25).reshape(1), ref.reshape(1), torch.float32).numel() == 1


def test_same_bytes_copy_clones_a_row_ops_own_input():
    """The copy timed in turn with every rung reads the rung's own input where the op moves twice its first
    tensor's bytes (the row ops: weight and bias add well under 1%), rotation by rotation."""
    from kernelkit.bench.ladder_run import _same_bytes_copy

    xs = [torch.randn(256, 1024) for _ in range(2)]
    w = torch.randn(1024)
    nbytes = 2 * xs[0].numel() * 4 + 2 * w.numel() * 4
    copy = _same_bytes_copy([((x, (1024,), w, w), {}) for x in xs], nbytes)
    for i in range(4):
        got = copy(i)
        assert torch.equal(got, xs[i % 2]) and got.data_ptr() != xs[i % 2].data_ptr()
