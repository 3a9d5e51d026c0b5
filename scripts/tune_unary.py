"""The fast unary rung's launch shape for gelu or relu on one GPU: candidate launches (block x blocks an
SM), kernelkit's own rule and torch, timed interleaved, plus a misaligned input.

    KK_OP=gelu|relu KK_DTYPES=float16,bfloat16,float32 KK_SIZES=268435456,16777216 \
        KK_CANDIDATES=512:0,128:11,128:12,128:13,128:14 KK_TRIES=2 python scripts/tune_unary.py

Defaults: KK_OP=gelu, KK_DTYPES=float32,float16, KK_SIZES=268435456, KK_TRIES=1,
KK_CANDIDATES=128:0,256:0,512:0,128:12,128:13,128:14. A candidate ``block:blocks_per_sm`` (0: as many
as fit) is an ``ElementwiseLaunch`` passed to the op's ``config=``; "kernelkit (rule)" is the op's own
choice (``_unary.FAST``: 256-thread blocks; from 128 MiB of input ``_unary.FAST_LARGE``: 128-thread
blocks at most 13 an SM), the constants this script tunes. Every call allocates its output, as torch's
does, so that the allocator places both alike. Findings: docs/design/elementwise.md.
"""
import os

import torch

import kernelkit
from kernelkit.bench import copy_bandwidth, time_cuda, time_interleaved
from kernelkit.ops.elementwise import ElementwiseLaunch

OP = os.environ.get("KK_OP", "gelu")
SIZES = [int(v) for v in os.environ.get("KK_SIZES", str(1 << 28)).split(",")]
DTYPES = [getattr(torch, d) for d in os.environ.get("KK_DTYPES", "float32,float16").split(",")]
CANDIDATES = [ElementwiseLaunch(int(b), int(c)) for b, c in (item.split(":") for item in os.environ.get(
    "KK_CANDIDATES", "128:0,256:0,512:0,128:12,128:13,128:14").split(","))]
TRIES = int(os.environ.get("KK_TRIES", "1"))
OURS = {"gelu": lambda x, **kw: kernelkit.gelu(x, approximate="tanh", **kw), "relu": kernelkit.relu}[OP]
THEIRS = {"gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "relu": torch.relu}[OP]
COPIES = 4  # inputs rotated through, so that no call finds its input in L2


def main() -> None:
    props = torch.cuda.get_device_properties(0)
    print(f"device {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
          f"copy {copy_bandwidth(None):.0f} GB/s")
    for n in SIZES:
        for dtype in DTYPES:
            xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(COPIES)]
            nbytes = 2 * n * xs[0].element_size()
            fns = {f"torch {OP}": lambda i: THEIRS(xs[i % COPIES]), "kernelkit (rule)": lambda i: OURS(xs[i % COPIES])}
            for cfg in CANDIDATES:
                try:
                    OURS(xs[0], config=cfg)
                except ValueError as exc:  # a residency this device cannot give
                    print(f"  skipped {cfg}: {exc}")
                    continue
                fns[f"block {cfg.block} x {cfg.blocks_per_sm or 'all'} an SM"] = \
                    lambda i, c=cfg: OURS(xs[i % COPIES], config=c)
            for t in range(TRIES):
                times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=300, max_seconds=4.0)
                print(f"{OP} {str(dtype)[6:]} n={n} try {t} ({times[0].reps} rounds):")
                for name, tm in sorted(zip(fns, times), key=lambda r: r[1].median_ms):
                    print(f"  {nbytes / tm.seconds / 1e9:7.1f} GB/s  {times[0].median_ms / tm.median_ms:.4f}x torch  "
                          f"{name}")
            # the misaligned-input path: x[1:] into an aligned out (element loads of x)
            xm = xs[0][1:]
            om = torch.empty_like(xm)
            t = time_cuda(lambda: OURS(xm, out=om), working_set_bytes=nbytes, max_seconds=0.5)
            print(f"  {2 * xm.numel() * xm.element_size() / t.seconds / 1e9:7.1f} GB/s  misaligned input "
                  "(x[1:] -> aligned out)", flush=True)
            del xs, xm, om


if __name__ == "__main__":
    main()
