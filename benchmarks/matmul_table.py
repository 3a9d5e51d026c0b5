"""TFLOP/s (TOP/s for int8) of matmul rungs against torch.matmul (cuBLAS) in one process, in turn.

    python benchmarks/matmul_table.py [--shapes 4096x4096x4096,8192x8192x8192] [--rungs best,mma,simt_best]
        [--dtypes float32,tf32,float16,bfloat16,int8,float64] [--out FILE.json]

Shapes are MxNxK (BxMxNxK batched). Each case times the rungs and torch's call interleaved
(kernelkit.bench.timing.time_interleaved, medians) and prints TFLOP/s and the share of cuBLAS's rate
measured in the same loop; int8 is compared with torch._int_mm on a column-major B (its fast layout)
and, as a second row, on a row-major B. The geometric mean of each rung's share over the shapes is
printed per dtype.
"""
from __future__ import annotations

import argparse
import json
import math

import torch

import kernelkit
from kernelkit.bench.timing import time_interleaved


def _operands(shape, dtype, b_col):
    *batch, m, n, k = shape
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (*batch, m, k), device="cuda", dtype=dtype)
        b = torch.randint(-128, 128, (*batch, n, k), device="cuda", dtype=dtype)
        return a, (b.transpose(-1, -2) if b_col else b.transpose(-1, -2).contiguous())
    return (torch.randn(*batch, m, k, device="cuda").to(dtype), torch.randn(*batch, k, n, device="cuda").to(dtype))


def _torch_fn(a, b, tf32):
    if a.dtype == torch.int8:
        return (lambda: torch._int_mm(a, b)) if a.dim() == 2 else (lambda: torch.matmul(a.int(), b.int()))
    if a.dtype == torch.float32:
        def run():
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                return torch.matmul(a, b)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = prev
        return run
    return lambda: torch.matmul(a, b)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096x4096x4096")
    p.add_argument("--rungs", default="best")
    p.add_argument("--dtypes", default="float32,tf32,float16,bfloat16,int8,float64")
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    records, shares = [], {}
    for dname in args.dtypes.split(","):
        tf32 = dname == "tf32"
        dtype = torch.float32 if tf32 else getattr(torch, dname)
        for shape in shapes:
            for b_col in ((True, False) if dtype == torch.int8 else (False,)):
                a, b = _operands(shape, dtype, b_col)
                rungs = [r for r in args.rungs.split(",") if kernelkit.get_op("matmul").variant(r).supports(dtype)]
                fns = [lambda r=r: kernelkit.matmul(a, b, allow_tf32=tf32, variant=r) for r in rungs]
                times = time_interleaved([*fns, _torch_fn(a, b, tf32)], max_seconds=args.seconds, shuffle=True)
                *batch, m, n, k = shape
                flop = 2 * math.prod(batch) * m * n * k
                torch_rate = flop / times[-1].median_us / 1e6
                layout = "" if dtype != torch.int8 else (" B col-major" if b_col else " B row-major")
                print(f"{dname:9s} {'x'.join(map(str, shape)):>18s}{layout}: torch {torch_rate:7.1f} T/s", end="")
                for r, t in zip(rungs, times):
                    rate = flop / t.median_us / 1e6
                    share = rate / torch_rate
                    shares.setdefault((dname, r, layout), []).append(share)
                    print(f" | {r} {rate:7.1f} ({100 * share:5.1f}%)", end="")
                    records.append({"dtype": dname, "shape": list(shape), "layout": layout.strip(), "rung": r,
                                    "tflops": rate, "torch_tflops": torch_rate, "share": share})
                print()
    for (dname, r, layout), s in shares.items():
        print(f"geomean {dname}{layout} {r}: {100 * math.exp(sum(map(math.log, s)) / len(s)):.1f}% of torch")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
