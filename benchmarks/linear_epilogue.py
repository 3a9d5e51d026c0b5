"""linear with a fused epilogue against torch's unfused calls (docs/design/matmul.md, "Fused epilogues").

    python benchmarks/linear_epilogue.py [--shape 16384x14336x4096] [--dtype bfloat16] [--variants best,ws]
        [--out FILE.json]

Per case, interleaved in one process (kernelkit.bench.timing.time_interleaved, shuffled, medians):
kernelkit.linear(x, w, b, activation=..., residual=...) on each rung of --variants (default: the
default rung), and torch's
F.linear followed by F.gelu / F.relu (and + residual); plain linear against F.linear for the GEMM
alone. Prints ms, TFLOP/s and the speed-up over torch; writes JSON (device, versions, numbers).
"""
from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench.timing import time_interleaved

TORCH_ACT = {None: lambda v: v, "relu": F.relu, "gelu": F.gelu,
             "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}
CASES = ((None, False), ("gelu", False), ("gelu_tanh", False), ("gelu", True), ("relu", False))


def run(m: int, n: int, k: int, dtype: torch.dtype, seconds: float, variants=(None,)) -> list[dict]:
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = torch.randn(n, k, device="cuda", dtype=dtype) / k ** 0.5
    b = torch.randn(n, device="cuda", dtype=dtype)
    r = torch.randn(m, n, device="cuda", dtype=dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    rows = []
    for act, with_res in CASES:
        res = r if with_res else None
        kks = [lambda v=v: kernelkit.linear(x, w, b, activation=act, residual=res, out=out, variant=v)
               for v in variants]

        def th(act=act, res=res):
            y = TORCH_ACT[act](F.linear(x, w, b))
            return y + res if res is not None else y
        # correctness first: the fused result against torch's (three roundings against one); the first
        # call of a fused form builds its kernel (one NVRTC build, unless the disk cache holds it)
        firsts, errs = [], []
        want = th().float()
        for kk in kks:
            t0 = time.perf_counter()
            got = kk()
            torch.cuda.synchronize()
            firsts.append(time.perf_counter() - t0)
            errs.append(((got.float() - want).abs() / (want.abs() + 1)).max().item())
        *t_kks, t_th = time_interleaved([*kks, th], warmup=3, reps=50, max_seconds=seconds, shuffle=True)
        flops = 2 * m * n * k
        for v, t_kk, err, first in zip(variants, t_kks, errs, firsts):
            rows.append({"activation": act, "residual": with_res, "variant": v or "default",
                         "kernelkit_ms": t_kk.median_ms, "torch_ms": t_th.median_ms,
                         "kernelkit_tflops": flops / t_kk.median_ms / 1e9,
                         "torch_tflops": flops / t_th.median_ms / 1e9, "speedup": t_th.median_ms / t_kk.median_ms,
                         "max_rel_err_vs_torch": err, "first_call_s": first})
            print(f"{str(act):9s} residual={with_res!s:5s} {v or 'default':10s} kernelkit {t_kk.median_ms:7.3f} ms "
                  f"({rows[-1]['kernelkit_tflops']:5.0f} TFLOP/s)  torch {t_th.median_ms:7.3f} ms  "
                  f"x{rows[-1]['speedup']:.3f}  err {err:.1e}  first call {first:.2f} s", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="16384x14336x4096", help="MxNxK")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--seconds", type=float, default=4.0, help="time bound of each case's interleaved loop")
    ap.add_argument("--variants", default=None, help="rungs, comma-separated (default: the default rung)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    m, n, k = (int(v) for v in a.shape.split("x"))
    dtype = getattr(torch, a.dtype)
    variants = tuple(a.variants.split(",")) if a.variants else (None,)
    rows = run(m, n, k, dtype, a.seconds, variants)
    rec = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "kernelkit": getattr(kernelkit, "__version__", "?"), "shape": [m, n, k], "dtype": a.dtype, "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rec, f, indent=1)


if __name__ == "__main__":
    main()
