"""fp32 SIMT matmul against cuBLAS: simt_best, its cp.async kernel as the simt_async rung, the 128x128 warp
kernel simt_best ran before, and torch.matmul with TF32 off, timed in turn in one process (cold L2, medians).

    python benchmarks/matmul_simt.py [--out FILE.json]

Shapes: 4096^3, 8192^3, an odd 4097x4095x4093 (no operand 16-byte aligned: element copies), and 4096^3 with
each operand a transposed view. Prints one JSON line a shape (TFLOP/s, simt_best's share of cuBLAS, each
result's relative error against torch's).
"""
import argparse
import json

import torch

import kernelkit
from kernelkit.bench import environment, write_json
from kernelkit.bench.timing import time_interleaved
from kernelkit.ops.gemm import MatmulTile

CASES = [("4096^3", 4096, 4096, 4096, False, False), ("8192^3", 8192, 8192, 8192, False, False),
         ("4097x4095x4093", 4097, 4095, 4093, False, False), ("4096^3 B=w.t()", 4096, 4096, 4096, False, True),
         ("4096^3 A=a.t()", 4096, 4096, 4096, True, False), ("4096^3 A=a.t() B=w.t()", 4096, 4096, 4096, True, True)]
WARP_128 = MatmulTile(128, 128, 64, 32, min_blocks=2)  # simt_best's large tile before the cp.async kernel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the rows to this JSON file")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for name, m, n, k, ta, tb in CASES:
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn((k, m) if ta else (m, k), device="cuda", generator=g)
        b = torch.randn((n, k) if tb else (k, n), device="cuda", generator=g)
        a, b = (a.t() if ta else a), (b.t() if tb else b)
        impls = {"torch": lambda: torch.matmul(a, b),
                 "simt_best": lambda: kernelkit.matmul(a, b),
                 "warp_128x128": lambda: kernelkit.matmul(a, b, variant="simt_best", config=WARP_128),
                 "simt_async": lambda: kernelkit.matmul(a, b, variant="simt_async")}
        ref = torch.matmul(a, b)
        err = {key: float((f() - ref).norm() / ref.norm()) for key, f in impls.items()}
        times = time_interleaved(list(impls.values()), warmup=3, reps=40, max_seconds=4.0, shuffle=True)
        row = {"case": name, "device": torch.cuda.get_device_name()}
        row.update({key: round(2 * m * n * k / (t.median_ms * 1e-3) / 1e12, 2) for key, t in zip(impls, times)})
        row["pct_of_cublas"] = round(100 * row["simt_best"] / row["torch"], 1)
        row["relerr"] = err
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        write_json(args.out, {"environment": environment(), "records": rows})


if __name__ == "__main__":
    main()
