"""The reduction family measured on one GPU: the reduction ladders at 2^28 elements, softmax / layer_norm /
rms_norm on the five benchmark shapes, torch and the device copy beside each, and tuning sweeps (row ops:
alternative configurations passed through config=).

    python benchmarks/reduction_tuning.py --warm            # build the family's kernels (parallel; KK_ARCH=sm_90)
    python benchmarks/reduction_tuning.py --out FILE [--sections full,sweep,dims,rows,alts,clusters,packed]
        [--shapes 1024x65536,...] [--ops layer_norm,...] [--dtypes float16,...]   (the rows section only)
    python benchmarks/reduction_tuning.py --summary FILE    # print a recorded FILE's figures

The full reduction's launch shapes are swept as ``config=ReduceConfig(...)``; the default --out is
benchmarks/results/reduction-tuning.json. Timing: kernelkit.bench.time_cuda (CUDA events around each
call, warm-up first, median; working sets up to 8x L2 get a cold-L2 flush before every rep). Full
reductions count the bytes read and compare with the large-buffer copy; row ops count read + write
and compare with a copy of the same number of bytes, measured in the same run.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import torch

N = 1 << 28
SHAPES = ((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536))
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# fast-rung launch shapes of the full reduction: (block, loads in flight per thread, blocks per SM)
SWEEP = ((512, 4, 4), (256, 4, 8), (1024, 4, 2), (512, 2, 4), (512, 8, 4), (256, 8, 8), (512, 4, 8), (1024, 2, 2))
# alternative row-op configurations by (family, elements per 16-byte vector) and row length, timed through
# config= beside the rules' choice (kernelkit.ops.reduction.norm: NormTile, BulkRing, SmemRows;
# kernelkit.ops.reduction.softmax: SoftmaxTile)
def alternatives() -> dict:
    from kernelkit.ops.reduction.norm import BulkRing

    return {
        ("softmax", 4): {},
        ("softmax", 8): {},
        ("norm", 4): {65536: [BulkRing(1024, 8, 2, 6, False, 4), BulkRing(512, 4, 8, 4, True, 1)]},
        ("norm", 8): {65536: [BulkRing(1024, 4, 2, 3, True, 2), BulkRing(1024, 4, 2, 4, False, 2),
                              BulkRing(512, 2, 8, 3, True, 1)],
                      32768: [BulkRing(512, 4, 2, 3, True, 1), BulkRing(1024, 4, 1, 2, True, 2),
                              BulkRing(1024, 4, 1, 3, True, 4)]},
    }


SAVE = lambda: None  # noqa: E731  (main sets it: rows save after every shape)


def modules():
    import kernelkit  # noqa: F401  (registers the ops)

    return {m: sys.modules[f"kernelkit.ops.reduction.{m}"] for m in ("reduce", "softmax", "norm")}


def _compile(job):
    from kernelkit.runtime import compile_source

    source, name, arch = job
    try:
        compile_source(source, (name,), arch)
    except Exception as exc:
        return f"{source} {name}: {type(exc).__name__}: {str(exc)[:400]}"
    return None


def warm(arch: str) -> None:
    """Build every kernel the reduction ladders list and every alternative configuration's, one NVRTC run
    a kernel (as a call builds them), in parallel."""
    from kernelkit.ladder import get_op
    from kernelkit.ops.reduction._rows import per_vec

    jobs = {}
    for name in ("sum", "mean", "amax", "amin", "softmax", "layer_norm", "rms_norm"):
        for v in get_op(name).variants:
            for dt in v.dtypes:
                for k in v.kernels(dt):
                    jobs[(k.source, k.name, arch + k.arch_suffix)] = None
    mods = modules()
    for dt in DTYPES:
        for (fam, n), by_len in alternatives().items():
            if n == per_vec(dt):
                for cfg in (c for cfgs in by_len.values() for c in cfgs):
                    jobs[(mods[fam].SRC, cfg.name(dt, True), arch)] = None
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        errors = [e for e in pool.map(_compile, list(jobs)) if e]
    print(f"warmed {len(jobs)} kernels for {arch}" + "".join(f"\n  {e}" for e in errors), flush=True)


def timed(fn, nbytes: int, reps: int = 50) -> tuple[float, float]:
    from kernelkit.bench import time_cuda

    t = time_cuda(fn, reps=reps, working_set_bytes=nbytes)
    return t.median_us, nbytes / t.seconds / 1e9


def sec_full(res, copy_large):
    import kernelkit

    for dt in DTYPES:
        x = torch.randn(N, device="cuda", dtype=dt)
        nb = x.numel() * x.element_size()
        for op in ("sum", "amax", "mean", "amin"):
            f = getattr(kernelkit, op)
            want = getattr(torch, op)(x).float()
            rungs = [v.name for v in kernelkit.ladder(op)] if op in ("sum", "amax") else [kernelkit.ladder(op)[-1].name]
            tus, tgbs = timed(lambda: getattr(torch, op)(x), nb)
            for r in rungs:
                got = f(x, variant=r).float()
                ok = bool(torch.allclose(got, want, rtol=2e-2, atol=1e-2 * abs(float(want)) + 1e-3))
                us, gbs = timed(lambda: f(x, variant=r), nb)
                res.append(dict(section="full", op=op, dtype=str(dt)[6:], n=N, rung=r, us=us, gbs=gbs, ok=ok,
                                pct_copy=100 * gbs / copy_large, torch_gbs=tgbs, vs_torch=gbs / tgbs))
                print(f"full {op:5s} {str(dt)[6:]:9s} {r:13s} {us:9.1f} us {gbs:7.0f} GB/s {100 * gbs / copy_large:5.1f}% "
                      f"torch {tgbs:6.0f} ok={ok}", flush=True)
        del x


def sec_sweep(res, copy_large):
    import kernelkit

    from kernelkit.ops.reduction.reduce import ReduceConfig

    for dt, op in ((torch.float32, "sum"), (torch.float16, "sum"), (torch.float16, "amax"), (torch.bfloat16, "sum")):
        x = torch.randn(N, device="cuda", dtype=dt)
        nb = x.numel() * x.element_size()
        f = getattr(kernelkit, op)
        for b, u, bps in SWEEP:
            cfg = ReduceConfig(b, u, bps)
            us, gbs = timed(lambda: f(x, config=cfg), nb)
            res.append(dict(section="sweep", op=op, dtype=str(dt)[6:], block=b, unroll=u, blocks_per_sm=bps, us=us,
                            gbs=gbs, pct_copy=100 * gbs / copy_large))
            print(f"sweep {op} {str(dt)[6:]:9s} block={b:4d} U={u} bps={bps}: {gbs:7.0f} GB/s", flush=True)
        del x


def sec_dims(res):
    import kernelkit

    for dt in (torch.float32, torch.float16):
        x = torch.randn(16384, 8192, device="cuda", dtype=dt)
        nb = x.numel() * x.element_size()
        for op in ("sum", "amax"):
            for dim in (1, 0):
                tus, tgbs = timed(lambda: getattr(torch, op)(x, dim), nb)
                us, gbs = timed(lambda: getattr(kernelkit, op)(x, dim), nb)
                ok = bool(torch.allclose(getattr(kernelkit, op)(x, dim).float(), getattr(torch, op)(x, dim).float(),
                                         rtol=1e-2, atol=1e-1))
                res.append(dict(section="dims", op=op, dtype=str(dt)[6:], shape=[16384, 8192], dim=dim, us=us, gbs=gbs,
                                torch_gbs=tgbs, vs_torch=gbs / tgbs, ok=ok))
                print(f"dims {op} {str(dt)[6:]:9s} 16384x8192 dim={dim}: {gbs:6.0f} GB/s torch {tgbs:6.0f} ok={ok}", flush=True)
        del x


# column reductions whose splits meet in a cluster on sm_90 (short splits), and ones that keep the ticket
CLUSTER_CASES = (((130, 1000), 0), ((300, 4097), 0), ((5, 256, 2053), 1), ((16, 197, 768), 1), ((7, 130, 999), 1),
                 ((64, 197, 768), 1), ((300, 50257), 0), ((8192, 8192), 0), ((12345, 6789), 0), ((4097, 4095), 0),
                 ((50257, 768), 0), ((31, 4099, 1021), 1), ((4096, 4096), 0), ((16, 2048, 4096), 1))


def sec_clusters(res):
    """sum over a leading or middle dim: the default plan against reduce_cols' ticket plan (the plan of a
    device without clusters, built by patching the compute capability), torch and a same-bytes copy,
    interleaved (kernelkit.bench.time_interleaved, medians)."""
    from unittest import mock

    from kernelkit.bench.timing import time_interleaved
    from kernelkit.ops.reduction import _reduce_plans as plans

    for dt in (torch.bfloat16, torch.float32):
        for shape, dim in CLUSTER_CASES:
            x = torch.randn(shape, device="cuda").to(dt)
            kept = shape[:dim] + shape[dim + 1:]
            default = plans._make_plan("sum", x, (dim,), None, None, 0, dt)
            with mock.patch.object(plans, "compute_capability", lambda dev: 80):
                ticket = plans._make_plan("sum", x, (dim,), None, None, 0, dt)
            a, b = torch.empty(kept, device="cuda", dtype=dt), torch.empty(kept, device="cuda", dtype=dt)
            half = torch.empty(x.numel() * x.element_size() // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(half)
            t = time_interleaved([lambda: default(x, a), lambda: ticket(x, b), lambda: torch.sum(x, dim),
                                  lambda: dst.copy_(half)], max_seconds=1.0, shuffle=True)
            us = [tt.median_us for tt in t]
            ok = torch.equal(a, b) and close(a, torch.sum(x.double(), dim))  # one order of additions: same bits
            res.append(dict(section="clusters", op="sum", dtype=str(dt)[6:], shape=list(shape), dim=dim,
                            us=us[0], ticket_us=us[1], torch_us=us[2], copy_us=us[3],
                            pct_copy=100 * us[3] / us[0], ticket_pct_copy=100 * us[3] / us[1], ok=bool(ok)))
            print(f"clusters sum {str(dt)[6:]:9s} {'x'.join(map(str, shape)):>14s} dim={dim}: {us[0]:7.2f} us "
                  f"(ticket {us[1]:7.2f}, torch {us[2]:7.2f}, copy {us[3]:7.2f}) {100 * us[3] / us[0]:5.1f}% of copy",
                  flush=True)
            del x


PACKED_LENGTHS = (3, 7, 16, 31, 64, 100, 121)  # rows the packed kernels take (16-bit: up to 121 elements)


def sec_packed(res):
    """layer_norm and rms_norm (weight, and bias for layer_norm) of short rows, about 2^27 elements, against
    torch and a same-bytes copy, interleaved (kernelkit.bench.time_interleaved, medians)."""
    import torch.nn.functional as F

    import kernelkit
    from kernelkit.bench.timing import time_interleaved

    for dt in DTYPES:
        for n in PACKED_LENGTHS:
            x = torch.randn((1 << 27) // n, n, device="cuda").to(dt)
            w, b = torch.randn(n, device="cuda").to(dt), torch.randn(n, device="cuda").to(dt)
            half = torch.empty(x.numel() * x.element_size(), dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(half)
            fns = [lambda: kernelkit.layer_norm(x, (n,), w, b), lambda: F.layer_norm(x, (n,), w, b),
                   lambda: kernelkit.rms_norm(x, (n,), w, eps=1e-5), lambda: F.rms_norm(x, (n,), w, eps=1e-5),
                   lambda: dst.copy_(half)]
            us = [tt.median_us for tt in time_interleaved(fns, max_seconds=1.0, shuffle=True)]
            for k, op in enumerate(("layer_norm", "rms_norm")):
                res.append(dict(section="packed", op=op, dtype=str(dt)[6:], shape=list(x.shape), us=us[2 * k],
                                torch_us=us[2 * k + 1], copy_us=us[4], pct_copy=100 * us[4] / us[2 * k],
                                vs_torch=us[2 * k + 1] / us[2 * k]))
                print(f"packed {op:10s} {str(dt)[6:]:9s} rows of {n:3d}: {us[2 * k]:7.2f} us, {100 * us[4] / us[2 * k]:5.1f}% "
                      f"of copy, {us[2 * k + 1] / us[2 * k]:6.1f}x torch", flush=True)
            del x


def close(a, b) -> bool:
    """Every element within 2% of torch's, or within 0.1% of the mean magnitude (tiny outputs), or a
    16-bit subnormal step (softmax of long rows lands there)."""
    a, b = a.float(), b.float()
    return bool(((a - b).abs() <= 2e-2 * b.abs() + 1e-3 * b.abs().mean() + 2 ** -23).all())


def _row_ops(x):
    import kernelkit

    n = x.shape[-1]
    w = torch.randn(n, device="cuda", dtype=x.dtype)
    b = torch.randn(n, device="cuda", dtype=x.dtype)
    F = torch.nn.functional
    return {
        "softmax": (lambda **k: kernelkit.softmax(x, **k), lambda: torch.softmax(x, -1)),
        "layer_norm": (lambda **k: kernelkit.layer_norm(x, (n,), w, b, **k), lambda: F.layer_norm(x, (n,), w, b)),
        "rms_norm": (lambda **k: kernelkit.rms_norm(x, (n,), w, **k), lambda: F.rms_norm(x, (n,), w)),
    }


def sec_rows(res, alts: bool, a):
    from kernelkit.bench import copy_bandwidth
    from kernelkit.ops._shared.launch_rules import compute_capability
    from kernelkit.ops.reduction._rows import per_vec

    mods = modules()
    want_shapes = None if not a.shapes else {tuple(map(int, s.split("x"))) for s in a.shapes.split(",")}
    for dt in (torch.float32, torch.float16):
        if a.dtypes and str(dt)[6:] not in a.dtypes.split(","):
            continue
        for shape in SHAPES:
            if want_shapes and shape not in want_shapes:
                continue
            x = torch.randn(shape, device="cuda", dtype=dt)
            nb = 2 * x.numel() * x.element_size()
            copy = copy_bandwidth(nb)
            reps = 20 if nb > (4 << 30) else 50
            for op, (ours, theirs) in _row_ops(x).items():
                if a.ops and op not in a.ops.split(","):
                    continue
                want = theirs().float()
                ok = close(ours(), want)
                tus, tgbs = timed(theirs, nb, reps)
                us, gbs = timed(ours, nb, reps)
                row = dict(section="rows", op=op, dtype=str(dt)[6:], shape=list(shape), us=us, gbs=gbs, ok=ok,
                           copy_gbs=copy, pct_copy=100 * gbs / copy, torch_gbs=tgbs, vs_torch=gbs / tgbs)
                res.append(row)
                print(f"rows {op:10s} {str(dt)[6:]:8s} {str(shape):15s} {us:9.1f} us {gbs:6.0f} GB/s "
                      f"{row['pct_copy']:5.1f}% of copy {copy:5.0f}; torch {tgbs:5.0f} ok={ok}", flush=True)
                if not alts:
                    continue
                fam = "softmax" if op == "softmax" else "norm"
                if fam == "softmax":
                    default = mods["softmax"].config_for("auto", dt, shape[1], sm=compute_capability(0))
                else:
                    default = mods["norm"].config_for("auto", dt, shape[1], form=1, sm=compute_capability(0))
                for cfg in alternatives()[(fam, per_vec(dt))].get(shape[1], []):
                    try:
                        good = close(ours(config=cfg), want)
                        aus, agbs = timed(lambda: ours(config=cfg), nb, reps)
                    except Exception as exc:  # a configuration that cannot run the input or launch
                        print(f"  alt {cfg}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                        continue
                    res.append(dict(section="alts", op=op, dtype=str(dt)[6:], shape=list(shape), config=repr(cfg),
                                    default=repr(default), us=aus, gbs=agbs, ok=good, pct_copy=100 * agbs / copy))
                    print(f"  alt {op} {cfg} (default {default}): {agbs:6.0f} GB/s ok={good}", flush=True)
            del x
            torch.cuda.empty_cache()
            SAVE()


def summary(path: str) -> None:
    """A compact table of a results file: the default rungs and the sweeps' best."""
    doc = json.load(open(path))
    print(f"{doc['device']} torch {doc['torch']} copy {doc['copy_gbs_large']:.0f} GB/s")
    for r in doc["results"]:
        if r["section"] == "full" and r["rung"] == "fast":
            print(f"F {r['op']:5s} {r['dtype']:8s} {r['rung']:12s} {r['gbs']:5.0f} {r['pct_copy']:5.1f}% t{r['torch_gbs']:5.0f} {r['ok']}")
        elif r["section"] == "rows":
            print(f"R {r['op']:10s} {r['dtype']:8s} {'x'.join(map(str, r['shape'])):11s} {r['gbs']:5.0f} "
                  f"{r['pct_copy']:5.1f}% t{r['torch_gbs']:5.0f} {r['ok']}")
    for r in doc["results"]:
        if r["section"] in ("sweep", "alts"):
            cfg = r.get("config") or (r["block"], r["unroll"], r["blocks_per_sm"])
            print(f"A {r['op']} {r['dtype']} {r.get('shape', '')} {cfg} {r['gbs']:.0f} GB/s {r['pct_copy']:.1f}% "
                  f"(default {r.get('default', '')}) {r.get('ok', '')}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--summary")
    ap.add_argument("--out", default="benchmarks/results/reduction-tuning.json")
    ap.add_argument("--sections", default="full,sweep,dims,rows,alts")
    ap.add_argument("--shapes", help="rows section: only these shapes, e.g. 1024x65536,4096x4096")
    ap.add_argument("--ops", help="rows section: only these ops, e.g. layer_norm,rms_norm")
    ap.add_argument("--dtypes", help="rows section: only these dtypes, e.g. float16")
    a = ap.parse_args(argv)
    if a.warm:
        warm(os.environ.get("KK_ARCH", "sm_90"))
        return 0
    if a.summary:
        summary(a.summary)
        return 0
    from kernelkit.bench import copy_bandwidth

    sections = a.sections.split(",")
    copy_large = copy_bandwidth(None)
    print(f"copy ceiling (1 GiB buffers, read + write): {copy_large:.0f} GB/s", flush=True)
    res: list[dict] = []
    doc = {
        "device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "copy_gbs_large": copy_large, "method": "kernelkit.bench.time_cuda median; GB/s = bytes read (full, dims) or "
        "read + write (rows) / median; pct_copy vs copy_bandwidth of the same bytes (rows) or 1 GiB buffers (full)",
        "results": res,
    }
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    def save():  # after every section (and rows shape): a run cut short keeps what it measured
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)

    global SAVE
    SAVE = save
    steps = [("full", lambda: sec_full(res, copy_large)), ("rows", lambda: sec_rows(res, "alts" in sections, a)),
             ("sweep", lambda: sec_sweep(res, copy_large)), ("dims", lambda: sec_dims(res)),
             ("clusters", lambda: sec_clusters(res)), ("packed", lambda: sec_packed(res))]
    for name, step in steps:
        if name in sections:
            step()
            save()
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
