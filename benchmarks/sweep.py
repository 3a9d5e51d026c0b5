"""Sweep the shapes users have: each case timed as kernelkit's default rung, torch eager and a same-bytes copy.

    python benchmarks/sweep.py [--ops softmax transpose ...] [--quick] [--out benchmarks/results]

The cases (``cases()``): the row ops (softmax, layer_norm, rms_norm) at row lengths from 1 to 300001
(primes, odd lengths, the hidden and vocabulary sizes of current models) with about 2^27 elements a
case (2^24 below 16 elements a row); transposes and permutations of odd shapes; sum, mean, amax and amin along dims of odd shapes;
gelu in both forms at a few sizes; each in fp32, fp16 and bf16 (rearrangements in fp32 and bf16); the
sliding windows (``WINDOW_OPS``): filter2d and gaussian_blur on 1xN, small, odd and large images with
kernels of 3 to 31 (fp32 and fp16 / uint8), max and avg pooling 2x2/s2, 3x3/s2 and 3x3/s1 on odd NCHW
shapes (fp32, bf16), depthwise conv2d 3x3 to 7x7 at strides 1 and 2 on odd shapes, NCHW and
channels_last (fp32, fp16). The
three candidates of a case run in turn in one process (``kernelkit.bench.time_interleaved``: shuffled
rounds, medians, L2 flushed by a read between calls where the working set is small enough to sit in
it). Before timing, kernelkit's result is compared with torch's, the window ops' with torch's expression in
float64 (``agrees``).

Writes ``sweep-<device>.json`` into --out: the environment and a list of records {"op", "dtype",
"shape", "kernelkit_gbs", "torch_gbs", "copy_gbs", ...}, and ``sweep-<device>-<op>.png``: % of the
copy against row length (log x; for the window ops the image width), kernelkit and torch. ``--quick``: a
few cases per op.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

SLOW_CALL_S = 0.02  # a first call slower than this: one warm-up round and three timed ones

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_cases import (OPS, REDUCE_OPS, ROW_OPS, RTOL, WINDOW_OPS, Case, cases)  # noqa: E402


def record(case: Case, kk_us: float, torch_us: float, copy_us: float, agrees: bool) -> dict[str, Any]:
    """The JSON record of a timed case (rates in GB/s of the bytes the op must move, 1e9 bytes)."""
    nbytes = case.nbytes()

    def gbs(us: float) -> float:
        return round(nbytes / us / 1e3, 1)

    return {"op": case.op, "dtype": case.dtype, "shape": list(case.shape),
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in case.params},
            "row_len": case.row_len, "bytes": nbytes,
            "kernelkit_gbs": gbs(kk_us), "torch_gbs": gbs(torch_us), "copy_gbs": gbs(copy_us),
            "kernelkit_us": round(kk_us, 2), "torch_us": round(torch_us, 2), "copy_us": round(copy_us, 2),
            "pct_copy": round(100 * copy_us / kk_us, 1), "vs_torch": round(torch_us / kk_us, 3),
            "agrees": bool(agrees)}


def device_tag(name: str) -> str:
    """A short file-name tag for a device name: "NVIDIA H100 80GB HBM3" -> "h100"."""
    m = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Za-z]?)\b", name)
    return m.group(1).lower() if m else (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu")


# ---------------------------------------------------------------- GPU side

def _inputs(case: Case):
    """(kernelkit's call, torch's call, the same-bytes copy, the result kernelkit's is checked against) as
    functions of no argument. The window ops and the norms are checked against torch's expression on float64
    inputs, run without TF32 (cuDNN runs float32 convolutions of large images as TF32 by default, 1e-3 off;
    the filters' expressions compute in float32), and torch's float32 layer_norm of 2-element rows was off
    by more than 1e-4 from ours."""
    import torch
    import torch.nn.functional as F

    import kernelkit

    dtype = getattr(torch, case.dtype)
    kw = case.kwargs
    if case.op in WINDOW_OPS:
        mine, theirs, reference = _window_calls(case, dtype)
    elif case.op in ("transpose", "permute"):
        x = torch.randn(case.shape, device="cuda").to(dtype)
    else:
        x = torch.randn(case.shape, device="cuda", dtype=dtype) * 2 + 0.5
    n = case.shape[-1]
    if case.op == "softmax":
        mine, theirs = (lambda: kernelkit.softmax(x, -1)), (lambda: torch.softmax(x, -1))
    elif case.op in ("layer_norm", "rms_norm"):
        w, b = torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype)
        if case.op == "layer_norm":
            mine, theirs = (lambda: kernelkit.layer_norm(x, (n,), w, b)), (lambda: F.layer_norm(x, (n,), w, b))
            reference = lambda: F.layer_norm(x.double(), (n,), w.double(), b.double())  # noqa: E731
        else:
            mine, theirs = (lambda: kernelkit.rms_norm(x, (n,), w)), (lambda: F.rms_norm(x, (n,), w))
            eps = torch.finfo(torch.float32).eps  # what torch's (and ours) uses by default for every input dtype
            reference = lambda: F.rms_norm(x.double(), (n,), w.double(), eps)  # noqa: E731
    elif case.op == "transpose":
        d0, d1 = kw["swap"]
        mine, theirs = (lambda: kernelkit.transpose(x, d0, d1)), (lambda: x.transpose(d0, d1).contiguous())
    elif case.op == "permute":
        dims = kw["dims"]
        mine, theirs = (lambda: kernelkit.permute(x, dims)), (lambda: x.permute(dims).contiguous())
    elif case.op in REDUCE_OPS:
        d, kfn, tfn = kw["dim"], getattr(kernelkit, case.op), getattr(torch, case.op)
        mine, theirs = (lambda: kfn(x, d)), (lambda: tfn(x, d))
    elif case.op not in WINDOW_OPS:
        a = kw["approximate"]
        mine, theirs = (lambda: kernelkit.gelu(x, approximate=a)), (lambda: F.gelu(x, approximate=a))
    src = torch.empty(case.nbytes() // 2, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)
    if case.op not in (*WINDOW_OPS, "layer_norm", "rms_norm"):
        reference = theirs
    return mine, theirs, (lambda: src.clone()), reference


def _window_calls(case: Case, dtype):
    """(kernelkit's call, torch's call) of a window case: the filters against the torch expression the op
    registers (conv2d with the border's padding), pooling and depthwise conv2d against torch.nn.functional."""
    import torch
    import torch.nn.functional as F

    import kernelkit
    from kernelkit import get_op

    kw = case.kwargs
    if dtype == torch.uint8:
        x = torch.randint(0, 256, case.shape, dtype=dtype, device="cuda")
    else:
        x = torch.randn(case.shape, device="cuda", dtype=dtype)
    if case.op in ("filter2d", "gaussian_blur"):
        k, tfn = kw["size"], get_op(case.op).torch_fn
        if case.op == "filter2d":
            w = torch.randn(k, k, device="cuda") / k
            return (lambda: kernelkit.filter2d(x, w)), (lambda: tfn(x, w)), (lambda: tfn(x.double(), w.double()))
        return (lambda: kernelkit.gaussian_blur(x, k)), (lambda: tfn(x, k)), (lambda: tfn(x.double(), k))
    k, s, p = kw["kernel"], kw["stride"], kw["padding"]
    if case.op in ("max_pool2d", "avg_pool2d"):
        kfn, tfn = getattr(kernelkit, case.op), getattr(F, case.op)
        return (lambda: kfn(x, k, s, p)), (lambda: tfn(x, k, s, p)), (lambda: tfn(x.double(), k, s, p))
    if kw["layout"] == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    c = case.shape[1]
    w = (torch.randn(c, 1, k, k, device="cuda") / k).to(dtype)
    return ((lambda: kernelkit.conv2d(x, w, None, s, p, 1, c)), (lambda: F.conv2d(x, w, None, s, p, 1, c)),
            (lambda: F.conv2d(x.double(), w.double(), None, s, p, 1, c)))


def _agrees(case: Case, a, b) -> bool:
    """kernelkit's result ``a`` against torch's ``b``: bit for bit for rearrangements, within RTOL else."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if case.op in ("transpose", "permute"):
        return bool(torch.equal(a, b))
    if case.dtype == "uint8":
        return bool(((a.int() - b.int()).abs() <= 1).all())
    a, b = a.float(), b.float()
    if a.isnan().ne(b.isnan()).any():
        return False
    a, b = a.nan_to_num(), b.nan_to_num()
    scale = b.abs().max().item() if b.numel() else 0.0
    return bool(((a - b).abs() <= RTOL[case.dtype] * (b.abs() + scale / 64)).all())


def _default_builds(op_names, arch: str) -> list:
    """The default rungs' kernels of ``op_names`` for ``arch`` (compiled in parallel before the sweep)."""
    import torch

    from kernelkit import get_op
    from kernelkit.warmup import Build

    seen: dict = {}
    for name in dict.fromkeys(op_names):
        op = get_op(name)
        v = op.default_variant
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.uint8):
            if not v.supports(dtype):
                continue
            for params in op.param_combinations():
                for k in v.kernels(dtype, **params):
                    if k.min_sm <= int(arch[3:]):
                        seen[Build(k.source, k.name, arch + k.arch_suffix)] = None
    return list(seen)


def _row_case_builds(todo: list[Case], arch: str) -> list:
    """The kernels the row-op cases launch (their lengths' configurations under the default rule, for rows of a
    contiguous input into a fresh output: aligned where a row is a whole number of vectors, the window form
    else), compiled with the rest before timing rather than one at a time at each first call."""
    import torch

    from kernelkit.ops.reduction import norm, softmax
    from kernelkit.ops.reduction._rows import ALIGNED, WINDOW
    from kernelkit.warmup import Build

    sm = int(arch[3:])
    seen: dict = {}
    for c in todo:
        if c.op not in ROW_OPS:
            continue
        dtype, len_ = getattr(torch, c.dtype), c.shape[-1]
        form = ALIGNED if len_ % (16 // dtype.itemsize) == 0 else WINDOW
        if c.op == "softmax":
            cfg, src = softmax.config_for("auto", dtype, len_, sm=sm, form=form), softmax.SRC
        else:
            cfg, src = norm.config_for("auto", dtype, len_, form=form, sm=sm), norm.SRC
        seen[Build(src, cfg.name(dtype, form), arch)] = None
    return list(seen)


def warm(op_names, todo: list[Case] = ()) -> str:
    from kernelkit.runtime.launch import device_arch
    from kernelkit.warmup import _compile, run_parallel

    t0 = time.perf_counter()
    builds = list(dict.fromkeys(_default_builds(op_names, device_arch(0)) + _row_case_builds(list(todo), device_arch(0))))
    errors = [b.name for b, _, err in run_parallel(_compile, builds) if err]
    return f"{len(builds)} kernels in {time.perf_counter() - t0:.0f} s" + (f", errors: {errors}" if errors else "")


def run_case(case: Case, reps: int, max_seconds: float) -> dict[str, Any]:
    import torch

    from kernelkit.bench import time_interleaved

    mine, theirs, copy, reference = _inputs(case)
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # the filters' expressions cast to float32
        want = reference()
    if want.dtype == torch.float64 and case.dtype != "float64":  # a float64 result, in the case's dtype
        want = want.round().clamp(0, 255) if case.dtype == "uint8" else want
        want = want.to(getattr(torch, case.dtype))
    agrees = _agrees(case, mine(), want)
    del want
    t0 = time.perf_counter()  # kernelkit's call alone (the float64 reference may be slow)
    mine()
    torch.cuda.synchronize()
    slow = time.perf_counter() - t0 > SLOW_CALL_S
    t = time_interleaved([mine, theirs, copy], warmup=1 if slow else 3, reps=3 if slow else reps,
                         working_set_bytes=case.nbytes(), max_seconds=max_seconds, shuffle=True)
    rec = record(case, t[0].median_us, t[1].median_us, t[2].median_us, agrees)
    del mine, theirs, copy, reference
    torch.cuda.synchronize()
    return rec


def plot(records: list[dict], op: str, path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    colors = {"float32": "tab:blue", "float16": "tab:orange", "bfloat16": "tab:green", "uint8": "tab:red"}
    for dt, color in colors.items():
        rs = sorted((r for r in records if r["op"] == op and r["dtype"] == dt), key=lambda r: r["row_len"])
        if not rs:
            continue
        xs = [r["row_len"] for r in rs]
        ax.plot(xs, [r["pct_copy"] for r in rs], "o-", color=color, label=f"kernelkit {dt}")
        ax.plot(xs, [100 * r["torch_gbs"] / r["copy_gbs"] for r in rs], "x--", color=color, alpha=0.5,
                label=f"torch {dt}")
    ax.set_xscale("log")
    ax.axhline(90, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("reduced dim length" if op in REDUCE_OPS else "image width" if op in WINDOW_OPS
                  else "row length (last dim of the input)")
    ax.set_ylabel("% of a same-bytes copy")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    p.add_argument("--quick", action="store_true", help="a few cases per op")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--reps", type=int, default=20, help="timed rounds a case (at most)")
    p.add_argument("--max-seconds", type=float, default=0.3, help="time bound of one case's timed rounds")
    p.add_argument("--no-warmup", action="store_true", help="compile each kernel at its first call instead")
    a = p.parse_args(argv)

    import torch

    from kernelkit.bench import environment, write_json

    if not torch.cuda.is_available():
        print("sweep.py needs a CUDA GPU")
        return 1
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = device_tag(torch.cuda.get_device_name(0))
    todo = cases(a.ops, a.quick)
    if not a.no_warmup:
        print("warm-up:", warm(a.ops, todo), flush=True)
    records, t0 = [], time.perf_counter()
    env = environment()

    def save() -> dict:  # after every op, so that a sweep cut short keeps what it measured
        doc = {"environment": env, "quick": a.quick, "seconds": round(time.perf_counter() - t0, 1), "records": records}
        write_json(out / f"sweep-{tag}.json", doc)
        return doc

    for i, c in enumerate(todo):
        if i and c.op != todo[i - 1].op:
            save()
        try:
            r = run_case(c, a.reps, a.max_seconds)
        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the sweep
            print(f"{c.op} {c.dtype} {c.shape} {c.kwargs}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            continue
        records.append(r)
        print(f"[{i + 1}/{len(todo)} {time.perf_counter() - t0:5.0f}s] {c.op:10s} {c.dtype:8s} "
              f"{'x'.join(map(str, c.shape)):>16s} {str(r['params'] or ''):18s} kk {r['kernelkit_gbs']:6.0f} "
              f"torch {r['torch_gbs']:6.0f} copy {r['copy_gbs']:6.0f} GB/s  {r['pct_copy']:5.1f}% of copy  "
              f"{r['vs_torch']:.2f}x torch{'' if r['agrees'] else '  DISAGREES WITH TORCH'}", flush=True)
    doc = save()
    for op in dict.fromkeys(r["op"] for r in records):
        plot(records, op, out / f"sweep-{tag}-{op}.png", f"{op} on {torch.cuda.get_device_name(0)}")
    print(f"{len(records)} of {len(todo)} cases in {doc['seconds']} s -> {out / f'sweep-{tag}.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
