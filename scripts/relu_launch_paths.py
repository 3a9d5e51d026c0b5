"""Does the launch path move a 2^28 fp16 ReLU? The same NVRTC-compiled kernels launched by kernelkit
(cuda.core: a CUlibrary kernel, cuLaunchKernelEx) and by CuPy (its own NVRTC build, a CUmodule,
cuLaunchKernel), and the same source built by nvcc into a torch extension (runtime API, <<<>>>),
beside torch.relu, all in one interleaved run on torch's current stream.

    KK_TRIES=2 python scripts/relu_launch_paths.py

Its lean kernel (unary_lean, kk::ReluNanMax) lives in csrc at commit d05382a (session 15) only.
"""
import os
from pathlib import Path

import torch

from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from rowbench import device_line

N = 1 << 28
TRIES = int(os.environ.get("KK_TRIES", "2"))
CSRC = Path(__file__).resolve().parents[1] / "src" / "kernelkit" / "csrc"
FAST = "kk::unary_fast<__half, kk::Relu, 1, true, false>"
LEAN = "kk::unary_lean<__half, kk::ReluNanMax, true, true>"
print(device_line())

xs = [torch.randn(N, device="cuda", dtype=torch.float16) for _ in range(4)]
nvec = N // 8


def kk_launch(k, block, lean):
    def run(i):
        x = xs[i % 4]
        out = torch.empty_like(x)
        if lean:
            launch(k, nvec // block, block, out.data_ptr(), x.data_ptr(), nvec, 0, 0)
        else:
            launch(k, nvec // block + 1, block, out.data_ptr(), x.data_ptr(), N, 0)
    return run


fns = {"torch relu": lambda i: torch.relu(xs[i % 4])}
fns["kernelkit fast 512"] = kk_launch(get_kernel("relu.cu", FAST, device_index=0), 512, False)
fns["kernelkit lean 128"] = kk_launch(get_kernel("relu.cu", LEAN, device_index=0), 128, True)

try:
    import cupy as cp

    inc = [f"-I{CSRC}", "-I/usr/local/cuda/include", "-I/usr/local/cuda/include/cccl", "-std=c++17"]
    mod = cp.RawModule(code=f'#include "relu.cu"\n', options=tuple(inc), name_expressions=(FAST, LEAN))
    cfast, clean = mod.get_function(FAST), mod.get_function(LEAN)

    def cp_launch(f, block, lean):
        def run(i):
            x = xs[i % 4]
            out = torch.empty_like(x)
            with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                if lean:
                    f((nvec // block,), (block,), (out.data_ptr(), x.data_ptr(), cp.int64(nvec), cp.int64(0), cp.int64(0)))
                else:
                    f((nvec // block + 1,), (block,), (out.data_ptr(), x.data_ptr(), cp.int64(N), cp.int64(0)))
        return run

    fns["cupy fast 512"] = cp_launch(cfast, 512, False)
    fns["cupy lean 128"] = cp_launch(clean, 128, True)
except Exception as exc:  # noqa: BLE001
    print(f"cupy path unavailable: {exc}")

try:
    from torch.utils.cpp_extension import load_inline

    cuda_src = f'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include "relu.cu"
void fast(torch::Tensor out, torch::Tensor x) {{
  long long n = x.numel();
  kk::unary_fast<__half, kk::Relu, 1, true, false><<<n / 8 / 512 + 1, 512, 0, at::cuda::getCurrentCUDAStream()>>>(
      (__half*)out.data_ptr(), (const __half*)x.data_ptr(), n, 0);
}}
void lean(torch::Tensor out, torch::Tensor x) {{
  long long nv = x.numel() / 8;
  kk::unary_lean<__half, kk::ReluNanMax, true, true><<<nv / 128, 128, 0, at::cuda::getCurrentCUDAStream()>>>(
      (__half*)out.data_ptr(), (const __half*)x.data_ptr(), nv, 0, 0);
}}
'''
    ext = load_inline("kk_relu_paths", cpp_sources="void fast(torch::Tensor out, torch::Tensor x);\n"
                      "void lean(torch::Tensor out, torch::Tensor x);", cuda_sources=cuda_src,
                      functions=["fast", "lean"], extra_cuda_cflags=[f"-I{CSRC}", "-arch=sm_90", "-O3"],
                      extra_include_paths=[str(CSRC)], verbose=False)
    fns["nvcc <<<>>> fast 512"] = lambda i: ext.fast(torch.empty_like(xs[i % 4]), xs[i % 4])
    fns["nvcc <<<>>> lean 128"] = lambda i: ext.lean(torch.empty_like(xs[i % 4]), xs[i % 4])
except Exception as exc:  # noqa: BLE001
    print(f"nvcc path unavailable: {str(exc)[-800:]}")

nbytes = 2 * N * 2
for t in range(TRIES):
    times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=300, max_seconds=4.0)
    print(f"try {t} ({times[0].reps} rounds):")
    for name, tm in zip(fns, times):
        print(f"  {nbytes / tm.seconds / 1e9:7.1f} GB/s  {times[0].median_ms / tm.median_ms:.4f}x torch  {name}")
