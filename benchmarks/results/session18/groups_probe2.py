import importlib, torch, numpy as np
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from kernelkit.ops._rowwise import allow_shared, resident_blocks, launch_persistent
rows, len_ = 4096, 4096
R = 4
xs = [torch.randn(rows, len_, device="cuda", dtype=torch.float16) for _ in range(R)]
outs = [torch.empty_like(xs[0]) for _ in range(R)]
w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
turn = [0]
def args():
    i = turn[0] = (turn[0] + 1) % R
    return (xs[i].data_ptr(), outs[i].data_ptr(), w.data_ptr(), b.data_ptr(), rows, len_, np.float32(1e-5), np.int32(0)), i
fns, labels = [], []
for g, macros in ((1, ()), (1, ("KK_G_LOOP=1",)), (1, ("KK_G_NOSYNC=1",)), (1, ("KK_G_LOOP=1", "KK_G_NOSYNC=1")), (2, ()), (2, ("KK_G_LOOP=1",))):
    k = get_kernel("norm.cu", f"kk::norm_rows_groups<__half, 128, 4, {g}>", device_index=0,
                   extra_options=tuple(f"define_macro={m}" for m in macros))
    allow_shared(k, 16384, 0)
    blocks = min(-(-rows // g), resident_blocks(k, 128 * g, 1, 0, 16384))
    def run(k=k, blocks=blocks, g=g):
        a, _ = args()
        launch(k, blocks, 128 * g, *a, shmem=16384, device_index=0)
    fns.append(run); labels.append(f"groups {g} {'+'.join(macros)}")
k0 = get_kernel("norm.cu", "kk::norm_rows<__half, 128, 4, 1, true, false, false, true>", device_index=0)
def run0():
    a, _ = args()
    launch_persistent(k0, rows, 128, 1, 16384, *a, dev=0)
fns.append(run0); labels.append("staged")
def copy():
    _, i = args()
    outs[i].copy_(xs[i])
fns.append(copy); labels.append("copy")
for rep in range(2):
    t = time_interleaved(fns, reps=300, warmup=5, flush_l2=True, max_seconds=30)
    for l, tt in zip(labels, t): print(f"  {l:40s} {tt.median_us:7.2f} us")
