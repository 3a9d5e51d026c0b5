import importlib, torch, numpy as np
import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from kernelkit.ops._rowwise import allow_shared, resident_blocks, launch_persistent
norm = importlib.import_module("kernelkit.ops.norm")
rows, len_ = 4096, 4096
x = torch.randn(rows, len_, device="cuda", dtype=torch.float16); out = torch.empty_like(x)
w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
args = (x.data_ptr(), out.data_ptr(), w.data_ptr(), b.data_ptr(), rows, len_, np.float32(1e-5), np.int32(0))
fns, labels = [], []
for g in (1, 2, 5):
    k = get_kernel("norm.cu", f"kk::norm_rows_groups<__half, 128, 4, {g}>", device_index=0)
    allow_shared(k, 16384, 0)
    res = resident_blocks(k, 128 * g, 1, 0, 16384)
    print("groups", g, "resident CTAs", res, "regs", k.attributes.num_regs, "local", k.attributes.local_size_bytes)
    blocks = min(-(-rows // g), res)
    fns.append(lambda k=k, blocks=blocks, g=g: launch(k, blocks, 128 * g, *args, shmem=16384, device_index=0)); labels.append(f"groups {g}")
k0 = get_kernel("norm.cu", "kk::norm_rows<__half, 128, 4, 1, true, false, false, true>", device_index=0)
print("staged resident", resident_blocks(k0, 128, 1, 0, 16384), "regs", k0.attributes.num_regs)
fns.append(lambda: launch_persistent(k0, rows, 128, 1, 16384, *args, dev=0)); labels.append("staged")
fns.append(lambda: out.copy_(x)); labels.append("copy")
t = time_interleaved(fns, reps=200, warmup=5, flush_l2=True)
for l, tt in zip(labels, t): print(f"  {l:12s} {tt.median_us:7.2f} us")
