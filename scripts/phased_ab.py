"""The norms' rows at any alignment with weight and bias phased (NormTile.phased: persistent groups, each thread
keeping its weight and bias vectors shifted to its row phase in shared memory) against the same tile reading
them shifted from global memory at every row, torch eager and a same-bytes copy, timed in turn in one process
(kernelkit.bench.time_interleaved, shuffled rounds, medians). The shapes are the sweep's
(benchmarks/sweep_cases.py: about 2^27 elements a case). Cases the rule does not phase are skipped (fp32 rows:
their figures in benchmarks/results/norm-phased-h200.json were taken with norm_rules._phased letting them in).

    python scripts/phased_ab.py [--out results.json] [--reps 30] [--quick]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops.reduction import norm
from kernelkit.ops.reduction._rows import WINDOW

SHAPES_16 = ((1056832, 127), (522247, 257), (263689, 509), (131200, 1023), (130944, 1025), (65376, 2053),
             (32760, 4097), (16386, 8191), (13412, 10007))
SHAPES_32 = ((1056832, 127), (522247, 257), (130944, 1025), (32760, 4097), (13412, 10007))


def cases(quick: bool):
    for dtype, shapes in ((torch.float16, SHAPES_16), (torch.bfloat16, SHAPES_16), (torch.float32, SHAPES_32)):
        for shape in shapes[::3] if quick else shapes:
            for op in ("layer_norm", "rms_norm"):
                yield op, dtype, shape


def configs(dtype, len_):
    sm = torch.cuda.get_device_capability()[0] * 10 + torch.cuda.get_device_capability()[1]
    new = norm.config_for("auto", dtype, len_, form=WINDOW, sm=sm)
    if not (isinstance(new, norm.NormTile) and new.phased):
        return None
    return new, dataclasses.replace(new, phased=False)


def warm(todo):
    """Compile every kernel the cases launch at once, in parallel processes."""
    from kernelkit.runtime.launch import device_arch
    from kernelkit.warmup import Build, _compile, run_parallel

    arch = device_arch(0)
    builds = {}
    for _op, dtype, (_rows, len_) in todo:
        got = configs(dtype, len_)
        for c in got or ():
            builds[Build(norm.SRC, c.name(dtype, WINDOW), arch)] = None
    errors = [b.name for b, _, err in run_parallel(_compile, list(builds)) if err]
    if errors:
        raise RuntimeError(f"compile errors: {errors}")


def run(op, dtype, shape, reps):
    rows, n = shape
    got = configs(dtype, n)
    if got is None:
        return None
    new, old = got
    x = torch.randn(shape, device="cuda", dtype=dtype) * 2 + 0.5
    w, b = torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype)
    if op == "layer_norm":
        def call(cfg):
            return lambda: kernelkit.layer_norm(x, (n,), w, b, config=cfg)
        theirs = lambda: F.layer_norm(x, (n,), w, b)  # noqa: E731
    else:
        def call(cfg):
            return lambda: kernelkit.rms_norm(x, (n,), w, config=cfg)
        theirs = lambda: F.rms_norm(x, (n,), w)  # noqa: E731
    a, c = call(new)(), call(old)()
    same = bool(torch.equal(a, c))
    nbytes = 2 * x.numel() * x.element_size()
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)
    t = time_interleaved([call(new), call(old), theirs, lambda: src.clone()], warmup=3, reps=reps,
                         working_set_bytes=nbytes, max_seconds=2.0, shuffle=True)
    us = [r.median_us for r in t]
    return {"op": op, "dtype": str(dtype)[6:], "shape": list(shape), "new": repr(new), "old": repr(old),
            "new_us": round(us[0], 2), "old_us": round(us[1], 2), "torch_us": round(us[2], 2),
            "copy_us": round(us[3], 2), "new_pct_copy": round(100 * us[3] / us[0], 1),
            "old_pct_copy": round(100 * us[3] / us[1], 1), "new_vs_old": round(us[1] / us[0], 3),
            "new_vs_torch": round(us[2] / us[0], 3), "same_bits": same}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    todo = list(cases(args.quick))
    t0 = time.perf_counter()
    warm(todo)
    print(f"compiled in {time.perf_counter() - t0:.0f} s", flush=True)
    recs = []
    for op, dtype, shape in todo:
        r = run(op, dtype, shape, args.reps)
        if r is None:
            continue
        recs.append(r)
        print(f"{op:10s} {r['dtype']:8s} {shape[0]:>8d}x{shape[1]:<6d} new {r['new_pct_copy']:5.1f}% old "
              f"{r['old_pct_copy']:5.1f}% x{r['new_vs_old']:.3f} torch x{r['new_vs_torch']:.2f} "
              f"same={r['same_bits']}", flush=True)
        torch.cuda.empty_cache()
    env = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join(["python"] + sys.argv)}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"environment": env, "records": recs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
