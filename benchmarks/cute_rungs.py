"""The CuTe rungs beside the hand-written rungs of the same technique (docs/design/cute.md).

    python benchmarks/cute_rungs.py time [--out FILE.json]
        gelu fast vs cute (GB/s, 2^24 and 2^28 elements, fp32/fp16/bf16) with a same-bytes copy; transpose
        shared, padded, cute, best at 8192^2 (fp32, fp16, uint8, fp64); matmul mma, cute and torch (TFLOP/s).
        Each group interleaved in one process (kernelkit.bench.timing.time_interleaved, medians).
    ncu --csv --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum \
-k regex:transpose python benchmarks/cute_rungs.py ncu
        one launch of the shared, padded and cute transpose tiles per element size (4096^2), for the
        shared-memory bank-conflict counters.
"""
from __future__ import annotations

import argparse
import json

import torch

import kernelkit
from kernelkit.bench.timing import time_interleaved

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
TILES = ("shared", "padded", "cute")


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _gbs(nbytes: int, t) -> float:
    return nbytes / t.median_us / 1e3


def time_gelu(out: dict) -> None:
    for dt in (F32, F16, BF16):
        for log_n in (24, 28):
            x = torch.randn(1 << log_n, device="cuda", dtype=dt)
            o1, o2, y = (torch.empty_like(x) for _ in range(3))
            fns = [lambda: kernelkit.gelu(x, out=o1, variant="fast"), lambda: kernelkit.gelu(x, out=o2, variant="cute"),
                   lambda: y.copy_(x)]
            fast, cute, copy = (_gbs(2 * x.nbytes, t) for t in
                                time_interleaved(fns, working_set_bytes=2 * x.nbytes, max_seconds=1, shuffle=True))
            out[f"gelu {_name(dt)} 2^{log_n}"] = {"fast": fast, "cute": cute, "copy": copy}
            print(f"gelu {_name(dt):9s} 2^{log_n}: fast {fast:.0f} cute {cute:.0f} copy {copy:.0f} GB/s, "
                  f"cute/fast {cute / fast:.4f}", flush=True)


def time_transpose(out: dict) -> None:
    rungs = (*TILES, "best")
    for dt in (F32, F16, torch.uint8, torch.float64):
        x = (torch.randn(8192, 8192, device="cuda") * 50).to(dt)
        y = torch.empty_like(x)
        fns = [lambda r=r: kernelkit.transpose(x, variant=r) for r in rungs] + [lambda: y.copy_(x)]
        got = [_gbs(2 * x.nbytes, t) for t in
               time_interleaved(fns, working_set_bytes=2 * x.nbytes, max_seconds=1, shuffle=True)]
        out[f"transpose {_name(dt)} 8192^2"] = dict(zip((*rungs, "copy"), got))
        print(f"transpose {_name(dt):9s} 8192^2: " + " ".join(f"{k} {v:.0f}" for k, v in zip((*rungs, "copy"), got))
              + " GB/s", flush=True)


def time_matmul(out: dict) -> None:
    for dt in (F16, BF16):
        for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (4097, 4095, 4093)):
            a, b = torch.randn(m, k, device="cuda").to(dt), torch.randn(k, n, device="cuda").to(dt)
            fns = [lambda: kernelkit.matmul(a, b, variant="mma"), lambda: kernelkit.matmul(a, b, variant="cute"),
                   lambda: torch.matmul(a, b)]
            mma, cute, torch_ = (2 * m * n * k / t.median_us / 1e6 for t in
                                 time_interleaved(fns, max_seconds=1, shuffle=True, flush_l2=False))
            out[f"matmul {_name(dt)} {m}x{n}x{k}"] = {"mma": mma, "cute": cute, "torch": torch_}
            print(f"matmul {_name(dt):9s} {m}x{n}x{k}: mma {mma:.0f} cute {cute:.0f} torch {torch_:.0f} TFLOP/s, "
                  f"cute/mma {cute / mma:.3f}", flush=True)


def ncu_workload() -> None:
    for dt in (F32, F16, torch.uint8, torch.float64):
        x = (torch.randn(4096, 4096, device="cuda") * 50).to(dt)
        for r in TILES:
            kernelkit.transpose(x, variant=r)
    torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("time", "ncu"))
    p.add_argument("--out", help="write the timings as JSON")
    args = p.parse_args()
    if args.mode == "ncu":
        ncu_workload()
        return
    out: dict = {"device": torch.cuda.get_device_name()}
    time_gelu(out)
    time_transpose(out)
    time_matmul(out)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
