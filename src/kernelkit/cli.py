"""`kernelkit` command line: ladders, static inspection, ceilings, cache."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch


def _dtype(name: str) -> torch.dtype:
    aliases = {"fp32": "float32", "f32": "float32", "fp16": "float16", "f16": "float16", "half": "float16",
               "bf16": "bfloat16", "u8": "uint8", "fp64": "float64"}
    d = getattr(torch, aliases.get(name, name), None)
    if not isinstance(d, torch.dtype):
        raise argparse.ArgumentTypeError(f"unknown dtype {name!r}")
    return d


def _console():
    """A terminal-width console, or a wide one when piped (tables keep their columns in logs)."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=240)


def _params(items: list[str]) -> dict:
    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        out[k] = v
    return out


def cmd_ops(args) -> int:
    from . import get_op, ops

    for name in ops():
        op = get_op(name)
        print(f"{name:16s} {op.family:14s} {len(op.variants):2d} rungs  {op.doc}")
    return 0


def cmd_ladder(args) -> int:
    from .bench.ladder_run import COLUMNS, parse_shape, run_ladder
    from .bench.report import print_table, write_json
    from .ladder import get_op

    op = get_op(args.op)
    if not torch.cuda.is_available():
        print(f"No CUDA GPU here: `kernelkit ladder {args.op}` needs one to time the rungs. "
              f"Showing the static analysis of each rung instead (kernelkit inspect {args.op}).\n")
        return cmd_inspect(argparse.Namespace(op=args.op, arch="sm_90", dtype=args.dtype))
    from .bench.roofline import RooflinePoint, plot_roofline

    dtypes = args.dtype or list(op.bench_dtypes)
    shapes = [parse_shape(s) for s in args.size] if args.size else list(op.bench_shapes)
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    results = []
    for dtype in dtypes:
        for shape in shapes:
            res = run_ladder(args.op, shape, dtype, _params(args.param), with_compile=not args.no_compile)
            results.append(res)
            tag = f"{args.op}-{res['dtype']}-{'x'.join(map(str, shape))}"
            print_table(res["rows"], COLUMNS, console=_console(),
                        title=f"{args.op} {res['dtype']} {tuple(shape)}: {res['bytes'] / 1e6:.1f} MB moved; "
                              f"copy ceiling {res['copy_gbs_large']:.0f} GB/s (same bytes "
                              f"{res['copy_gbs_same_bytes']:.0f})")
            pts = [RooflinePoint(r["name"], res["flops"], res["bytes"], r["median_us"] * 1e-6)
                   for r in res["rows"] if r["median_us"]]
            if pts:
                plot_roofline(pts, copy_gbs=res["copy_gbs_large"], peak_tflops=None,
                              title=f"{args.op} {res['dtype']} {tuple(shape)}", path=outdir / f"{tag}.png")
    path = write_json(outdir / f"{args.op}.json", {"op": args.op, "results": results})
    print(f"wrote {path} and the roofline PNGs beside it")
    return 0


def cmd_inspect(args) -> int:
    from .analyze.ladder_inspect import COLUMNS, inspect_op
    from .bench.report import print_table

    dtypes = args.dtype or None
    rows = inspect_op(args.op, arch=args.arch, dtypes=dtypes)
    print_table(rows, COLUMNS, title=f"{args.op}: static analysis for {args.arch}", console=_console())
    return 0


def cmd_ncu(args) -> int:
    from .analyze.ncu import derived, profile
    from .bench.ladder_run import parse_shape

    res = profile(args.op, args.variant, parse_shape(args.size), args.dtype or torch.float32,
                  params=_params(args.param))
    for kernel, metrics in res.items():
        print(kernel)
        for k, v in {**metrics, **derived(metrics)}.items():
            print(f"  {k:60s} {v:,.2f}")
    return 0


def cmd_ceilings(args) -> int:
    from .bench.ceilings import measure_all

    if not torch.cuda.is_available():
        print("No CUDA GPU here: ceilings are measured on the device they describe.")
        return 1
    print(json.dumps(measure_all(force=args.force), indent=2, default=str))
    return 0


def cmd_cache(args) -> int:
    from .runtime import cache

    if args.action == "clear":
        n = cache.clear()
        print(f"removed {n} cached kernels from {cache.kernels_dir()}")
    else:
        print(json.dumps(cache.info(), indent=2))
    return 0


def cmd_warmup(args) -> int:
    from .ladder import get_op
    from .warmup import planned_builds, warmup

    if args.arch:
        arch = args.arch
    elif torch.cuda.is_available():
        from .runtime import device_arch

        arch = device_arch(torch.cuda.current_device())
    else:
        print("No CUDA GPU here: name the GPU's architecture with --arch (e.g. --arch sm_90).")
        return 2
    names = args.ops or None
    for n in names or ():
        get_op(n)  # an unknown op fails here, with the list of ops
    total = len(planned_builds(arch, names))
    print(f"building {total} kernels for {arch} ...", flush=True)

    def progress(done, n):
        if done % 50 == 0 or done == n:
            print(f"  {done}/{n}", flush=True)

    res = warmup(arch, names, jobs=args.jobs, progress=progress)
    print(f"{res['compiled']} compiled, {res['already_cached']} already cached, {len(res['errors'])} failed, "
          f"{res['seconds']} s on {res['jobs']} processes")
    for e in res["errors"]:
        print(e)
    return 1 if res["errors"] else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kernelkit", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("ops", help="list the ops and their ladders").set_defaults(fn=cmd_ops)

    lad = sub.add_parser("ladder", help="time every rung of an op (GPU), torch eager and torch.compile")
    lad.add_argument("op")
    lad.add_argument("--dtype", type=_dtype, action="append", help="repeatable; default: the op's bench dtypes")
    lad.add_argument("--size", action="append", help="e.g. 2^28 or 4096x4096; repeatable")
    lad.add_argument("--param", action="append", help="op keyword, e.g. approximate=none")
    lad.add_argument("--out", default="kernelkit-results", help="directory for the JSON and PNGs")
    lad.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    lad.set_defaults(fn=cmd_ladder)

    ins = sub.add_parser("inspect", help="registers, spills, load widths, occupancy per rung (no GPU needed)")
    ins.add_argument("op")
    ins.add_argument("--arch", default="sm_90")
    ins.add_argument("--dtype", type=_dtype, action="append")
    ins.set_defaults(fn=cmd_inspect)

    nc = sub.add_parser("ncu", help="Nsight Compute metrics of one rung (GPU and ncu needed)")
    nc.add_argument("op")
    nc.add_argument("--variant", required=True)
    nc.add_argument("--size", default="2^24")
    nc.add_argument("--dtype", type=_dtype)
    nc.add_argument("--param", action="append")
    nc.set_defaults(fn=cmd_ncu)

    ce = sub.add_parser("ceilings", help="measure (or show cached) copy bandwidth and matmul rates")
    ce.add_argument("--force", action="store_true")
    ce.set_defaults(fn=cmd_ceilings)

    ca = sub.add_parser("cache", help="the compiled-kernel cache")
    ca.add_argument("action", choices=["info", "clear"])
    ca.set_defaults(fn=cmd_cache)

    wu = sub.add_parser("warmup", help="compile every kernel for this GPU ahead of time (later calls never compile)")
    wu.add_argument("ops", nargs="*", help="ops to build (default: every op)")
    wu.add_argument("--arch", help="e.g. sm_90 (default: the current GPU's)")
    wu.add_argument("--jobs", type=int, help="parallel compiler processes (default: one a CPU core)")
    wu.set_defaults(fn=cmd_warmup)

    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
