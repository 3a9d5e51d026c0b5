"""fp16 rms_norm on 4096-element rows: the staged persistent form (norm.STAGED_RMS_ROWS) against the early
weight reads a CTA a row (its default before session 17), each launched twice in the same interleaved
loop with a same-bytes copy, so the spread between identical launches shows beside the difference.

    python scripts/staged_rms_ab.py [--shapes 2048x4096,4096x4096,8192x4096] [--reps 300]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from kernelkit.bench import time_interleaved
from kernelkit.ops import norm
from kernelkit.ops._rowwise import launch_persistent, row_name
from kernelkit.runtime import get_kernel, launch
from rowbench import device_line, report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="2048x4096,4096x4096,8192x4096")
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    print(device_line())
    cfg, dtype = (128, 4, 1), torch.float16
    staged = get_kernel("norm.cu", norm._staged_name(dtype, cfg), device_index=0)
    early = get_kernel("norm.cu", row_name("norm_rows", dtype, cfg, True, False), device_index=0)
    for shape in a.shapes.split(","):
        rows, len_ = map(int, shape.split("x"))
        x = torch.randn(rows, len_, device="cuda", dtype=dtype)
        w = torch.randn(len_, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        args = (x.data_ptr(), out.data_ptr(), w.data_ptr(), 0, rows, len_, np.float32(1e-5), np.int32(1))
        ref = torch.nn.functional.rms_norm(x.float(), (len_,), w.float(), 1e-5)
        run_staged = lambda: launch_persistent(staged, rows, cfg[0], 1, norm._staged_shared(cfg), *args, dev=0)  # noqa: E731
        run_early = lambda: launch(early, rows, cfg[0], *args, device_index=0)  # noqa: E731
        for fn in (run_staged, run_early):
            out.fill_(float("nan"))
            fn()
            assert (out.float() - ref).abs().max().item() < 2e-2
        fns = [run_staged, run_early, run_staged, run_early, lambda: out.copy_(x)]
        labels = ["staged (a)", "early reads (a)", "staged (b)", "early reads (b)", "copy"]
        times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
        report(f"rms_norm float16 {shape}:", labels, times, 2 * x.numel() * x.element_size(), width=18,
               spread=True)


if __name__ == "__main__":
    main()
