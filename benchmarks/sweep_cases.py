"""The sweep's cases (benchmarks/sweep.py): the ops, dtypes and shapes it times, and the bytes each case
must move. Kept apart from the timing so that the CPU tests and the report read the case list without
torch's GPU side."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

ROW_OPS = ("softmax", "layer_norm", "rms_norm")
REDUCE_OPS = ("sum", "mean", "amax", "amin")
WINDOW_OPS = ("filter2d", "gaussian_blur", "max_pool2d", "avg_pool2d", "conv2d")
OPS = (*ROW_OPS, "transpose", "permute", *REDUCE_OPS, "gelu", *WINDOW_OPS)
DTYPES = ("float32", "float16", "bfloat16")
ROW_ELEMENTS = 1 << 27  # elements a row-op case, rows = this / row length
# rows shorter than SHORT_ROW: 2^24 elements, since torch's norms run them at 1-5 GB/s (0.2-1 s a call at 2^27)
SHORT_ROW, SHORT_ROW_ELEMENTS = 16, 1 << 24

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
