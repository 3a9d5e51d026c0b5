"""add: out = a + b for tensors of one shape and dtype, its ladder, lane, torch.library op and public function."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, kind_variants, register
from ...runtime import launch
from ...runtime.lanes import make_lane as make_c_lane, run_binary
from .._shared.checks import (check_no_partial_overlap, check_same_device, check_tensor, dtype_name, output_for,
                              pick_variant)
from .._shared.custom_op import out_op
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, grid_for, occupancy_limiter
from .._shared.plans import load, plan_cache, remember
from ._lane import COMPILING
from ._launch import SMALL_I32, ElementwiseLaunch, check_config, launch_shape

__all__ = ["add"]

SRC = "elementwise/add.cu"
BLOCK = 256
RUNG_BLOCKS_PER_SM = 32  # grid cap of the teaching grid-stride rung (as the unary ladder)
# The fast rung: one 16-byte vector a thread over a grid covering the tensor, 256-thread blocks held
# to 6 an SM (75% occupancy), about 1% faster than at full occupancy for this three-stream kernel
# (docs/design/elementwise.md).
FAST = ElementwiseLaunch(block=256, blocks_per_sm=6)
SHUFFLE_BLOCK = 512  # add_shuffle's __launch_bounds__(512, 3): 75% occupancy through its register cap


def _kernels(kind: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    ct, bits = CXX_TYPE[dtype], torch.finfo(dtype).bits
    one_d = Kernel(SRC, f"kk::add_1d<{ct}>", bits, bits)
    if kind == "2d":
        return (Kernel(SRC, f"kk::add_2d<{ct}>", bits, bits),)
    if kind == "1d":
        return (one_d,)
    if kind == "float4":  # aligned: vectors; otherwise the 1D kernel
        return (Kernel(SRC, f"kk::add_vec<{ct}>", 128, 128), one_d)
    if kind == "prologue":  # same misalignment: prologue/main/epilogue; otherwise the 1D kernel
        return (Kernel(SRC, f"kk::add_aligned<{ct}>", 128, 128), one_d)
    if kind == "shuffle":
        return (Kernel(SRC, f"kk::add_shuffle<{ct}>", 128, 128, block=SHUFFLE_BLOCK),)
    return (  # fast
        Kernel(SRC, f"kk::add_aligned<{ct}>", 128, 128, block=FAST.block),
        Kernel(SRC, f"kk::add_shuffle<{ct}>", 128, 128, block=SHUFFLE_BLOCK),
    )


RUNGS = (
    ("2d", "2D grid of 32x8 blocks over (rows, last dim), a thread per element: idle threads at row "
           "ends and three index multiply-adds (the matrix-shaped launch)"),
    ("1d", "1D grid, a thread per element, one index multiply-add (the linear launch)"),
    ("float4", "16-byte vectors (float4, 8 halves) when a, b and out are all 16-byte aligned, a thread "
               "per vector; otherwise the 1d kernel"),
    ("prologue", "prologue/main/epilogue: scalar head until out is aligned, 16-byte vectors, scalar "
                 "tail; for a, b, out misaligned by the same amount (otherwise the 1d kernel)"),
    ("shuffle", "any misalignments: aligned 16-byte stores; inputs read as aligned 16-byte chunks "
                "and realigned with __shfl_down_sync from the neighbouring lane (rather than padding, "
                "which needs aligned copies of the inputs)"),
    ("fast", "one 16-byte vector per thread over a grid covering the tensor at 75% occupancy, "
             "prologue/main/epilogue when the misalignments agree, the shuffle kernel when they differ"),
)
VARIANTS = kind_variants(RUNGS, _kernels, default="fast")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a launch needs beyond its pointers, resolved once per (rung, dtype, device, config)."""

    kind: str
    kernels: tuple  # loaded kernels, in the order of the rung's Kernel records
    esize: int
    vec: tuple[int, int]  # (block, dynamic shared bytes) of add_aligned (prologue, fast)
    shuffle: Optional[tuple[int, int]]  # ... of add_shuffle (shuffle, fast); None: a config it cannot take


_plans = plan_cache()


def _plan(key: tuple) -> _Plan:
    variant, dtype, dev, config = key
    v = pick_variant(OP, variant, dtype)
    kind = v.params["kind"]
    if config is not None:  # fast only (the public function checks): both of its kernels take it
        vec = launch_shape("add", config, dev)
        shuffle = vec if config.block <= SHUFFLE_BLOCK else None
    elif kind == "fast":
        vec, shuffle = (FAST.block, occupancy_limiter(dev, FAST.blocks_per_sm)), (SHUFFLE_BLOCK, 0)
    else:
        vec, shuffle = (BLOCK, 0), (SHUFFLE_BLOCK, 0)
    plan = _Plan(kind, load(v.kernels(dtype), dev), torch.finfo(dtype).bits // 8, vec, shuffle)
    return remember(_plans, key, plan)


def _launch(variant: Optional[str], a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
            config: Optional[ElementwiseLaunch]) -> None:
    """out = a + b; all three contiguous, same dtype and numel (> 0), on one device."""
    n, dev = a.numel(), a.get_device()
    key = (variant, a.dtype, dev, config)
    p = _plans.get(key)
    if p is None:
        p = _plan(key)
    ap, bp, op = a.data_ptr(), b.data_ptr(), out.data_ptr()
    kind, ks, es = p.kind, p.kernels, p.esize
    nb = n * es
    if (ap != op and ap < op + nb and op < ap + nb) or (bp != op and bp < op + nb and op < bp + nb):
        check_no_partial_overlap("add", out, a=a, b=b)  # raises, naming the input
    if kind == "fast" or kind == "prologue" or kind == "shuffle":
        head = min(n, ((-op) & 15) // es)  # elements before out's first 16-byte boundary
        nvec = (n - head) // (16 // es)
        if (ap - op) & 15 == 0 and (bp - op) & 15 == 0 and kind != "shuffle":  # misaligned alike: vectors
            block, shmem = p.vec
            if kind == "fast":  # a grid covering the tensor
                blocks = (nvec + block - 1) // block or 1
            else:
                blocks = grid_for(max(nvec, 1), block, dev, RUNG_BLOCKS_PER_SM)
            launch(ks[0], blocks, block, op, ap, bp, n, SMALL_I32[head], shmem=shmem, name="add_aligned",
                   device_index=dev)
        elif kind == "prologue":
            launch(ks[1], cdiv(n, BLOCK), BLOCK, op, ap, bp, n, name="add_1d", device_index=dev)
        else:  # a and b realigned by shuffles
            if p.shuffle is None:
                raise ValueError(f"add: a, b and out are misaligned differently, which takes the shuffle kernel: "
                                 f"its config block must be at most {SHUFFLE_BLOCK} threads")
            block, shmem = p.shuffle
            da, db = (ap + head * es) & 15, (bp + head * es) & 15
            launch(ks[0] if kind == "shuffle" else ks[1], (nvec + block - 1) // block or 1, block, op, ap, bp, n,
                   SMALL_I32[head], SMALL_I32[da], SMALL_I32[db], shmem=shmem, name="add_shuffle", device_index=dev)
        return
    if kind == "2d":
        cols = a.shape[-1] if a.dim() else 1
        rows = n // cols
        grid = (cdiv(cols, 32), min(cdiv(rows, 8), 65535))
        launch(ks[0], grid, (32, 8), op, ap, bp, rows, cols, name="add_2d", device_index=dev)
    elif kind == "1d":
        launch(ks[0], cdiv(n, BLOCK), BLOCK, op, ap, bp, n, name="add_1d", device_index=dev)
    elif ap % 16 == 0 and bp % 16 == 0 and op % 16 == 0:  # float4
        vec = 16 // es
        threads = max(n // vec, n % vec)
        launch(ks[0], cdiv(threads, BLOCK), BLOCK, op, ap, bp, n, name="add_vec", device_index=dev)
    else:
        launch(ks[1], cdiv(n, BLOCK), BLOCK, op, ap, bp, n, name="add_1d", device_index=dev)


LANES = plan_cache()  # (a's dtype, b's dtype, a's device, b's device) -> the lane of add(a, b)


def _make_lane(dtype: torch.dtype, dev: int) -> None:
    """The fast rung's C lane for (dtype, device) (runtime.lanes): made once the checked path has accepted
    such inputs. It launches what ``_launch`` launches for a fresh output (which no input can overlap):
    the aligned kernel when a and b are misaligned like out, else the shuffle kernel, each with the
    block and shared memory of the rung's plan."""
    key = (dtype, dtype, dev, dev)
    if key in LANES:
        return
    pkey = (None, dtype, dev, None)
    p = _plans.get(pkey) or _plan(pkey)
    lane = make_c_lane(p.kernels, ("add_aligned", "add_shuffle"), dev, p.esize, (p.vec, p.shuffle))
    if lane is not None:
        remember(LANES, key, lane)


def _add_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, variant: Optional[str],
              config: Optional[ElementwiseLaunch] = None) -> None:
    """out <- a + b for any layouts (non-contiguous ones go through contiguous copies)."""
    if a.numel() == 0:
        return
    if a.is_contiguous() and b.is_contiguous() and out.is_contiguous():
        _launch(variant, a, b, out, config)
        return
    ac, bc = a.contiguous(), b.contiguous()
    if out.is_contiguous():
        _launch(variant, ac, bc, out, config)
    else:
        tmp = torch.empty_like(ac)
        _launch(variant, ac, bc, tmp, config)
        out.copy_(tmp)


def _add_out_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, variant: Optional[str]) -> None:
    _add_into(a, b, out, variant)


_add_out = out_op("add_out", _add_out_into)


def add(
    a: torch.Tensor, b: torch.Tensor, *, out: Optional[torch.Tensor] = None, variant: Optional[str] = None,
    config: Optional[ElementwiseLaunch] = None,
) -> torch.Tensor:
    """a + b element by element, as ``torch.add(a, b)`` for two tensors of one shape and dtype.

    ``a``, ``b``: float32, float16 or bfloat16 CUDA tensors of the same shape, dtype and device, any
    shape, layout and alignment (offset views; non-contiguous ones through a contiguous copy). No
    broadcasting and no type promotion.
    ``out``: optional result of the same shape, dtype and device, returned; may be ``a`` or ``b``
    itself (in place), not a view partly overlapping them. None: a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("add")`` (naive first); None picks the fastest valid for
    the inputs. Rungs that need aligned data raise ValueError for offset views; the default takes any.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``fast`` rung, eager calls only); raises
    ValueError if it cannot run this input (inputs misaligned unlike ``out`` take the shuffle kernel:
    at most 512 threads).

    Raises TypeError for a non-tensor, a dtype other than the three, dtypes that differ, an ``out`` of
    another dtype, a rung without the dtype or a config that is not an ElementwiseLaunch; ValueError
    for a CPU tensor, shapes that differ, tensors on different devices, an ``out`` of another shape or
    device or partly overlapping an input, an unknown variant, or a config for another rung or under
    torch.compile.
    """
    if out is None and variant is None and config is None and not COMPILING():  # the C lane, if made
        got = run_binary(LANES, a, b)
        if got is not None:
            return got
    plain = out is None and variant is None
    check_tensor(a, "a", FLOAT_DTYPES, "add")
    check_tensor(b, "b", FLOAT_DTYPES, "add")
    if b.dtype != a.dtype:
        raise TypeError(f"add: b has dtype {dtype_name(b.dtype)} but a has {dtype_name(a.dtype)}; "
                        "kernelkit.add does not promote types (convert one first)")
    if b.shape != a.shape:
        raise ValueError(f"add: a has shape {tuple(a.shape)} but b has {tuple(b.shape)}; "
                         "kernelkit.add does not broadcast (shapes must be equal)")
    if b.get_device() != a.get_device():
        check_same_device("add", ("a", a), ("b", b))
    out = output_for(out, a, "add")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    if config is None:
        _add_out(a, b, out, variant)
        if plain and not COMPILING():
            _make_lane(a.dtype, a.get_device())
    else:
        check_config("add", config, variant)
        _add_into(a, b, out, variant, config)
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
        doc="a + b, same shape and dtype",
        bench_shapes=((4096, 4096), (16384, 16384)),
    )
)
