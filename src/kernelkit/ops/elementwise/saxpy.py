"""saxpy: y = alpha * x + y in place, its ladder, the serial debug launch, lane, torch.library op and public function.

Serial debugging: a grid-stride loop covers any n with any grid, so the same kernel launched as one
block of one thread runs the loop in index order. ``saxpy(..., variant="serial")`` does that with the
grid-stride kernel; ``KERNELKIT_SERIAL=1`` in the environment makes every saxpy launch serial (the
grid-stride and vectorized rungs run their own kernel as <<<1, 1>>>, the monolithic rung, which has no
loop, runs the grid-stride kernel). A ``printf`` added to csrc/elementwise/saxpy.cu (recompiled on the
next call: the cache key covers the source) then prints in index order, and the result is
bit-identical to the parallel launch. It is slow (one thread): use it on small inputs. The variable
is read when a launch plan is made (a dtype's first call on a device): set it before that, or call
``kernelkit.ops._shared.plans.clear_plans()`` after changing it.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Optional

import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, kind_variants, register
from ...runtime import launch
from ...runtime.lanes import make_lane as make_c_lane, run_axpy
from .._shared.checks import check_no_partial_overlap, check_same_device, check_tensor, dtype_name, pick_variant
from .._shared.custom_op import out_op
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, occupancy_limiter, serial_requested, sm_count
from .._shared.plans import load, plan_cache, remember
from ._lane import COMPILING, F32
from ._launch import SMALL_I32, ElementwiseLaunch, check_config, launch_shape

__all__ = ["saxpy"]

SRC = "elementwise/saxpy.cu"
BLOCK = 256
GRID_STRIDE_BLOCKS_PER_SM = 32  # the grid-stride rung's grid: 32 blocks of 256 threads per SM
# vectorized rung: one vector a thread over a grid covering the tensor, 256-thread blocks held to 6 an
# SM (75% occupancy), about 1% faster than at full occupancy for this three-stream kernel
# (docs/design/elementwise.md)
FAST = ElementwiseLaunch(block=256, blocks_per_sm=6)
SERIAL = "serial"


def _kernels(kind: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    ct, bits = CXX_TYPE[dtype], torch.finfo(dtype).bits
    stride = Kernel(SRC, f"kk::saxpy_grid_stride<{ct}>", bits, bits)
    if kind == "monolithic":  # + the grid-stride kernel its serial launch uses
        return (Kernel(SRC, f"kk::saxpy_monolithic<{ct}>", bits, bits), stride)
    if kind == "grid_stride":
        return (stride,)
    return (  # vectorized: x aligned like y (16-byte loads of both), or not (element loads of x)
        Kernel(SRC, f"kk::saxpy_vec<{ct}, true>", 128, 128, block=FAST.block),
        Kernel(SRC, f"kk::saxpy_vec<{ct}, false>", 128, 128, block=FAST.block),
    )


RUNGS = (
    ("monolithic", "one thread per element, `if (i < n)`, a grid covering the array"),
    ("grid_stride", "grid-stride loop, grid sized from the SM count (32 blocks of 256 per SM)"),
    ("vectorized", "grid-stride loop over 16-byte vectors of y, one per thread over a full grid at 75% "
                   "occupancy; prologue/epilogue for any alignment, x as vectors when aligned like y"),
)
VARIANTS = kind_variants(RUNGS, _kernels, default="vectorized")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a launch needs beyond its pointers, resolved once per (rung, dtype, device, config)."""

    kind: str  # the rung's kind; "serial" for variant="serial"
    serial: bool  # launch as one block of one thread (variant="serial", or KERNELKIT_SERIAL=1 when planned)
    kernels: tuple  # loaded kernels, in the order of the rung's Kernel records
    esize: int
    block: int  # the vectorized rung's launch
    shmem: int
    grid_stride_blocks: int  # the grid-stride rung's grid cap


_plans = plan_cache()


def _plan(key: tuple) -> _Plan:
    variant, dtype, dev, config = key
    v = OP.variant("grid_stride") if variant == SERIAL else pick_variant(OP, variant, dtype)
    kind = SERIAL if variant == SERIAL else v.params["kind"]
    if config is not None:  # vectorized only (the public function checks)
        block, shmem = launch_shape("saxpy", config, dev)
    else:
        block, shmem = FAST.block, occupancy_limiter(dev, FAST.blocks_per_sm) if kind == "vectorized" else 0
    plan = _Plan(kind, kind == SERIAL or serial_requested(), load(v.kernels(dtype), dev), torch.finfo(dtype).bits // 8,
                 block, shmem, GRID_STRIDE_BLOCKS_PER_SM * sm_count(dev))
    return remember(_plans, key, plan)


def _launch(variant: Optional[str], alpha: float, x: torch.Tensor, y: torch.Tensor,
            config: Optional[ElementwiseLaunch]) -> None:
    """y = alpha x + y; both contiguous, same dtype and numel (> 0), on one device."""
    n, dev = x.numel(), x.get_device()
    key = (variant, x.dtype, dev, config)
    p = _plans.get(key)
    if p is None:
        p = _plan(key)
    xp, yp, a, es, serial = x.data_ptr(), y.data_ptr(), F32(alpha), p.esize, p.serial
    nb = n * es
    if xp != yp and xp < yp + nb and yp < xp + nb:
        check_no_partial_overlap("saxpy", y, x=x)  # raises
    if p.kind == "vectorized":
        head = min(n, ((-yp) & 15) // es)  # elements before y's first 16-byte boundary
        k = p.kernels[0] if (xp - yp) & 15 == 0 else p.kernels[1]
        if serial:
            launch(k, 1, 1, yp, xp, n, a, SMALL_I32[head], name="saxpy_vec", device_index=dev)
        else:
            blocks = ((n - head) // (16 // es) + p.block - 1) // p.block or 1
            launch(k, blocks, p.block, yp, xp, n, a, SMALL_I32[head], shmem=p.shmem, name="saxpy_vec", device_index=dev)
    elif p.kind == "monolithic" and not serial:
        launch(p.kernels[0], cdiv(n, BLOCK), BLOCK, yp, xp, n, a, name="saxpy_monolithic", device_index=dev)
    else:  # the grid-stride kernel (monolithic's serial launch included)
        grid, block = (1, 1) if serial else (min(cdiv(n, BLOCK), p.grid_stride_blocks), BLOCK)
        launch(p.kernels[-1], grid, block, yp, xp, n, a, name="saxpy_grid_stride", device_index=dev)


LANES = plan_cache()  # (x's dtype, y's dtype, x's device, y's device) -> the lane of saxpy(alpha, x, y)


def _make_lane(dtype: torch.dtype, dev: int) -> None:
    """The vectorized rung's C lane for (dtype, device) (runtime.lanes): made once the checked path has
    accepted such inputs; none while the plan is serial (KERNELKIT_SERIAL=1), whose launches stay on the
    checked path. It takes int and float alphas and contiguous x and y of one shape that do not overlap
    partially, and launches as ``_launch`` does: x's vector or element loads by its alignment against y's."""
    key = (dtype, dtype, dev, dev)
    if key in LANES:
        return
    pkey = (None, dtype, dev, None)
    p = _plans.get(pkey) or _plan(pkey)
    if p.serial:
        return
    shape = (p.block, p.shmem)
    lane = make_c_lane(p.kernels[:2], ("saxpy_vec", "saxpy_vec"), dev, p.esize, (shape, shape))
    if lane is not None:
        remember(LANES, key, lane)


def _saxpy(alpha: float, x: torch.Tensor, y: torch.Tensor, variant: Optional[str],
           config: Optional[ElementwiseLaunch]) -> None:
    """y <- alpha x + y for any layouts (non-contiguous ones go through contiguous copies)."""
    if x.numel() == 0:
        return
    xc = x.contiguous()
    if y.is_contiguous():
        _launch(variant, alpha, xc, y, config)
    else:
        tmp = y.contiguous()
        _launch(variant, alpha, xc, tmp, config)
        y.copy_(tmp)


def _saxpy_into(alpha: float, x: torch.Tensor, y: torch.Tensor, variant: Optional[str]) -> None:
    _saxpy(alpha, x, y, variant, None)


_saxpy_ = out_op("saxpy_", _saxpy_into, mutates=("y",))


def _alpha(alpha) -> float:
    if isinstance(alpha, torch.Tensor):
        if alpha.numel() != 1 or alpha.device.type != "cpu":
            raise TypeError("saxpy: alpha must be a number or a one-element CPU tensor (reading a CUDA "
                            f"tensor would synchronise), got a tensor of shape {tuple(alpha.shape)} on {alpha.device}")
        alpha = alpha.item()
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"saxpy: alpha must be a real number, got {type(alpha).__name__}")
    return float(alpha)


def saxpy(alpha, x: torch.Tensor, y: torch.Tensor, *, variant: Optional[str] = None,
          config: Optional[ElementwiseLaunch] = None) -> torch.Tensor:
    """y = alpha * x + y in place, as ``y.add_(x, alpha=alpha)``; returns y.

    ``x``, ``y``: float32, float16 or bfloat16 CUDA tensors of the same shape, dtype and device, any
    layout and alignment; ``x`` may be ``y`` itself, not a view partly overlapping it. The math is
    fp32, rounded once to the dtype. ``alpha``: a real number (or a one-element CPU tensor).
    No ``out``: the result is written into ``y``.
    ``variant``: a rung of ``kernelkit.ladder("saxpy")`` (naive first); None picks the fastest, and
    ``"serial"`` runs the grid-stride kernel as one block of one thread (deterministic ``printf``
    debugging; ``KERNELKIT_SERIAL=1`` makes every launch serial).
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (an
    ``ElementwiseLaunch`` of kernelkit.ops.elementwise for the ``vectorized`` rung, eager calls only); raises
    ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, dtypes that differ, an ``alpha``
    that is not a real number (a CUDA tensor included: reading it would synchronise), a rung without
    the dtype or a config that is not an ElementwiseLaunch; ValueError for a CPU tensor, shapes that
    differ, tensors on different devices, ``x`` partly overlapping ``y``, an unknown variant, or a
    config for another rung or under torch.compile.
    """
    if variant is None and config is None and not COMPILING() and run_axpy(LANES, alpha, x, y):  # the C lane
        return y
    alpha = _alpha(alpha)
    check_tensor(x, "x", FLOAT_DTYPES, "saxpy")
    check_tensor(y, "y", FLOAT_DTYPES, "saxpy")
    if y.dtype != x.dtype:
        raise TypeError(f"saxpy: y has dtype {dtype_name(y.dtype)} but x has {dtype_name(x.dtype)}")
    if y.shape != x.shape:
        raise ValueError(f"saxpy: x has shape {tuple(x.shape)} but y has {tuple(y.shape)}; they must be equal")
    if y.get_device() != x.get_device():
        check_same_device("saxpy", ("x", x), ("y", y))
    if variant is not None and variant != SERIAL:
        OP.variant(variant)  # unknown names fail here, before any tracing
    if config is None:
        _saxpy_(alpha, x, y, variant)
        if variant is None and not COMPILING():
            _make_lane(x.dtype, x.get_device())
    else:
        check_config("saxpy", config, variant, fast="vectorized")
        _saxpy(alpha, x, y, variant, config)
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
        doc="y = alpha x + y in place (variant='serial' for debugging)",
        bench_shapes=((1 << 24,), (1 << 28,)),
    )
)
