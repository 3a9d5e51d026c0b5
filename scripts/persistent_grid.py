"""The norms' persistent cluster rows at 1024 x 65536 (or --shape) with grids of several sizes, against
kernelkit.softmax on the same input and a same-bytes copy, interleaved: does the number of resident
clusters (and so rows a cluster) set the rate?

    python scripts/persistent_grid.py [--dtype float16] [--cfg 256x4x8] [--clusters 0,-1,64,62,60,56,48]
        [--dynamic] [--no-weight] [--shmem 0,16384] [--macros "NAME=VALUE;..."] [--shape 1984x65536]

--clusters: 0 every resident cluster, -1 one cluster a row. --dynamic: rows handed out at run time
(norm_rows_dyn, with the host's counter buffer for the stream). Used to choose norm.CLUSTER_ROWS_RMS and
CLUSTER_ROWS_LN (docs/design/row-reductions.md).
"""
from __future__ import annotations

import argparse
import importlib

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from kernelkit.ops._rowwise import (allow_shared, handout_counters, launch_cluster, per_vec, resident_blocks,
                                    row_name)
from rowbench import device_line, report, row_shape, shape_args

norm = importlib.import_module("kernelkit.ops.norm")


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float16", cfg="256x4x8")
    ap.add_argument("--clusters", default="0,64,62,60,56,52,48")  # 0: every resident cluster, -1: one a row
    ap.add_argument("--macros", default="", help="builds to add, each with these macros defined (';' between "
                    "builds, '+' between macros of one), e.g. KK_STAGE_ASYNC=0")
    ap.add_argument("--no-weight", action="store_true", help="weight and bias None (no staged reads)")
    ap.add_argument("--no-bias", action="store_true", help="layer_norm's bias None (the weight kept)")
    ap.add_argument("--shmem", default="", help="dynamic shared memory sizes (bytes) to launch with besides the "
                    "staged slices' (the kernel reads only what its weight and bias need)")
    ap.add_argument("--staged", action="store_true", help="GxVx1 as STAGED_ROWS launches it (kStage, one CTA a row)")
    ap.add_argument("--dynamic", action="store_true", help="rows handed out at run time (norm_rows_dyn)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--no-check", action="store_true", help="time builds whose results are wrong (experiments)")
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype, c = row_shape(a)
    x = torch.randn(rows, len_, device="cuda", dtype=dtype)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    name = row_name("norm_rows_dyn" if a.dynamic else "norm_rows", dtype, c, True, False)
    if a.staged:  # one CTA a row (cluster 1), weight and bias staged: STAGED_ROWS' kernel
        name = name[:-1] + ", false, true>"
    k = get_kernel("norm.cu", name, device_index=0)
    shmem = 2 * c[0] * c[1] * per_vec(dtype) * x.element_size()
    allow_shared(k, shmem, 0)
    resident = resident_blocks(k, c[0], c[2], 0, shmem) // c[2]
    print(f"{name}: {resident} resident clusters of {c[2]}")
    for op in ("rms_norm", "layer_norm"):
        rms = op == "rms_norm"
        wt, bt = (None, None) if a.no_weight else (w, None if rms or a.no_bias else b)
        wp, bp = (0 if t is None else t.data_ptr() for t in (wt, bt))
        ref = (F.rms_norm(x.float(), (len_,), None if wt is None else wt.float(), 1e-5) if rms else
               F.layer_norm(x.float(), (len_,), *(None if t is None else t.float() for t in (wt, bt))))
        fns, labels = [], []
        variants = [(n, "", shmem) for n in map(int, a.clusters.split(","))]
        variants += [(n, "", int(sm)) for sm in filter(None, a.shmem.split(",")) for n in map(int, a.clusters.split(","))]
        variants += [(n, m, shmem) for m in filter(None, a.macros.split(";")) for n in map(int, a.clusters.split(","))]
        need = sum(t is not None for t in (wt, bt)) * shmem // 2  # the staged slices the kernel reads
        for n, ns, sm in [v for v in variants if v[2] >= need]:
            g = rows if n == -1 else min(resident if n == 0 else n, rows)
            kk = k if not ns else get_kernel("norm.cu", name, device_index=0,
                                             extra_options=tuple(f"define_macro={d}" for d in ns.split("+")))
            allow_shared(kk, max(sm, shmem), 0)
            if n == 0 and sm != shmem:  # the resident grid at this shared memory size
                g = min(resident_blocks(kk, c[0], c[2], 0, sm) // c[2], rows)
            args = (x.data_ptr(), out.data_ptr(), wp, bp, rows, len_, np.float32(1e-5), np.int32(rms),
                    *((handout_counters(0),) if a.dynamic else ()))
            if c[2] == 1:
                run = lambda g=g, kk=kk, sm=sm, args=args: launch(kk, g, c[0], *args, shmem=sm, device_index=0)  # noqa: E731
            else:
                run = lambda g=g, kk=kk, sm=sm, args=args: launch_cluster(kk, g * c[2], c[0], c[2], *args,  # noqa: E731
                                                                          dev=0, shmem=sm)
            out.fill_(float("nan"))
            run()
            err = (out.float() - ref).abs().max().item()
            if err > 2e-2 and not a.no_check:
                print(f"  {g} clusters: WRONG ({err})")
                continue
            fns.append(run)
            labels.append((f"{g} clusters ({-(-rows // g)} rows a cluster)" if n != -1 else "a cluster a row") + (f" {ns}" if ns else "") + (f" shmem {sm}" if sm != shmem else ""))
        fns.append((lambda: kernelkit.rms_norm(x, (len_,), wt, 1e-5, out=out)) if rms else
                   (lambda: kernelkit.layer_norm(x, (len_,), wt, bt, out=out)))
        labels.append(f"kernelkit.{op}")
        fns.append(lambda: kernelkit.softmax(x, -1, out=out))
        labels.append("kernelkit.softmax")
        fns.append(lambda: out.copy_(x))
        labels.append("copy")
        times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=20)
        report(f"{op} {a.dtype} {a.shape}:", labels, times, nbytes, width=32)


if __name__ == "__main__":
    main()
