import torch, numpy as np
from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from kernelkit.ops._rowwise import allow_shared, resident_blocks, launch_persistent
R = 4
for rows, len_ in ((4096, 4096), (4096, 4096), (2048, 4096), (8192, 4096)):
    xs = [torch.randn(rows, len_, device="cuda", dtype=torch.float16) for _ in range(R)]
    outs = [torch.empty_like(xs[0]) for _ in range(R)]
    w, b = torch.randn(2, len_, device="cuda", dtype=torch.float16)
    turn = [0]
    def args(rms, w=w, b=b, xs=xs, outs=outs, rows=rows, len_=len_, turn=turn):
        i = turn[0] = (turn[0] + 1) % R
        return (xs[i].data_ptr(), outs[i].data_ptr(), w.data_ptr(), 0 if rms else b.data_ptr(), rows, len_, np.float32(1e-5), np.int32(rms)), i
    fns, labels = [], []
    k = get_kernel("norm.cu", "kk::norm_rows_groups<__half, 128, 4, 2>", device_index=0)
    allow_shared(k, 32768, 0)
    res = resident_blocks(k, 256, 1, 0, 32768)
    k0 = get_kernel("norm.cu", "kk::norm_rows<__half, 128, 4, 1, true, false, false, true>", device_index=0)
    for rms in (0, 1):
        def run(rms=rms, blocks=min(-(-rows // 2), res)):
            a, _ = args(rms)
            launch(k, blocks, 256, *a, shmem=32768, device_index=0)
        def run0(rms=rms):
            a, _ = args(rms)
            launch_persistent(k0, rows, 128, 1, 16384, *a, dev=0)
        fns += [run, run0]; labels += [f"{'rms' if rms else 'ln'} groups 2 floats", f"{'rms' if rms else 'ln'} staged"]
    def copy():
        _, i = args(0)
        outs[i].copy_(xs[i])
    fns.append(copy); labels.append("copy")
    # correctness of the groups kernel against the staged one
    for rms in (0, 1):
        a, i = args(rms); launch(k, min(-(-rows // 2), res), 256, *a, shmem=32768, device_index=0); g = outs[i].clone()
        launch_persistent(k0, rows, 128, 1, 16384, *a, dev=0); torch.cuda.synchronize()
        print("max diff vs staged", rms, (g.float() - outs[i].float()).abs().max().item())
    t = time_interleaved(fns, reps=300, warmup=5, flush_l2=True, max_seconds=30)
    print(rows, len_, "resident", res)
    for l, tt in zip(labels, t): print(f"  {l:28s} {tt.median_us:7.2f} us")
