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
from rowbench import Rotation, device_line, report, row_dims, shape_args

norm = importlib.import_module("kernelkit.ops.norm")


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float32")
    ap.add_argument("--op", default="layer_norm")
    ap.add_argument("--macros", default="")
    ap.add_argument("--bulk", default="")
    ap.add_argument("--patch", default="", help="norm globals to set for a variant, e.g. 'CLUSTER_ROWS_LN={}' "
                    "(';' between variants, '+' between settings of one)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rotate", type=int, default=1)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    inputs = Rotation(rows, len_, dtype, a.rotate)  # --rotate: copies of the input and output, called in turn
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    if a.op == "rms_norm":
        call = inputs.each(lambda x, out: kernelkit.rms_norm(x, (len_,), w, 1e-5, out=out))
    else:
        call = inputs.each(lambda x, out: kernelkit.layer_norm(x, (len_,), w, b, out=out))
    captured = {}
    load = norm.NAMES.load
    norm.NAMES.load = lambda n, d, dev: captured.setdefault("name", n) and load(n, d, dev)
    norm._plans.clear()
    call(0)
    norm.NAMES.load = load
    name = captured["name"]
    print(f"{a.op} {a.dtype} {a.shape}: {name}")
    fns, labels = [call], ["kernelkit"]
    for m in filter(None, a.macros.split(";")):
        opts = tuple(f"define_macro={d}" for d in m.split("+"))
        km = get_kernel("norm.cu", name, device_index=0, extra_options=opts)
        orig = norm._plans.copy()

        def run(i, km=km):
            norm._plans.clear()
            norm._plans.update({k: (km, v[1]) for k, v in orig.items()})
            try:
                call(i)
            finally:
                norm._plans.clear()
                norm._plans.update(orig)
        fns.append(run)
        labels.append(m)
    per = norm.per_vec(dtype)
    for spec in filter(None, a.bulk.split(";")):
        g, v, c, stages, wb, chunks = (int(f) for f in spec.split(","))
        bulk = {**norm.BULK, per: {**norm.BULK[per], len_: (g, v, c, stages, bool(wb), chunks)}}
        fns.append(patched(call, {"BULK": bulk}))
        labels.append("bulk " + spec)
    for spec in filter(None, a.patch.split(";")):
        fns.append(patched(call, {k: eval(v, vars(norm)) for k, v in (kv.split("=", 1) for kv in spec.split("+"))}))
        labels.append(spec)
    fns.append(inputs.each(lambda x, out: out.copy_(x)))
    labels.append("copy")
    times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=20, shuffle=True)
    report("", labels, times, inputs.nbytes, width=28)


def patched(call, values: dict):
    """call(i) with norm's globals set to `values` for its duration, the plans rebuilt on either side."""
    def run(i):
        saved = {k: getattr(norm, k) for k in values}
        for k, v in values.items():
            setattr(norm, k, v)
        norm._plans.clear()
        try:
            call(i)
        finally:
            for k, v in saved.items():
                setattr(norm, k, v)
            norm._plans.clear()
    return run


if __name__ == "__main__":
    main()
