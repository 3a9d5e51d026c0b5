"""The norms' long-row kernel that kernelkit picks (norm_bulk, norm_smem or the cluster rows), built as
kernelkit builds it and with macros defined, interleaved with kernelkit's own call and a same-bytes copy.

    python scripts/bulk_ab.py [--shape 1024x65536] [--dtype float32] [--op layer_norm] --macros "A=1;B=2"
        [--bulk "1024,2,8,3,1,1;..."]

--bulk: norm_bulk configurations (threads, vectors, cluster, stages, staged weight and bias, chunks) to
time in the place of the table's, where kernelkit picks norm_bulk.
"""
from __future__ import annotations

import argparse
import importlib

import torch

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel
from rowbench import device_line, report

norm = importlib.import_module("kernelkit.ops.norm")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1024x65536")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--op", default="layer_norm")
    ap.add_argument("--macros", default="")
    ap.add_argument("--bulk", default="")
    ap.add_argument("--patch", default="", help="norm globals to set for a variant, e.g. 'CLUSTER_ROWS_LN={}' "
                    "(';' between variants, '+' between settings of one)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rotate", type=int, default=1)
    a = ap.parse_args()
    print(device_line())
    rows, len_ = map(int, a.shape.split("x"))
    dtype = getattr(torch, a.dtype)
    rms = a.op == "rms_norm"
    # --rotate: calls cycle through this many copies of the input and output (placement near the L2 size)
    xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(a.rotate)]
    outs = [torch.empty_like(xs[0]) for _ in range(a.rotate)]
    x, out = xs[0], outs[0]
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    turn = [0]

    def call():
        i = turn[0] = (turn[0] + 1) % a.rotate
        if rms:
            kernelkit.rms_norm(xs[i], (len_,), w, 1e-5, out=outs[i])
        else:
            kernelkit.layer_norm(xs[i], (len_,), w, b, out=outs[i])
    captured = {}
    load = norm.NAMES.load
    norm.NAMES.load = lambda n, d, dev: captured.setdefault("name", n) and load(n, d, dev)
    norm._plans.clear()
    call()
    norm.NAMES.load = load
    name = captured["name"]
    print(f"{a.op} {a.dtype} {a.shape}: {name}")
    fns, labels = [call], ["kernelkit"]
    for m in filter(None, a.macros.split(";")):
        opts = tuple(f"define_macro={d}" for d in m.split("+"))
        km = get_kernel("norm.cu", name, device_index=0, extra_options=opts)
        orig = norm._plans.copy()

        def run(km=km):
            norm._plans.clear()
            norm._plans.update({k: (km, v[1]) for k, v in orig.items()})
            try:
                call()
            finally:
                norm._plans.clear()
                norm._plans.update(orig)
        fns.append(run)
        labels.append(m)
    table = norm.BULK[norm.per_vec(dtype)]
    for spec in filter(None, a.bulk.split(";")):
        cfg = tuple(int(v) for v in spec.split(","))
        cfg = (*cfg[:4], bool(cfg[4]), cfg[5])

        def run_cfg(cfg=cfg):
            saved = table[len_]
            table[len_] = cfg
            norm._plans.clear()
            try:
                call()
            finally:
                table[len_] = saved
                norm._plans.clear()
        fns.append(run_cfg)
        labels.append("bulk " + spec)
    for spec in filter(None, a.patch.split(";")):
        settings = [kv.split("=", 1) for kv in spec.split("+")]

        def run_patched(settings=settings):
            saved = {k: getattr(norm, k) for k, _ in settings}
            for k, v in settings:
                setattr(norm, k, eval(v, vars(norm)))
            norm._plans.clear()
            try:
                call()
            finally:
                for k, v in saved.items():
                    setattr(norm, k, v)
                norm._plans.clear()
        fns.append(run_patched)
        labels.append(spec)
    def copy():
        i = turn[0] = (turn[0] + 1) % a.rotate
        outs[i].copy_(xs[i])
    fns.append(copy)
    labels.append("copy")
    times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
    report("", labels, times, 2 * x.numel() * x.element_size(), width=28)


if __name__ == "__main__":
    main()
