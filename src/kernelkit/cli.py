"""`kernelkit` command line: ladders, static inspection, Nsight Compute, ceilings, the kernel cache, the judge.

Every failure a user can cause or fix (an unknown op, arch or dtype, a filter that matches nothing, a
missing tool or GPU) ends in one line on stderr, `kernelkit <command>: error: <what> <hint>`, and a
non-zero exit status: 2 for the command line itself, 1 for the machine (a tool, a GPU, a compiler).
"""
from __future__ import annotations

import argparse
import difflib
import inspect
import json
import os
import platform
import re
import sys
from pathlib import Path

import torch

from . import __version__
from ._term import BuildProgress, human_bytes, print_rows

DESCRIPTION = ("kernelkit: hand-written CUDA kernels, each op with its ladder of rungs from naive to fast; "
               "run, verify, time and analyse every rung")
EPILOG = """first steps:
  kernelkit ops                  the ops and their ladders
  kernelkit ops gelu             one ladder: each rung and the technique it adds
  kernelkit inspect gelu         each kernel's registers, access widths, occupancy (no GPU needed)
  kernelkit ladder gelu          every rung timed against torch (GPU)"""
DEFAULT_ARCH = "sm_90"
DEFAULT_OUT = "kernelkit-results"


class CliError(Exception):
    """A failure the user can act on: printed as one line with its hint; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block) and a pointer to --help."""

    def error(self, message: str):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:  # a misspelt command or action
            message += _suggest(m[1], [c.strip(" '") for c in m[2].split(",")])
        # kernelkit's own messages carry their hint after a ';'; argparse's (missing or unknown
        # arguments) get the pointer to --help
        hint = "" if ";" in message else f" (`{self.prog} --help` lists the arguments)"
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")


# ---------------------------------------------------------------------------------------------------
# argument types: each checks its value against what kernelkit and this machine support


def _suggest(word: str, known) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _op_name(text: str) -> str:
    from .ladder import ops

    names = ops()
    if text in names:
        return text
    raise argparse.ArgumentTypeError(f"unknown op {text!r}{_suggest(text, names) or ';'} the ops: {', '.join(names)}")


_DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "float": "float32", "fp16": "float16", "f16": "float16",
                  "half": "float16", "bf16": "bfloat16", "fp64": "float64", "f64": "float64", "double": "float64",
                  "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "int": "int32", "i64": "int64",
                  "long": "int64"}


def _dtype_names() -> list[str]:
    """The dtypes some rung of some op takes, in ladder order."""
    from .ladder import get_op, ops

    seen: dict[str, None] = {}
    for name in ops():
        for v in get_op(name).variants:
            for d in v.dtypes:
                seen[str(d).replace("torch.", "")] = None
    return list(seen)


def _dtype(text: str) -> torch.dtype:
    key = _DTYPE_ALIASES.get(text.strip().lower(), text.strip().lower())
    d = getattr(torch, key, None)
    if isinstance(d, torch.dtype):
        return d
    names = _dtype_names()
    raise argparse.ArgumentTypeError(
        f"unknown dtype {text!r}{_suggest(key, names + list(_DTYPE_ALIASES)) or ';'} kernelkit's dtypes: "
        f"{', '.join(names)} (short forms: fp32, fp16, half, bf16, u8)")


def _dtype_text(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def _nvrtc_archs() -> tuple[int, ...] | None:
    """NVRTC's supported SM versions, or None when NVRTC cannot be loaded here (then nothing is refused
    for its sake: the compile itself reports the missing NVRTC)."""
    try:
        from .runtime.headers import nvrtc_archs

        return nvrtc_archs()
    except Exception:  # noqa: BLE001 - no NVRTC, an old cuda-bindings: the compile step reports it
        return None


def build_archs() -> list[str]:
    """Archs `kernelkit warmup` builds for: sm_80 and later that NVRTC compiles for."""
    from .runtime.headers import MIN_SM

    nv = _nvrtc_archs()
    return [f"sm_{a}" for a in (nv or (80, 86, 87, 89, 90)) if a >= MIN_SM]


def analysis_archs() -> list[str]:
    """Archs `kernelkit inspect` analyses: those of ``build_archs`` whose occupancy limits kernelkit knows."""
    from .analyze.occupancy import ARCH_LIMITS

    return [a for a in build_archs() if a in ARCH_LIMITS]


def _arch_type(choices, purpose: str):
    """An --arch argument type: accepts exactly one of ``choices()`` and says why anything else is refused."""

    def parse(text: str) -> str:
        from .runtime.headers import MIN_SM

        allowed = choices()
        if text in allowed:
            return text
        listed = f"choose from {', '.join(allowed)}"
        m = re.fullmatch(r"(sm_|compute_)?(\d+)([af]?)", text.strip().lower())
        if not m:
            raise argparse.ArgumentTypeError(f"{text!r} is not an arch; write it like sm_90: {listed}")
        canon = f"sm_{m[2]}"
        if canon in allowed:
            why = "arch-specific kernels get their suffix by themselves" if m[3] else "write the sm_ prefix"
            raise argparse.ArgumentTypeError(f"{text!r}: did you mean {canon}? ({why}); {listed}")
        sm, nv = int(m[2]), _nvrtc_archs()
        if sm < MIN_SM:
            why = f"kernelkit supports sm_{MIN_SM} (Ampere) and later"
        elif nv is not None and sm not in nv:
            from .runtime import nvrtc_version

            why = (f"NVRTC {'.'.join(map(str, nvrtc_version()))} cannot compile for it (a newer "
                   f"nvidia-cuda-nvrtc may)")
        else:
            why = purpose
        raise argparse.ArgumentTypeError(f"{canon} is not supported here: {why}; {listed}")

    return parse


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}; give a whole number of at least 1")
    return n


def _size(text: str) -> tuple[int, ...]:
    from .bench.ladder_run import parse_shape

    try:
        return parse_shape(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; write 2^28, 4096x4096 or 1000") from None


# ---------------------------------------------------------------------------------------------------
# checks of arguments against the op


def _check_dtypes(op, dtypes) -> None:
    """Every dtype asked for is taken by some rung of ``op``."""
    have = list(dict.fromkeys(d for v in op.variants for d in v.dtypes))
    missing = [d for d in dtypes or () if d not in have]
    if missing:
        raise CliError(f"{op.name} has no rung for {', '.join(map(_dtype_text, missing))}; "
                       f"its dtypes: {', '.join(map(_dtype_text, have))}")


def _check_rungs(op, rungs) -> None:
    names = [v.name for v in op.variants]
    for r in rungs or ():
        if r not in names:
            raise CliError(f"{op.name} has no rung {r!r}{_suggest(r, names) or ';'} its ladder: {', '.join(names)}")


def _params(op, items) -> dict:
    """`--param k=v` pairs, each a keyword of the op's function."""
    sig = inspect.signature(op.call).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.values())
    known = [k for k, p in sig.items() if (p.kind is p.KEYWORD_ONLY or p.default is not p.empty)
             and k not in ("out", "variant", "config")]
    out = {}
    for it in items or ():
        k, eq, v = it.partition("=")
        if not eq or not k:
            raise CliError(f"--param {it!r}: write KEY=VALUE, e.g. --param approximate=none")
        if not takes_any and k not in sig:
            raise CliError(f"{op.name} takes no keyword {k!r}{_suggest(k, known) or ';'} its keywords: "
                           f"{', '.join(known)}")
        default = sig[k].default if k in sig else None
        if isinstance(default, bool):  # allow_tf32=true: a flag, not the string "false" (which is truthy)
            if v.lower() not in ("true", "false", "1", "0"):
                raise CliError(f"--param {it!r}: {k} is true or false")
            v = v.lower() in ("true", "1")
        out[k] = v
    return out


# ---------------------------------------------------------------------------------------------------
# commands


def cmd_ops(args) -> int:
    from .analyze.ladder_inspect import short_dtype
    from .ladder import get_op, ops

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
    from .runtime import device_arch

    return device_arch(torch.cuda.current_device())


def cmd_ladder(args) -> int:
    from .ladder import get_op

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
    from .bench.ladder_run import COLUMNS, COMPUTE_COLUMNS, COMPUTE_WIDE_ONLY, WIDE_ONLY, run_ladder
    from .bench.report import write_json
    from .bench.roofline import RooflinePoint, plot_roofline
    from .warmup import warmup

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
    from .analyze.ladder_inspect import (CAPTION, COLUMNS, COMPUTE_CAPTION, COMPUTE_COLUMNS, COMPUTE_WIDE_ONLY,
                                         WIDE_ONLY, inspect_op)
    from .ladder import get_op

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
    from .ops.gemm.dispatch import DeviceModel, explain

    if args.op not in DISPATCH_OPS:
        raise CliError(f"--shape explains the dispatch of {', '.join(DISPATCH_OPS)}, not {args.op}")
    if len(args.shape) not in (3, 4):
        raise CliError(f"--shape takes MxNxK or BxMxNxK, got {'x'.join(map(str, args.shape))}")
    *lead, m, n, k = args.shape
    gpu = torch.cuda.is_available()
    device = DeviceModel.of(torch.cuda.current_device()) if gpu else DeviceModel()
    default = torch.float8_e4m3fn if args.op == "scaled_matmul" else torch.bfloat16
    for i, dtype in enumerate(args.dtype or [default]):
        try:
            lines = explain(args.op, m, n, k, dtype, batch=lead[0] if lead else 1, b_kmajor=args.kmajor_b,
                            offset=args.offset, allow_tf32=args.tf32, device=device)
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
    from .analyze.ncu import find_ncu

    find_ncu()
    if not torch.cuda.is_available():
        raise CliError("Nsight Compute profiles a GPU and torch sees none; `kernelkit inspect` needs no GPU", 1)


def cmd_ncu(args) -> int:
    from .analyze.ncu import derived, profile
    from .ladder import get_op

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
    from .analyze.ncu import profile_ladder
    from .ladder import get_op

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
    from .bench.ceilings import measure_all

    if not torch.cuda.is_available():
        raise CliError("ceilings are measured on the GPU they describe and torch sees none", 1)
    print(json.dumps(measure_all(force=args.force), indent=2, default=str))
    return 0


def cmd_cache(args) -> int:
    from .runtime import cache

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
    from .bench.render import render

    out = Path(args.out)
    if args.source:
        source = Path(args.source)
        if not source.is_dir():
            raise CliError(f"no folder {args.source!r} to render; pass a folder of recordings (benchmarks/results)")
    else:
        if not torch.cuda.is_available():
            raise CliError("recording needs a GPU and torch sees none; render recorded results with --from "
                           "benchmarks/results", 1)
        from .bench.record import record_op
        from .ladder import ops

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

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("kernelkit_sweep", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def cmd_judge(args) -> int:
    from .judge.command import run

    return run(args, CliError)


def cmd_warmup(args) -> int:
    from .warmup import warmup

    arch = args.arch or _gpu_arch()
    if arch is None:
        raise CliError("no CUDA GPU here; name the GPU's architecture with --arch (e.g. --arch sm_90)")
    from concurrent.futures import ThreadPoolExecutor

    from .runtime import torch_bridge

    with ThreadPoolExecutor(1) as pool:  # the bridge's C++ compile beside NVRTC's processes
        bridge = pool.submit(torch_bridge.build)
        with BuildProgress(f"building for {arch}") as progress:
            res = warmup(arch, args.ops or None, jobs=args.jobs, progress=progress)
    print(f"{res['kernels']} kernels for {arch}: {res['compiled']} compiled, {res['already_cached']} already cached, "
          f"{len(res['errors'])} failed, {res['seconds']} s on {res['jobs']} processes")
    try:
        where, seconds = bridge.result()
        from .runtime.lanes import use_bridge

        use_bridge()  # this process's plain calls too
        print(f"torch bridge: {'built in %.1f s' % seconds if seconds else 'already built'} ({where})")
    except torch_bridge.BridgeBuildError as exc:  # the lanes keep their Python calls: slower, not wrong
        first = str(exc).splitlines()[-1] if str(exc).strip() else "failed"
        print(f"torch bridge not built ({first}); plain calls read tensors through Python", file=sys.stderr)
    for e in res["errors"]:
        print(e, file=sys.stderr)
    return 1 if res["errors"] else 0


# ---------------------------------------------------------------------------------------------------
# parser and entry point


def version_line() -> str:
    """kernelkit's version and what it runs on: Python, torch, NVRTC."""
    try:
        from .runtime import nvrtc_version

        nvrtc = "NVRTC " + ".".join(map(str, nvrtc_version()))
    except Exception:  # noqa: BLE001 - report, don't fail, in a version line
        nvrtc = "NVRTC not found"
    return f"kernelkit {__version__} (Python {platform.python_version()}, torch {torch.__version__}, {nvrtc})"


class _Version(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line())
        parser.exit()


def _op_arg(p, **kw) -> None:
    p.add_argument("op", type=_op_name, metavar="OP", help="an op (`kernelkit ops` lists them)", **kw)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kernelkit", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=_Version, help="show kernelkit's version (and Python's, torch's, NVRTC's)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    def command(name: str, fn, help: str):
        c = sub.add_parser(name, help=help, description=help)
        c.set_defaults(fn=fn, prog=c.prog)
        return c

    analysis = analysis_archs()
    arch_help = f"the GPU architecture to compile for (default {DEFAULT_ARCH}): {', '.join(analysis)}"
    wide_help = "every column (the default ones fit a 120-column terminal)"

    c = command("ops", cmd_ops, "list the ops, or one op's ladder: its rungs, their dtypes and techniques")
    _op_arg(c, nargs="?")

    c = command("ladder", cmd_ladder, "time every rung of an op against torch on this GPU (without a GPU: "
                                      "the static analysis)")
    _op_arg(c)
    c.add_argument("--dtype", type=_dtype, action="append", help="repeatable; default: the op's benchmark dtypes")
    c.add_argument("--size", type=_size, action="append", help="input size, e.g. 2^28 or 4096x4096; repeatable (GPU)")
    c.add_argument("--param", action="append", metavar="KEY=VALUE", help="an op keyword, e.g. approximate=none (GPU)")
    c.add_argument("--out", help=f"directory for the JSON and the roofline PNGs (GPU; default {DEFAULT_OUT})")
    c.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline (GPU)")
    c.add_argument("--wide", action="store_true", help=wide_help)

    c = command("inspect", cmd_inspect, "registers, spills, load/store widths, occupancy and SASS claims of "
                                        "each kernel of an op (no GPU needed)")
    _op_arg(c)
    c.add_argument("--arch", type=_arch_type(analysis_archs, "kernelkit's occupancy tables do not cover it"),
                   default=DEFAULT_ARCH, metavar="ARCH", help=arch_help)
    c.add_argument("--dtype", type=_dtype, action="append", help="only the kernels of this dtype; repeatable")
    c.add_argument("--rung", action="append", metavar="RUNG", help="only the kernels of this rung; repeatable")
    c.add_argument("--jobs", type=_positive, help="parallel compiler processes (default: one a CPU core)")
    c.add_argument("--wide", action="store_true", help=wide_help)
    c.add_argument("--shape", type=_size, metavar="MxNxK",
                   help="matmul, linear, scaled_matmul: instead of the kernel table, what the op launches for "
                        "this problem (BxMxNxK for a batch): the rung, its tile and K split, or the constraint "
                        "that sends it from the Hopper rungs to the mma or dequant rung")
    c.add_argument("--kmajor-b", action="store_true", help="with --shape: matmul's B is a transposed view (w.t())")
    c.add_argument("--offset", type=int, default=0, metavar="ELEMS",
                   help="with --shape: A starts this many elements into its storage (a misaligned view)")
    c.add_argument("--tf32", action="store_true", help="with --shape: float32 with allow_tf32=True")

    c = command("ncu", cmd_ncu, "Nsight Compute metrics of one rung (GPU and ncu needed)")
    _op_arg(c)
    c.add_argument("--variant", metavar="RUNG", help="the rung to profile (default: the op's default rung)")
    c.add_argument("--size", type=_size, default=(1 << 24,), help="input size, e.g. 2^24 (the default) or 4096x4096")
    c.add_argument("--dtype", type=_dtype, help="default: float32, or the rung's first dtype")
    c.add_argument("--param", action="append", metavar="KEY=VALUE", help="an op keyword, e.g. approximate=none")

    c = command("profile", cmd_profile, "every rung of an op under Nsight Compute, side by side: load requests, "
                                        "sectors per request, L1/L2 hit rates, occupancy, DRAM throughput, bank "
                                        "conflicts (GPU and ncu needed)")
    _op_arg(c)
    c.add_argument("--variant", action="append", metavar="RUNG", help="only these rungs (repeatable; default: all)")
    c.add_argument("--size", type=_size, help="input size (default: the op's first benchmark shape)")
    c.add_argument("--dtype", type=_dtype, help="default: float32")
    c.add_argument("--param", action="append", metavar="KEY=VALUE", help="an op keyword, e.g. approximate=none")

    c = command("ceilings", cmd_ceilings, "measure (or show the cached) copy bandwidth and matmul rates of this GPU")
    c.add_argument("--force", action="store_true", help="measure again")

    c = command("cache", cmd_cache, "where the compiled-kernel cache is and how big (info), or empty it (clear)")
    c.add_argument("action", choices=["info", "clear"])
    c.add_argument("--json", action="store_true", help="info as JSON (path, entries, bytes)")

    c = command("report", cmd_report, "record every ladder and the sweep on this GPU and write report.md and "
                                      "report.html (--from DIR: render recorded results, no GPU needed)")
    c.add_argument("--from", dest="source", metavar="DIR", help="render the recordings in DIR (e.g. benchmarks/results)")
    c.add_argument("--out", default="kernelkit-report", help="where report.md, report.html and the plots go")
    c.add_argument("--ops", nargs="*", type=_op_name, metavar="OP", help="record only these ops (GPU)")

    c = command("judge", cmd_judge, "build, check and time your own solve() kernel file on one of the judge's "
                                    "problems (--list, --template PROBLEM)")
    from .judge.command import add_arguments

    add_arguments(c)

    c = command("warmup", cmd_warmup, "compile every kernel for a GPU ahead of time (later calls never compile) "
                                      "and the torch bridge of the plain calls' fast path")
    c.add_argument("ops", nargs="*", type=_op_name, metavar="OP", help="ops to build (default: every op)")
    c.add_argument("--arch", type=_arch_type(build_archs, "NVRTC cannot compile for it"), metavar="ARCH",
                   help=f"default: this GPU's; one of {', '.join(build_archs())}")
    c.add_argument("--jobs", type=_positive, help="parallel compiler processes (default: one a CPU core)")
    return p


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _compile_error_line(exc) -> str:
    """NVRTC's first diagnostic ("relu.cu(12): error: ..."), not its whole log."""
    diag = next((ln.strip() for ln in exc.log.splitlines() if "error" in ln), _first_line(exc.log))
    return f"NVRTC failed to compile {exc.source} for {exc.arch}: {diag}"


_PACKAGES = {"cuda": "cuda-core cuda-bindings nvidia-cuda-nvrtc", "matplotlib": "matplotlib (or kernelkit[plot])"}


def main(argv: list[str] | None = None) -> int:
    from .analyze.ncu import ProfilerError
    from .analyze.tools import ToolNotFoundError
    from .runtime import CompileError, HeadersNotFoundError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad argument (already reported on one line)
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return args.fn(args)
    except CliError as exc:
        message, code = str(exc), exc.code
    except ToolNotFoundError as exc:
        message, code = f"{exc.tool or 'a CUDA tool'} not found; {exc.hint or _first_line(str(exc))}", 1
    except ProfilerError as exc:
        message, code = f"{_first_line(str(exc))}{'; ' + exc.hint if exc.hint else ''}", 1
    except HeadersNotFoundError as exc:
        found = _first_line(str(exc)).removesuffix("Searched:").strip()
        message, code = (f"{found} Set CUDA_HOME to a CUDA toolkit, or `pip install -U nvidia-cuda-nvrtc` for "
                         f"headers bundled with NVRTC"), 1
    except CompileError as exc:
        message, code = _compile_error_line(exc), 1
    except ModuleNotFoundError as exc:
        package = _PACKAGES.get((exc.name or "").split(".")[0])
        if package is None:
            raise
        message, code = f"{exc.name} is not installed; pip install {package}", 1
    except KeyboardInterrupt:
        message, code = "interrupted", 130
    except BrokenPipeError:  # `kernelkit inspect ... | head`: the reader left; say nothing, flush nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    print(f"{args.prog}: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
