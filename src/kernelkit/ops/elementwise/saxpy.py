"""saxpy: y = alpha * x + y in place (source 003), its ladder, the serial debug launch, torch.library op.

Serial debugging (source 003): a grid-stride loop covers any n with any grid, so the same kernel
launched as one block of one thread runs the loop in index order. ``saxpy(..., variant="serial")``
does that with the grid-stride kernel; ``KERNELKIT_SERIAL=1`` in the environment makes every saxpy
launch serial (the grid-stride and vectorized rungs run their own kernel as <<<1, 1>>>, the
monolithic rung, which has no loop, runs the grid-stride kernel). A ``printf`` added to
csrc/saxpy.cu (recompiled on the next call: the cache key covers the source) then prints in index
order, and the result is bit-identical to the parallel launch. It is slow (one thread): use it on
small inputs.
"""
from __future__ import annotations

import numbers
from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, Variant, kind_variants, register
from ...runtime import launch
from .._shared.checks import check_tensor, dtype_name, pick_variant
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import sm_count
from .._shared.checks import check_no_partial_overlap
from .._shared.launch_rules import cdiv, f32, i32, occupancy_limiter, serial_requested
from .._shared.plans import load_rung as load

__all__ = ["saxpy"]

SRC = "elementwise/saxpy.cu"
BLOCK = 256
GRID_STRIDE_BLOCKS_PER_SM = 32  # source 003: saxpy<<<32 * numSMs, 256>>>
# vectorized rung: one vector per thread over a grid covering the tensor, 256-thread blocks held to
# 6 per SM (75% occupancy) by the occupancy limiter: 3084 GB/s fp32 / 3064 fp16 on an H100 against
# 3057 / 3047 with 512-thread blocks at 100% (benchmarks/results/elementwise-tuning.json)
FAST_BLOCK = 256
FAST_BLOCKS_PER_SM = 6
SERIAL = "serial"


def _kernels(kind: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    ct, bits = CXX_TYPE[dtype], torch.finfo(dtype).bits
    stride = Kernel(SRC, f"kk::saxpy_grid_stride<{ct}>", bits, bits)
    if kind == "monolithic":  # + the grid-stride kernel its serial launch uses
        return (Kernel(SRC, f"kk::saxpy_monolithic<{ct}>", bits, bits), stride)
    if kind == "grid_stride":
        return (stride,)
    return (  # vectorized: x aligned like y (16-byte loads of both), or not (element loads of x)
        Kernel(SRC, f"kk::saxpy_vec<{ct}, true>", 128, 128, block=FAST_BLOCK),
        Kernel(SRC, f"kk::saxpy_vec<{ct}, false>", 128, 128, block=FAST_BLOCK),
    )


RUNGS = (
    ("monolithic", "one thread per element, `if (i < n)`, a grid covering the array (source 003)"),
    ("grid_stride", "grid-stride loop, grid sized from the SM count (32 blocks of 256 per SM)"),
    ("vectorized", "grid-stride loop over 16-byte vectors of y, one per thread over a full grid at 75% "
                   "occupancy; prologue/epilogue for any alignment, x as vectors when aligned like y"),
)
VARIANTS = kind_variants(RUNGS, _kernels, default="vectorized")


def _launch(v: Optional[Variant], alpha: float, x: torch.Tensor, y: torch.Tensor, serial: bool) -> None:
    """y = alpha x + y; both contiguous, same dtype and numel (> 0). v None: the serial variant."""
    n, dev, es = x.numel(), x.get_device(), x.element_size()
    kind = v.params["kind"] if v is not None else "grid_stride"
    ks = load(v if v is not None else OP.variant("grid_stride"), x.dtype, dev)
    xp, yp, a = x.data_ptr(), y.data_ptr(), f32(alpha)
    if kind == "vectorized":
        head = min(n, ((-yp) % 16) // es)
        k = ks[0] if (xp - yp) % 16 == 0 else ks[1]
        if serial:
            launch(k, 1, 1, yp, xp, n, a, i32(head), name="saxpy_vec", device_index=dev)
            return
        grid = max(1, cdiv((n - head) // (16 // es), FAST_BLOCK))
        launch(k, grid, FAST_BLOCK, yp, xp, n, a, i32(head), shmem=occupancy_limiter(dev, FAST_BLOCKS_PER_SM),
               name="saxpy_vec", device_index=dev)
        return
    if kind == "monolithic" and not serial:
        launch(ks[0], cdiv(n, BLOCK), BLOCK, yp, xp, n, a, name="saxpy_monolithic", device_index=dev)
        return
    k = ks[-1]  # the grid-stride kernel (monolithic's serial launch included)
    grid, block = (1, 1) if serial else (min(cdiv(n, BLOCK), GRID_STRIDE_BLOCKS_PER_SM * sm_count(dev)), BLOCK)
    launch(k, grid, block, yp, xp, n, a, name="saxpy_grid_stride", device_index=dev)


def _saxpy_into(alpha: float, x: torch.Tensor, y: torch.Tensor, variant: Optional[str]) -> None:
    if x.numel() == 0:
        return
    serial = variant == SERIAL or serial_requested()
    v = None if variant == SERIAL else pick_variant(OP, variant, x.dtype)
    xc = x.contiguous()
    if y.is_contiguous():
        check_no_partial_overlap("saxpy", y, x=xc)
        _launch(v, alpha, xc, y, serial)
    else:
        tmp = y.contiguous()
        _launch(v, alpha, xc, tmp, serial)
        y.copy_(tmp)


@torch.library.custom_op("kernelkit::saxpy_", mutates_args=("y",))
def _saxpy_op(alpha: float, x: torch.Tensor, y: torch.Tensor, variant: Optional[str]) -> None:
    _saxpy_into(alpha, x, y, variant)


@_saxpy_op.register_fake
def _(alpha, x, y, variant):
    return None


def _alpha(alpha) -> float:
    if isinstance(alpha, torch.Tensor):
        if alpha.numel() != 1 or alpha.device.type != "cpu":
            raise TypeError("saxpy: alpha must be a number or a one-element CPU tensor (reading a CUDA "
                            f"tensor would synchronise), got a tensor of shape {tuple(alpha.shape)} on {alpha.device}")
        alpha = alpha.item()
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"saxpy: alpha must be a real number, got {type(alpha).__name__}")
    return float(alpha)


def saxpy(alpha, x: torch.Tensor, y: torch.Tensor, *, variant: Optional[str] = None) -> torch.Tensor:
    """y = alpha * x + y in place (fp32 math); returns y. As ``y.add_(x, alpha=alpha)``.

    ``x``, ``y``: CUDA tensors of the same shape and dtype (float32, float16 or bfloat16), any
    layout; ``x`` may be ``y`` itself. ``alpha``: a real number. ``variant``: a rung of
    ``kernelkit.ladder("saxpy")``, None for the fastest, or ``"serial"`` for the grid-stride kernel
    launched as one block of one thread (deterministic printf debugging; ``KERNELKIT_SERIAL=1``
    makes every launch serial). See the module docstring.
    """
    alpha = _alpha(alpha)
    check_tensor(x, "x", FLOAT_DTYPES, "saxpy")
    check_tensor(y, "y", FLOAT_DTYPES, "saxpy")
    if y.dtype != x.dtype:
        raise TypeError(f"saxpy: y has dtype {dtype_name(y.dtype)} but x has {dtype_name(x.dtype)}")
    if y.shape != x.shape:
        raise ValueError(f"saxpy: x has shape {tuple(x.shape)} but y has {tuple(y.shape)}; they must be equal")
    if y.device != x.device:
        raise ValueError(f"saxpy: x is on {x.device} but y is on {y.device}")
    if variant is not None and variant != SERIAL:
        OP.variant(variant)
    if torch.compiler.is_compiling():
        torch.ops.kernelkit.saxpy_(alpha, x, y, variant)
    else:
        _saxpy_into(alpha, x, y, variant)
    return y


def _example(shape: tuple[int, ...], dtype: torch.dtype) -> tuple[tuple, dict]:
    # x in [-1, 1) and a small alpha: repeated timing calls grow y slowly (no fp16 overflow)
    x = torch.rand(shape, dtype=torch.float32, device="cuda").mul_(2).sub_(1).to(dtype)
    return (0.25, x, torch.randn(shape, dtype=dtype, device="cuda")), {}


OP = register(
    Op(
        name="saxpy",
        family="elementwise",
        variants=VARIANTS,
        bytes_moved=lambda alpha, x, y, **_: 3 * x.numel() * x.element_size(),  # read x and y, write y
        flops=lambda alpha, x, y, **_: 2 * x.numel(),
        call=saxpy,
        torch_fn=lambda alpha, x, y: y.add_(x, alpha=alpha),
        example=_example,
        doc="y = alpha x + y in place (source 003's SAXPY; variant='serial' for debugging)",
        bench_shapes=((1 << 24,), (1 << 28,)),
    )
)
