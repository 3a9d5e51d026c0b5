"""Host cost of a call and first-call cost of every op, against torch's eager call.

    PYTHONPATH=src python benchmarks/overhead.py [--out benchmarks/results/overhead-<device>.json]
                                                 [--ops gelu softmax ...] [--no-first-call]

Host latency: each op of SMALL on a small tensor, wall time per call over many calls, torch's call
and ours interleaved round by round, medians. The GPU finishes each small kernel long before the host
issues the next, so the wall time per call is the host's cost of a call. Run `kernelkit warmup` first:
it also builds the torch bridge through which the plain calls read their tensors (the JSON records
whether it was loaded).

First call: in a fresh process with an empty kernel cache, the time of the op's first call
(compiling and loading its kernel included) after the input exists and CUDA is initialised; the
second call beside it. ``kernelkit warmup`` builds every kernel ahead of time instead.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

# Small inputs, one per op: (shape, dtype name). The rest of each op's arguments come from its
# benchmark example, so the torch call is the op's own baseline (Op.torch_fn).
SMALL = {
    "gelu": ((4096,), "float32"), "relu": ((4096,), "float32"), "add": ((4096,), "float32"),
    "saxpy": ((4096,), "float32"), "softmax": ((32, 128), "float32"),
    "layer_norm": ((1, 4096), "float32"), "rms_norm": ((1, 4096), "float32"),
    "transpose": ((64, 64), "float32"), "permute": ((2, 16, 8, 8), "float32"),
    "sum": ((4096,), "float32"), "mean": ((4096,), "float32"), "amax": ((4096,), "float32"),
    "amin": ((4096,), "float32"), "invert_colors": ((32, 32, 4), "uint8"), "binarize": ((64, 64), "uint8"),
    "normalize_image": ((32, 32, 3), "uint8"), "matmul": ((64, 64, 64), "bfloat16"),
    "linear": ((16, 64, 64), "bfloat16"),
}
# First call only (their host latency is not compared): small inputs of the matrix and window ops.
FIRST_ONLY = {
    "filter2d": ((64, 64), "float32"), "gaussian_blur": ((64, 64), "float32"), "box_filter": ((64, 64), "float32"),
    "sobel": ((64, 64), "float32"), "median_blur": ((64, 64), "float32"), "max_pool2d": ((1, 4, 32, 32), "float32"),
    "avg_pool2d": ((1, 4, 32, 32), "float32"), "conv2d": ((2, 8, 16, 16), "float16"),
}


def _args(name: str):
    import kernelkit

    op = kernelkit.get_op(name)
    shape, dt = SMALL.get(name) or FIRST_ONLY.get(name) or (op.bench_shapes[0], "float32")
    torch.manual_seed(0)
    args, kwargs = op.example(shape, getattr(torch, dt))
    return op, args, kwargs


def per_call_us(fns: dict, calls: int = 2000, rounds: int = 9) -> dict[str, float]:
    """Median wall time per call of each function, the functions interleaved round by round."""
    for fn in fns.values():
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            samples[k].append((time.perf_counter() - t0) / calls * 1e6)
    return {k: statistics.median(v) for k, v in samples.items()}


def host_latency(names) -> list[dict]:
    rows = []
    for name in names:
        op, args, kwargs = _args(name)
        got = per_call_us({"torch": lambda: op.torch_fn(*args, **kwargs),
                           "kernelkit": lambda: op.call(*args, **kwargs)})
        shape, dt = SMALL.get(name, ("?", "?"))
        rows.append({"op": name, "shape": list(shape), "dtype": dt, "torch_us": round(got["torch"], 2),
                     "kernelkit_us": round(got["kernelkit"], 2),
                     "ratio": round(got["kernelkit"] / got["torch"], 3)})
        print(f"{name:16s} torch {got['torch']:6.2f} us  kernelkit {got['kernelkit']:6.2f} us  "
              f"x{got['kernelkit'] / got['torch']:.2f}", flush=True)
    return rows


_FIRST_CALL = """
import json, sys, time
t0 = time.perf_counter()
import torch, kernelkit
t1 = time.perf_counter()
sys.path.insert(0, {here!r})
from overhead import _args
op, args, kwargs = _args({name!r})
torch.cuda.synchronize()
t2 = time.perf_counter()
op.call(*args, **kwargs); torch.cuda.synchronize()
t3 = time.perf_counter()
op.call(*args, **kwargs); torch.cuda.synchronize()
t4 = time.perf_counter()
from kernelkit.runtime.compiler import nvrtc_runs
print(json.dumps({{"import_s": t1 - t0, "first_call_s": t3 - t2, "second_call_s": t4 - t3,
                  "nvrtc_builds": nvrtc_runs[0], "nvrtc_s": nvrtc_runs[1]}}))
"""


def first_calls(names) -> list[dict]:
    rows = []
    here = os.path.dirname(os.path.abspath(__file__))
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, KERNELKIT_CACHE_DIR=cache)
            res = subprocess.run([sys.executable, "-c", _FIRST_CALL.format(here=here, name=name)], env=env,
                                 capture_output=True, text=True, timeout=600)
        if res.returncode:
            rows.append({"op": name, "error": res.stderr[-2000:]})
            print(f"{name:16s} FAILED: {res.stderr[-500:]}", flush=True)
            continue
        got = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append({"op": name, **{k: round(v, 4) for k, v in got.items()}})
        print(f"{name:16s} first call {got['first_call_s']:.3f} s (cold cache; NVRTC {got['nvrtc_builds']} builds "
              f"{got['nvrtc_s']:.3f} s), second {got['second_call_s'] * 1e3:.2f} ms",
              flush=True)
    return rows


def _bridge_loaded() -> bool:
    """Whether the plain calls timed here read tensors through the torch bridge (`kernelkit warmup` builds it)."""
    from kernelkit.runtime import lanes

    return lanes.new_like is not torch.empty_like


def main(argv=None) -> int:
    import kernelkit
    from kernelkit.bench.report import environment, write_json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--ops", nargs="*", default=None)
    p.add_argument("--no-first-call", action="store_true")
    a = p.parse_args(argv)
    names = a.ops or kernelkit.ops()
    latency = host_latency([n for n in names if n in SMALL])
    first = [] if a.no_first_call else first_calls(names)
    if a.out:
        write_json(a.out, {
            "what": "host time per call on a small input (interleaved with torch's eager call, medians) and the "
                    "first call's time in a fresh process with an empty kernel cache",
            "command": "PYTHONPATH=src python benchmarks/overhead.py --out " + a.out,
            "environment": environment(),
            "torch_bridge": _bridge_loaded(),
            "host_latency": latency,
            "first_call": first,
        })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
