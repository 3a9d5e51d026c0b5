"""Host time of one kernelkit.layer_norm call (4096 x 4096 fp16 by default) and of its parts, each timed
over many calls with the GPU kept busy (so the host never waits on it): where the microseconds go.

    python scripts/host_parts.py [ROWSxLEN]
"""
import importlib
import sys
import time

import numpy as np
import torch

import kernelkit
from kernelkit.ops import _rowwise
from kernelkit.runtime import launch as rt_launch

norm = importlib.import_module("kernelkit.ops.norm")
rows, len_ = map(int, (sys.argv[1] if len(sys.argv) > 1 else "4096x4096").split("x"))
x = torch.randn(rows, len_, device="cuda", dtype=torch.float16)
w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
out = torch.empty_like(x)
kernelkit.layer_norm(x, (len_,), w, b, out=out)
v = next(v for v in norm.OPS["layer_norm"].variants if v.name == "fast")
kernel, cfg = norm._plan(v, x.dtype, 0, len_, True, False, rows)
args = (x.data_ptr(), out.data_ptr(), w.data_ptr(), b.data_ptr(), rows, len_, np.float32(1e-5), np.int32(0))
block = 256 if cfg[0] <= 32 else cfg[0]
parts = {
    "kernelkit.layer_norm": lambda: kernelkit.layer_norm(x, (len_,), w, b, out=out),
    "_check": lambda: norm._check("layer_norm", x, (len_,), w, b, out),
    "_norm_into": lambda: norm._norm_into(x, out, w, b, len_, 1e-5, False, None),
    "_run": lambda: norm._run(v, x, out, w, b, rows, len_, 1e-5, False),
    "_plan": lambda: norm._plan(v, x.dtype, 0, len_, True, False, rows),
    "vec_ok": lambda: _rowwise.vec_ok(len_, x.dtype, x, out, w, b),
    "args": lambda: (x.data_ptr(), out.data_ptr(), w.data_ptr(), b.data_ptr(), rows, len_, np.float32(1e-5), np.int32(0)),
    "pick_variant": lambda: norm.pick_variant(norm.OPS["layer_norm"], None, x.dtype),
    "is_compiling": lambda: torch.compiler.is_compiling(),
    "launch (runtime)": lambda: rt_launch.launch(kernel, 1320, block, *args, shmem=16384, device_index=0),
}
for name, fn in parts.items():
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(400):
            fn()
        best = min(best, (time.perf_counter() - t) / 400)
        torch.cuda.synchronize()
    print(f"{name:24s} {best * 1e6:7.2f} us")
