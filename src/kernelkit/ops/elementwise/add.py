"""add: out = a + b (source 001's matrix addition), its ladder, dispatch and torch.library op."""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, kind_variants, register
from ...runtime import launch
from .._shared.checks import check_tensor, dtype_name, output_for, pick_variant
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import grid_for
from .._shared.checks import check_no_partial_overlap
from .._shared.launch_rules import cdiv, i32, occupancy_limiter
from .._shared.plans import load_rung as load

__all__ = ["add"]

SRC = "elementwise/add.cu"
BLOCK = 256
RUNG_BLOCKS_PER_SM = 32  # grid cap of the teaching grid-stride rung (as the unary ladder)
# The fast rung's launch shape (sweep on an H100, benchmarks/results/elementwise-tuning.json): one
# 16-byte vector per thread over a grid covering the tensor (a grid-stride cap of 32 blocks/SM:
# 2917 GB/s fp32; 2 or 4 vectors per thread: no better), 256-thread blocks held to 6 per SM (75%
# occupancy) by the occupancy limiter: 3088 GB/s fp32 / 3071 fp16 against 3058 / 3045 at 100%.
FAST_UNROLL = 1
FAST_BLOCK = 256
FAST_BLOCKS_PER_SM = 6
SHUFFLE_BLOCK = 512  # add_shuffle's __launch_bounds__(512, 3): 75% occupancy through its register cap


def _kernels(kind: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    ct, bits = CXX_TYPE[dtype], torch.finfo(dtype).bits
    one_d = Kernel(SRC, f"kk::add_1d<{ct}>", bits, bits)
    if kind == "2d":
        return (Kernel(SRC, f"kk::add_2d<{ct}>", bits, bits),)
    if kind == "1d":
        return (one_d,)
    if kind == "float4":  # aligned: vectors; otherwise the 1D kernel (the source's alignment check)
        return (Kernel(SRC, f"kk::add_vec<{ct}>", 128, 128), one_d)
    if kind == "prologue":  # same misalignment: prologue/main/epilogue; otherwise the 1D kernel
        return (Kernel(SRC, f"kk::add_aligned<{ct}, 1>", 128, 128), one_d)
    if kind == "shuffle":
        return (Kernel(SRC, f"kk::add_shuffle<{ct}>", 128, 128, block=SHUFFLE_BLOCK),)
    return (  # fast
        Kernel(SRC, f"kk::add_aligned<{ct}, {FAST_UNROLL}>", 128, 128, block=FAST_BLOCK),
        Kernel(SRC, f"kk::add_shuffle<{ct}>", 128, 128, block=SHUFFLE_BLOCK),
    )


RUNGS = (
    ("2d", "2D grid of 32x8 blocks over (rows, last dim), a thread per element: idle threads at row "
           "ends and three index multiply-adds (source 001's slower matrix model)"),
    ("1d", "1D grid, a thread per element, one index multiply-add (source 001's linear model)"),
    ("float4", "16-byte vectors (float4, 8 halves) when a, b and out are all 16-byte aligned, a thread "
               "per vector; otherwise the 1d kernel (source 001's alignment check)"),
    ("prologue", "prologue/main/epilogue: scalar head until out is aligned, 16-byte vectors, scalar "
                 "tail; for a, b, out misaligned by the same amount (otherwise the 1d kernel)"),
    ("shuffle", "any misalignments: aligned 16-byte stores; inputs read as aligned 16-byte chunks "
                "and realigned with __shfl_down_sync from the neighbouring lane (source 001's "
                "shuffle option, chosen over padding, which needs aligned copies of the inputs)"),
    ("fast", "one 16-byte vector per thread over a grid covering the tensor at 75% occupancy, "
             "prologue/main/epilogue when the misalignments agree, the shuffle kernel when they differ"),
)
VARIANTS = kind_variants(RUNGS, _kernels, default="fast")


def _launch(v: Variant, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """out = a + b; all three contiguous, same dtype and numel (> 0)."""
    n, dev, es = a.numel(), a.get_device(), a.element_size()
    kind = v.params["kind"]
    ks = load(v, a.dtype, dev)
    ap, bp, op = a.data_ptr(), b.data_ptr(), out.data_ptr()
    if kind == "2d":
        cols = a.shape[-1] if a.dim() else 1
        rows = n // cols
        grid = (cdiv(cols, 32), min(cdiv(rows, 8), 65535))
        launch(ks[0], grid, (32, 8), op, ap, bp, rows, cols, name="add_2d", device_index=dev)
        return
    if kind == "1d":
        launch(ks[0], cdiv(n, BLOCK), BLOCK, op, ap, bp, n, name="add_1d", device_index=dev)
        return
    if kind == "float4":
        if ap % 16 == 0 and bp % 16 == 0 and op % 16 == 0:
            vec = 16 // es
            threads = max(n // vec, n % vec)
            launch(ks[0], cdiv(threads, BLOCK), BLOCK, op, ap, bp, n, name="add_vec", device_index=dev)
        else:
            launch(ks[1], cdiv(n, BLOCK), BLOCK, op, ap, bp, n, name="add_1d", device_index=dev)
        return
    head = min(n, ((-op) % 16) // es)
    same = (ap - op) % 16 == 0 and (bp - op) % 16 == 0
    nvec = (n - head) // (16 // es)
    if kind == "prologue":
        if same:
            blocks = grid_for(max(nvec, 1), BLOCK, dev, RUNG_BLOCKS_PER_SM)
            launch(ks[0], blocks, BLOCK, op, ap, bp, n, i32(head), name="add_aligned", device_index=dev)
        else:
            launch(ks[1], cdiv(n, BLOCK), BLOCK, op, ap, bp, n, name="add_1d", device_index=dev)
        return
    if kind == "fast" and same:
        blocks = max(1, cdiv(nvec, FAST_BLOCK * FAST_UNROLL))
        launch(ks[0], blocks, FAST_BLOCK, op, ap, bp, n, i32(head), shmem=occupancy_limiter(dev, FAST_BLOCKS_PER_SM),
               name="add_aligned", device_index=dev)
        return
    da, db = (ap + head * es) % 16, (bp + head * es) % 16
    k = ks[0] if kind == "shuffle" else ks[1]
    launch(k, max(1, cdiv(nvec, SHUFFLE_BLOCK)), SHUFFLE_BLOCK, op, ap, bp, n, i32(head), i32(da), i32(db),
           name="add_shuffle", device_index=dev)


def _add_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, variant: Optional[str]) -> None:
    if a.numel() == 0:
        return
    v = pick_variant(OP, variant, a.dtype)
    ac, bc = a.contiguous(), b.contiguous()
    if out.is_contiguous():
        check_no_partial_overlap("add", out, a=ac, b=bc)
        _launch(v, ac, bc, out)
    else:
        tmp = torch.empty_like(ac)
        _launch(v, ac, bc, tmp)
        out.copy_(tmp)


@torch.library.custom_op("kernelkit::add_out", mutates_args=("out",))
def _add_out_op(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, variant: Optional[str]) -> None:
    _add_into(a, b, out, variant)


@_add_out_op.register_fake
def _(a, b, out, variant):
    return None


def add(
    a: torch.Tensor, b: torch.Tensor, *, out: Optional[torch.Tensor] = None, variant: Optional[str] = None
) -> torch.Tensor:
    """a + b for two CUDA tensors of the same shape and dtype (float32, float16 or bfloat16).

    No broadcasting and no type promotion: shapes or dtypes that differ raise. Any layout and any
    alignment (offset views) work. ``out``: optional result of the same shape and dtype (may be ``a``
    or ``b`` itself). ``variant``: a rung of ``kernelkit.ladder("add")``; None picks the fastest.
    """
    check_tensor(a, "a", FLOAT_DTYPES, "add")
    check_tensor(b, "b", FLOAT_DTYPES, "add")
    if b.dtype != a.dtype:
        raise TypeError(f"add: b has dtype {dtype_name(b.dtype)} but a has {dtype_name(a.dtype)}; "
                        "kernelkit.add does not promote types (convert one first)")
    if b.shape != a.shape:
        raise ValueError(f"add: a has shape {tuple(a.shape)} but b has {tuple(b.shape)}; "
                         "kernelkit.add does not broadcast (shapes must be equal)")
    if b.device != a.device:
        raise ValueError(f"add: a is on {a.device} but b is on {b.device}")
    out = output_for(out, a, "add")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.add_out(a, b, out, variant)
    else:
        _add_into(a, b, out, variant)
    return out


def _example(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[tuple, dict]:
    return (torch.randn(shape, dtype=dtype, device="cuda"), torch.randn(shape, dtype=dtype, device="cuda")), {}


OP = register(
    Op(
        name="add",
        family="elementwise",
        variants=VARIANTS,
        bytes_moved=lambda a, b, **_: 3 * a.numel() * a.element_size(),  # read a and b, write out
        flops=lambda a, b, **_: a.numel(),
        call=add,
        torch_fn=lambda a, b: torch.add(a, b),
        example=_example,
        doc="a + b, same shape and dtype (source 001's matrix addition)",
        bench_shapes=((4096, 4096), (16384, 16384)),
    )
)
