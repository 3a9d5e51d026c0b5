"""`kernelkit judge`: the command line of the judge (registered by kernelkit.cli)."""
from __future__ import annotations

import json
from pathlib import Path

from .problems import PROBLEMS


def add_arguments(c) -> None:
    c.add_argument("problem", nargs="?", metavar="PROBLEM", help="a problem (--list shows them)")
    c.add_argument("solution", nargs="?", metavar="SOLUTION.cu", help='a CUDA file defining extern "C" void solve(...)')
    c.add_argument("--list", action="store_true", help="list the problems with their solve() signatures")
    c.add_argument("--template", metavar="PROBLEM", help="print a starter solution of a problem")
    c.add_argument("--arch", metavar="ARCH", help="the GPU architecture to build for (default: this GPU's, or sm_90)")
    c.add_argument("--seed", type=int, help="the random inputs' seed (default: a fresh one each run)")
    c.add_argument("--no-time", action="store_true", help="check only, do not time")
    c.add_argument("--sanitize", action="store_true", help="also run compute-sanitizer memcheck and racecheck")
    c.add_argument("--json", action="store_true", help="the verdict as JSON")


def _fmt_ms(ms: float) -> str:
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def describe(v) -> str:
    """The verdict as a few lines for a terminal."""
    head = f"{v.problem}: {v.status}"
    if v.seed is not None:
        head += f" (seed {v.seed})"
    lines = [head]
    if v.message:
        lines.append("  " + v.message)
    t = v.timing
    if t:
        sizes = " ".join(f"{k}={n}" for k, n in t["sizes"].items())
        rate = f"{t['gbs']:.0f} GB/s"
        if "copy_gbs" in t:
            rate += f", {100 * t['gbs'] / t['copy_gbs']:.1f}% of the measured copy ({t['copy_gbs']:.0f} GB/s)"
        if "tflops" in t:
            rate = f"{t['tflops']:.1f} TFLOP/s" + (f", {100 * t['tflops'] / t['matmul_tflops']:.1f}% of cuBLAS fp32 "
                                                   f"({t['matmul_tflops']:.1f})" if "matmul_tflops" in t else "")
        lines.append(f"  timed at {sizes}: {_fmt_ms(t['median_ms'])} (median of {t['runs']} runs, each output "
                     f"checked), {rate}")
        for who in ("kernelkit", "torch"):
            if f"{who}_ms" in t:
                ratio = t[f"{who}_ms"] / t["median_ms"]
                lines.append(f"  {who}: {_fmt_ms(t[f'{who}_ms'])}; yours runs at {ratio:.2f}x its speed")
            elif f"{who}_error" in t:
                lines.append(f"  {who}: not timed ({t[f'{who}_error']})")
    if v.details.get("sanitizer"):
        lines.append("  " + v.details["sanitizer"])
    if v.status in ("Compile Error", "Runtime Error") and v.log:
        lines.append(v.log.rstrip())
    return "\n".join(lines)


def run(args, error) -> int:
    """The command; ``error(message, code)`` builds the CLI's one-line error."""
    from .judge import judge
    from .problems import get_problem, template

    if args.list:
        for p in PROBLEMS.values():
            print(f"{p.name:22s} {p.summary}\n{'':22s} {p.signature()}")
        return 0
    if args.template:
        try:
            print(template(get_problem(args.template)), end="")
        except KeyError as exc:
            raise error(exc.args[0]) from None
        return 0
    if not args.problem or not args.solution:
        raise error("name a problem and a solution file (kernelkit judge softmax solution.cu), or --list / --template")
    try:
        get_problem(args.problem)
    except KeyError as exc:
        raise error(exc.args[0]) from None
    if not Path(args.solution).is_file():
        raise error(f"no file {args.solution!r}")
    import torch

    if not torch.cuda.is_available():
        from .judge import compile_solution

        v, lib = compile_solution(args.problem, args.solution, args.arch)
        if lib is not None:
            v.message = f"built for {args.arch or 'sm_90'}; not run: torch sees no GPU here"
    else:
        v = judge(args.problem, args.solution, arch=args.arch, seed=args.seed, time_solution=not args.no_time,
                  sanitize=args.sanitize)
    print(json.dumps(v.as_dict(), indent=2, default=str) if args.json else describe(v))
    return 0 if v.status in ("Accepted", "Compiled") else 1
