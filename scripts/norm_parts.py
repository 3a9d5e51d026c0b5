"""Where 4096-element fp16 layer_norm rows lose against rms_norm (81% vs 96% of a same-bytes copy after
the session-12 flush change): the same kernel timed in turn with weight and bias, weight only and
neither, against rms_norm with its weight, torch and a copy (interleaved rounds, 4 input copies).
Also the one-CTA-a-row kernel with weight and bias staged in shared memory (norm_rows' kStage) launched
persistent (resident CTAs looping over rows, each staging once), with and without the next row's loads
issued before this row's reductions (kPrefetch), and one CTA per row.

    python scripts/norm_parts.py [--shape 4096x4096] [--dtype float16]
"""
import argparse

import torch
import torch.nn.functional as F

import numpy as np

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops._common import CXX_TYPE
from kernelkit.ops._rowwise import resident_blocks
from kernelkit.runtime import get_kernel, launch

ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="4096x4096")
ap.add_argument("--dtype", default="float16")
a = ap.parse_args()
rows, n = map(int, a.shape.split("x"))
dtype = getattr(torch, a.dtype)
xs = [torch.randn(rows, n, device="cuda", dtype=dtype) for _ in range(4)]
w, b = torch.randn(2, n, device="cuda", dtype=dtype)
out = torch.empty_like(xs[0])
fns = {
    "layer_norm w+b": lambda i: kernelkit.layer_norm(xs[i % 4], (n,), w, b, out=out),
    "layer_norm w": lambda i: kernelkit.layer_norm(xs[i % 4], (n,), w, None, out=out),
    "layer_norm none": lambda i: kernelkit.layer_norm(xs[i % 4], (n,), None, None, out=out),
    "rms_norm w": lambda i: kernelkit.rms_norm(xs[i % 4], (n,), w, out=out),
    "rms_norm none": lambda i: kernelkit.rms_norm(xs[i % 4], (n,), None, out=out),
    "torch layer_norm w+b": lambda i: F.layer_norm(xs[i % 4], (n,), w, b),
}
group, vecs = {torch.float16: (128, 4), torch.bfloat16: (128, 4), torch.float32: (256, 4)}[dtype]
shmem = 2 * group * vecs * 16
ref = F.layer_norm(xs[0].double(), (n,), w.double(), b.double())
for prefetch in (False, True):
    k = get_kernel("norm.cu", f"kk::norm_rows<{CXX_TYPE[dtype]}, {group}, {vecs}, 1, true, "
                   f"{'true' if prefetch else 'false'}, false, true>", device_index=0)
    for persistent in (True, False):
        if prefetch and not persistent:
            continue
        grid = min(rows, resident_blocks(k, group, 1, 0, shmem)) if persistent else rows
        def run(i, k=k, grid=grid):
            launch(k, grid, group, xs[i % 4].data_ptr(), out.data_ptr(), w.data_ptr(), b.data_ptr(), rows, n,
                   np.float32(1e-5), np.int32(0), shmem=shmem, device_index=0)
        run(0)
        err = (out.double() - ref).abs().max().item()
        assert err < 5e-2, err
        fns[f"ln w+b staged {'persistent' if persistent else 'per row'}{' prefetch' if prefetch else ''}"] = run
fns.update({
    "copy": lambda i: out.copy_(xs[i % 4]),
})
nbytes = 2 * rows * n * xs[0].element_size()
times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=500, max_seconds=20)
for (name, _), t in zip(fns.items(), times):
    print(f"{name:40s} {t.median_us:7.2f} us {nbytes / t.seconds / 1e9:6.0f} GB/s")
