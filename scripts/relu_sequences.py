"""Is torch's small lead on 16-bit ReLU at 2^28 a property of the kernels or of the pairing?

Each kernel timed three ways, in the same process: in a sequence of its own calls only (time_cuda: every
call follows a call of the same kernel), and in turn with the other (time_interleaved: every call follows
the other kernel, as the ladder's paired runs do), ours first and torch first. If the lone sequences tie
while the pairs do not, what separates them is what one kernel leaves behind for the next (dirty lines
in L2, the next grid's start), not either kernel's own rate.

    KK_OP=relu KK_SIZE=268435456 KK_DTYPES=float16,bfloat16 KK_TRIES=3 python scripts/relu_sequences.py
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
OURS = {"relu": kernelkit.relu, "gelu": lambda x: kernelkit.gelu(x, approximate="tanh")}[OP]
THEIRS = {"relu": torch.relu, "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}[OP]

print(device_line())
for dtype in DTYPES:
    x = torch.randn(N, device="cuda", dtype=dtype)
    nbytes = 2 * N * x.element_size()

    def gbs(t) -> float:
        return nbytes / t.seconds / 1e9

    for t in range(TRIES):
        alone_ours = time_cuda(lambda: OURS(x), working_set_bytes=nbytes, max_seconds=3)
        alone_torch = time_cuda(lambda: THEIRS(x), working_set_bytes=nbytes, max_seconds=3)
        a, b = time_interleaved([lambda: OURS(x), lambda: THEIRS(x)], working_set_bytes=nbytes, max_seconds=3)
        print(f"{OP} {str(dtype)[6:]} n={N} try {t}: alone ours {gbs(alone_ours):.0f} torch {gbs(alone_torch):.0f} GB/s "
              f"({alone_torch.median_ms / alone_ours.median_ms:.4f}x); paired ours {gbs(a):.0f} torch {gbs(b):.0f} "
              f"({b.median_ms / a.median_ms:.4f}x)")
