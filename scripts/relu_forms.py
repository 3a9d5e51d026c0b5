"""16-bit ReLU at 2^28: the fast rung's fp32 round trip against the integer-domain form (kk::ReluHalfBits:
the lanes' bits compared and masked, no conversion), the lean form of the fast rung (unary_lean: 32-bit
indices, prologue and epilogue behind the vector path) at 512, 256 and 128 threads, GELU's fast rung (the
same bytes, far more math) and torch, all in one interleaved run over four input copies, several tries.
Each form is first checked bit for bit against torch.relu on every fp16 bit pattern (the lean form also
on offset views and lengths that leave a tail).

    KK_SIZE=268435456 KK_TRIES=3 KK_BLOCK=512 python scripts/relu_forms.py

The experimental kernels it times (unary_lean, kk::ReluHalfBits, kk::ReluNanMax) live in csrc at commit
d05382a (session 15), not after it: run it on that commit's tree.
"""
import os

import torch

from kernelkit.bench import time_interleaved
from kernelkit.runtime import get_kernel, launch
from rowbench import device_line, prefer_shared_carveout

N = int(os.environ.get("KK_SIZE", str(1 << 28)))
TRIES = int(os.environ.get("KK_TRIES", "3"))
BLOCK = int(os.environ.get("KK_BLOCK", "512"))
FORMS = {
    "relu fp32 round trip (fast rung)": ("relu.cu", "kk::unary_fast<__half, kk::Relu, 1, true, false>"),
    "relu on the bits": ("relu.cu", "kk::unary_fast<__half, kk::ReluHalfBits, 1, true, false>"),
    "gelu fast rung (reference)": ("gelu.cu", "kk::unary_fast<__half, kk::GeluTanhFast, 1, true, false>"),
    "relu lean": ("relu.cu", "kk::unary_lean<__half, kk::Relu, true>"),
    "relu nan-max": ("relu.cu", "kk::unary_fast<__half, kk::ReluNanMax, 1, true, false>"),
    "relu lean nan-max": ("relu.cu", "kk::unary_lean<__half, kk::ReluNanMax, true>"),
    "relu lean bits": ("relu.cu", "kk::unary_lean<__half, kk::ReluHalfBits, true>"),
    "relu lean coherent": ("relu.cu", "kk::unary_lean<__half, kk::Relu, true, true>"),
    "relu lean nan-max coherent": ("relu.cu", "kk::unary_lean<__half, kk::ReluNanMax, true, true>"),
}
FORMS = {k: v for k, v in FORMS.items() if not os.environ.get("KK_FORMS") or k in os.environ["KK_FORMS"].split(";")}
LEAN_BLOCKS = tuple(int(b) for b in os.environ.get("KK_LEAN_BLOCKS", "512,128").split(","))

print(device_line(f"block {BLOCK}"))
kernels = {name: get_kernel(src, k, device_index=0) for name, (src, k) in FORMS.items()}
# KK_CARVEOUT="form=percent;...": a shared-memory carveout hint for some forms (the L1 / shared split)
for item in filter(None, os.environ.get("KK_CARVEOUT", "").split(";")):
    form, pct = item.split("=")
    prefer_shared_carveout(kernels[form], int(pct), 0)
    print(f"{form}: carveout hint {pct}%")


def run(kernel, x, out):
    launch(kernel, x.numel() // 8 // BLOCK + 1, BLOCK, out.data_ptr(), x.data_ptr(), x.numel(), 0)


def run_lean(kernel, x, out, block):
    head = (-out.data_ptr() % 16) // 2
    nvec = (x.numel() - head) // 8
    tail = x.numel() - head - nvec * 8
    launch(kernel, (nvec + head + tail + block - 1) // block, block, out.data_ptr() + 2 * head,
           x.data_ptr() + 2 * head, nvec, head, tail)


LEAN = next(n for n in FORMS if "lean" in n)
base = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
for off, n in ((0, 1 << 20), (1, (1 << 20) - 1), (3, 1000003), (0, 7), (5, 3), (0, 4097)):
    x = base[off:off + n]
    got = torch.full_like(base, float("nan"))[off:off + n]  # misaligned as x is (the kernel's kInAligned)
    run_lean(kernels[LEAN], x, got, 256)
    ok = torch.equal(got.view(torch.int16), torch.relu(x).view(torch.int16))
    print(f"{LEAN}, offset {off} length {n}: {'bit-identical' if ok else 'DIFFERS'} to torch.relu")


bits = torch.arange(65536, dtype=torch.int32, device="cuda").to(torch.int16).view(torch.float16)
for name in [n for n in FORMS if n.startswith("relu")]:
    got = torch.empty_like(bits)
    if "lean" in name:
        run_lean(kernels[name], bits, got, 256)
    else:
        run(kernels[name], bits, got)
    want = torch.relu(bits)
    same = (got.view(torch.int16) == want.view(torch.int16)) | (got.isnan() & want.isnan())
    print(f"{name}: {int((~same).sum())} of 65536 fp16 bit patterns differ from torch.relu "
          f"(values: {int((got.float() != want.float()).logical_and(~(got.isnan() & want.isnan())).sum())})")

xs = [torch.randn(N, device="cuda", dtype=torch.float16) for _ in range(4)]
nbytes = 2 * N * 2
fns = {"torch relu": lambda i: torch.relu(xs[i % 4])}
for name, k in kernels.items():
    if "lean" in name:
        for b in LEAN_BLOCKS:
            fns[f"{name} {b}"] = lambda i, k=k, b=b: run_lean(k, xs[i % 4], torch.empty_like(xs[i % 4]), b)
    else:
        fns[name] = lambda i, k=k: run(k, xs[i % 4], torch.empty_like(xs[i % 4]))
for t in range(TRIES):
    times = time_interleaved(list(fns.values()), working_set_bytes=nbytes, reps=300, max_seconds=4.0)
    print(f"try {t} ({times[0].reps} rounds):")
    for name, tm in zip(fns, times):
        print(f"  {nbytes / tm.seconds / 1e9:7.1f} GB/s  {times[0].median_ms / tm.median_ms:.4f}x torch  {name}")
