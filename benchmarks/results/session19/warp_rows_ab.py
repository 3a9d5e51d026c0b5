"""4096-element 16-bit norm rows a warp each (norm_rows<T, 32, 16, 1, ...> held tight: KK_WARP_TIGHT blocks
of 4 warps an SM, weight and bias read at the output), against kernelkit's staged one-CTA rows and a
same-bytes copy, interleaved with the order shuffled every round, on rotating inputs.

    python scripts/warp_rows_ab.py [--shape 4096x4096] [--dtype float16] [--blocks 4,5] [--reps 300]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from rowbench import Rotation, device_line, report, row_dims

NAME = "kk::norm_rows<__half, 32, 16, 1, true, false, false, false>"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--dtype", default="float16")
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

            x, out = rot.xs[0], rot.outs[0]
            out.fill_(float("nan"))
            run(x, out)
            ref = (F.rms_norm(x.float(), (len_,), w.float(), 1e-5) if rms else
                   F.layer_norm(x.float(), (len_,), w.float(), bt.float()))
            err = (out.float() - ref).abs().max().item()
            print(f"  {op} warp rows x{nb}: max error {err:.3g}")
            if err > 2e-2:
                continue
            fns.append(rot.each(run))
            labels.append(f"warp rows, {nb} blocks an SM")
        api = (lambda x, out: kernelkit.rms_norm(x, (len_,), w, 1e-5, out=out)) if rms else \
              (lambda x, out: kernelkit.layer_norm(x, (len_,), w, bt, out=out))
        fns += [rot.each(api), rot.each(lambda x, out: out.copy_(x))]
        labels += [f"kernelkit.{op}", "copy"]
        times = time_interleaved(fns, reps=a.reps, warmup=5, flush_l2=True, max_seconds=30, shuffle=True)
        report(f"{op} {a.dtype} {a.shape} (4 rotating inputs, shuffled order):", labels, times, rot.nbytes, width=28)


if __name__ == "__main__":
    main()
