"""permute: ``x.permute(dims).contiguous()``, bit for bit, its ladder and dispatch.

permute has no kernel file of its own: it launches the kernels of csrc/rearrangement/ (transpose.cu,
transpose_window.cu, transpose_cute.cu), which serve transpose too. ``_rearrange`` merges the dims that stay together, so the common layout changes
(NCHW <-> NHWC, swapping the last two dims, moving the batch axis) become batched 2-d transposes on the
tile kernels or contiguous runs moved as 16-byte elements; every other permutation goes through the
strided gather. As for transpose, the input may be any view and is read through its strides.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from ...ladder import Op, register
from ...runtime.lanes import run_fixed
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.plans import plan_cache, remember, with_fixed_lane
from ._args import check_config, check_result, nbytes, random_input, resolved, wrap
from ._launch import ACCEPTED, TileConfig, make_launch, rung

__all__ = ["permute"]

LADDER = (
    rung("naive", "strided gather: one element per thread, output coordinates decomposed per element "
         "(any permutation of up to 6 dims)", None, widen=False),
    rung("tiled", "dims merged; batched transposes (NCHW<->NHWC, last-two swap, ...) through the padded "
         "tile, contiguous inner runs moved as 16-byte elements, the gather for the rest", "padded"),
    rung("best", "as tiled, with the transposes on the best transpose rung (wide swizzled tiles, skinny "
         "register transposes for 2-8 channels, window and skew tiles for odd sides)", "best", default=True),
)

_plans = plan_cache()


def _permute_into(x: torch.Tensor, out: torch.Tensor, dims: list[int], variant: Optional[str],
                  config: Optional[list[int]]) -> None:
    """out <- x.permute(dims) (a permutation of non-negative dims) for any layout of x and out.
    ``config``: the fields of a TileConfig, or None for the rung's choice."""
    if not out.is_contiguous():
        tmp = torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _permute_into(x, tmp, dims, variant, config)
        out.copy_(tmp)
        return
    if x.is_conj() or x.is_neg():
        x = resolved(x)
    xp, op, dev = x.data_ptr(), out.data_ptr(), x.get_device()
    align = (xp & 15, op & 15)  # the pointers' places within 16 bytes
    key = (x.shape, x.stride(), x.dtype, dev, align, variant, config and tuple(config), *dims)
    run = _plans.get(key)
    if run is None:
        cfg = None if config is None else TileConfig(*config)
        run = remember(_plans, key, make_launch(OP, x, dims, *align, variant, cfg, dev))
    run(xp, op)


_permute_out = out_op("permute_out", _permute_into)


def _resolve_call(shape: torch.Size, dims, variant: Optional[str], config) -> tuple:
    """(dims as a list of non-negative dims, result shape, config as a list); raises on bad arguments."""
    if isinstance(dims, (int, np.integer)) or not isinstance(dims, Sequence):
        raise TypeError(f"permute: dims must be a sequence of ints, got {type(dims).__name__}")
    nd = len(shape)
    if len(dims) != nd:
        raise ValueError(f"permute: dims has {len(dims)} entries for a {nd}-dim tensor")
    perm = [wrap(d, nd, "dims entry", "permute") for d in dims]
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"permute: dims {list(dims)} is not a permutation of 0..{nd - 1}")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    return perm, tuple(shape[d] for d in perm), check_config(config, "permute")


_calls = plan_cache()
_lanes = plan_cache()  # fixed lanes (runtime.lanes): (dtype, device, shape, dims) -> a recorded launch
_compiling = torch.compiler.is_compiling


def permute(x: torch.Tensor, dims: Sequence[int], *, out: Optional[torch.Tensor] = None,
            variant: Optional[str] = None, config: Optional[TileConfig] = None) -> torch.Tensor:
    """``x.permute(dims).contiguous()``: a new contiguous tensor, bit for bit.

    No arithmetic: elements move as raw 1-, 2-, 4- or 8-byte words. ``x``: a CUDA tensor of any dtype of
    those sizes, any shape and layout (views are read through their strides, with no copy).
    ``dims``: a permutation of x's dims (negative ones count from the end). Fast paths: NCHW <-> NHWC,
    swapping the last two dims, moving the batch axis (any permutation that merges down to a batched
    transpose or to contiguous runs); every other permutation through a strided gather (at most 6
    dims once neighbours that stay together are merged).
    ``out``: optional result of the permuted shape, x's dtype and device, not sharing memory with x;
    returned. None: a new tensor.
    ``variant``: a rung of ``kernelkit.ladder("permute")`` (naive first); None picks the fastest valid
    for the input.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``TileConfig`` of kernelkit.ops.rearrangement.transpose: the wide tile of the best rung, for a permutation
    that is a batched transpose); raises ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, an unsupported dtype, ``dims`` that are not a sequence of ints,
    an ``out`` of another dtype or a config that is not a TileConfig; IndexError for a dim out of
    range; ValueError for a CPU tensor, ``dims`` that are not a permutation of x's dims, more than 6
    dims left after merging, an ``out`` of another shape or device or sharing memory with x, an
    unknown variant, or a config the input cannot take.
    """
    if type(dims) is list:
        dims = tuple(dims)  # hashable, for the cache keys
    if out is None and variant is None and config is None and not _compiling():  # the fixed lane, if made
        got = run_fixed(_lanes, x, dims)
        if got is not None:
            return got
    check_tensor(x, "x", ACCEPTED, "permute")
    if _compiling():  # no cache lookups while tracing: shapes may be symbolic
        call = _resolve_call(x.shape, dims, variant, config)
    else:
        key = (x.shape, dims, variant, config)
        try:
            call = _calls.get(key)
        except TypeError:  # an unhashable argument: resolving it names the bad one
            call = _resolve_call(x.shape, dims, variant, config)
        if call is None:
            call = remember(_calls, key, _resolve_call(x.shape, dims, variant, config))
    perm, out_shape, cfg = call
    if out is None:
        if variant is None and config is None and type(x) is torch.Tensor and x.is_contiguous() and not _compiling():
            # a plain call: its launch, recorded, becomes the fixed lane of (dtype, device, shape, dims)
            return with_fixed_lane(_lanes, x, dims, lambda: _fresh(x, out_shape, perm, cfg), out_shape)
        out = x.new_empty(out_shape)
    else:
        check_result(out, x, out_shape, "permute")
    _permute_out(x, out, perm, variant, cfg)
    return out


def _fresh(x: torch.Tensor, out_shape: tuple, perm: list, cfg) -> torch.Tensor:
    out = x.new_empty(out_shape)
    _permute_out(x, out, perm, None, cfg)
    return out


def _permute_dims(ndim: int) -> tuple[int, ...]:
    """The benchmark permutation for a rank: NCHW -> NHWC, batched last-two swap, 2-d transpose."""
    return {4: (0, 2, 3, 1), 3: (0, 2, 1), 2: (1, 0)}.get(ndim, tuple(reversed(range(ndim))))


OP = register(Op(
    name="permute", family="rearrangement", variants=LADDER, bytes_moved=nbytes,
    flops=lambda *a, **k: 0, call=permute, torch_fn=lambda x, dims: x.permute(dims).contiguous(),
    example=lambda shape, dtype: ((random_input(shape, dtype), _permute_dims(len(shape))), {}),
    doc="x.permute(dims).contiguous(), up to 6 dims, NCHW<->NHWC fast paths",
    bench_shapes=((64, 64, 224, 224),), bench_dtypes=(torch.float16, torch.float32),
))
