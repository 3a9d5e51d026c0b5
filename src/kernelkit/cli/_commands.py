"""The commands of the command line, one function each (`cmd_<name>(args) -> exit status`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from .._term import BuildProgress, human_bytes, print_rows
from ._args import DEFAULT_ARCH, DEFAULT_OUT, CliError, _check_dtypes, _check_rungs, _dtype_text, _params

# ---------------------------------------------------------------------------------------------------
# commands


def cmd_ops(args) -> int:
    from ..analyze.ladder_inspect import short_dtype
    from ..ladder import get_op, ops

    if args.op is None:
        for name in ops():
            op = get_op(name)
            print(f"{name:16s} {op.family:14s} {len(op.variants):2d} rungs  {op.doc}")
        return 0
    op = get_op(args.op)
    rows = [{"rung": v.name + (" *" if v.default else ""), "dtypes": " ".join(map(short_dtype, v.dtypes)),
             "technique": v.technique} for v in op.variants]
    cols = [("rung", "rung", None), ("dtypes", "dtypes", None), ("technique", "what it adds", None)]
    print_rows(rows, cols, f"{op.name}: {op.doc} ({op.family}; naive first, * the default)")
    return 0


def _gpu_arch() -> str | None:
    if not torch.cuda.is_available():
        return None
    from ..runtime import device_arch

    return device_arch(torch.cuda.current_device())


def cmd_ladder(args) -> int:
    from ..ladder import get_op

    op = get_op(args.op)
    _check_dtypes(op, args.dtype)
    arch = _gpu_arch()
    if arch is None:
        gpu_only = [flag for flag, given in (("--size", args.size), ("--param", args.param), ("--out", args.out),
                                             ("--no-compile", args.no_compile)) if given]
        if gpu_only:
            raise CliError(f"{', '.join(gpu_only)} {'needs' if len(gpu_only) == 1 else 'need'} a GPU to time the "
                           f"rungs and torch sees none; without them `kernelkit ladder {args.op}` shows the static "
                           f"analysis (`kernelkit inspect {args.op}`)")
        print(f"No CUDA GPU here: `kernelkit ladder {args.op}` needs one to time the rungs. Showing the static "
              f"analysis of each rung for {DEFAULT_ARCH} instead (`kernelkit inspect {args.op}`).", file=sys.stderr)
        return _inspect(args.op, DEFAULT_ARCH, args.dtype, None, args.wide, None)
    return _time_ladder(op, arch, args)


def _time_ladder(op, arch: str, args) -> int:
    from ..bench.ladder_run import COLUMNS, COMPUTE_COLUMNS, COMPUTE_WIDE_ONLY, WIDE_ONLY, run_ladder
    from ..bench.report import write_json
    from ..bench.roofline import RooflinePoint, plot_roofline
    from ..warmup import warmup

    params = _params(op, args.param)
    dtypes = args.dtype or list(op.bench_dtypes)
    shapes = args.size or list(op.bench_shapes)
    outdir = Path(args.out or DEFAULT_OUT)
    outdir.mkdir(parents=True, exist_ok=True)
    with BuildProgress(f"compiling {op.name}'s kernels for {arch}") as progress:
        warmup(arch, [op.name], dtypes, progress=progress)  # in parallel now, rather than rung by rung later
    results = []
    for dtype in dtypes:
        for shape in shapes:
            res = run_ladder(op.name, shape, dtype, params, with_compile=not args.no_compile)
            results.append(res)
            tag = f"{op.name}-{res['dtype']}-{'x'.join(map(str, shape))}"
            if op.compute_bound:  # judged by its rate against torch's (cuBLAS) timed in turn, not by bytes
                unit = "TOP" if not dtype.is_floating_point else "TFLOP"
                cols = [(k, unit + "/s" if k == "tflops" else h, f) for k, h, f in COMPUTE_COLUMNS]
                print_rows(res["rows"], cols, f"{op.name} {res['dtype']} {tuple(shape)}"
                           f"{''.join(f', {k}={v}' for k, v in params.items())}: {res['flops'] / 1e12:.3g} "
                           f"T{'OP' if unit == 'TOP' else 'FLOP'}", COMPUTE_WIDE_ONLY, args.wide)
            else:
                print_rows(res["rows"], COLUMNS,
                           f"{op.name} {res['dtype']} {tuple(shape)}: {res['bytes'] / 1e6:.1f} MB moved; copy "
                           f"ceiling {res['copy_gbs_large']:.0f} GB/s (same bytes {res['copy_gbs_same_bytes']:.0f})",
                           WIDE_ONLY, args.wide)
            pts = [RooflinePoint(r["name"], res["flops"], res["bytes"], r["median_us"] * 1e-6)
                   for r in res["rows"] if r["median_us"]]
            if pts:
                plot_roofline(pts, copy_gbs=res["copy_gbs_large"], peak_tflops=None,
                              title=f"{op.name} {res['dtype']} {tuple(shape)}", path=outdir / f"{tag}.png")
    path = write_json(outdir / f"{op.name}.json", {"op": op.name, "results": results})
    print(f"wrote {path} and the roofline PNGs beside it")
    return 0


def _inspect(op_name: str, arch: str, dtypes, rungs, wide: bool, jobs) -> int:
    from ..analyze.ladder_inspect import (CAPTION, COLUMNS, COMPUTE_CAPTION, COMPUTE_COLUMNS, COMPUTE_WIDE_ONLY,
                                         WIDE_ONLY, inspect_op)
    from ..ladder import get_op

    op = get_op(op_name)
    _check_dtypes(op, dtypes)
    _check_rungs(op, rungs)
    with BuildProgress(f"analysing {op_name}'s kernels for {arch}") as progress:
        rows = inspect_op(op_name, arch=arch, dtypes=dtypes, variants=rungs, jobs=jobs, progress=progress)
    if not rows:
        asked = " and ".join(filter(None, [rungs and f"rung {', '.join(rungs)}",
                                           dtypes and ", ".join(map(_dtype_text, dtypes))]))
        takes = "; ".join(f"{v.name} takes {', '.join(map(_dtype_text, v.dtypes))}"
                          for v in op.variants if not rungs or v.name in rungs)
        raise CliError(f"{op_name} has no kernel for {asked or 'these filters'} on {arch}; {takes}")
    what = ", ".join(filter(None, [", ".join(rungs or ()), ", ".join(map(_dtype_text, dtypes or ()))]))
    cols, wide_only, caption = ((COMPUTE_COLUMNS, COMPUTE_WIDE_ONLY, COMPUTE_CAPTION) if op.compute_bound
                                else (COLUMNS, WIDE_ONLY, CAPTION))
    print_rows(rows, cols, f"{op_name}{f' ({what})' if what else ''}: static analysis for {arch}, "
               f"{len(rows)} distinct kernels", wide_only, wide, caption)
    return 0


DISPATCH_OPS = ("matmul", "linear", "scaled_matmul")


def _dispatch(args) -> int:
    """`kernelkit inspect matmul --shape MxNxK`: what the op launches for that problem (no GPU needed)."""
    from ..ops.gemm.dispatch import DeviceModel, explain

    if args.op not in DISPATCH_OPS:
        raise CliError(f"--shape explains the dispatch of {', '.join(DISPATCH_OPS)}, not {args.op}")
    if len(args.shape) not in (3, 4):
        raise CliError(f"--shape takes MxNxK or BxMxNxK, got {'x'.join(map(str, args.shape))}")
    *lead, m, n, k = args.shape
    if args.fused and args.op != "linear":
        raise CliError(f"--fused describes linear's epilogue, not {args.op}'s")
    gpu = torch.cuda.is_available()
    device = DeviceModel.of(torch.cuda.current_device()) if gpu else DeviceModel()
    default = torch.float8_e4m3fn if args.op == "scaled_matmul" else torch.bfloat16
    for i, dtype in enumerate(args.dtype or [default]):
        try:
            lines = explain(args.op, m, n, k, dtype, batch=lead[0] if lead else 1, b_kmajor=args.kmajor_b,
                            offset=args.offset, allow_tf32=args.tf32, device=device, fused=args.fused)
        except ValueError as e:
            raise CliError(str(e)) from None
        print(("\n" if i else "") + "\n".join([lines[0]] + ["  " + x for x in lines[1:]]))
    if not gpu:
        print("(no GPU here: the rules ran for an H100's 132 SMs and 227 KB of shared memory a block)")
    return 0


def cmd_inspect(args) -> int:
    if args.shape:
        return _dispatch(args)
    return _inspect(args.op, args.arch, args.dtype, args.rung, args.wide, args.jobs)


def _ncu_ready() -> None:
    """ncu found (else ToolNotFoundError) and a GPU to profile (else a one-line error)."""
    from ..analyze.ncu import find_ncu

    find_ncu()
    if not torch.cuda.is_available():
        raise CliError("Nsight Compute profiles a GPU and torch sees none; `kernelkit inspect` needs no GPU", 1)


def cmd_ncu(args) -> int:
    from ..analyze.ncu import derived, profile
    from ..ladder import get_op

    op = get_op(args.op)
    variant = args.variant or op.default_variant.name
    _check_rungs(op, [variant])
    takes = op.variant(variant).dtypes
    dtype = args.dtype or (torch.float32 if torch.float32 in takes else takes[0])
    if dtype not in takes:
        raise CliError(f"rung {variant!r} of {op.name} takes {', '.join(map(_dtype_text, takes))}, not "
                       f"{_dtype_text(dtype)}; pass one of those to --dtype")
    params = _params(op, args.param)
    _ncu_ready()
    res = profile(op.name, variant, args.size, dtype, params=params)
    for kernel, metrics in res.items():
        print(kernel)
        for k, v in {**metrics, **derived(metrics)}.items():
            print(f"  {k:60s} {v:,.2f}")
    return 0


def cmd_profile(args) -> int:
    from ..analyze.ncu import profile_ladder
    from ..ladder import get_op

    op = get_op(args.op)
    rungs = args.variant or [v.name for v in op.variants]
    _check_rungs(op, rungs)
    dtype = args.dtype or torch.float32
    rungs = [r for r in rungs if dtype in op.variant(r).dtypes]
    if not rungs:
        raise CliError(f"no rung of {op.name} takes {_dtype_text(dtype)}; pass another --dtype")
    params = _params(op, args.param)
    _ncu_ready()
    shape = args.size or op.bench_shapes[0]
    rows = profile_ladder(op.name, rungs, shape, dtype, params,
                          progress=lambda r: print(f"profiling {op.name} {r} ...", file=sys.stderr, flush=True))
    columns = [("metric", "metric", None)] + [(r, r, lambda v: "" if v is None else f"{v:,.1f}") for r in rungs]
    print_rows(rows, columns, f"{op.name} {_dtype_text(dtype)} {'x'.join(map(str, shape))} under Nsight Compute",
               wide=True)
    return 0


def cmd_ceilings(args) -> int:
    from ..bench.ceilings import measure_all

    if not torch.cuda.is_available():
        raise CliError("ceilings are measured on the GPU they describe and torch sees none", 1)
    print(json.dumps(measure_all(force=args.force), indent=2, default=str))
    return 0


def cmd_cache(args) -> int:
    from ..runtime import cache

    info = cache.info()
    if args.action == "clear":
        n = cache.clear()
        print(f"removed {n:,} cached kernels ({human_bytes(info['bytes'])}) from {cache.kernels_dir()}")
    elif args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"kernel cache  {info['path']}\n"
              f"entries       {info['entries']:,} compiled kernels\n"
              f"size          {human_bytes(info['bytes'])}\n"
              f"(KERNELKIT_CACHE_DIR moves it; `kernelkit cache clear` empties it)")
    return 0


def cmd_report(args) -> int:
    from ..bench.render import render

    out = Path(args.out)
    if args.source:
        source = Path(args.source)
        if not source.is_dir():
            raise CliError(f"no folder {args.source!r} to render; pass a folder of recordings (benchmarks/results)")
    else:
        if not torch.cuda.is_available():
            raise CliError("recording needs a GPU and torch sees none; render recorded results with --from "
                           "benchmarks/results", 1)
        from ..bench.record import record_op
        from ..ladder import ops

        source = out
        for name in args.ops or ops():
            print(f"recording {name} ...", file=sys.stderr, flush=True)
            record_op(name, out, with_compile=False)
        sweep = _sweep_module()
        if sweep is None:
            print("benchmarks/sweep.py not found beside this install: the report has no sweep", file=sys.stderr)
        else:
            sweep.main(["--out", str(out)] + (["--ops", *args.ops] if args.ops else []))
    try:
        md, page = render(source, out)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {md} and {page}")
    return 0


def _sweep_module():
    """benchmarks/sweep.py of the checkout this install runs from, or None (a wheel install has none)."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "sweep.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("kernelkit_sweep", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def cmd_judge(args) -> int:
    from ..judge.command import run

    return run(args, CliError)


def cmd_warmup(args) -> int:
    from ..warmup import warmup

    arch = args.arch or _gpu_arch()
    if arch is None:
        raise CliError("no CUDA GPU here; name the GPU's architecture with --arch (e.g. --arch sm_90)")
    from concurrent.futures import ThreadPoolExecutor

    from ..runtime import torch_bridge

    with ThreadPoolExecutor(1) as pool:  # the bridge's C++ compile beside NVRTC's processes
        bridge = pool.submit(torch_bridge.build)
        with BuildProgress(f"building for {arch}") as progress:
            res = warmup(arch, args.ops or None, jobs=args.jobs, progress=progress)
    print(f"{res['kernels']} kernels for {arch}: {res['compiled']} compiled, {res['already_cached']} already cached, "
          f"{len(res['errors'])} failed, {res['seconds']} s on {res['jobs']} processes")
    try:
        where, seconds = bridge.result()
        from ..runtime.lanes import use_bridge

        use_bridge()  # this process's plain calls too
        print(f"torch bridge: {'built in %.1f s' % seconds if seconds else 'already built'} ({where})")
    except torch_bridge.BridgeBuildError as exc:  # the lanes keep their Python calls: slower, not wrong
        first = str(exc).splitlines()[-1] if str(exc).strip() else "failed"
        print(f"torch bridge not built ({first}); plain calls read tensors through Python", file=sys.stderr)
    for e in res["errors"]:
        print(e, file=sys.stderr)
    return 1 if res["errors"] else 0
