"""Time the row ops' default rung against torch eager and a same-bytes copy, interleaved in one process
(triton's do_bench, medians, L2 flushed by do_bench), at row lengths of any alignment.

    python scripts/row_bench.py [--cases softmax:bfloat16:2670x50257,...] [--out results.json]

Prints GB/s of each and kernelkit's share of torch and of the copy; --out writes the records.
"""
from __future__ import annotations

import argparse
import json

import torch
import triton.testing

import kernelkit

CASES = ("softmax:bfloat16:2670x50257,softmax:bfloat16:4194x32001,softmax:bfloat16:19173961x7,"
         "softmax:bfloat16:522247x257,softmax:float32:522247x257,softmax:bfloat16:16386x8191,"
         "softmax:bfloat16:447x300001,softmax:float32:2670x50257,softmax:float16:4096x4096,"
         "layer_norm:bfloat16:4194x32001,rms_norm:bfloat16:4194x32001,layer_norm:bfloat16:883x151936,"
         "rms_norm:bfloat16:883x151936,layer_norm:bfloat16:26214x5120,rms_norm:bfloat16:26214x5120,"
         "layer_norm:bfloat16:9362x14336,rms_norm:bfloat16:9362x14336,layer_norm:float32:4194x32001,"
         "layer_norm:bfloat16:2670x50257,layer_norm:float16:4096x4096")


def make(op: str, dtype: torch.dtype, rows: int, len_: int):
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    w = torch.randn(len_, device="cuda", dtype=dtype)
    b = torch.randn(len_, device="cuda", dtype=dtype)
    if op == "softmax":
        return (lambda: kernelkit.softmax(x, -1)), (lambda: torch.softmax(x, -1)), x
    if op == "layer_norm":
        return ((lambda: kernelkit.layer_norm(x, (len_,), w, b)),
                (lambda: torch.nn.functional.layer_norm(x, (len_,), w, b)), x)
    return (lambda: kernelkit.rms_norm(x, (len_,), w)), (lambda: torch.nn.functional.rms_norm(x, (len_,), w)), x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    records = []
    for case in a.cases.split(","):
        op, dt, shape = case.split(":")
        rows, len_ = map(int, shape.split("x"))
        dtype = getattr(torch, dt)
        kk, th, x = make(op, dtype, rows, len_)
        src, dst = x.clone(), torch.empty_like(x)
        cp = lambda: dst.copy_(src)  # noqa: E731
        nbytes = 2 * x.numel() * x.element_size()
        times = {"kk": [], "torch": [], "copy": []}
        kk(), th(), cp()
        for _ in range(a.rounds):  # interleaved: each candidate once a round, medians of rounds
            for name, fn in (("kk", kk), ("torch", th), ("copy", cp)):
                times[name].append(triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median"))
        gbs = {k: nbytes / (sorted(v)[len(v) // 2] * 1e-3) / 1e9 for k, v in times.items()}
        rec = {"op": op, "dtype": dt, "shape": [rows, len_], "kernelkit_gbs": round(gbs["kk"], 1),
               "torch_gbs": round(gbs["torch"], 1), "copy_gbs": round(gbs["copy"], 1)}
        records.append(rec)
        print(f"{op:10s} {dt:9s} {shape:>13s}  kk {gbs['kk']:7.1f}  torch {gbs['torch']:7.1f}  copy {gbs['copy']:7.1f}"
              f"  x{gbs['kk'] / gbs['torch']:.2f} torch  {100 * gbs['kk'] / gbs['copy']:5.1f}% copy", flush=True)
        del x, src, dst
        torch.cuda.empty_cache()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
