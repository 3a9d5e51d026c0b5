"""A small workload of every pipelined window kernel, for compute-sanitizer (memcheck and racecheck):

    compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 python scripts/window_pipelined_workload.py
    compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9 python scripts/window_pipelined_workload.py

Many small planes make more tiles than resident blocks, so each persistent block computes several tiles and
refills both of its buffers (the copies of the next tile in flight while one is read); offset views with odd
widths take the unaligned kernels (a shift per row). Outputs are not checked here (tests/test_window_gpu.py
does that); the sanitizer's verdict is the result.
"""
import torch

import kernelkit


def image(shape, dtype, offset):
    n = 1
    for s in shape:
        n *= s
    if dtype == torch.uint8:
        base = torch.randint(0, 256, (n + offset,), dtype=dtype, device="cuda")
    else:
        base = torch.randn(n + offset, device="cuda").to(dtype)
    return base[offset:].view(shape)


def main():
    torch.manual_seed(0)
    blocks = 4 * torch.cuda.get_device_properties(0).multi_processor_count  # more tiles than resident blocks
    for dtype in (torch.float32, torch.bfloat16, torch.uint8):
        for offset in (0, 1):
            x = image((blocks, 9, 37 + 4 * offset), dtype, offset)  # one tile a plane
            for k in (3, 5, 7):
                kernelkit.filter2d(x, torch.randn(k, k, device="cuda"), border="reflect", variant="pipelined")
            kernelkit.filter2d(x, torch.randn(5, 5, device="cuda"), border="zero", variant="pipelined")
            for ks in (3, 5, 7, [3, 15], 31):
                kernelkit.gaussian_blur(x, ks, variant="pipelined")
            kernelkit.sobel(x, border="replicate", variant="pipelined")
            kernelkit.box_filter(x, 3, normalize=False, variant="pipelined")
            if dtype == torch.uint8:
                for c in (3, 4):
                    xc = image((blocks, 5, 35 + offset, c), dtype, offset)
                    kernelkit.gaussian_blur(xc, 5, channels_last=True, variant="pipelined")
                    kernelkit.filter2d(xc, torch.randn(7, 7, device="cuda"), channels_last=True, variant="pipelined")
                    kernelkit.sobel(xc, channels_last=True, variant="pipelined")
    torch.cuda.synchronize()
    print("window pipelined workload: done")


if __name__ == "__main__":
    main()
