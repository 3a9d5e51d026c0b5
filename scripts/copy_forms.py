"""Why two harnesses gave one kernel two ratios to a copy: the same bytes copied three ways, and the kernel beside
different neighbours, each loop timed in turn and shuffled, on one input.

    python scripts/copy_forms.py [--shape 1024x65536] [--dtype float32] [--reps 200] [--part copies,neighbours]

copies: kernelkit.layer_norm beside the recorder's former copy (a uint8 source of the op's bytes / 2, cloned), the
op's own input cloned (its output from the caching allocator, as the op's is; the recorder's copy since), and the
input copied into a buffer allocated right after it (the A/B scripts'). neighbours: kernelkit.layer_norm and that
last copy alone, beside torch's layer_norm (as benchmarks/record.py times it), and beside kernelkit's rms_norm and
softmax (as the A/B scripts do). Session 20: at 1024 x 65536 fp32 the recorder read 94.4-94.9% where the A/B
loops read 92.3-92.8% for the same kernel (results/session20/copy-forms*.txt, neighbour-check.txt).
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from rowbench import device_line, report, row_dims, shape_args

LINE = "input into the buffer after it"


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float32")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--part", default="copies", help="copies, neighbours or both (comma-separated)")
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    nbytes = 2 * x.numel() * x.element_size() + 2 * w.numel() * w.element_size()
    mine = ("kernelkit.layer_norm", lambda: kernelkit.layer_norm(x, (len_,), w, b))
    after = (LINE, lambda: out.copy_(x))
    loops = {}
    if "copies" in a.part:
        source = torch.randint(0, 256, (nbytes // 2,), dtype=torch.uint8, device="cuda")
        loops["copied three ways"] = [mine, ("uint8 source cloned", lambda: source.clone()),
                                      ("input cloned", lambda: x.clone()), after]
    if "neighbours" in a.part:
        loops["alone with the copy"] = [mine, after]
        loops["beside torch's layer_norm"] = [mine, ("torch layer_norm", lambda: F.layer_norm(x, (len_,), w, b)), after]
        loops["beside kernelkit's rms_norm and softmax"] = [
            mine, ("kernelkit.rms_norm", lambda: kernelkit.rms_norm(x, (len_,), w, out=out)),
            ("kernelkit.softmax", lambda: kernelkit.softmax(x, -1, out=out)), after]
    for title, fns in loops.items():
        times = time_interleaved([f for _, f in fns], reps=a.reps, warmup=5, flush_l2=True, max_seconds=20, shuffle=True)
        report(f"{a.dtype} {a.shape}, {title}:", [n for n, _ in fns], times, nbytes, against=LINE, width=34)


if __name__ == "__main__":
    main()
