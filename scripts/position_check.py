"""Identical calls timed interleaved: does a call's position in the round move its median? Three calls of
kernelkit's layer_norm (or --op) and two same-bytes copies, one input and output, timed in a fixed order
and with the order shuffled every round (time_interleaved(shuffle=True)), --tries times each.

    python scripts/position_check.py [--shape 4096x4096] [--dtype float16] [--op layer_norm] [--tries 2]
"""
from __future__ import annotations

import argparse

from kernelkit.bench import time_interleaved
from rowbench import device_line, norm_call, report, row_inputs, shape_args


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="4096x4096", dtype="float16")
    ap.add_argument("--op", default="layer_norm", choices=("layer_norm", "rms_norm", "softmax"))
    ap.add_argument("--tries", type=int, default=2)
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    print(device_line())
    r = row_inputs(a)
    x, out, nbytes = r.x, r.out, r.nbytes
    call = norm_call(a.op, r.len_, r.w, r.b)
    op = lambda: call(x, out)  # noqa: E731
    fns = [op, op, op, lambda: out.copy_(x), lambda: out.copy_(x)]
    labels = [f"{a.op} #1", f"{a.op} #2", f"{a.op} #3", "copy", "copy #2"]
    for shuffle in (False, True) * a.tries:
        times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=30, shuffle=shuffle)
        meds = [t.median_us for t in times]
        report(f"{a.op} {a.dtype} {a.shape}, {'shuffled' if shuffle else 'fixed order'} "
               f"(spread of the op's medians {max(meds[:3]) - min(meds[:3]):.2f} us, copies' "
               f"{abs(meds[3] - meds[4]):.2f} us):", labels, times, nbytes, width=16)


if __name__ == "__main__":
    main()
