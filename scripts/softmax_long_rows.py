"""Time softmax's configurations for long rows side by side: main's rule (a cluster a row), the rule's
choice, and candidate tiles as a cluster a row, handed out (persistent clusters, softmax_handout) and
handed out with the next row prefetched into L2, against torch eager and a same-bytes copy, all in one
interleaved loop per case (kernelkit.bench.time_interleaved: shuffled rounds, medians).

    python scripts/softmax_long_rows.py [--cases bfloat16:2670x50257,...] [--set candidates|rule]
                                        [--out results.json]

``--set rule``: main's rule, the current rule and torch and the copy only. Prints each configuration's
% of the copy and its speed against torch; --out writes the records.
"""
from __future__ import annotations

import argparse
import json
import time

import torch

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops.reduction import softmax as sm
from kernelkit.ops.reduction._rows import (ALIGNED, WINDOW, cdiv, cluster_tile, cta_tile, per_vec, row_form,
                                           window_len)

CASES = ("bfloat16:5457x24593,bfloat16:4194x32001,bfloat16:2670x50257,bfloat16:2048x65536,bfloat16:1342x100003,"
         "bfloat16:1046x128256,bfloat16:883x151936,bfloat16:512x262144,bfloat16:447x300001,float32:883x151936,"
         "float32:447x300001,float32:2670x50257")


def main_rule(dtype: torch.dtype, len_: int, form: int) -> sm.SoftmaxTile:
    """The rule of main before softmax_handout: a CTA of up to 1024 threads x 32 values a row, then the
    smallest cluster of up to 8 CTAs of <= 512 threads, then 8 CTAs of up to 1024 (a cluster a row)."""
    vectors = cdiv(window_len(len_, dtype, form), per_vec(dtype))
    most = 32 // per_vec(dtype)
    got = cta_tile(vectors, most)
    if got is None:
        got = cluster_tile(vectors, most, 64 // per_vec(dtype) if dtype.itemsize == 2 else 10)
    return sm.SoftmaxTile(*got)


def candidates(dtype: torch.dtype, len_: int, form: int) -> list[tuple[str, object]]:
    """Clusters of 2-16 CTAs at 4 vectors a thread (fp32 also 8), CTAs of 64-1024 threads, each as a
    cluster a row, handed out, and handed out with the next row prefetched."""
    vectors = cdiv(window_len(len_, dtype, form), per_vec(dtype))
    out = []
    for vecs in (4,) if dtype.itemsize == 2 else (4, 8):
        for c in (2, 4, 8, 16):
            threads = max(64, 32 * cdiv(cdiv(vectors, c * vecs), 32))
            if threads > 1024:
                continue
            vecs_ = cdiv(cdiv(vectors, c), threads)
            for h, p in ((False, False), (True, False), (True, True)):
                t = sm.SoftmaxTile(threads, vecs_, c, handout=h, prefetch=p)
                out.append((f"{threads}x{vecs_}x{c}{' handout' if h else ''}{'+prefetch' if p else ''}", t))
    return out


def case_configs(dtype: torch.dtype, len_: int, form: int, which: str) -> list[tuple[str, object]]:
    main = main_rule(dtype, len_, form)
    configs, seen = [("main", main)], {main}
    for label, c in [("rule", sm.config_for("auto", dtype, len_, sm=90, form=form))] + (
            candidates(dtype, len_, form) if which == "candidates" else []):
        if c not in seen:
            seen.add(c)
            configs.append((label, c))
    return configs


def compile_all(cases, which: str) -> str:
    """Every kernel of the cases, compiled in parallel processes before timing."""
    from kernelkit.runtime.launch import device_arch
    from kernelkit.warmup import Build, _compile, run_parallel

    t0, builds = time.perf_counter(), {}
    for dtype, rows, len_ in cases:
        form = ALIGNED if len_ % per_vec(dtype) == 0 else WINDOW  # torch's allocations are aligned
        for _, c in case_configs(dtype, len_, form, which):
            builds[Build(sm.SRC, c.name(dtype, form), device_arch(0))] = None
    errors = [b.name for b, _, err in run_parallel(_compile, list(builds)) if err]
    return f"{len(builds)} kernels in {time.perf_counter() - t0:.0f} s" + (f", errors: {errors}" if errors else "")


def run_case(dtype: torch.dtype, rows: int, len_: int, which: str, reps: int) -> dict:
    x = torch.randn(rows, len_, device="cuda", dtype=torch.float32).mul_(3).to(dtype)
    src, dst = x.clone(), torch.empty_like(x)
    form = row_form(len_, dtype, x.data_ptr(), x.data_ptr())
    configs = case_configs(dtype, len_, form, which)
    ref = torch.softmax(x.double(), -1)
    fns, labels, worst = [], [], {}
    for label, c in configs:
        got = kernelkit.softmax(x, config=c)
        worst[label] = float((got.double() - ref).abs().max())
        fns.append(lambda c=c: kernelkit.softmax(x, config=c))
        labels.append(label)
    fns += [lambda: torch.softmax(x, -1), lambda: dst.copy_(src)]
    t = time_interleaved(fns, warmup=3, reps=reps, working_set_bytes=2 * x.numel() * x.element_size(),
                         max_seconds=2.0, shuffle=True)
    us = [r.median_us for r in t]
    torch_us, copy_us = us[-2], us[-1]
    res = []
    for label, (name, c), u in zip(labels, configs, us):
        res.append({"label": label, "config": repr(c), "us": round(u, 2), "pct_copy": round(100 * copy_us / u, 1),
                    "vs_torch": round(torch_us / u, 3), "max_abs_err": worst[label]})
    return {"dtype": str(dtype)[6:], "shape": [rows, len_], "form": form, "torch_us": round(torch_us, 2),
            "copy_us": round(copy_us, 2), "configs": res}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--set", default="candidates", choices=("candidates", "rule"))
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out")
    a = ap.parse_args()
    cases = []
    for case in a.cases.split(","):
        dt, shape = case.split(":")
        cases.append((getattr(torch, dt), *map(int, shape.split("x"))))
    print("compiled:", compile_all(cases, a.set), flush=True)
    records, t0 = [], time.perf_counter()
    for dtype, rows, len_ in cases:
        dt, shape = str(dtype)[6:], f"{rows}x{len_}"
        r = run_case(dtype, rows, len_, a.set, a.reps)
        records.append(r)
        print(f"{dt} {shape} torch {r['torch_us']} us copy {r['copy_us']} us", flush=True)
        for c in sorted(r["configs"], key=lambda c: c["us"]):
            print(f"   {c['label']:32s} {c['us']:8.2f} us {c['pct_copy']:6.1f}% copy {c['vs_torch']:5.2f}x torch  "
                  f"{c['config']}", flush=True)
        torch.cuda.empty_cache()
    print(f"{len(records)} cases in {time.perf_counter() - t0:.0f} s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "records": records}, f, indent=1)


if __name__ == "__main__":
    main()
