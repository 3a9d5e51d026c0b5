"""The judge's problems: each a ``solve`` signature, its cases, its float64 reference and its cost.

A problem lists ``solve``'s parameters in order: device buffers (inputs, outputs, or both for an
in-place problem) of a shape given by the case's sizes, and ``int`` sizes. A case is a dict of sizes;
``cases`` are the edge sizes every solution is checked on, ``timing`` the size it is timed at. The
reference takes the inputs as float64 (integers stay integers) on the device that holds them and
returns the expected outputs by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

F32, U8 = torch.float32, torch.uint8
Sizes = dict


@dataclass(frozen=True)
class Buffer:
    """A device buffer of ``solve``: ``role`` "in", "out" or "inout"; ``shape(sizes)`` its shape."""

    name: str
    dtype: torch.dtype
    shape: Callable[[Sizes], tuple]
    role: str = "in"

    @property
    def ctype(self) -> str:
        base = {F32: "float", U8: "unsigned char"}[self.dtype]
        return f"const {base}*" if self.role == "in" else f"{base}*"


@dataclass(frozen=True)
class Size:
    """An ``int`` parameter of ``solve``: the case's size of that name."""

    name: str
    ctype = "int"


@dataclass(frozen=True)
class Problem:
    name: str
    summary: str
    params: tuple
    reference: Callable[..., dict]  # reference(sizes, **inputs as float64) -> {output name: expected}
    cases: tuple  # sizes of the checked cases
    timing: Sizes  # sizes of the timed case
    bytes_moved: Callable[[Sizes], int]
    flops: Callable[[Sizes], int] = lambda s: 0
    tolerance: Callable[[Sizes], tuple] = lambda s: (1e-5, 1e-5)  # (rtol, atol) for float outputs
    inputs: Optional[Callable[[torch.Generator, Buffer, tuple], torch.Tensor]] = None  # random inputs
    kernelkit: Optional[Callable[..., object]] = None  # kernelkit's op on the inputs, for comparison
    torch_fn: Optional[Callable[..., object]] = None  # torch's, likewise
    notes: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def buffers(self) -> tuple:
        return tuple(p for p in self.params if isinstance(p, Buffer))

    def signature(self) -> str:
        args = ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f'extern "C" void solve({args})'


def _random(gen: torch.Generator, buf: Buffer, shape: tuple) -> torch.Tensor:
    if buf.dtype == U8:
        return torch.randint(0, 256, shape, generator=gen, dtype=U8, device=gen.device)
    return torch.randn(shape, generator=gen, dtype=torch.float32, device=gen.device).mul_(2)


def make_inputs(problem: Problem, sizes: Sizes, gen: torch.Generator) -> dict:
    """Fresh random inputs (and in-place buffers) of a case, by name, on the generator's device."""
    make = problem.inputs or _random
    return {b.name: make(gen, b, b.shape(sizes)) for b in problem.buffers if b.role in ("in", "inout")}


def _gelu(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _invert(image):
    out = image.clone().view(-1, 4)
    out[:, :3] = 255 - out[:, :3]
    return out.view(image.shape)


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * gamma + beta


def _sum_tolerance(s: Sizes) -> tuple:
    # fp32 accumulation in any order (atomics included): 2e-6 of the sum of |x|, which is about 1.6 N
    return (1e-5, 2e-6 * 1.6 * s["N"] + 1e-5)


def _matmul_tolerance(s: Sizes) -> tuple:
    # fp32 dot products of K terms of size ~4 in any order: a few ulps of the sum of |terms| ~ 2.5 K
    return (1e-4, 4e-7 * 2.5 * s["K"] + 1e-5)


def _vector(n):
    return lambda s: (s[n],)


def _matrix(r, c):
    return lambda s: (s[r], s[c])


ROWS_COLS = ({"rows": 1, "cols": 1}, {"rows": 3, "cols": 5}, {"rows": 7, "cols": 1000}, {"rows": 37, "cols": 4097},
             {"rows": 1000, "cols": 33}, {"rows": 2, "cols": 70001})
VECTOR = ({"N": 1}, {"N": 7}, {"N": 1000}, {"N": 4097}, {"N": (1 << 20) + 3})

PROBLEMS: dict[str, Problem] = {}


def _add(p: Problem) -> None:
    PROBLEMS[p.name] = p


_add(Problem(
    name="vector_add", summary="C = A + B for float vectors of N elements",
    params=(Buffer("A", F32, _vector("N")), Buffer("B", F32, _vector("N")), Buffer("C", F32, _vector("N"), "out"),
            Size("N")),
    reference=lambda s, A, B: {"C": A + B}, cases=VECTOR, timing={"N": 1 << 25},
    bytes_moved=lambda s: 12 * s["N"],
    kernelkit=lambda k, A, B: k.add(A, B), torch_fn=lambda A, B: A + B))
_add(Problem(
    name="matrix_add", summary="C = A + B for row-major float matrices of rows x cols",
    params=(Buffer("A", F32, _matrix("rows", "cols")), Buffer("B", F32, _matrix("rows", "cols")),
            Buffer("C", F32, _matrix("rows", "cols"), "out"), Size("rows"), Size("cols")),
    reference=lambda s, A, B: {"C": A + B}, cases=ROWS_COLS, timing={"rows": 8192, "cols": 8192},
    bytes_moved=lambda s: 12 * s["rows"] * s["cols"],
    kernelkit=lambda k, A, B: k.add(A, B), torch_fn=lambda A, B: A + B))
_add(Problem(
    name="relu", summary="output = max(input, 0) element by element, N floats",
    params=(Buffer("input", F32, _vector("N")), Buffer("output", F32, _vector("N"), "out"), Size("N")),
    reference=lambda s, input: {"output": input.clamp_min(0)}, cases=VECTOR, timing={"N": 1 << 25},
    bytes_moved=lambda s: 8 * s["N"], tolerance=lambda s: (0.0, 0.0),
    kernelkit=lambda k, input: k.relu(input), torch_fn=torch.relu))
_add(Problem(
    name="gelu", summary="output = GELU(input), tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
    params=(Buffer("input", F32, _vector("N")), Buffer("output", F32, _vector("N"), "out"), Size("N")),
    reference=lambda s, input: {"output": _gelu(input)}, cases=VECTOR, timing={"N": 1 << 25},
    bytes_moved=lambda s: 8 * s["N"], tolerance=lambda s: (1e-5, 2e-6),
    kernelkit=lambda k, input: k.gelu(input),
    torch_fn=lambda input: torch.nn.functional.gelu(input, approximate="tanh")))
_add(Problem(
    name="color_inversion", summary="invert the R, G and B bytes of an RGBA image of width x height pixels in "
                                    "place (255 - v), leaving alpha",
    params=(Buffer("image", U8, lambda s: (s["height"], s["width"], 4), "inout"), Size("width"), Size("height")),
    reference=lambda s, image: {"image": _invert(image)},
    cases=({"width": 1, "height": 1}, {"width": 3, "height": 5}, {"width": 1023, "height": 7},
           {"width": 1920, "height": 1081}),
    timing={"width": 8192, "height": 8192}, bytes_moved=lambda s: 8 * s["width"] * s["height"],
    kernelkit=lambda k, image: k.invert_colors(image), torch_fn=_invert))
_add(Problem(
    name="matrix_transpose", summary="output (cols x rows) = the transpose of input (rows x cols), row-major floats",
    params=(Buffer("input", F32, _matrix("rows", "cols")), Buffer("output", F32, lambda s: (s["cols"], s["rows"]), "out"),
            Size("rows"), Size("cols")),
    reference=lambda s, input: {"output": input.t()}, cases=ROWS_COLS, timing={"rows": 8192, "cols": 8192},
    bytes_moved=lambda s: 8 * s["rows"] * s["cols"], tolerance=lambda s: (0.0, 0.0),
    kernelkit=lambda k, input: k.transpose(input), torch_fn=lambda input: input.t().contiguous()))
_add(Problem(
    name="reduction", summary="output[0] = the sum of the N floats of input",
    params=(Buffer("input", F32, _vector("N")), Buffer("output", F32, lambda s: (1,), "out"), Size("N")),
    reference=lambda s, input: {"output": input.sum().reshape(1)}, cases=VECTOR, timing={"N": 1 << 26},
    bytes_moved=lambda s: 4 * s["N"], tolerance=_sum_tolerance,
    kernelkit=lambda k, input: k.sum(input), torch_fn=torch.sum))
_add(Problem(
    name="softmax", summary="each row of input (rows x cols) -> exp(x - max) / sum(exp(x - max)) along the row",
    params=(Buffer("input", F32, _matrix("rows", "cols")), Buffer("output", F32, _matrix("rows", "cols"), "out"),
            Size("rows"), Size("cols")),
    reference=lambda s, input: {"output": torch.softmax(input, -1)}, cases=ROWS_COLS,
    timing={"rows": 4096, "cols": 8192}, bytes_moved=lambda s: 8 * s["rows"] * s["cols"],
    tolerance=lambda s: (1e-5, 1e-7),
    kernelkit=lambda k, input: k.softmax(input, -1), torch_fn=lambda input: torch.softmax(input, -1)))
_add(Problem(
    name="layer_norm", summary="each row of input (rows x cols) normalised to mean 0 and variance 1 (biased, "
                               "eps = 1e-5), then * gamma + beta (cols each)",
    params=(Buffer("input", F32, _matrix("rows", "cols")), Buffer("gamma", F32, _vector("cols")),
            Buffer("beta", F32, _vector("cols")), Buffer("output", F32, _matrix("rows", "cols"), "out"),
            Size("rows"), Size("cols")),
    reference=lambda s, input, gamma, beta: {"output": _layer_norm(input, gamma, beta)}, cases=ROWS_COLS,
    timing={"rows": 4096, "cols": 8192}, bytes_moved=lambda s: 8 * s["rows"] * s["cols"] + 8 * s["cols"],
    tolerance=lambda s: (2e-5, 2e-5),
    kernelkit=lambda k, input, gamma, beta: k.layer_norm(input, input.shape[-1:], gamma, beta),
    torch_fn=lambda input, gamma, beta: torch.nn.functional.layer_norm(input, input.shape[-1:], gamma, beta)))
_add(Problem(
    name="matrix_multiplication", summary="C (M x N) = A (M x K) @ B (K x N), row-major floats, fp32 arithmetic",
    params=(Buffer("A", F32, _matrix("M", "K")), Buffer("B", F32, _matrix("K", "N")),
            Buffer("C", F32, _matrix("M", "N"), "out"), Size("M"), Size("N"), Size("K")),
    reference=lambda s, A, B: {"C": A @ B},
    cases=({"M": 1, "N": 1, "K": 1}, {"M": 3, "N": 5, "K": 7}, {"M": 1, "N": 257, "K": 129},
           {"M": 131, "N": 67, "K": 1}, {"M": 257, "N": 263, "K": 269}),
    timing={"M": 4096, "N": 4096, "K": 4096},
    bytes_moved=lambda s: 4 * (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]),
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"], tolerance=_matmul_tolerance,
    kernelkit=lambda k, A, B: k.matmul(A, B), torch_fn=lambda A, B: A @ B,
    notes="timed against kernelkit.matmul and torch.matmul in exact fp32 (TF32 off)"))


def _conv2d(image, kernel):
    k = kernel.shape[0]
    return torch.nn.functional.conv2d(image[None, None], kernel[None, None], padding=k // 2)[0, 0]


_add(Problem(
    name="conv2d", summary="output (height x width) = the 2-D correlation of one image plane with a ksize x ksize "
                           "kernel (ksize odd, not flipped), zeros outside the image",
    params=(Buffer("input", F32, _matrix("height", "width")), Buffer("kernel", F32, lambda s: (s["ksize"], s["ksize"])),
            Buffer("output", F32, _matrix("height", "width"), "out"), Size("height"), Size("width"), Size("ksize")),
    reference=lambda s, input, kernel: {"output": _conv2d(input, kernel)},
    cases=({"height": 1, "width": 1, "ksize": 1}, {"height": 1, "width": 1, "ksize": 3}, {"height": 7, "width": 5,
           "ksize": 9}, {"height": 33, "width": 1000, "ksize": 3}, {"height": 257, "width": 263, "ksize": 5},
           {"height": 64, "width": 61, "ksize": 31}),
    timing={"height": 8192, "width": 8192, "ksize": 5},
    bytes_moved=lambda s: 8 * s["height"] * s["width"], flops=lambda s: 0,
    tolerance=lambda s: (1e-5, 4e-7 * 2.5 * s["ksize"] ** 2 + 1e-5),
    kernelkit=lambda k, input, kernel: k.filter2d(input, kernel),
    torch_fn=lambda input, kernel: _conv2d(input, kernel)))


def get_problem(name: str) -> Problem:
    try:
        return PROBLEMS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, PROBLEMS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no judge problem {name!r}{hint} (kernelkit judge --list)") from None


def template(problem: Problem) -> str:
    """A starter solution: the signature, a naive kernel body left to write, the launch."""
    p = problem
    lines = [
        f"// {p.name}: {p.summary}",
        "// Every pointer is device memory; solve() is called from the host and may launch any kernels on",
        "// the default stream. Build and check: kernelkit judge " + p.name + " this_file.cu",
        "#include <cuda_runtime.h>",
        "",
        "__global__ void kernel(/* your parameters */) {",
        "  // your kernel",
        "}",
        "",
        p.signature() + " {",
        "  // launch your kernel(s) here, e.g. kernel<<<blocks, threads>>>(...);",
        "}",
        "",
    ]
    return "\n".join(lines)
