"""Where the host time of one small kernelkit call goes (run on a GPU machine)."""
import cProfile
import ctypes
import pstats
import time

import numpy as np
import torch

import kernelkit
from kernelkit.runtime import get_kernel, launch
from kernelkit.runtime.launch import current_stream


def us(fn, n=20000):
    for _ in range(500):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


x = torch.randn(4096, device="cuda")
out = torch.empty_like(x)
name = "kk::unary_vector<float, 4, kk::GeluTanh>"
k = get_kernel("gelu.cu", name, device_index=0)
from cuda.core import LaunchConfig, launch as cc_launch  # noqa: E402

cfg = LaunchConfig(grid=(4,), block=(256,), shmem_size=0)
s = current_stream()
xp, op = x.data_ptr(), out.data_ptr()
libcuda = ctypes.CDLL("libcuda.so.1")
fh = ctypes.c_void_p(int(k.handle))
a0, a1, a2 = ctypes.c_uint64(op), ctypes.c_uint64(xp), ctypes.c_int64(4096)
params = (ctypes.c_void_p * 3)(ctypes.addressof(a0), ctypes.addressof(a1), ctypes.addressof(a2))
raw = torch._C._cuda_getCurrentRawStream(0)
try:
    from cuda.bindings import driver as drv

    dfn = drv.CUfunction(int(k.handle))
    dstream = drv.CUstream(raw)
    dargs = ((op, xp, 4096), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64))
    drv_launch = lambda: drv.cuLaunchKernel(dfn, 4, 1, 1, 256, 1, 1, 0, dstream, dargs, 0)  # noqa: E731
    drv_launch()
except Exception as exc:  # report, keep the other rows
    print("cuda.bindings launch unavailable:", exc)
    drv_launch = lambda: None  # noqa: E731
rows = {
    "cuda.bindings cuLaunchKernel (args tuple)": us(drv_launch),
    "python no-op": us(lambda: None),
    "torch.empty_like": us(lambda: torch.empty_like(x)),
    "torch.empty_like(contiguous_format)": us(lambda: torch.empty_like(x, memory_format=torch.contiguous_format)),
    "x.new_empty(x.shape)": us(lambda: x.new_empty(x.shape)),
    "torch.empty(shape, dtype, device)": us(lambda: torch.empty(x.shape, dtype=x.dtype, device=x.device)),
    "x.is_contiguous()": us(lambda: x.is_contiguous()),
    "x.contiguous()": us(lambda: x.contiguous()),
    "x.numel()": us(lambda: x.numel()),
    "x.get_device()": us(lambda: x.get_device()),
    "np.int32(0)": us(lambda: np.int32(0)),
    "torch.cuda.current_stream()": us(lambda: torch.cuda.current_stream()),
    "torch._C._cuda_getCurrentRawStream": us(lambda: torch._C._cuda_getCurrentRawStream(0)),
    "torch.compiler.is_compiling()": us(lambda: torch.compiler.is_compiling()),
    "x.data_ptr()": us(lambda: x.data_ptr()),
    "cuda.core launch (cached cfg, stream)": us(lambda: cc_launch(s, cfg, k, op, xp, 4096)),
    "kernelkit launch()": us(lambda: launch(k, 4, 256, op, xp, 4096)),
    "ctypes cuLaunchKernel (prepacked)": us(lambda: libcuda.cuLaunchKernel(fh, 4, 1, 1, 256, 1, 1, 0, ctypes.c_void_p(raw), params, None)),
    "torch gelu": us(lambda: torch.nn.functional.gelu(x, approximate="tanh")),
    "kernelkit.gelu(x, out=out)": us(lambda: kernelkit.gelu(x, out=out)),
    "kernelkit.gelu(x)": us(lambda: kernelkit.gelu(x)),
}
for kk, v in rows.items():
    print(f"{v:8.2f} us  {kk}")
pr = cProfile.Profile()
pr.enable()
for _ in range(3000):
    kernelkit.gelu(x)
pr.disable()
torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
