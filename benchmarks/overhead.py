"""Host overhead of one call on a small tensor: kernelkit.gelu against torch's own gelu.

    python benchmarks/overhead.py [--out benchmarks/results/overhead.json]

Both launch asynchronously; on a 4096-element tensor the GPU finishes each kernel long before the
host issues the next, so wall time per call over many calls is the host cost of a call.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import kernelkit
from kernelkit.bench.report import write_json


def per_call_us(fn, calls: int = 2000, rounds: int = 7) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    x = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    rows = {
        "torch.nn.functional.gelu(x, approximate='tanh')": per_call_us(
            lambda: torch.nn.functional.gelu(x, approximate="tanh")),
        "torch.nn.functional.relu(x)": per_call_us(lambda: torch.relu(x)),
        "kernelkit.gelu(x)": per_call_us(lambda: kernelkit.gelu(x)),
        "kernelkit.gelu(x, out=out)": per_call_us(lambda: kernelkit.gelu(x, out=out)),
    }
    for k, v in rows.items():
        print(f"{v:7.2f} us/call  {k}")
    if a.out:
        write_json(a.out, {"what": "host time per call, 4096-element float32 tensor", "us_per_call": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
