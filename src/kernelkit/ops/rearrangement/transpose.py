"""transpose: ``x.transpose(dim0, dim1).contiguous()``, bit for bit, its ladder and dispatch.

No arithmetic: every dtype moves as raw 1/2/4/8-byte words. The input may be any view (offset,
non-contiguous, expanded): the kernels read through its strides, so no hidden ``.contiguous()`` copy
is made. ``_rearrange`` reduces the view to a batched 2-d transpose, a widened contiguous run or a
general gather; the rung decides which tile kernel (csrc/rearrangement/transpose.cu, transpose_window.cu,
transpose_cute.cu) a transpose uses.
"""
from __future__ import annotations

from typing import Optional

import torch

from ...ladder import Op, register
from ...runtime.lanes import run_fixed
from .._shared.checks import check_tensor
from .._shared.custom_op import out_op
from .._shared.plans import plan_cache, remember, with_fixed_lane
from ._args import check_config, check_result, nbytes, random_input, resolved, wrap
from ._launch import ACCEPTED, TileConfig, make_launch, rung

__all__ = ["transpose"]

LADDER = (
    rung("naive", "one element per thread: reads along input rows (coalesced), writes R elements apart "
         "(every warp store touches 32 sectors)", "naive"),
    rung("shared", "32x32 tile staged in shared memory so both global accesses are coalesced; the tile's "
         "column reads conflict (32-way for 4-byte elements)", "shared"),
    rung("padded", "the shared tile with one 4-byte bank word of padding per row (1 element of 4-8 bytes, "
         "2 or 4 of 2 or 1 byte): column reads hit 32 banks", "padded"),
    rung("cute", "the shared tile written with CuTe (needs kernelkit[cute]): a 32x32 tile of no padding whose "
         "layout is swizzled (Swizzle<B,M,5>: the row XORed into the column's bank-word bits), conflict-free "
         "both ways; local_partition's of the tile and predicates from an identity tensor", "cute"),
    rung("wide", "16-byte loads and stores, 16 KB XOR-swizzled tile, register transposes of 1/2-byte "
         "elements; needs rows, cols and strides multiples of 16/E bytes and aligned data", "wide"),
    rung("best", "wide tiles (tuned per element size) where the shape allows, register transposes of "
         "16-byte vectors when one side has 2-8 elements, otherwise 16-byte loads and stores at any alignment "
         "(input chunks funnel-shifted into place): the skew tile where output rows are off 16-byte boundaries "
         "(2- and 4-byte elements; each tile follows its output rows' 16-byte grids), else the window tile "
         "(8-byte elements: the padded tile); copies and row moves widened to 16-byte elements", "best",
         default=True),
)

_plans = plan_cache()


def _transpose_into(x: torch.Tensor, out: torch.Tensor, dim0: int, dim1: int, variant: Optional[str],
                    config: Optional[list[int]]) -> None:
    """out <- x.transpose(dim0, dim1) (dims non-negative) for any layout of x and out. ``config``: the
    fields of a TileConfig, or None for the rung's choice."""
    if not out.is_contiguous():
        tmp = torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _transpose_into(x, tmp, dim0, dim1, variant, config)
        out.copy_(tmp)
        return
    if x.is_conj() or x.is_neg():
        x = resolved(x)
    xp, op, dev = x.data_ptr(), out.data_ptr(), x.get_device()
    align = (xp & 15, op & 15)  # the pointers' places within 16 bytes
    key = (x.shape, x.stride(), x.dtype, dev, align, dim0, dim1, variant, config and tuple(config))
    run = _plans.get(key)
    if run is None:
        perm = list(range(x.dim()))
        if perm:
            perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        cfg = None if config is None else TileConfig(*config)
        run = remember(_plans, key, make_launch(OP, x, perm, *align, variant, cfg, dev))
    run(xp, op)


_transpose_out = out_op("transpose_out", _transpose_into)


def _resolve_call(shape: torch.Size, dim0, dim1, variant: Optional[str], config) -> tuple:
    """(dim0, dim1 non-negative, result shape, config as a list); raises on bad arguments."""
    a, b = wrap(dim0, len(shape), "dim0", "transpose"), wrap(dim1, len(shape), "dim1", "transpose")
    if variant is not None:
        OP.variant(variant)  # unknown names fail here, before any tracing
    out_shape = list(shape)
    if out_shape:
        out_shape[a], out_shape[b] = out_shape[b], out_shape[a]
    return a, b, tuple(out_shape), check_config(config, "transpose")


_calls = plan_cache()
_lanes = plan_cache()  # fixed lanes (runtime.lanes): (dtype, device, shape, (dim0, dim1)) -> a recorded launch
_compiling = torch.compiler.is_compiling


def transpose(x: torch.Tensor, dim0: int = -2, dim1: int = -1, *, out: Optional[torch.Tensor] = None,
              variant: Optional[str] = None, config: Optional[TileConfig] = None) -> torch.Tensor:
    """``x.transpose(dim0, dim1).contiguous()``: a new contiguous tensor, bit for bit.

    No arithmetic: elements move as raw 1-, 2-, 4- or 8-byte words. ``x``: a CUDA tensor of any dtype of
    those sizes (bool, the integer and float dtypes up to 8 bytes, complex32, complex64), any shape and
    layout (offset, non-contiguous and expanded views are read through their strides, with no copy).
    ``dim0``, ``dim1``: the dims to swap (negative ones count from the end); more dims are a batch.
    ``out``: optional result of the transposed shape, x's dtype and device, not sharing memory with x;
    returned (a non-contiguous ``out`` is written through a contiguous copy). None: a new tensor.
    ``variant``: a rung of ``kernelkit.ladder("transpose")`` (naive first); None picks the fastest valid
    for the input. ``"wide"`` needs rows, columns and strides in whole 16-byte vectors and aligned data.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``TileConfig`` of kernelkit.ops.rearrangement.transpose: the wide tile of the wide and best rungs); raises
    ValueError if it cannot run this input.

    Raises TypeError for a non-tensor, an unsupported dtype, a dim that is not an int, an ``out`` of
    another dtype or a config that is not a TileConfig; IndexError for a dim out of range; ValueError
    for a CPU tensor, an ``out`` of another shape or device or sharing memory with x, an unknown
    variant, a shape the wide rung cannot take, or a config the input cannot take.
    """
    if out is None and variant is None and config is None and not _compiling():  # the fixed lane, if made
        got = run_fixed(_lanes, x, (dim0, dim1))
        if got is not None:
            return got
    check_tensor(x, "x", ACCEPTED, "transpose")
    if _compiling():  # no cache lookups while tracing: shapes may be symbolic
        call = _resolve_call(x.shape, dim0, dim1, variant, config)
    else:
        key = (x.shape, dim0, dim1, variant, config)
        try:
            call = _calls.get(key)
        except TypeError:  # an unhashable argument: resolving it names the bad one
            call = _resolve_call(x.shape, dim0, dim1, variant, config)
        if call is None:
            call = remember(_calls, key, _resolve_call(x.shape, dim0, dim1, variant, config))
    a, b, out_shape, cfg = call
    if out is None:
        if variant is None and config is None and type(x) is torch.Tensor and x.is_contiguous() and not _compiling():
            # a plain call: its launch, recorded, becomes the fixed lane of (dtype, device, shape, dims)
            return with_fixed_lane(_lanes, x, (dim0, dim1), lambda: _fresh(x, out_shape, a, b, cfg), out_shape)
        out = x.new_empty(out_shape)
    else:
        check_result(out, x, out_shape, "transpose")
    _transpose_out(x, out, a, b, variant, cfg)
    return out


def _fresh(x: torch.Tensor, out_shape: tuple, a: int, b: int, cfg) -> torch.Tensor:
    out = x.new_empty(out_shape)
    _transpose_out(x, out, a, b, None, cfg)
    return out


OP = register(Op(
    name="transpose", family="rearrangement", variants=LADDER, bytes_moved=nbytes,
    flops=lambda *a, **k: 0, call=transpose,
    torch_fn=lambda x, dim0=-2, dim1=-1: x.transpose(dim0, dim1).contiguous(),
    example=lambda shape, dtype: ((random_input(shape, dtype),), {}),
    doc="x.transpose(dim0, dim1).contiguous(), any dtype, batched",
    bench_shapes=((16384, 16384), (8192, 8192)), bench_dtypes=(torch.float32, torch.float16, torch.uint8),
))
