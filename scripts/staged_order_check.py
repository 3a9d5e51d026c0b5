"""Does the position in an interleaved round, or the way the staged one-CTA norm kernel is launched, move its
time? The same kernel (STAGED_ROWS, 4096-element fp16 rows) called through kernelkit, launched raw from
kernelkit's own plan, and launched raw from a separate single-name build, beside a same-bytes copy, in two
orders.

    python scripts/staged_order_check.py [--shape 4096x4096] [--reps 300]
"""
from __future__ import annotations

import argparse
import importlib

import numpy as np
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from kernelkit.ops._rowwise import allow_shared, launch_persistent, resident_blocks
from rowbench import device_line, norm_call, report, row_inputs, shape_args

norm = importlib.import_module("kernelkit.ops.norm")


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="4096x4096", dtype="float16")
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    print(device_line())
    r = row_inputs(a)
    rows, len_, dtype, x, w, out, nbytes = r.rows, r.len_, r.dtype, r.x, r.w, r.out, r.nbytes
    for op in ("layer_norm", "rms_norm"):
        rms = op == "rms_norm"
        bt = None if rms else r.b
        call = norm_call(op, len_, w, bt)
        api = lambda: call(x, out)  # noqa: E731
        api()
        # kernelkit's own plan for this call (the only plan made so far for this dtype, length and op)
        kernel, cfg = next(v for k, v in norm._plans.items() if k[1] == dtype and k[3] == len_ and k[5] == rms)
        print(op, "plan", cfg, kernel)
        shmem = norm._staged_shared(cfg)
        args = (x.data_ptr(), out.data_ptr(), w.data_ptr(), 0 if bt is None else bt.data_ptr(), rows, len_,
                np.float32(1e-5), np.int32(rms))
        own = lambda: launch_persistent(kernel, rows, cfg[0], 1, shmem, *args, dev=0)  # noqa: E731
        single = get_kernel("norm.cu", norm._staged_name(dtype, cfg), device_index=0)
        allow_shared(single, shmem, 0)
        grid = min(rows, resident_blocks(single, cfg[0], 1, 0, shmem))
        sep = lambda: launch(single, grid, cfg[0], *args, shmem=shmem, device_index=0)  # noqa: E731
        copy = lambda: out.copy_(x)  # noqa: E731
        fns = [("kernelkit." + op, api), ("own kernel raw", own), ("single-name build raw", sep), ("copy", copy)]
        for order in (fns, fns[::-1], fns[1:] + fns[:1]):
            times = time_interleaved([f for _, f in order], reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
            report(f"{op} {a.dtype} {a.shape}:", [n for n, _ in order], times, nbytes, width=32)


if __name__ == "__main__":
    main()
