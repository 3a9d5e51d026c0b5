"""The Hopper rungs with B n-major (a row-major (K, N) tensor) against B k-major (``w.t()``, linear's
weight), beside cuBLAS on the same data, and linear with a bias and GELU: that both layouts run alike
(a k-major B once paid a hidden per-call transpose: docs/design/matmul.md, "B layout"), under three
timing methods.

    python benchmarks/matmul_layouts.py [--shapes 16384x14336x4096,4096x4096x4096] [--seconds 2] [--clocks]
        [--out FILE.json]

Per shape, interleaved in one process (time_interleaved, shuffled, medians): torch.matmul with either
layout, F.linear with a bias, kernelkit.matmul on tma_wgmma and ws with either layout, and
kernelkit.linear without and with bias and GELU. Then, for each layout, the same call 20 times back to
back and 20 times inside a CUDA graph (no timing harness, no host gaps). ``--clocks``: also the SM clock
and board power nvidia-smi reads (a query only, every 50 ms) while each of those calls runs alone for
about a second, to see whether one layout runs at a lower clock. Writes JSON (device, numbers).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench.report import environment
from kernelkit.bench.timing import time_interleaved


def cases(x, w, wt, b, out):
    return {
        "torch matmul n-major": lambda: torch.matmul(x, wt, out=out),
        "torch matmul k-major": lambda: torch.matmul(x, w.t(), out=out),
        "torch F.linear bias": lambda: F.linear(x, w, b),
        "kk matmul n-major tma_wgmma": lambda: kernelkit.matmul(x, wt, out=out),
        "kk matmul k-major tma_wgmma": lambda: kernelkit.matmul(x, w.t(), out=out),
        "kk matmul n-major ws": lambda: kernelkit.matmul(x, wt, out=out, variant="ws"),
        "kk matmul k-major ws": lambda: kernelkit.matmul(x, w.t(), out=out, variant="ws"),
        "kk linear": lambda: kernelkit.linear(x, w, out=out),
        "kk linear bias": lambda: kernelkit.linear(x, w, b, out=out),
        "kk linear bias gelu": lambda: kernelkit.linear(x, w, b, activation="gelu", out=out),
    }


def graph_us(fn, n: int = 20) -> tuple[float, float]:
    """(back to back, CUDA graph) microseconds a call, n calls each."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    torch.cuda.synchronize()
    back = s.elapsed_time(e) / n * 1e3
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    s.record()
    g.replay()
    e.record()
    torch.cuda.synchronize()
    return back, s.elapsed_time(e) / n * 1e3


def clocks_during(fn, seconds: float = 1.0) -> dict:
    """Median SM clock (MHz) and power (W) that nvidia-smi samples every 50 ms while fn runs in a loop."""
    query = ["nvidia-smi", f"--id={torch.cuda.current_device()}", "--query-gpu=clocks.sm,power.draw",
             "--format=csv,noheader,nounits", "-lms", "50"]
    try:
        smi = subprocess.Popen(query, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except FileNotFoundError:
        return {}
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    smi.terminate()
    lines = smi.communicate()[0].splitlines()[2:]  # the first samples may predate the loop
    pairs = []
    for ln in lines:
        try:
            clock, power = (float(v) for v in ln.split(","))
        except ValueError:  # "[N/A]" or a torn line
            continue
        pairs.append((clock, power))
    if not pairs:
        return {}
    return {"sm_mhz": statistics.median(p[0] for p in pairs), "power_w": statistics.median(p[1] for p in pairs),
            "samples": len(pairs)}


def run(m: int, n: int, k: int, seconds: float, clocks: bool = False) -> list[dict]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    wt = w.t().contiguous()
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    c = cases(x, w, wt, b, out)
    for fn in c.values():
        fn()
    torch.cuda.synchronize()
    times = time_interleaved(list(c.values()), warmup=3, reps=40, max_seconds=seconds, shuffle=True)
    rows = []
    for name, t in zip(c, times):
        rows.append({"shape": [m, n, k], "case": name, "how": "interleaved", "us": t.median_ms * 1e3,
                     "tflops": 2 * m * n * k / t.median_ms / 1e9})
    for name in ("torch matmul k-major", "kk matmul n-major tma_wgmma", "kk matmul k-major tma_wgmma"):
        back, graph = graph_us(c[name])
        rows += [{"shape": [m, n, k], "case": name, "how": how, "us": us, "tflops": 2 * m * n * k / us / 1e6}
                 for how, us in (("back to back", back), ("graph", graph))]
        if clocks:
            rows[-1]["while_looping"] = clocks_during(c[name])
    for r in rows:
        seen = r.get("while_looping")
        extra = f"  {seen['sm_mhz']:.0f} MHz {seen['power_w']:.0f} W" if seen else ""
        print(f"{m}x{n}x{k} {r['case']:28s} {r['how']:12s} {r['us']:9.1f} us {r['tflops']:6.0f} TFLOP/s{extra}",
              flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="16384x14336x4096,4096x4096x4096")
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--clocks", action="store_true", help="sample the SM clock and power while each layout loops")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    rows = []
    for s in args.shapes.split(","):
        m, n, k = (int(v) for v in s.split("x"))
        rows += run(m, n, k, args.seconds, args.clocks)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"environment": environment(), "command": "python benchmarks/matmul_layouts.py", "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
