"""Run one op's whole ladder on one input: every rung, torch eager and torch.compile.

Every rung is first checked against the float64 reference (a rung that computes the wrong answer
is reported, never timed), then timed on the same input in turn with torch eager
(``time_interleaved``): each rung's ``vs_torch`` compares two runs made under the same conditions,
and the torch eager row is the run beside the op's default rung. Rates are judged against
the measured ceilings: the large-buffer copy bandwidth and a copy of the same byte count (the best of
two placements, cached), and against a copy of the same byte count timed in the same loop
(``pct_copy_paired``): it sees the same clocks and the same rotation of placements as the rung (for the row
ops a clone of the rung's own input), and its median is compared with the rung's median, where the cached
ceiling is the better of two placements of buffers of its own.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

from .. import reference
from ..reference import reduction
from ..ladder import get_op
from .ceilings import copy_bandwidth
from .timing import l2_cache_bytes, time_cuda, time_interleaved


ROTATIONS = 4  # input copies the paired runs rotate through when the op's bytes are near the L2 size
ROTATE_BELOW_L2_MULTIPLE = 4


@dataclass
class Row:
    name: str
    technique: str
    median_us: float | None = None
    gbs: float | None = None
    gflops: float | None = None
    pct_copy: float | None = None  # of the large-buffer copy ceiling
    pct_copy_same_bytes: float | None = None  # of a copy moving the same bytes (cached, best placement)
    pct_copy_paired: float | None = None  # of a same-bytes copy timed in turn with the rung (medians)
    vs_prev: float | None = None  # speedup over the previous rung
    vs_torch: float | None = None  # speedup over torch eager
    tflops: float | None = None  # compute-bound ops: TFLOP/s (TOP/s for integers)
    pct_torch: float | None = None  # compute-bound ops: share of torch's (cuBLAS's) rate timed in turn, %
    error: str | None = None  # why the rung was not timed

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clone_args(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    c = lambda a: a.clone() if isinstance(a, torch.Tensor) else a  # noqa: E731
    return tuple(c(a) for a in args), {k: c(v) for k, v in kwargs.items()}


# compute-bound ops: the largest |out - ref| allowed, relative to max |ref| (a wrong tile, not rounding:
# sums of thousands of products in fp32, tf32 or 16-bit operands); integers exact
COMPUTE_TOL = {torch.float64: 1e-10, torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}
TF32_TOL = 2e-2


def _compute_mismatch(out: torch.Tensor, ref: torch.Tensor, params) -> str | None:
    if not out.dtype.is_floating_point:
        n = int((out.double() != ref).sum())
        return f"{n} elements differ from the float64 reference" if n else None
    o, r = out.double(), ref.double()
    err, mag = float((o - r).abs().max()), float(r.abs().max())
    tol = TF32_TOL if str(params.get("allow_tf32", "")).lower() in ("true", "1") else COMPUTE_TOL.get(out.dtype, 1e-4)
    return None if err <= tol * mag else f"max |out - ref| {err:.3g} is over {tol:g} x max |ref| ({mag:.3g})"


def _check(op, variant: str | None, args, kwargs, params) -> str | None:
    """None if the rung matches the float64 reference on (a copy of) the benchmark input."""
    ref_fn = getattr(reference, op.name, None)
    if ref_fn is None:
        return None
    a, k = _clone_args(args, kwargs)
    ref = ref_fn(*a, **k, **params)
    a, k = _clone_args(args, kwargs)
    out = op.call(*a, variant=variant, **k, **params)
    if not isinstance(out, torch.Tensor):
        return None
    if op.compute_bound:
        return _compute_mismatch(out, ref, params)
    if op.name in ("sum", "mean", "amax", "amin"):
        # judged against the magnitudes summed, not the result: 2^28 random values sum to near zero, and a
        # tolerance relative to that result failed every rung, torch's fp32 sum included
        a, k = _clone_args(args, kwargs)
        mag = reduction.accumulation_magnitude(op.name, *a, **k, **params)
        n = int(reduction.reduction_mismatches(out, ref, mag, out.dtype).numel())
    elif out.dtype in reference.TOLERANCE or out.dtype.is_floating_point:
        bad = reference.mismatches(out, ref, out.dtype if out.dtype in reference.TOLERANCE else torch.float32)
        n = int(bad.numel())
    else:
        n = int((out != ref.to(out.dtype)).sum())
    return f"{n} elements differ from the float64 reference" if n else None


def _same_bytes_copy(copies: list, nbytes: int):
    """The copy timed in turn with every rung, as fn(i): nbytes / 2 read and written, its destination from the
    caching allocator as the rung's output is. Where the op reads and writes its first tensor argument's size (the
    row ops: within 1% of nbytes), that argument of rotation i itself is cloned, so the copy reads the rung's own
    input buffers; else a uint8 source of nbytes / 2 a rotation. Why: where a buffer lands moves a copy's rate,
    and a source of its own measured 2975 GB/s in one process where the op's input cloned runs 3060 (H100,
    1024 x 65536 fp32; docs/design/timing.md)."""
    k = len(copies)
    inputs = [next((a for a in args if isinstance(a, torch.Tensor)), None) for args, _ in copies]
    if inputs[0] is not None and abs(2 * inputs[0].numel() * inputs[0].element_size() - nbytes) <= 0.01 * nbytes:
        return lambda i: inputs[i % k].clone()
    sources = [torch.randint(0, 256, (max(1, nbytes // 2),), dtype=torch.uint8, device="cuda") for _ in range(k)]
    return lambda i: sources[i % k].clone()


def run_ladder(
    op_name: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    params: dict[str, Any] | None = None,
    *,
    with_compile: bool = True,
    max_seconds: float = 1.0,
) -> dict[str, Any]:
    """Rows for every rung valid for ``dtype`` plus torch baselines, and the ceilings used."""
    op = get_op(op_name)
    params = dict(params or {})
    args, kwargs = op.example(shape, dtype)
    nbytes = op.bytes_moved(*args, **kwargs, **params)
    flops = op.flops(*args, **kwargs, **params)
    copy_large = copy_bandwidth(None)
    copy_same = copy_bandwidth(nbytes)

    def measure(fn) -> float:
        return time_cuda(fn, working_set_bytes=nbytes, max_seconds=max_seconds).median_us

    # Inputs near the L2 size: how the op's lines map onto L2 and DRAM moves a memory-bound kernel by
    # a few percent either way depending on where the input lies (an H100 at 2^24 16-bit elements:
    # +-3%, flipping which of two kernels is ahead), so the paired runs rotate through several copies
    # of the input and compare over all their placements.
    copies = [(args, kwargs)]
    if nbytes <= ROTATE_BELOW_L2_MULTIPLE * l2_cache_bytes():
        copies += [_clone_args(args, kwargs) for _ in range(ROTATIONS - 1)]
    k = len(copies)
    torch_fn = lambda i: op.torch_fn(*copies[i % k][0], **copies[i % k][1], **params)  # noqa: E731
    copy_fn = _same_bytes_copy(copies, nbytes)

    def measure_against_torch(variant: str) -> tuple[float, float, float | None]:
        mine = lambda i: op.call(*copies[i % k][0], variant=variant, **copies[i % k][1], **params)  # noqa: E731
        # in turn with torch and the copy: all see the same placements and clocks (timing.time_interleaved);
        # a compute-bound op is judged against torch alone. A call of tenths of a second (a teaching rung at
        # 8192^3) gets as many reps as the budget holds, at least 3, instead of timing.MIN_REPS.
        fns = [mine, torch_fn] if op.compute_bound else [mine, torch_fn, copy_fn]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for f in fns:
            f(0)
        torch.cuda.synchronize()
        round_s = time.perf_counter() - t0
        reps = 100 if round_s * 20 <= 3 * max_seconds else max(3, min(10, int(3 * max_seconds / round_s)))
        times = time_interleaved(fns, working_set_bytes=nbytes, max_seconds=3 * max_seconds, shuffle=True,
                                 reps=reps, warmup=10 if reps == 100 else 1)
        return times[0].median_us, times[1].median_us, times[2].median_us if len(times) > 2 else None

    def fill(row: Row, us: float, copy_us: float | None = None) -> Row:
        row.median_us = us
        row.pct_copy_paired = None if copy_us is None else 100 * copy_us / us
        row.gbs = nbytes / us / 1e3
        row.gflops = flops / us / 1e3
        if op.compute_bound:
            row.tflops = flops / us / 1e6
        row.pct_copy = 100 * row.gbs / copy_large
        row.pct_copy_same_bytes = 100 * row.gbs / copy_same
        return row

    rows, prev, torch_us, torch_copy_us = [], None, None, None
    for v in op.variants_for(dtype):
        row = Row(v.name, v.technique, error=v.unavailable())
        if row.error:  # its headers are missing here
            rows.append(row)
            continue
        try:
            row.error = _check(op, v.name, args, kwargs, params)
            if row.error is None:
                us, paired_torch_us, copy_us = measure_against_torch(v.name)
                fill(row, us, copy_us)
                row.vs_torch = paired_torch_us / us
                if op.compute_bound:
                    row.pct_torch = 100 * row.vs_torch
                if v.default or torch_us is None:  # the torch row: its run beside the default rung
                    torch_us, torch_copy_us = paired_torch_us, copy_us
        except Exception as exc:  # e.g. a rung whose alignment or shape constraint the input misses
            row.error = f"{type(exc).__name__}: {exc}"[:300]
        if row.median_us:
            row.vs_prev = prev / row.median_us if prev else None
            prev = row.median_us
        rows.append(row)

    torch_rows = [fill(Row("torch eager", "the torch expression users write today"),
                       torch_us if torch_us is not None else measure(lambda: op.torch_fn(*args, **kwargs, **params)),
                       torch_copy_us)]
    if with_compile:
        try:
            compiled = torch.compile(op.torch_fn)
            torch_rows.append(fill(Row("torch.compile", "torch.compile of that expression (Inductor)"),
                                   measure(lambda: compiled(*args, **kwargs, **params))))
        except Exception as exc:  # Inductor needs a working toolchain; report, don't fail the ladder
            torch_rows.append(Row("torch.compile", "torch.compile of that expression", error=str(exc)[:200]))
    return {
        "op": op_name,
        "shape": list(shape),
        "dtype": str(dtype).replace("torch.", ""),
        "params": params,
        "bytes": nbytes,
        "flops": flops,
        "copy_gbs_large": copy_large,
        "copy_gbs_same_bytes": copy_same,
        "rows": [r.as_dict() for r in rows + torch_rows],
    }


COLUMNS = [
    ("name", "rung", None),
    ("median_us", "time (us)", ".1f"),
    ("gbs", "GB/s", ".0f"),
    ("pct_copy", "% copy", ".1f"),
    ("pct_copy_same_bytes", "% copy (same bytes)", ".1f"),
    ("pct_copy_paired", "% copy (same bytes, in turn)", ".1f"),
    ("vs_prev", "x prev", ".2f"),
    ("vs_torch", "x torch", ".2f"),
    ("error", "note", None),
]
WIDE_ONLY = frozenset({"pct_copy", "pct_copy_same_bytes"})  # `kernelkit ladder` shows them with --wide

# compute-bound ops (matmul): the rate and the share of cuBLAS's (torch's) rate timed in turn with the rung
COMPUTE_COLUMNS = [
    ("name", "rung", None),
    ("median_us", "time (us)", ".1f"),
    ("tflops", "TFLOP/s", ".1f"),
    ("pct_torch", "% of torch (cuBLAS), in turn", ".1f"),
    ("vs_prev", "x prev", ".2f"),
    ("gbs", "GB/s", ".0f"),
    ("error", "note", None),
]
COMPUTE_WIDE_ONLY = frozenset({"gbs"})


def parse_shape(text: str) -> tuple[int, ...]:
    """'2^28' -> (268435456,), '16384x16384x4' -> (16384, 16384, 4), '1e6' -> (1000000,)."""
    def one(t: str) -> int:
        t = t.strip()
        if "^" in t:
            b, e = t.split("^")
            return int(b) ** int(e)
        return int(float(t)) if "e" in t.lower() else int(t)

    dims = tuple(one(t) for t in text.lower().split("x"))
    if not dims or any(d < 0 for d in dims) or math.prod(dims) < 0:
        raise ValueError(f"bad size {text!r}; write 2^28, 4096x4096 or 1000")
    return dims
