"""Rates of the sliding-window filters (filter2d, gaussian_blur, box_filter, sobel): for each case, the rungs
named, torch's expression of the op and a copy moving the same bytes, timed in turn in one loop (L2 flushed,
order shuffled, medians). GB/s counts effective bytes: the input read once and the output written once.

    python benchmarks/filter_rates.py [--cases f2d5_f32,gauss5_rgb ...] [--seconds 1.5] [--out FILE.json]

Each rung is checked against torch's expression before it is timed (floats within 1e-2 relative to the
largest value, uint8 within 1): a wrong kernel is reported, not timed.
"""
from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench.timing import time_interleaved
from kernelkit.ops.window._common import random_image
from kernelkit.ops.window.gaussian_blur import _torch_blur

K8 = (8192, 8192)
K4 = (2160, 3840)
F32, F16, BF16, U8 = torch.float32, torch.float16, torch.bfloat16, torch.uint8


def _kernel(k: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(k)
    return (torch.randn(k, k, generator=g) / k).cuda()


# name: (op, dtype, shape, keyword arguments, rungs, offset in elements of the input view)
CASES = {
    "f2d5_f32": ("filter2d", F32, K8, {"kernel": 5}, ("registers", "pipelined"), 0),
    "f2d5_f32_4k": ("filter2d", F32, K4, {"kernel": 5}, ("registers", "pipelined"), 0),
    "f2d5_f32_off": ("filter2d", F32, K8, {"kernel": 5}, ("pipelined",), 1),
    "f2d5_f16": ("filter2d", F16, K8, {"kernel": 5}, ("registers", "pipelined"), 0),
    "f2d5_u8": ("filter2d", U8, K8, {"kernel": 5}, ("registers", "pipelined"), 0),
    "f2d3_f32": ("filter2d", F32, K8, {"kernel": 3}, ("pipelined",), 0),
    "f2d7_f32": ("filter2d", F32, K8, {"kernel": 7}, ("pipelined",), 0),
    "f2d15_f32": ("filter2d", F32, K8, {"kernel": 15}, ("vector",), 0),
    "f2d31_f32": ("filter2d", F32, K8, {"kernel": 31}, ("vector",), 0),
    "gauss7_f32": ("gaussian_blur", F32, K8, {"kernel_size": 7}, ("fused", "pipelined"), 0),
    "gauss7_f16": ("gaussian_blur", F16, K8, {"kernel_size": 7}, ("fused", "pipelined"), 0),
    "gauss7_f32_off": ("gaussian_blur", F32, K8, {"kernel_size": 7}, ("pipelined",), 1),
    "gauss7_f16_off": ("gaussian_blur", F16, K8, {"kernel_size": 7}, ("pipelined",), 1),
    "sobel_f32_off": ("sobel", F32, K8, {}, ("pipelined",), 3),
    "gauss7_u8": ("gaussian_blur", U8, K8, {"kernel_size": 7}, ("fused", "pipelined", "strips"), 0),
    "gauss5_u8": ("gaussian_blur", U8, K8, {"kernel_size": 5}, ("pipelined", "strips"), 0),
    "gauss3_u8": ("gaussian_blur", U8, K8, {"kernel_size": 3}, ("pipelined", "strips"), 0),
    "gauss5_u8_1080p": ("gaussian_blur", U8, (1080, 1920), {"kernel_size": 5}, ("pipelined", "strips"), 0),
    "gauss15_f32": ("gaussian_blur", F32, K8, {"kernel_size": 15}, ("pipelined",), 0),
    "gauss31_f32": ("gaussian_blur", F32, K8, {"kernel_size": 31}, ("pipelined",), 0),
    "gauss5_rgb": ("gaussian_blur", U8, (*K4, 3), {"kernel_size": 5, "channels_last": True}, ("fused", "pipelined"), 0),
    "box5_u8": ("box_filter", U8, K8, {"kernel_size": 5}, ("pipelined", "strips"), 0),
    "box3_u8": ("box_filter", U8, K8, {"kernel_size": 3}, ("pipelined", "strips"), 0),
    "sobel_f32": ("sobel", F32, K8, {}, ("fused", "pipelined"), 0),
    "sobel_f16": ("sobel", F16, K8, {}, ("fused", "pipelined"), 0),
    "sobel_u8": ("sobel", U8, K8, {}, ("fused", "pipelined"), 0),
}
TORCH_SKIP = {"f2d31_f32", "gauss31_f32", "gauss15_f32"}  # cuDNN takes seconds a call there


def _planes(x: torch.Tensor, hwc: bool) -> torch.Tensor:
    """x as (planes, 1, H, W) float32 (HWC images channel-major, as a CHW tensor would reach torch)."""
    if hwc:
        x = x.permute(2, 0, 1)
    return x.reshape(-1, 1, x.shape[-2], x.shape[-1]).float()


def _from_planes(y: torch.Tensor, x: torch.Tensor, hwc: bool) -> torch.Tensor:
    if x.dtype == U8:
        y = y.round().clamp(0, 255)
    if hwc:
        return y.reshape(x.shape[2], x.shape[0], x.shape[1]).permute(1, 2, 0).to(x.dtype)
    return y.to(x.dtype).reshape(x.shape)


def torch_expression(op: str, x: torch.Tensor, kw: dict):
    """What a torch user writes for the op (conv2d over padded planes), as a function of no arguments."""
    hwc = kw.get("channels_last", False)
    if op == "filter2d":
        k = kw["kernel"]
        return lambda: _from_planes(F.conv2d(F.pad(_planes(x, hwc), (k.shape[1] // 2,) * 2 + (k.shape[0] // 2,) * 2),
                                             k[None, None]), x, hwc)
    if op == "gaussian_blur":
        if hwc:
            return lambda: _torch_blur(x.permute(2, 0, 1), kw["kernel_size"]).permute(1, 2, 0)
        return lambda: _torch_blur(x, kw["kernel_size"])
    if op == "box_filter":
        k = kw["kernel_size"]
        return lambda: _from_planes(F.avg_pool2d(F.pad(_planes(x, hwc), (k // 2,) * 4, mode="reflect"), k, stride=1),
                                    x, hwc)
    if op == "sobel":
        w = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], device="cuda")
        w = torch.stack([w, w.t()])[:, None]
        return lambda: _from_planes(F.conv2d(F.pad(_planes(x, hwc), (1, 1, 1, 1), mode="reflect"), w)
                                    .square().sum(1, keepdim=True).sqrt(), x, hwc)
    raise ValueError(op)


def run_case(name: str, seconds: float) -> dict:
    op, dtype, shape, kw, rungs, offset = CASES[name]
    n = 1
    for s in shape:
        n *= s
    x = random_image((n + offset,), dtype)[offset:].view(shape)
    kw = dict(kw)
    if "kernel" in kw:
        kw["kernel"] = _kernel(kw["kernel"])
    fn = getattr(kernelkit, op)
    nbytes = 2 * x.numel() * x.element_size()
    calls = {r: (lambda r=r: fn(x, **kw, variant=r)) for r in rungs}
    if name not in TORCH_SKIP:
        calls["torch"] = torch_expression(op, x, kw)
    src = torch.randint(0, 256, (nbytes // 2,), dtype=U8, device="cuda")
    calls["copy"] = lambda: src.clone()
    want = calls["torch"]() if "torch" in calls else None
    row = {"case": name, "op": op, "dtype": str(dtype).replace("torch.", ""), "shape": list(shape),
           "offset": offset, "bytes": nbytes, "device": torch.cuda.get_device_name(), "rungs": {}}
    for r in rungs:
        got = calls[r]()
        if want is not None:
            err = (got.double() - want.double()).abs().max().item()
            tol = 1.0 if dtype == U8 else 1e-2 * max(1.0, want.double().abs().max().item())
            if not err <= tol:
                row["rungs"][r] = {"error": f"max |ours - torch| = {err}"}
                del calls[r]
    names = list(calls)
    times = time_interleaved([calls[k] for k in names], warmup=2, reps=50, max_seconds=seconds, shuffle=True,
                             working_set_bytes=nbytes)
    copy_us = times[names.index("copy")].median_us
    for k, t in zip(names, times):
        gbs = nbytes / (t.median_us * 1e-6) / 1e9
        row["rungs"][k] = {"us": round(t.median_us, 2), "gbs": round(gbs, 1),
                           "pct_copy": round(100 * copy_us / t.median_us, 1)}
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--seconds", type=float, default=1.5, help="time budget of a case's timing loop")
    ap.add_argument("--out", default=None, help="write the environment and the rows as JSON here")
    a = ap.parse_args(argv)
    rows = []
    for name in a.cases.split(","):
        row = run_case(name, a.seconds)
        rows.append(row)
        cells = "  ".join(f"{k} {v['gbs']:.0f} GB/s {v['pct_copy']:.0f}%" if "gbs" in v else f"{k} {v['error']}"
                          for k, v in row["rungs"].items())
        print(f"{name:14s} {row['dtype']:8s} {'x'.join(map(str, row['shape'])):>14s}  {cells}", flush=True)
    if a.out:
        from kernelkit.bench import write_json
        write_json(a.out, {"cases": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
