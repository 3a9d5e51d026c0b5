"""norm_grid configurations (and macro settings of norm_grid.cuh) beside the dispatch without the grid
(norm.GRID = False) and a same-bytes copy, interleaved in a shuffled order over rotating inputs.

    python scripts/grid_ab.py [--shape 1024x65536] [--dtype float32] [--op layer_norm]
        --cfgs "16,4,6,3;16,4,6,4" [--macros "KK_GRID_SLEEP=0;KK_GRID_COMBINE_FIRST=1"]

Each configuration is (warps, vectors a lane, rows a warp holds, rows between publishing and normalizing);
each macro setting is timed with every configuration. Every form is checked against torch first.
"""
from __future__ import annotations

import argparse
import importlib

import numpy as np
import torch

from kernelkit.runtime import get_kernel
from rowbench import Rotation, add_if_right, beside_kernelkit, device_line, norm_call, row_dims, shape_args

norm = importlib.import_module("kernelkit.ops.norm")
grid = importlib.import_module("kernelkit.ops._grid")


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="1024x65536", dtype="float32")
    ap.add_argument("--op", default="layer_norm")
    ap.add_argument("--cfgs", default="16,4,6,3")
    ap.add_argument("--macros", default="")
    ap.add_argument("--probes", default="", help="macro settings timed without the check (wrong results)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rotate", type=int, default=2)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    rot = Rotation(rows, len_, dtype, a.rotate)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    rms = a.op == "rms_norm"
    flags = (np.float32(1e-5), np.int32(rms))
    fns, labels = [], []
    for spec in filter(None, a.cfgs.split(";")):
        cfg = tuple(int(f) for f in spec.split(","))
        probes = [m for m in a.probes.split(";") if m]
        for m in [""] + [m for m in a.macros.split(";") if m] + probes:
            opts = tuple(f"define_macro={d}" for d in m.split("+") if d)
            k = get_kernel("norm.cu", grid.kernel_name(dtype, cfg), device_index=0, extra_options=opts)

            def run(x, out, k=k, cfg=cfg):
                grid.launch_grid(k, cfg, x, out, w.data_ptr(), 0 if rms else b.data_ptr(), rows, len_, flags, 0)
            if m in probes:
                fns.append(rot.each(run))
                labels.append(f"grid {spec} {m} (probe)")
            else:
                add_if_right(a.op, rot, run, w, None if rms else b, fns, labels, f"grid {spec} {m}".strip())

    call = norm_call(a.op, len_, w, b)

    def without_grid(x, out):
        norm.GRID = False
        try:
            call(x, out)
        finally:
            norm.GRID = True
    add_if_right(a.op, rot, without_grid, w, None if rms else b, fns, labels, "GRID=False")
    beside_kernelkit(a.op, rot, w, None if rms else b, fns, labels, a.reps, f"{a.op} {a.dtype} {a.shape}")


if __name__ == "__main__":
    main()
