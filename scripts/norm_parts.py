"""Where 4096-element fp16 layer_norm rows lose against rms_norm (81% vs 96% of a same-bytes copy after
the session-12 flush change): the same kernel timed in turn with weight and bias, weight only and
neither, against rms_norm with its weight, torch and a copy (interleaved rounds, 4 input copies).

    python scripts/norm_parts.py [--shape 4096x4096] [--dtype float16]
"""
import argparse

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved

ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="4096x4096")
ap.add_argument("--dtype", default="float16")
a = ap.parse_args()
rows, n = map(int, a.shape.split("x"))
dtype = getattr(torch, a.dtype)
xs = [torch.randn(rows, n, device="cuda", dtype=dtype) for _ in range(4)]
w, b = torch.randn(2, n, device="cuda", dtype=dtype)
out = torch.empty_like(xs[0])
fns = {
    "layer_norm w+b": lambda i: kernelkit.layer_norm(xs[i % 4], (n,), w, b, out=out),
    "layer_norm w": lambda i: kernelkit.layer_norm(xs[i % 4], (n,), w, None, out=out),
    "layer_norm none": lambda i: kernelkit.layer_norm(xs[i % 4], (n,), None, None, out=out),
    "rms_norm w": lambda i: kernelkit.rms_norm(xs[i % 4], (n,), w, out=out),
    "rms_norm none": lambda i: kernelkit.rms_norm(xs[i % 4], (n,), None, out=out),
    "torch layer_norm w+b": lambda i: F.layer_norm(xs[i % 4], (n,), w, b),
    "copy": lambda i: out.copy_(xs[i % 4]),
}
nbytes = 2 * rows * n * xs[0].element_size()
times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=500, max_seconds=20)
for (name, _), t in zip(fns.items(), times):
    print(f"{name:22s} {t.median_us:7.2f} us {nbytes / t.seconds / 1e9:6.0f} GB/s")
