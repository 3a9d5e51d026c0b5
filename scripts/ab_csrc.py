"""A/B of a kernel change: the row ops through kernelkit's own dispatch, built once from the current
csrc/ and once from each other tree given (say HEAD's: `git archive HEAD src/kernelkit/csrc | tar -x -C /tmp/base`),
timed in turn with torch and a same-bytes copy (interleaved rounds, 4 input copies rotated when the
working set is near L2), each checked against float64 first.

How: every cache between an op call and its kernel (compiled builds in memory, loaded kernels, each op
module's launch plans) is filled once per source tree, and each timed call binds its side's caches
before calling the op, so both sides run the same host code, grids and launch shapes; only the
compiled kernels differ. (Until session 13's fix this swapped the loaded kernels alone: the builds in
memory and the plans, which hold the kernel, then served the first side's kernel to every side.)

    python scripts/ab_csrc.py --baseline /tmp/base/src/kernelkit/csrc [--shapes 4096x4096,32768x32768]
                              [--dtypes float16,float32] [--ops layer_norm,rms_norm,softmax] [--reps 200]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.runtime import compiler
from rowbench import case_args, cases, device_line, report

TOL = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 6e-2}


def call(mod, op, x, w, b):
    """op through kernelkit or torch.nn.functional (the same signatures)."""
    n = (x.shape[-1],)
    if op == "softmax":
        return mod.softmax(x, dim=-1)
    if op == "rms_norm":
        return mod.rms_norm(x, n, w, eps=1e-5)
    return mod.layer_norm(x, n, w, b, eps=1e-5)


def caches() -> list[tuple[object, str]]:
    """(module, attribute) of every dict that remembers a build, a kernel or a plan holding one."""
    import importlib
    mods = {name: importlib.import_module(name) for name in (
        "kernelkit.runtime.compiler", "kernelkit.runtime.launch", "kernelkit.ops._launch_util",
        "kernelkit.ops._unary", "kernelkit.ops.norm", "kernelkit.ops.softmax", "kernelkit.ops.rearrange")}
    found = [(m, a) for m in mods.values() for a in ("_memory", "_kernels", "_loaded", "_plans")
             if isinstance(getattr(m, a, None), dict)]
    assert any(a == "_memory" for _, a in found) and any(a == "_plans" for _, a in found), found
    return found


def bind(side: dict) -> None:
    """Make one side's caches the live ones (the functions look them up as module globals per call)."""
    for (mod, attr), table in side.items():
        setattr(mod, attr, table)


def tables(baselines: dict[str, Path], warm) -> dict[str, dict]:
    """Each side's caches, filled by warm() with the kernels of its source tree."""
    current = compiler.CSRC
    out = {}
    for side, csrc in (("current", current), *baselines.items()):
        compiler.CSRC = csrc
        compiler._csrc_digest.cache_clear()  # the disk cache's key covers the sources
        out[side] = {c: {} for c in caches()}
        bind(out[side])
        warm()
    compiler.CSRC = current
    compiler._csrc_digest.cache_clear()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="csrc directories to compare the current one with, "
                    "comma-separated; the first is the 'baseline' of the ratios, the others go by folder name")
    case_args(ap, shapes="4096x4096", dtypes="float16,float32", ops="layer_norm,rms_norm", reps=200)
    ap.add_argument("--reverse", action="store_true", help="time the sides in the reverse order in each round")
    a = ap.parse_args()
    dirs = [Path(d).resolve() for d in a.baseline.split(",")]
    baselines = {("baseline" if i == 0 else d.name): d for i, d in enumerate(dirs)}
    print(device_line(f"baselines {a.baseline}"))
    for case in cases(a.shapes, a.dtypes):
        for op in a.ops.split(","):
            compare(op, a, baselines, case)


def compare(op: str, a, baselines: dict[str, Path], case) -> None:
    x, w, b, tag = case.x, case.w, case.b, f"{op} {str(case.dtype)[6:]} {case.shape}"
    sides = tables(baselines, lambda: call(kernelkit, op, x(0), w, b))
    # the sides must run different code where the trees differ: say how many builds differ
    mem = {side: {k[1:]: v.cubin for (_m, attr), t in tab.items() if attr == "_memory" for k, v in t.items()}
           for side, tab in sides.items()}
    for side in baselines:
        same = sum(mem[side].get(k) == c for k, c in mem["current"].items())
        print(f"  [{tag}] {side}: {len(mem['current']) - same} of {len(mem['current'])} builds differ from current")
    ref = call(F, op, x(0).double(), w.double(), b.double())
    for side, table in sides.items():
        bind(table)
        # relative to 1 + |ref|: outputs reach ~20 (randn weights), where a bf16 half-ulp is 0.06
        err = ((call(kernelkit, op, x(0), w, b).double() - ref).abs() / (1 + ref.abs())).max().item()
        assert err < TOL[case.dtype], (tag, side, err)

    def ours(table):
        def run(i):
            bind(table)
            call(kernelkit, op, x(i), w, b)
        return run

    fns = {side: ours(t) for side, t in sides.items()}
    fns["torch"] = lambda i: call(F, op, x(i), w, b)
    fns["copy"] = lambda i: case.out.copy_(x(i))
    if a.reverse:
        fns = dict(reversed(fns.items()))
    times = time_interleaved(list(fns.values()), reps=a.reps, warmup=10, flush_l2=True, max_seconds=30)
    report(tag, fns, times, case.nbytes, against="baseline")
    bind(sides["current"])

if __name__ == "__main__":
    main()
