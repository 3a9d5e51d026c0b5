"""What the row-op tuners (persistent_grid, ln_cluster_lengths) share: their common arguments, the
provenance line, the inputs of each rows x length case, and the timing report."""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Iterator

import torch


def case_args(ap, *, shapes: str, dtypes: str, ops: str, reps: int) -> None:
    """The arguments every row script takes: --shapes ROWSxLEN[,...], --dtypes, --ops, --reps."""
    ap.add_argument("--shapes", default=shapes)
    ap.add_argument("--dtypes", default=dtypes)
    ap.add_argument("--ops", default=ops)
    ap.add_argument("--reps", type=int, default=reps)


def shape_args(ap, *, shape: str, dtype: str, cfg: str | None = None) -> None:
    """The arguments row_dims and row_shape read: --shape ROWSxLEN, --dtype and (with a default) --cfg."""
    ap.add_argument("--shape", default=shape)
    ap.add_argument("--dtype", default=dtype)
    if cfg is not None:
        ap.add_argument("--cfg", default=cfg)


def row_dims(a) -> tuple[int, int, torch.dtype]:
    """The parsed --shape ROWSxLEN and --dtype of a row script: (rows, length, dtype)."""
    rows, len_ = map(int, a.shape.split("x"))
    return rows, len_, getattr(torch, a.dtype)


def row_shape(a) -> tuple[int, int, torch.dtype, tuple[int, ...]]:
    """row_dims and the parsed --cfg GROUPxVECSxCLUSTER: (rows, length, dtype, configuration)."""
    return (*row_dims(a), tuple(map(int, a.cfg.split("x"))))


class Rotation:
    """`count` random (rows, length) inputs, an output each (placement near the L2 size moves a kernel's
    time by a few percent). each(fn) is a function of the rep index i (as time_interleaved calls it) calling
    fn(x, out) on pair i % count: every function sees every pair, and the functions of one rep the same one.
    (Pairs taken from one counter shared by all functions would leave each function only some of the pairs
    whenever the number of functions and of pairs share a factor.)"""

    def __init__(self, rows: int, len_: int, dtype: torch.dtype, count: int):
        self.xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(count)]
        self.outs = [torch.empty_like(self.xs[0]) for _ in range(count)]

    @property
    def nbytes(self) -> int:
        """Bytes a call moves: one input read, one output written."""
        return 2 * self.xs[0].numel() * self.xs[0].element_size()

    def each(self, fn):
        def run(i):
            fn(self.xs[i % len(self.xs)], self.outs[i % len(self.xs)])
        return run


def norm_call(op: str, len_: int, w, b):
    """kernelkit's op as fn(x, out): layer_norm with w and b, rms_norm with w, softmax over the last dim."""
    import kernelkit

    return {"layer_norm": lambda x, out: kernelkit.layer_norm(x, (len_,), w, b, out=out),
            "rms_norm": lambda x, out: kernelkit.rms_norm(x, (len_,), w, 1e-5, out=out),
            "softmax": lambda x, out: kernelkit.softmax(x, -1, out=out)}[op]


def norm_error(op: str, x, out, w, b) -> float:
    """Largest absolute difference of out from torch's layer_norm (w, b) or rms_norm (w) of x, in fp32."""
    import torch.nn.functional as F

    len_ = x.shape[-1]
    f = lambda t: None if t is None else t.float()  # noqa: E731
    want = (F.rms_norm(x.float(), (len_,), f(w), 1e-5) if op == "rms_norm" else
            F.layer_norm(x.float(), (len_,), f(w), f(b)))
    return (out.float() - want).abs().max().item()


def add_if_right(op: str, rot: "Rotation", run, w, b, fns: list, labels: list, label: str, note: str = "") -> None:
    """Call run(x, out) once on rot's first input into a NaN-filled output, print its error against torch's op,
    and add it (as a function of the rep index) to fns and labels only if that is below 2e-2."""
    x, out = rot.xs[0], rot.outs[0]
    out.fill_(float("nan"))
    run(x, out)
    err = norm_error(op, x, out, w, b)
    print(f"  {op} {label}{note}: max error {err:.3g}")
    if err < 2e-2:
        fns.append(rot.each(run))
        labels.append(label)


def beside_kernelkit(op: str, rot: "Rotation", w, b, fns: list, labels: list, reps: int, title: str) -> None:
    """Time fns (functions of the rep index) beside kernelkit's op and a same-bytes copy over rot's inputs,
    interleaved with the order shuffled every round, and report them."""
    from kernelkit.bench import time_interleaved

    fns = [*fns, rot.each(norm_call(op, rot.xs[0].shape[-1], w, b)), rot.each(lambda x, out: out.copy_(x))]
    labels = [*labels, f"kernelkit.{op}", "copy"]
    times = time_interleaved(fns, reps=reps, warmup=5, flush_l2=True, max_seconds=30, shuffle=True)
    report(f"{title} ({len(rot.xs)} rotating inputs, shuffled order):", labels, times, rot.nbytes, width=28)


def device_line(extra: str = "") -> str:
    """Device, torch version and UTC time: the first line of every result file."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"device {torch.cuda.get_device_name()}  torch {torch.__version__}  {now:%Y-%m-%d %H:%M} UTC  {extra}".rstrip()


@dataclass
class Case:
    """One rows x length input in one dtype: `copies` inputs to rotate through when the working set is
    near L2 (so no call finds its input cached), weight and bias, an output, and the bytes moved."""
    shape: str
    rows: int
    len_: int
    dtype: torch.dtype
    nbytes: int
    copies: int
    xs: list
    w: torch.Tensor
    b: torch.Tensor
    out: torch.Tensor

    def x(self, i: int) -> torch.Tensor:
        return self.xs[i % self.copies]


def cases(shapes: str, dtypes: str) -> Iterator[Case]:
    """Every (shape, dtype) of the comma-separated lists, with random inputs on the GPU."""
    for shape in shapes.split(","):
        rows, len_ = map(int, shape.split("x"))
        for dt in dtypes.split(","):
            dtype = getattr(torch, dt)
            nbytes = 2 * rows * len_ * torch.finfo(dtype).bits // 8
            copies = 4 if nbytes <= 4 * 50 * 2**20 else 1
            xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(copies)]
            w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
            yield Case(shape, rows, len_, dtype, nbytes, copies, xs, w, b, torch.empty_like(xs[0]))


def report(title: str, labels, times, nbytes: int, against: str = "copy", *, width: int = 24,
           spread: bool = False) -> None:
    """One line per timed function: median (and with `spread` p20 and p80), GB/s, and its speed relative
    to `against` (the copy: "% of copy"; any other label: "x <label>")."""
    labels = list(labels)
    ref = times[labels.index(against)].median_us
    print(title)
    for label, t in zip(labels, times):
        rel = f"{ref / t.median_us:6.1%} of copy" if against == "copy" else f"{ref / t.median_us:6.3f}x {against}"
        p = f" (p20 {t.p20_us:6.2f}, p80 {t.p80_us:6.2f})" if spread else ""
        print(f"  {label:{width}s} {t.median_us:8.2f} us{p}  {nbytes / t.seconds / 1e9:7.0f} GB/s  {rel}")
