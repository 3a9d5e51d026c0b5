"""The staged one-CTA norm rows with weight and bias staged once a cluster by multicast bulk copies
(norm_rows_mc<T, 128, 4, kShare>, clusters of kShare CTAs), against kernelkit's own (each CTA staging its own
copy) and a same-bytes copy: interleaved, the order shuffled every round, over 4 rotating inputs.

    python scripts/multicast_ab.py [--shape 4096x4096] [--dtype float16] [--shares 2,4] [--reps 300]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from kernelkit.ops._rowwise import allow_shared, launch_cluster, resident_blocks
from kernelkit.runtime import get_kernel
from rowbench import Rotation, add_if_right, beside_kernelkit, device_line, row_dims, shape_args


def main() -> None:
    ap = argparse.ArgumentParser()
    shape_args(ap, shape="4096x4096", dtype="float16")
    ap.add_argument("--shares", default="2,4")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--grid", type=int, default=0, help="CTAs to launch (0: the resident count the driver gives)")
    a = ap.parse_args()
    print(device_line())
    rows, len_, dtype = row_dims(a)
    rot = Rotation(rows, len_, dtype, 4)
    w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
    cxx = {torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}[dtype]
    shmem = 2 * 128 * 4 * 16
    for op in ("layer_norm", "rms_norm"):
        rms = op == "rms_norm"
        bt = None if rms else b
        fns, labels = [], []
        for share in map(int, a.shares.split(",")):
            k = get_kernel("norm.cu", f"kk::norm_rows_mc<{cxx}, 128, 4, {share}>", device_index=0)
            allow_shared(k, shmem, 0)
            resident = resident_blocks(k, 128, share, 0, shmem)
            blocks = min(-(-rows // share) * share, a.grid or resident)

            def run(x, out, k=k, share=share, blocks=blocks):
                launch_cluster(k, blocks, 128, share, x.data_ptr(), out.data_ptr(), w.data_ptr(),
                               0 if bt is None else bt.data_ptr(), rows, len_, np.float32(1e-5), np.int32(rms),
                               dev=0, shmem=shmem)

            add_if_right(op, rot, run, w, bt, fns, labels, f"multicast, clusters of {share}",
                         f" ({blocks} CTAs, {resident} resident)")
        beside_kernelkit(op, rot, w, bt, fns, labels, a.reps, f"{op} {a.dtype} {a.shape}")


if __name__ == "__main__":
    main()
