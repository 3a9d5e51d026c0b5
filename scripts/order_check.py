"""Does the order of a paired run move the comparison? kernelkit's fast rung and torch timed in turn
(time_interleaved, as the ladder's paired runs do) with ours first, then with torch first, several
times each, at one size: if the ratio follows the order, the paired runs carry an order bias.

    KK_OP=relu KK_SIZE=268435456 KK_DTYPES=float16,bfloat16 KK_TRIES=3 python scripts/order_check.py

KK_ALONE=1 also times each kernel in a sequence of its own calls only (time_cuda: every call follows one
of the same kernel): if the lone sequences differ as the pairs do, the gap is the kernels' own rate, not
what one leaves behind for the other (session 15, results/session15/relu-seq.txt).
"""
import os

import torch

import kernelkit
from kernelkit.bench import time_cuda, time_interleaved
from rowbench import device_line

OP = os.environ.get("KK_OP", "relu")
N = int(os.environ.get("KK_SIZE", str(1 << 28)))
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float16,bfloat16").split(",")]
TRIES = int(os.environ.get("KK_TRIES", "3"))
ALONE = os.environ.get("KK_ALONE", "0") == "1"
OURS = {"relu": kernelkit.relu, "gelu": lambda x: kernelkit.gelu(x, approximate="tanh")}[OP]
THEIRS = {"relu": torch.relu, "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}[OP]

print(device_line())
for dtype in DTYPES:
    x = torch.randn(N, device="cuda", dtype=dtype)
    nbytes = 2 * N * x.element_size()
    for t in range(TRIES):
        a, b = time_interleaved([lambda: OURS(x), lambda: THEIRS(x)], working_set_bytes=nbytes, max_seconds=4)
        c, d = time_interleaved([lambda: THEIRS(x), lambda: OURS(x)], working_set_bytes=nbytes, max_seconds=4)
        print(f"{OP} {dtype} n={N} try {t}: ours first {nbytes / a.seconds / 1e9:.0f} vs {nbytes / b.seconds / 1e9:.0f} GB/s"
              f" ({b.median_ms / a.median_ms:.4f}x torch); torch first {nbytes / d.seconds / 1e9:.0f} vs "
              f"{nbytes / c.seconds / 1e9:.0f} ({c.median_ms / d.median_ms:.4f}x)")
        if ALONE:
            e = time_cuda(lambda: OURS(x), working_set_bytes=nbytes, max_seconds=3)
            f = time_cuda(lambda: THEIRS(x), working_set_bytes=nbytes, max_seconds=3)
            print(f"  alone: ours {nbytes / e.seconds / 1e9:.0f} torch {nbytes / f.seconds / 1e9:.0f} GB/s "
                  f"({f.median_ms / e.median_ms:.4f}x torch)")
