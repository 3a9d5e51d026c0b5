"""Time the row ops' launch configurations through ``config=``: every configuration the rules can choose
that holds the row (and not twice over), or those given, beside kernelkit's own choice, torch and a
same-bytes copy, all timed in turn (interleaved rounds, 4 input copies rotated when the working set is
near L2), each checked against float64 first.

    python scripts/smem_rows_tune.py [--shapes 1024x65536] [--dtypes float16,float32]
                                     [--ops softmax,layer_norm,rms_norm] [--reps 200]
                                     [--configs "SmemRows(threads=512, per=2, chunks=4, stages=6, cluster=2); ..."]
                                     [--rows 256x4x8,...]

--configs takes configurations as their repr (the norms': Welford, NormTile, BulkRing, SmemRows of
kernelkit.ops.reduction.norm_configs; softmax's: SoftmaxTile, Loop of kernelkit.ops.reduction.softmax),
separated by ';', fields left out taking their defaults; a configuration that
cannot run a case is reported and skipped. --rows GROUPxVECSxCLUSTER adds the norms' register-tile
clusters (NormTile, weight and bias staged), dealt rows in a fixed stride and handed out.
"""
from __future__ import annotations

import argparse
import datetime
import importlib

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.bench import time_interleaved
from kernelkit.ops.reduction._rows import parse_config

norm = importlib.import_module("kernelkit.ops.reduction.norm")  # (kernelkit.ops.softmax is the function)
softmax = importlib.import_module("kernelkit.ops.reduction.softmax")
TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def candidates(op: str, dtype: torch.dtype, len_: int, given: list[str], rows: str) -> list:
    """The configurations to time: those given (and --rows' clusters), else the rules' that hold the row
    and not twice over."""
    mod = softmax if op == "softmax" else norm
    tiles = []
    for spec in (filter(None, rows.split(",")) if op != "softmax" else ()):
        g, v, c = map(int, spec.split("x"))
        tiles += [norm.NormTile(g, v, c, staged=True, handout=h) for h in ((False, True) if c > 1 else (False,))]
    if given or tiles:
        return [parse_config(text, mod.CONFIG_CLASSES) for text in given] + tiles
    cfgs = (mod.configs(dtype) if op == "softmax"
            else {c for rung in mod.RUNG_RULES for c in mod.configs(dtype, form=mod.ALIGNED, rung=rung)})
    return [c for c in cfgs if hasattr(c, "capacity") and len_ <= c.capacity(dtype) < 2 * len_]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1024x65536")
    ap.add_argument("--dtypes", default="float16,float32")
    ap.add_argument("--ops", default="softmax,layer_norm,rms_norm")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--configs", default="", help="configurations (their repr) separated by ';'")
    ap.add_argument("--rows", default="", help="the norms' register-tile clusters GxVxC[,...]")
    a = ap.parse_args()
    given = [t.strip() for t in a.configs.split(";") if t.strip()]
    now = datetime.datetime.now(datetime.timezone.utc)
    print(f"device {torch.cuda.get_device_name()}  torch {torch.__version__}  {now:%Y-%m-%d %H:%M} UTC")
    for shape in a.shapes.split(","):
        rows, len_ = map(int, shape.split("x"))
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            nbytes = 2 * rows * len_ * torch.finfo(dtype).bits // 8
            copies = 4 if nbytes <= 4 * 50 * 2**20 else 1
            xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(copies)]
            w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
            out = torch.empty_like(xs[0])
            for op in a.ops.split(","):
                if op == "softmax":
                    call = lambda x, **k: kernelkit.softmax(x, out=out, **k)  # noqa: E731
                    theirs = lambda x: torch.softmax(x, -1)  # noqa: E731
                    ref = reference.softmax(xs[0])
                    chosen = softmax.config_for("auto", dtype, len_, sm=_sm())
                elif op == "rms_norm":
                    call = lambda x, **k: kernelkit.rms_norm(x, (len_,), w, 1e-5, out=out, **k)  # noqa: E731
                    theirs = lambda x: F.rms_norm(x, (len_,), w, 1e-5)  # noqa: E731
                    ref = reference.rms_norm(xs[0], (len_,), w, 1e-5)
                    chosen = norm.config_for("auto", dtype, len_, form=1, sm=_sm())
                else:
                    call = lambda x, **k: kernelkit.layer_norm(x, (len_,), w, b, out=out, **k)  # noqa: E731
                    theirs = lambda x: F.layer_norm(x, (len_,), w, b)  # noqa: E731
                    ref = reference.layer_norm(xs[0], (len_,), w, b)
                    chosen = norm.config_for("auto", dtype, len_, form=1, sm=_sm())
                fns = {"kernelkit": lambda i: call(xs[i % copies])}
                for cfg in candidates(op, dtype, len_, given, a.rows):
                    try:
                        out.fill_(float("nan"))
                        call(xs[0], config=cfg)
                    except ValueError as exc:
                        print(f"  {op} {dt} {shape}: {exc}")
                        continue
                    err = (out.double() - ref).abs().max().item()
                    if err < TOL[dtype]:
                        fns[repr(cfg)] = lambda i, cfg=cfg: call(xs[i % copies], config=cfg)
                    else:
                        print(f"  {op} {dt} {shape} {cfg}: WRONG (max error {err})")
                fns["torch"] = lambda i: theirs(xs[i % copies])
                fns["copy"] = lambda i: out.copy_(xs[i % copies])
                times = time_interleaved(list(fns.values()), reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
                copy_t = times[-1].median_us
                print(f"{op} {dt} {shape} (kernelkit launches {chosen}):")
                for (label, _), t in sorted(zip(fns.items(), times), key=lambda p: p[1].median_us):
                    print(f"  {label:72s} {t.median_us:8.2f} us  {nbytes / t.seconds / 1e9:7.0f} GB/s  "
                          f"{copy_t / t.median_us:6.1%} of copy")


def _sm() -> int:
    from kernelkit.ops._shared.launch_rules import compute_capability

    return compute_capability(torch.cuda.current_device())


if __name__ == "__main__":
    main()
