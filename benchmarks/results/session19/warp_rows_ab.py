"""4096-element 16-bit norm rows a warp each (norm_rows<T, 32, 16, 1, ...> held tight: KK_WARP_TIGHT blocks
of 4 warps an SM, weight and bias read at the output), against kernelkit's staged one-CTA rows and a
same-bytes copy, interleaved with the order shuffled every round, on rotating inputs.

    python scripts/warp_rows_ab.py [--shape 4096x4096] [--dtype float16] [--blocks 4,5] [--reps 300]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from kernelkit.runtime import get_kernel, launch
from rowbench import Rotation, add_if_right, beside_kernelkit, device_line, row_dims, shape_args

NAME = "kk::norm_rows<__half, 32, 16, 1, true, false, false, false>"


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="4096x4096", dtype="float16")
    ap.add_argument("--blocks", default="4,5")
    ap.add_argument("--macros", default="", help="extra macros for every warp-row build ('+' between)")
    ap.add_argument("--reps", type=int, default=300)
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    rot = Rotation(rows, len_, dtype, 4)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    extra = [m for m in a.macros.split("+") if m]
    for op in ("layer_norm", "rms_norm"):
        rms = op == "rms_norm"
        bt = None if rms else b
        fns, labels = [], []
        for nb in map(int, a.blocks.split(",")):
            k = get_kernel("norm.cu", NAME, device_index=0,
                           extra_options=tuple(f"define_macro={m}" for m in [f"KK_WARP_TIGHT={nb}", *extra]))

            def run(x, out, k=k):
                launch(k, -(-rows // 4), 128, x.data_ptr(), out.data_ptr(), w.data_ptr(),
                       0 if bt is None else bt.data_ptr(), rows, len_, np.float32(1e-5), np.int32(rms),
                       device_index=0)

            add_if_right(op, rot, run, w, bt, fns, labels, f"warp rows, {nb} blocks an SM", "")
        beside_kernelkit(op, rot, w, bt, fns, labels, a.reps, f"{op} {a.dtype} {a.shape}")


if __name__ == "__main__":
    main()
