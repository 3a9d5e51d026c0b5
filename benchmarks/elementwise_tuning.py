"""The element-wise family on one GPU: every rung at 2^28 elements with torch beside it, the fast
rungs' launch shapes (through each op's ``config=``, an ``ElementwiseLaunch``), and the misaligned cases.

    python benchmarks/elementwise_tuning.py --warm          # build every element-wise kernel for sm_90 (parallel)
    python benchmarks/elementwise_tuning.py --out DIR [--seconds 0.25] [--only add,relu,saxpy,invert_colors,...]

Writes DIR/elementwise-tuning-<ops>.json (``all`` without --only).

Timing: kernelkit.bench.time_cuda (CUDA events around each call, warm-up first, median); buffers of
2^28 elements are far larger than L2, so no flush is needed. Rates count the op's bytes_moved
(read + write) and are compared with the measured device copy of the same number of bytes.
Findings: docs/design/elementwise.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from kernelkit.ops.elementwise import ElementwiseLaunch

N = 1 << 28


def _label(cfg: ElementwiseLaunch) -> str:
    return f"block={cfg.block} {f'{cfg.blocks_per_sm} an SM' if cfg.blocks_per_sm else 'no limit'}"


def _compile(job):
    from kernelkit.runtime import compile_source

    source, names, arch = job
    try:
        compile_source(source, names, arch)
    except Exception as exc:  # report, and let the tests say what it means
        return f"{source}: {type(exc).__name__}: {str(exc)[:300]}"
    return None


def warm(arch: str = "sm_90") -> None:
    """Compile every rung's kernels (one build each, as the ops load them) so tests and timing never wait."""
    import kernelkit

    jobs = set()
    for name in kernelkit.ops():
        op = kernelkit.get_op(name)
        if op.family != "elementwise":
            continue
        for v in op.variants:
            for dt in v.dtypes:
                for p in op.param_combinations():
                    for k in v.kernels(dt, **p):
                        jobs.add((k.source, (k.name,), arch + k.arch_suffix))
    with ProcessPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as pool:
        errors = [e for e in pool.map(_compile, sorted(jobs)) if e]
    print(f"warmed {len(jobs)} element-wise builds for {arch}" + "".join(f"\n  {e}" for e in errors))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--out", default=".")
    ap.add_argument("--only", default="")
    ap.add_argument("--seconds", type=float, default=0.25, help="timed seconds per measurement")
    a = ap.parse_args(argv)
    if a.warm:
        warm()
        return 0
    import kernelkit
    from kernelkit.bench import copy_bandwidth, time_cuda

    only = set(filter(None, a.only.split(",")))
    rows: list[dict] = []
    copy_cache: dict[int, float] = {}

    def copy_gbs(nbytes: int) -> float:
        if nbytes not in copy_cache:
            copy_cache[nbytes] = copy_bandwidth(nbytes)
        return copy_cache[nbytes]

    def rec(op, case, rung, fn, nbytes, torch_us=None, **extra):
        t = time_cuda(fn, working_set_bytes=nbytes, max_seconds=a.seconds, warmup=5)
        us = t.median_us
        gbs = nbytes / us / 1e3
        row = dict(op=op, case=case, rung=rung, median_us=round(us, 2), min_us=round(t.min_us, 2),
                   gbs=round(gbs, 1), pct_copy_same_bytes=round(100 * gbs / copy_gbs(nbytes), 1),
                   vs_torch=round(torch_us / us, 3) if torch_us else None, reps=t.reps, **extra)
        rows.append(row)
        print(f"{op:16s} {case:28s} {rung:26s} {us:9.1f} us {gbs:7.0f} GB/s {row['pct_copy_same_bytes']:6.1f}% copy"
              + (f"  x{row['vs_torch']:.2f} torch" if torch_us else ""), flush=True)
        return us

    def ladder(opname, shape, dtype, args, kwargs, extra_cases=()):
        op = kernelkit.get_op(opname)
        nbytes = op.bytes_moved(*args, **kwargs)
        case = f"{'x'.join(map(str, shape))} {str(dtype)[6:]}"
        tus = rec(opname, case, "torch eager", lambda: op.torch_fn(*args, **kwargs), nbytes)
        for v in op.variants_for(dtype):
            rec(opname, case, v.name, lambda v=v: op.call(*args, variant=v.name, **kwargs), nbytes, tus)
        return tus

    large = copy_bandwidth(None)
    print(f"copy ceiling (large buffers): {large:.0f} GB/s", flush=True)
    want = lambda name: not only or name in only  # noqa: E731

    if want("add"):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(16384, 16384, device="cuda", dtype=dt)
            y = torch.randn_like(x)
            ladder("add", (16384, 16384), dt, (x, y), {})
            del x, y
        # misaligned by different amounts: a at +1 element, b at +2, out aligned
        for dt in (torch.float32, torch.float16):
            buf_a = torch.randn(N + 8, device="cuda", dtype=dt)
            buf_b = torch.randn(N + 8, device="cuda", dtype=dt)
            xa, xb = buf_a[1:N + 1], buf_b[2:N + 2]
            out = torch.empty(N, device="cuda", dtype=dt)
            nbytes = 3 * N * xa.element_size()
            case = f"2^28 {str(dt)[6:]} a+1 b+2"
            tus = rec("add", case, "torch eager", lambda: torch.add(xa, xb, out=out), nbytes)
            for r in ("1d", "shuffle", "fast"):
                rec("add", case, r, lambda r=r: kernelkit.add(xa, xb, out=out, variant=r), nbytes, tus)
            del buf_a, buf_b, out
        # the fast rungs' launch shapes (aligned): block x blocks an SM; 256 x 6 is add's and saxpy's rule
        shapes = (ElementwiseLaunch(512), ElementwiseLaunch(256), ElementwiseLaunch(256, 6), ElementwiseLaunch(1024))
        for dt in (torch.float32, torch.float16):
            x = torch.randn(N, device="cuda", dtype=dt)
            y, out = torch.randn_like(x), torch.empty_like(x)
            nb = 3 * N * x.element_size()
            for cfg in shapes:
                rec("add", f"2^28 {str(dt)[6:]} tune", _label(cfg),
                    lambda c=cfg: kernelkit.add(x, y, out=out, config=c), nb)
            rec("add", f"2^28 {str(dt)[6:]} tune", "shuffle rung, aligned (block 512, 3 an SM by registers)",
                lambda: kernelkit.add(x, y, out=out, variant="shuffle"), nb)
            for cfg in shapes:
                rec("saxpy", f"2^28 {str(dt)[6:]} tune", _label(cfg),
                    lambda c=cfg: kernelkit.saxpy(1e-4, x, y, config=c), nb)
            del x, y, out

    if want("relu"):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(N, device="cuda", dtype=dt)
            ladder("relu", (N,), dt, (x,), {})
            # the unary fast rung's launch: its rule at 2^28 is 128 x 13 an SM, against the others
            out = torch.empty_like(x)
            for cfg in (ElementwiseLaunch(256), ElementwiseLaunch(512), ElementwiseLaunch(1024),
                        ElementwiseLaunch(256, 6), ElementwiseLaunch(128, 13)):
                rec("relu", f"2^28 {str(dt)[6:]} fast tune", _label(cfg),
                    lambda c=cfg: kernelkit.relu(x, out=out, config=c), 2 * N * x.element_size())
            del x, out

    if want("saxpy"):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.rand(N, device="cuda", dtype=dt)
            y = torch.rand(N, device="cuda", dtype=dt)
            ladder("saxpy", (N,), dt, (1e-4, x, y), {})
            del x, y

    if want("invert_colors"):
        img = torch.randint(0, 256, (16384, 16384, 4), dtype=torch.uint8, device="cuda")
        ladder("invert_colors", (16384, 16384, 4), torch.uint8, (img,), {})
        nb = 2 * img.numel()
        for r in ("coarsen_x16", "fast"):
            rec("invert_colors", "16384x16384x4 in place", r,
                lambda r=r: kernelkit.invert_colors(img, inplace=True, variant=r), nb)
        # the coarsening factor beyond the rungs' 1, 8 and 16: the rung's kernel template instantiated
        # for each candidate factor through the runtime (the launch is the coarsened rung's)
        from kernelkit.runtime import get_kernel, launch

        out = torch.empty_like(img)
        for bk in (1, 2, 4, 8, 16, 32):
            k = get_kernel("elementwise/invert_colors.cu", f"kk::invert_coarsened<{bk}>", device_index=0)
            grid = (-(-16384 // (32 * bk)), 2048)
            rec("invert_colors", "16384x16384x4 coarsening", f"BK={bk}",
                lambda k=k, g=grid, b=bk: launch(k, g, (32, 8), out.data_ptr(), img.data_ptr(), 16384, 16384,
                                                 name=f"invert_coarsened<{b}>", device_index=0), nb)
        for block in (128, 256, 512, 1024):
            cfg = ElementwiseLaunch(block)
            rec("invert_colors", "16384x16384x4 fast block", _label(cfg),
                lambda c=cfg: kernelkit.invert_colors(img, config=c), nb)
        del img, out

    if want("binarize"):
        img = torch.randint(0, 256, (16384, 16384), dtype=torch.uint8, device="cuda")
        ladder("binarize", (16384, 16384), torch.uint8, (img, 127), {})
        img2 = torch.randint(0, 256, (32768, 32768), dtype=torch.uint8, device="cuda")
        ladder("binarize", (32768, 32768), torch.uint8, (img2, 127), {})
        del img, img2

    if want("normalize_image"):
        mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
        for shape in ((16384, 16384, 3), (256, 224, 224, 3)):
            img = torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda")
            for dt, lay in ((torch.float16, "CHW"), (torch.float32, "CHW"), (torch.float16, "HWC")):
                op = kernelkit.get_op("normalize_image")
                kw = dict(dtype=dt, layout=lay)
                nbytes = op.bytes_moved(img, mean, std, **kw)
                case = f"{'x'.join(map(str, shape))} {str(dt)[6:]} {lay}"
                tus = rec("normalize_image", case, "torch eager", lambda: op.torch_fn(img, mean, std, **kw), nbytes)
                if dt == torch.float16 and lay == "CHW":
                    lit = lambda: op.torch_fn(img, mean, std, dtype=torch.float32)  # noqa: E731
                    rec("normalize_image", case, "torch literal (f32 out)", lit, nbytes)
                for v in op.variants:
                    rec("normalize_image", case, v.name,
                        lambda v=v: kernelkit.normalize_image(img, mean, std, variant=v.name, **kw), nbytes, tus)
            if len(shape) == 3:  # the CHW vector kernels' launch: block x blocks an SM
                for dt in (torch.float32, torch.float16):
                    nb = img.numel() * (1 + torch.finfo(dt).bits // 8)
                    for cfg in (ElementwiseLaunch(256), ElementwiseLaunch(1024), ElementwiseLaunch(256, 6)):
                        rec("normalize_image", f"{'x'.join(map(str, shape))} {str(dt)[6:]} CHW tune", _label(cfg),
                            lambda c=cfg, d=dt: kernelkit.normalize_image(img, mean, std, dtype=d, config=c), nb)
            del img

    props = torch.cuda.get_device_properties(0)
    doc = {"device": props.name, "sm_count": props.multi_processor_count,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "method": "kernelkit.bench.time_cuda median (CUDA events, 5 warm-up calls, ~%.2f s of reps); "
                     "GB/s = bytes_moved / median; %% copy against copy_bandwidth(same bytes)" % a.seconds,
           "copy_gbs_large": round(large, 1), "copy_gbs_same_bytes": {str(k): round(v, 1) for k, v in copy_cache.items()},
           "rows": rows}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "-".join(sorted(only)) if only else "all"
    (out / f"elementwise-tuning-{tag}.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
