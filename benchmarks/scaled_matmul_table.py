"""TFLOP/s of scaled_matmul's Hopper rungs against torch._scaled_mm (cuBLASLt), e4m3, per-tensor scales,
bf16 result, in one process, interleaved.

    python benchmarks/scaled_matmul_table.py [--shapes 2048x2048x2048,...] [--seconds 2] [--out DIR]

For each shape (MxNxK) and each accumulation (use_fast_accum False, torch's default, and True) the
candidates are torch._scaled_mm, kernelkit's ws and tma_wgmma rungs at the rule's tile, and
ws at 128 x 128 in both (what the wider tile buys). Each is first checked against torch's result
(relative Frobenius error below 1e-2), then all are timed in turn (kernelkit.bench.timing.time_interleaved,
shuffled, medians). ``--out DIR`` writes DIR/scaled_matmul-<device>.json with the environment.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

import kernelkit
from kernelkit.bench.report import write_json
from kernelkit.bench.timing import time_interleaved
from kernelkit.ops.gemm import Fp8Tile

SHAPES = "2048x2048x2048,4096x4096x4096,8192x8192x8192"
E4M3 = torch.float8_e4m3fn


def candidates(a, b, sa, sb, fast):
    c = {"torch._scaled_mm": lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)}
    for rung in ("ws", "tma_wgmma"):
        c[rung] = lambda r=rung: kernelkit.scaled_matmul(a, b, sa, sb, use_fast_accum=fast, variant=r)
    c["ws 128x128"] = lambda: kernelkit.scaled_matmul(a, b, sa, sb, use_fast_accum=fast, variant="ws",
                                                      config=Fp8Tile(128, 7))
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    dev = torch.cuda.get_device_name()
    rows = []
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda").to(E4M3)
        b = torch.randn(n, k, device="cuda").to(E4M3).t()
        sa = torch.tensor(0.5, device="cuda")
        sb = torch.tensor(0.25, device="cuda")
        for fast in (False, True):
            cands = candidates(a, b, sa, sb, fast)
            ref = cands["torch._scaled_mm"]().float()
            ok = {}
            for name, fn in cands.items():
                err = ((fn().float() - ref).norm() / ref.norm()).item()
                ok[name] = err < 1e-2
                if not ok[name]:
                    print(f"{shape} fast={fast} {name}: relative error {err:.3g} against torch, not timed")
            names = [x for x in cands if ok[x]]
            times = time_interleaved([cands[x] for x in names], max_seconds=args.seconds, shuffle=True)
            tf = {x: 2 * m * n * k / (t.median_ms * 1e-3) / 1e12 for x, t in zip(names, times)}
            base = tf["torch._scaled_mm"]
            for x in names:
                rows.append({"shape": [m, n, k], "use_fast_accum": fast, "impl": x, "tflops": round(tf[x], 1),
                             "median_ms": round(times[names.index(x)].median_ms, 4),
                             "share_of_torch": round(tf[x] / base, 3)})
                print(f"{shape:>16} fast={str(fast):5} {x:>18}: {tf[x]:7.1f} TFLOP/s  {tf[x] / base:6.1%} of torch",
                      flush=True)
    if args.out:
        tag = "h100" if "H100" in dev else dev.replace(" ", "-").lower()
        path = write_json(Path(args.out) / f"scaled_matmul-{tag}.json",
                          {"device": dev, "torch": torch.__version__, "dtype": "float8_e4m3fn", "out_dtype": "bfloat16",
                           "command": "python benchmarks/scaled_matmul_table.py --out benchmarks/results",
                           "rows": rows})
        print("wrote", path)


if __name__ == "__main__":
    main()
