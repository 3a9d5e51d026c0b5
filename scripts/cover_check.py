"""Does the GPU spin before each timed call (bench.timing's cover_host) change what a call of
kernelkit.layer_norm / rms_norm / a same-bytes copy measures? Each timed with and without it, in turn,
three times, on 4096 x 4096 fp16 (or the shapes given).

    python scripts/cover_check.py [4096x4096 ...]
"""
import sys

import torch

import kernelkit
from kernelkit.bench import time_interleaved
from rowbench import device_line

print(device_line())
for shape in sys.argv[1:] or ["4096x4096"]:
    rows, len_ = map(int, shape.split("x"))
    xs = [torch.randn(rows, len_, device="cuda", dtype=torch.float16) for _ in range(4)]
    w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
    out = torch.empty_like(xs[0])
    fns = {"layer_norm": lambda i: kernelkit.layer_norm(xs[i % 4], (len_,), w, b, out=out),
           "rms_norm": lambda i: kernelkit.rms_norm(xs[i % 4], (len_,), w, out=out),
           "copy": lambda i: out.copy_(xs[i % 4])}
    for attempt in range(3):
        for cover in (True, False):
            t = time_interleaved(list(fns.values()), reps=300, warmup=5, flush_l2=True, max_seconds=10,
                                 cover_host=cover)
            print(f"{shape} cover={cover!s:5}: " + "  ".join(f"{k} {x.median_us:6.2f} us" for k, x in zip(fns, t))
                  + f"  (layer_norm {t[2].median_us / t[0].median_us:.1%}, rms_norm {t[2].median_us / t[1].median_us:.1%} of copy)")
