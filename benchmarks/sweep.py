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
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROW_OPS = ("softmax", "layer_norm", "rms_norm")
REDUCE_OPS = ("sum", "mean", "amax", "amin")
WINDOW_OPS = ("filter2d", "gaussian_blur", "max_pool2d", "avg_pool2d", "conv2d")
OPS = (*ROW_OPS, "transpose", "permute", *REDUCE_OPS, "gelu", *WINDOW_OPS)
DTYPES = ("float32", "float16", "bfloat16")
ROW_ELEMENTS = 1 << 27  # elements a row-op case, rows = this / row length
# rows shorter than SHORT_ROW: 2^24 elements, since torch's norms run them at 1-5 GB/s (0.2-1 s a call at 2^27)
SHORT_ROW, SHORT_ROW_ELEMENTS = 16, 1 << 24
SLOW_CALL_S = 0.02  # a first call slower than this: one warm-up round and three timed ones

# Row lengths: tiny and odd rows, primes, powers of two and their neighbours, the hidden sizes of current
# models (768 ... 18432) and their vocabularies (32000 ... 262144), up past 300000.
ROW_LENGTHS = (
    1, 2, 3, 7, 16, 31, 64, 100, 127, 257, 509, 768, 1000, 1023, 1024, 1025, 1536, 2048, 2053, 2560,
    3072, 4096, 4097, 5120, 6144, 7168, 8191, 8192, 10007, 12288, 14336, 16384, 18432, 24593, 32000,
    32001, 50257, 65536, 100003, 128256, 151936, 262144, 300001,
)
QUICK_ROW_LENGTHS = (7, 257, 4097, 50257, 300001)

# (input shape, dims swapped) for transpose, (input shape, permutation) for permute: odd shapes first
TRANSPOSES = (
    ((12345, 6789), (0, 1)), ((4097, 4095), (0, 1)), ((50257, 768), (0, 1)), ((768, 50257), (0, 1)),
    ((64, 197, 768), (1, 2)), ((8191, 8193), (0, 1)), ((1000003, 31), (0, 1)), ((16384, 16384), (0, 1)),
)
PERMUTES = (
    ((64, 197, 768), (0, 2, 1)), ((32, 67, 97, 101), (0, 2, 3, 1)), ((32, 97, 101, 67), (0, 3, 1, 2)),
    ((8, 1021, 12, 64), (0, 2, 1, 3)), ((16, 2053, 2053), (0, 2, 1)), ((64, 64, 224, 224), (0, 2, 3, 1)),
)
QUICK_REARRANGE = 2  # the first cases of each list
# (input shape, dim): a leading, middle or last dim of odd shapes; the result is much smaller than the input
REDUCTIONS = (
    ((8192, 8192), 0), ((8192, 8192), 1), ((12345, 6789), 0), ((6789, 12345), 1), ((4097, 4095), 0),
    ((50257, 768), 0), ((1000003, 127), 0), ((127, 1000003), 1), ((64, 197, 768), 1), ((31, 4099, 1021), 1),
    ((512, 512, 511), 2), ((1 << 27,), 0),
)
QUICK_REDUCTIONS = 3
GELU_SIZES = (1_000_003, 1 << 24, (1 << 27) + 1)
QUICK_GELU_SIZES = (1 << 24,)
# Sliding windows: images (H, W) from one row to 16 M pixels, odd sides; kernel sizes 3 to 31.
WINDOW_IMAGES = ((1, 65537), (17, 31), (127, 129), (1023, 1025), (4093, 4099))
QUICK_WINDOW_IMAGES = ((1, 65537), (1023, 1025))
FILTER_SIZES = (3, 5, 7, 15, 31)
BLUR_SIZES = (3, 7, 15, 31)
QUICK_WINDOW_SIZES = (7, 31)
# pooling: (N, C, H, W) and (kernel, stride, padding)
POOL_SHAPES = ((1, 1, 2, 65537), (8, 3, 17, 31), (4, 16, 127, 129), (2, 32, 1023, 1025))
POOL_WINDOWS = ((2, 2, 0), (3, 2, 1), (3, 1, 1))
# depthwise conv2d: (N, C, H, W) and (kernel, stride, padding), NCHW and channels_last
DEPTHWISE_SHAPES = ((8, 32, 17, 31), (4, 64, 127, 129), (16, 144, 55, 55), (2, 40, 1, 4099))
DEPTHWISE_WINDOWS = ((3, 1, 1), (5, 1, 2), (7, 1, 3), (3, 2, 1))
QUICK_POOL_SHAPES, QUICK_DEPTHWISE_SHAPES = 2, 1  # the first shapes of the lists

# agreement with torch: |kernelkit - torch| <= RTOL * (|torch| + the largest |torch| / 64), per result dtype
RTOL = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 3.2e-2, "uint8": 0.0}  # uint8: within 1


@dataclass(frozen=True)
class Case:
    """One timed problem: ``op`` on an input of ``shape`` and ``dtype``, with ``params`` (dim, dims,
    approximate) as (name, value) pairs."""

    op: str
    dtype: str
    shape: tuple[int, ...]
    params: tuple = field(default=())

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def row_len(self) -> int:
        """The x of the plots: the reduced dim's length for reductions, the input's last dim otherwise (the
        image width for the window ops)."""
        kw = self.kwargs
        if self.op in REDUCE_OPS:
            return self.shape[kw["dim"]]
        return self.shape[-1]

    def numel(self) -> int:
        return math.prod(self.shape)

    def esize(self) -> int:
        return {"float32": 4, "uint8": 1}.get(self.dtype, 2)

    def window_out(self) -> int:
        """Result elements of a window op: the input's for the filters, the strided output's else."""
        kw = self.kwargs
        if self.op in ("filter2d", "gaussian_blur"):
            return self.numel()
        n, c, h, w = self.shape
        k, s, p = kw["kernel"], kw["stride"], kw["padding"]
        return n * c * ((h + 2 * p - k) // s + 1) * ((w + 2 * p - k) // s + 1)

    def nbytes(self) -> int:
        """Bytes the op must move: every input element read once, every result element written once
        (plus the weight and bias of the norms)."""
        n, e = self.numel(), self.esize()
        if self.op in WINDOW_OPS:
            return (n + self.window_out()) * e
        if self.op in REDUCE_OPS:
            return n * e + n // self.shape[self.kwargs["dim"]] * e
        extra = {"layer_norm": 2, "rms_norm": 1}.get(self.op, 0) * self.shape[-1] * e
        return 2 * n * e + extra


def cases(ops=OPS, quick: bool = False) -> list[Case]:
    """The sweep's cases for ``ops``, in order (``quick``: a few of each op)."""
    out: list[Case] = []
    lengths = QUICK_ROW_LENGTHS if quick else ROW_LENGTHS
    for op in ops:
        if op in ROW_OPS:
            for n in lengths:
                for dt in DTYPES:
                    out.append(Case(op, dt, (max(1, (ROW_ELEMENTS if n >= SHORT_ROW else SHORT_ROW_ELEMENTS) // n), n)))
        elif op in ("transpose", "permute"):
            table = TRANSPOSES if op == "transpose" else PERMUTES
            key = "dims" if op == "permute" else "swap"
            for shape, dims in table[:QUICK_REARRANGE] if quick else table:
                for dt in ("float32", "bfloat16"):
                    out.append(Case(op, dt, shape, ((key, dims),)))
        elif op in REDUCE_OPS:
            for shape, dim in REDUCTIONS[:QUICK_REDUCTIONS] if quick else REDUCTIONS:
                for dt in DTYPES:
                    out.append(Case(op, dt, shape, (("dim", dim),)))
        elif op == "gelu":
            for size in QUICK_GELU_SIZES if quick else GELU_SIZES:
                for approximate in ("none", "tanh"):
                    for dt in DTYPES:
                        out.append(Case(op, dt, (size,), (("approximate", approximate),)))
        elif op in WINDOW_OPS:
            out += window_cases(op, quick)
        else:
            raise ValueError(f"sweep: unknown op {op!r} (expected some of {', '.join(OPS)})")
    return out


def window_cases(op: str, quick: bool) -> list[Case]:
    """The sweep's cases of one sliding-window op."""
    out: list[Case] = []
    if op in ("filter2d", "gaussian_blur"):
        sizes = QUICK_WINDOW_SIZES if quick else FILTER_SIZES if op == "filter2d" else BLUR_SIZES
        for hw in QUICK_WINDOW_IMAGES if quick else WINDOW_IMAGES:
            for k in sizes:
                if op == "gaussian_blur" and min(hw) <= k // 2:  # torchvision's reflect pad needs pad < size
                    continue
                for dt in ("float32", "float16" if op == "filter2d" else "uint8"):
                    out.append(Case(op, dt, hw, (("size", k),)))
    elif op in ("max_pool2d", "avg_pool2d"):
        for shape in POOL_SHAPES[:QUICK_POOL_SHAPES] if quick else POOL_SHAPES:
            for k, s, p in POOL_WINDOWS:
                for dt in ("float32", "bfloat16"):
                    out.append(Case(op, dt, shape, (("kernel", k), ("stride", s), ("padding", p))))
    else:
        for shape in DEPTHWISE_SHAPES[:QUICK_DEPTHWISE_SHAPES] if quick else DEPTHWISE_SHAPES:
            for k, s, p in DEPTHWISE_WINDOWS:
                if shape[2] + 2 * p < k:
                    continue
                for layout in ("nchw", "channels_last"):
                    for dt in ("float32", "float16"):
                        out.append(Case(op, dt, shape, (("kernel", k), ("stride", s), ("padding", p),
                                                        ("layout", layout))))
    return out


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
