"""Same-bytes copies of one shape timed in turn: the recorder's (a uint8 source of the op's bytes / 2, cloned), the
op's own input cloned (its output from the caching allocator, as the op's is), and the input copied into a buffer
allocated right after it (the A/B scripts'), beside kernelkit.layer_norm.

    python scripts/copy_forms.py [--shape 1024x65536] [--dtype float32] [--reps 200]

Session 20: at 1024 x 65536 fp32 the recorder's copy ran 2975 GB/s, the A/B scripts' 3060.
"""
from __future__ import annotations

import argparse

import torch

import kernelkit
from kernelkit.bench import time_interleaved
from rowbench import device_line, report, row_dims, shape_args


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float32")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    nbytes = 2 * x.numel() * x.element_size() + w.numel() * w.element_size() * 2
    source = torch.randint(0, 256, (nbytes // 2,), dtype=torch.uint8, device="cuda")
    fns = [("kernelkit.layer_norm (new output)", lambda: kernelkit.layer_norm(x, (len_,), w, b)),
           ("recorder's copy: uint8 clone", lambda: source.clone()),
           ("input cloned", lambda: x.clone()),
           ("input into the buffer after it", lambda: out.copy_(x))]
    times = time_interleaved([f for _, f in fns], reps=a.reps, warmup=5, flush_l2=True, max_seconds=20, shuffle=True)
    report(f"{a.dtype} {a.shape}:", [n for n, _ in fns], times, nbytes, against="input into the buffer after it",
           width=34)


if __name__ == "__main__":
    main()
