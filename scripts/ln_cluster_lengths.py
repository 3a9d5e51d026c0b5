"""fp32 layer_norm rows of 16K-32K: kernelkit.layer_norm (norm_configs.CLUSTER_ROWS_LN's handed-out clusters
of 2 x 512 where the rule gives them, else the one-CTA tile) against the one-CTA tile (NormTile(1024, 8),
forced by config=), at several row lengths, interleaved with a same-bytes copy.

    python scripts/ln_cluster_lengths.py [--lens 16400,20000,24576,28672,32768] [--bytes 1073741824] [--reps 60]

Each length gets rows enough for --bytes of input. Its result is CLUSTER_ROWS_LN_FROM: the clusters win only
where the second CTA of a cluster holds nearly a full slice (docs/design/row-reductions.md).
"""
from __future__ import annotations

import argparse

import torch

import kernelkit
from kernelkit.ops.reduction import norm
from rowbench import Rotation, add_if_right, beside_kernelkit, device_line


def one_cta_tile(len_: int, w, b):
    """The table's one-CTA tile (1024 x 8, weight and bias read from L2 at the output), as fn(x, out)."""
    tile = norm.NormTile(1024, 8)
    return lambda x, out: kernelkit.layer_norm(x, (len_,), w, b, out=out, config=tile)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lens", default="16400,20000,24576,28672,32768")
    ap.add_argument("--bytes", type=int, default=1 << 30)
    ap.add_argument("--reps", type=int, default=60)
    a = ap.parse_args()
    print(device_line())
    for len_ in map(int, a.lens.split(",")):
        rows = a.bytes // (4 * len_)
        rot = Rotation(rows, len_, torch.float32, 1)
        w, b = torch.randn(2, len_, device="cuda")
        fns, labels = [], []
        add_if_right("layer_norm", rot, one_cta_tile(len_, w, b), w, b, fns, labels, "one-CTA tile (1024 x 8)")
        beside_kernelkit("layer_norm", rot, w, b, fns, labels, a.reps, f"layer_norm float32 {rows}x{len_}")


if __name__ == "__main__":
    main()
