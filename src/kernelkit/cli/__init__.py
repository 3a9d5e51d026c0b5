"""`kernelkit` command line: ladders, static inspection, Nsight Compute, ceilings, the kernel cache, the judge.

Every failure a user can cause or fix (an unknown op, arch or dtype, a filter that matches nothing, a
missing tool or GPU) ends in one line on stderr, `kernelkit <command>: error: <what> <hint>`, and a
non-zero exit status: 2 for the command line itself, 1 for the machine (a tool, a GPU, a compiler).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys

import torch

from .. import __version__
from ._args import (DEFAULT_ARCH, DEFAULT_OUT, CliError, _arch_type, _dtype, _op_name, _params,  # noqa: F401
                    _Parser, _positive, _size, analysis_archs, build_archs)
from ._commands import (_sweep_module, cmd_cache, cmd_ceilings, cmd_inspect, cmd_judge,  # noqa: F401
                        cmd_ladder, cmd_ncu, cmd_ops, cmd_profile, cmd_report, cmd_warmup)

DESCRIPTION = ("kernelkit: hand-written CUDA kernels, each op with its ladder of rungs from naive to fast; "
               "run, verify, time and analyse every rung")
EPILOG = """first steps:
  kernelkit ops                  the ops and their ladders
  kernelkit ops gelu             one ladder: each rung and the technique it adds
  kernelkit inspect gelu         each kernel's registers, access widths, occupancy (no GPU needed)
  kernelkit ladder gelu          every rung timed against torch (GPU)"""

# ---------------------------------------------------------------------------------------------------
# parser and entry point


def version_line() -> str:
    """kernelkit's version and what it runs on: Python, torch, NVRTC."""
    try:
        from ..runtime import nvrtc_version

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
    c.add_argument("--fused", action="store_true",
                   help="with --shape, linear: an activation or a residual fused into the epilogue")

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
    from ..judge.command import add_arguments

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
    from ..analyze.ncu import ProfilerError
    from ..analyze.tools import ToolNotFoundError
    from ..runtime import CompileError, HeadersNotFoundError

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
