"""layer_norm and rms_norm (torch.nn.functional semantics): ladder, dispatch, public functions.

Both ops live here because they share every kernel (norm.cu takes `rms` as a run-time flag) and one
dispatcher. The rungs, naive first: Welford over a looping block; then each a way of holding the row
(packed short rows through shared memory, warp slices, a CTA, a thread-block cluster, staged weight and
bias, bulk-copy rings, rows kept in shared memory); ``auto`` (the default) takes the first of packed_rows,
warp_rows, cta_row and cluster_row that holds the row. The configurations are in norm_configs.py, the
rules in norm_rules.py; ``config=`` launches a given one (tuning and tests). A plain eager call on
contiguous tensors, once accepted by the checked path, makes a lane for its (dtype, device, normalized
shape, weight and bias given): later such calls check those tensors' dtype, shape, device and layout,
allocate and launch the same plan's runner (_norm_lanes.py).
"""
from __future__ import annotations

import functools
import math
from typing import Optional, Sequence, Union

import numpy as np
import torch

from ...ladder import FLOAT_DTYPES, Kernel, Op, kind_variants, register
from ...runtime import get_kernel
from .._shared.checks import check_same_device, check_tensor, output_for, pick_variant
from .._shared.custom_op import out_op
from .._shared.launch_rules import compute_capability
from .._shared.plans import plan_cache, remember
from ._norm_lanes import RMS_ARG, RMS_EPS, build_lane, lane_key
from ._rows import ALIGNED, WINDOW, WINDOW_IN, config_text, parse_config, row_form
from .norm_configs import (CONFIG_CLASSES, SRC, BulkRing, NormConfig, NormPacked, NormTile, SmemRows,  # noqa: F401
                           Welford, config_order)
from .norm_rules import RUNG_RULES, config_for, configs, shared_per_block  # noqa: F401

__all__ = ["layer_norm", "rms_norm"]


def _kernels(rung: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    """The instantiations the rung launches for dtype at the rule's sample lengths: each configuration it
    chooses, in the row forms that reach it (register tiles: aligned rows as 16-byte vectors, any other
    alignment in the window forms; the others one kernel for every form)."""
    forms = {f: set(configs(dtype, form=f, rung=rung)) for f in (ALIGNED, WINDOW)}
    seen: dict[str, Kernel] = {}
    for c in sorted(forms[ALIGNED] | forms[WINDOW], key=config_order):
        if isinstance(c, NormTile):
            reach = ([ALIGNED] if c in forms[ALIGNED] else []) + ([WINDOW, WINDOW_IN] if c in forms[WINDOW] else [])
        else:
            reach = [ALIGNED]
        for f in reach:
            k = c.kernel(dtype, f)
            seen.setdefault(k.name, k)
    return tuple(seen.values())


@functools.cache
def _shared_per_block(dev: int) -> int:
    props = torch.cuda.get_device_properties(dev)
    return getattr(props, "shared_memory_per_block_optin", 0) or shared_per_block(compute_capability(dev))


_plans = plan_cache()


def _plan(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, form: int, rms: bool,
          weight: bool, bias: bool) -> tuple:
    """(configuration, loaded kernel, dynamic shared bytes, runner ``go(rows, args)``) for a plan key."""
    op = "rms_norm" if rms else "layer_norm"
    sm = compute_capability(dev)
    if text is None:
        cfg = config_for(rung, dtype, len_, form=form, sm=sm, smem=_shared_per_block(dev), rms=rms)
    else:
        cfg = parse_config(text, CONFIG_CLASSES)
        cfg.check(op, dtype, len_, form, sm)
    kernel = get_kernel(SRC, cfg.name(dtype, form), device_index=dev)
    shmem = cfg.shared_bytes(weight, bias)
    return cfg, kernel, shmem, cfg.runner(kernel, shmem, dev, len_, dtype)


def _runner(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, form: int, rms: bool,
            weight: bool, bias: bool):
    """The runner of the plan for this input."""
    key = (rung, text, dtype, dev, len_, form, rms, weight, bias)
    plan = _plans.get(key)
    if plan is None:
        plan = remember(_plans, key, _plan(rung, text, dtype, dev, len_, form, rms, weight, bias))
    return plan[3]


_eps32 = plan_cache()  # eps (a float) -> np.float32, the kernels' parameter


def _f32(eps: float) -> np.float32:
    """np.float32(eps), cached by value (but for zeros: 0.0 and -0.0 are one key)."""
    e = _eps32.get(eps)
    if e is None or not eps:
        e = remember(_eps32, eps, np.float32(eps))
    return e


def _run(rung: str, text: Optional[str], x, out, w, b, rows: int, len_: int, eps: float, rms: bool) -> None:
    xp, op = x.data_ptr(), out.data_ptr()
    wp = 0 if w is None else w.data_ptr()
    bp = 0 if b is None else b.data_ptr()
    go = _runner(rung, text, x.dtype, x.get_device(), len_, row_form(len_, x.dtype, xp, op, wp, bp), rms,
                 w is not None, b is not None)
    go(rows, (xp, op, wp, bp, rows, len_, _f32(eps), RMS_ARG[rms]))


def _norm_into(x: torch.Tensor, out: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
               len_: int, eps: float, rms: bool, variant: Optional[str], config: Optional[str]) -> None:
    """out <- the norm of x's rows of len_ elements; config: a configuration's repr (config_text)."""
    if x.numel() == 0:
        return
    v = pick_variant(OPS["rms_norm" if rms else "layer_norm"], variant, x.dtype)
    xc = x.contiguous()
    w = None if weight is None else weight.contiguous()
    b = None if bias is None else bias.contiguous()
    rows = xc.numel() // len_
    if out.is_contiguous():
        _run(v.name, config, xc, out, w, b, rows, len_, eps, rms)
    else:
        tmp = torch.empty_like(xc)
        _run(v.name, config, xc, tmp, w, b, rows, len_, eps, rms)
        out.copy_(tmp)


_norm_out = out_op("norm_out", _norm_into)

Shape = Union[int, Sequence[int], torch.Size]


def _check(op: str, x, normalized_shape, weight, bias, out) -> tuple[int, torch.Tensor]:
    """Validate as torch does; returns (elements per row, out)."""
    check_tensor(x, "x", FLOAT_DTYPES, op)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not ns or any(not isinstance(s, int) or s < 0 for s in ns):
        raise ValueError(f"{op}: normalized_shape must be a non-empty sequence of sizes, got {normalized_shape!r}")
    if x.dim() < len(ns) or tuple(x.shape[x.dim() - len(ns):]) != ns:
        raise ValueError(f"{op}: normalized_shape={list(ns)} expects an input of shape [*, "
                         f"{', '.join(map(str, ns))}], got {list(x.shape)}")
    check_same_device(op, ("x", x), ("weight", weight), ("bias", bias))
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        check_tensor(t, name, (x.dtype,), op)
        if tuple(t.shape) != ns:
            raise ValueError(f"{op}: {name} has shape {list(t.shape)}, expected normalized_shape {list(ns)}")
    return math.prod(ns), output_for(out, x, op)


def _config_arg(op: str, variant: Optional[str], config) -> Optional[str]:
    if config is None:
        if variant is not None:
            OPS[op].variant(variant)
        return None
    if variant is not None:
        raise ValueError(f"{op}: pass variant= or config=, not both (a configuration names its kernel)")
    if not isinstance(config, CONFIG_CLASSES):
        raise TypeError(f"{op}: config must be one of {[c.__name__ for c in CONFIG_CLASSES]} "
                        f"(kernelkit.ops.reduction.norm), got {type(config).__name__}")
    return config_text(config)


# ---- the lanes (_norm_lanes.py): a lane per (dtype, device, normalized shape, weight given, bias given) of
# each op, made by the checked path; the public functions look it up for plain tensors x outside torch.compile.
_lanes = {False: plan_cache(), True: plan_cache()}  # by rms: layer_norm's, rms_norm's
_Tensor, _Parameter = torch.Tensor, torch.nn.Parameter
_compiling = torch.compiler.is_compiling


def _make_lane(rms: bool, x: torch.Tensor, normalized_shape, weight, bias) -> None:
    """The lane of this call's (dtype, device, normalized shape, weight and bias presence), made once the
    checked path has accepted it, where the lane would take such a call."""
    if type(x) is not _Tensor or not x.numel() or not x.is_contiguous() or _compiling():
        return
    if any(t is not None and (type(t) not in (_Tensor, _Parameter) or not t.is_contiguous()) for t in (weight, bias)):
        return
    shape_key = lane_key(normalized_shape)
    key = (x.dtype, x.device, shape_key, weight is None, bias is None)
    if shape_key is None or key in _lanes[rms]:
        return
    dtype, dev, has_w, has_b = x.dtype, x.get_device(), weight is not None, bias is not None
    rung = OPS["rms_norm" if rms else "layer_norm"].default_variant.name
    len_ = math.prod((shape_key,) if type(shape_key) is int else shape_key)

    def form(vec: int):
        return _runner(rung, None, dtype, dev, len_, vec, rms, has_w, has_b)

    remember(_lanes[rms], key, build_lane(dtype, x.device, shape_key, has_w, has_b, rms, form))


def layer_norm(x: torch.Tensor, normalized_shape: Shape, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5, *, out: Optional[torch.Tensor] = None,
               variant: Optional[str] = None, config: Optional[NormConfig] = None) -> torch.Tensor:
    """``torch.nn.functional.layer_norm``: each row over the trailing ``normalized_shape`` normalized.

    (x - mean) / sqrt(var + eps) * weight + bias with the biased variance, as torch's; statistics in
    fp32, the result in x's dtype. ``x``: a float32, float16 or bfloat16 CUDA tensor whose trailing
    dims are ``normalized_shape``, any layout (non-contiguous through a contiguous copy).
    ``normalized_shape``: an int or a sequence of ints.
    ``weight``, ``bias``: optional tensors of shape ``normalized_shape`` in x's dtype on x's device.
    ``eps``: added to the variance.
    ``out``: optional result of x's shape, dtype and device, returned. None: a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("layer_norm")`` (naive first); None runs ``auto``, which
    picks the holder of the row by its length.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``Welford``, ``NormPacked``, ``NormTile``, ``BulkRing`` or ``SmemRows`` of kernelkit.ops.reduction.norm;
    ``norm.configs(dtype, form=...)`` lists those the rules choose); raises ValueError if it cannot run
    this input.

    Raises TypeError for a non-tensor, a dtype other than the three, a weight or bias of another dtype,
    an ``out`` of another dtype or a config of another class; ValueError for a CPU tensor, a
    ``normalized_shape`` that is empty or does not end x's shape, a weight or bias of another shape,
    tensors on different devices, an ``out`` of another shape or device, an unknown variant, both
    ``variant`` and ``config``, or a config the input cannot take.
    """
    if out is None and variant is None and config is None and type(x) is _Tensor and not _compiling():
        lane = _lanes[False].get((x.dtype, x.device, lane_key(normalized_shape), weight is None, bias is None))
        if lane is not None:
            got = lane(x, weight, bias, eps)
            if got is not None:
                return got
    fresh = out is None
    len_, out = _check("layer_norm", x, normalized_shape, weight, bias, out)
    text = _config_arg("layer_norm", variant, config)
    _norm_out(x, out, weight, bias, len_, float(eps), False, variant, text)
    if fresh and text is None and variant is None:
        _make_lane(False, x, normalized_shape, weight, bias)
    return out


def rms_norm(x: torch.Tensor, normalized_shape: Shape, weight: Optional[torch.Tensor] = None,
             eps: Optional[float] = None, *, out: Optional[torch.Tensor] = None,
             variant: Optional[str] = None, config: Optional[NormConfig] = None) -> torch.Tensor:
    """``torch.nn.functional.rms_norm``: each row over the trailing ``normalized_shape`` scaled to unit RMS.

    x / sqrt(mean(x^2) + eps) * weight; statistics in fp32, the result in x's dtype. ``x``: a float32,
    float16 or bfloat16 CUDA tensor whose trailing dims are ``normalized_shape``, any layout
    (non-contiguous through a contiguous copy).
    ``normalized_shape``: an int or a sequence of ints. ``weight``: an optional tensor of shape
    ``normalized_shape`` in x's dtype on x's device. ``eps``: added to the mean square; None is
    ``torch.finfo(torch.float32).eps`` for every dtype, what torch computes (its documentation says
    ``torch.finfo(x.dtype).eps``).
    ``out``: optional result of x's shape, dtype and device, returned. None: a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("rms_norm")`` (naive first); None runs ``auto``, which picks
    the holder of the row by its length.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``Welford``, ``NormPacked``, ``NormTile``, ``BulkRing`` or ``SmemRows`` of kernelkit.ops.reduction.norm;
    ``norm.configs(dtype, form=...)`` lists those the rules choose); raises ValueError if it cannot run
    this input.

    Raises TypeError for a non-tensor, a dtype other than the three, a weight of another dtype, an
    ``out`` of another dtype or a config of another class; ValueError for a CPU tensor, a
    ``normalized_shape`` that is empty or does not end x's shape, a weight of another shape, tensors on
    different devices, an ``out`` of another shape or device, an unknown variant, both ``variant`` and
    ``config``, or a config the input cannot take.
    """
    if out is None and variant is None and config is None and type(x) is _Tensor and not _compiling():
        lane = _lanes[True].get((x.dtype, x.device, lane_key(normalized_shape), weight is None, True))
        if lane is not None:
            got = lane(x, weight, None, eps)
            if got is not None:
                return got
    fresh = out is None
    len_, out = _check("rms_norm", x, normalized_shape, weight, None, out)
    eps = RMS_EPS if eps is None else float(eps)
    text = _config_arg("rms_norm", variant, config)
    _norm_out(x, out, weight, None, len_, eps, True, variant, text)
    if fresh and text is None and variant is None:
        _make_lane(True, x, normalized_shape, weight, None)
    return out


RUNGS = (
    ("welford", "one block per row: Welford (count, mean, M2) per thread in one read, merged by Chan's "
     "formula; a second read writes (2 reads + 1 write)"),
    ("packed_rows", "rows of up to 16 vectors packed: a CTA moves a block of whole rows through shared memory "
     "as 16-byte vectors of one contiguous stream (asynchronous copies in), a few lanes reducing each row by "
     "shuffles, weight and bias staged once a CTA; welford beyond"),
    ("warp_rows", "rows of up to 128 vectors in registers, a power-of-two slice of a warp a row (several rows a "
     "warp): mean, then squared deviations (two passes over registers), one read, one write; 16-byte vectors of "
     "the aligned window covering each row at any alignment, weight and bias read shifted to the row's phase; "
     "values kept as loaded, converted at each use, within a register budget; welford beyond"),
    ("cta_row", "a CTA a row in registers (4 vectors a thread up to 512 threads where clusters can take longer "
     "rows, else 1024, then up to 32 values a thread), the warps merged by Chan's formula; welford beyond"),
    ("cluster_row", "rows past a CTA as a thread-block cluster a row (sm_90): persistent clusters, each CTA staging "
     "its slice of weight and bias in shared memory once, (mean, M2) pushed to its peers by st.async, rows handed "
     "out at run time by a counter (shorter rows as cta_row); welford beyond, and before sm_90"),
    ("staged", "persistent CTAs a row (or clusters past a CTA) staging weight and bias in shared memory once by "
     "asynchronous copies behind the first row's loads; welford beyond"),
    ("bulk_ring", "aligned rows on sm_90 reaching shared memory by bulk (TMA) copies into a ring of stages "
     "issued rows ahead, one-CTA rings taking rows handed out, clusters beyond; welford otherwise"),
    ("smem_rows", "aligned rows on sm_90 kept whole in shared memory, fed by bulk copies into a ring of chunk "
     "stages running ahead into the next rows; welford otherwise"),
    ("auto", "the first of packed_rows, warp_rows, cta_row and cluster_row that holds the row (welford beyond): "
     "the lanes, threads, vectors a thread and cluster size computed from the row's length"),
)


def _example(op: str):
    def make(shape, dtype):
        n = shape[-1]
        x = torch.randn(shape, dtype=dtype, device="cuda") * 2 + 0.5
        w = torch.randn(n, dtype=dtype, device="cuda")
        if op == "rms_norm":
            return (x, (n,), w), {}
        return (x, (n,), w, torch.randn(n, dtype=dtype, device="cuda")), {}
    return make


def _bytes(x, normalized_shape, weight=None, bias=None, *a, **k):
    extra = sum(t.numel() * t.element_size() for t in (weight, bias) if isinstance(t, torch.Tensor))
    return 2 * x.numel() * x.element_size() + extra


OPS: dict[str, Op] = {}
for _op, _fn, _torch in (
    ("layer_norm", layer_norm,
     lambda x, ns, w=None, b=None, eps=1e-5: torch.nn.functional.layer_norm(x, ns, w, b, eps)),
    ("rms_norm", rms_norm, lambda x, ns, w=None, eps=None: torch.nn.functional.rms_norm(x, ns, w, eps)),
):
    OPS[_op] = register(Op(
        name=_op, family="reduction",
        variants=kind_variants(RUNGS, _kernels, default="auto"),
        bytes_moved=_bytes,
        flops=lambda x, *a, **k: 8 * x.numel(),
        call=_fn, torch_fn=_torch, example=_example(_op),
        doc=f"torch.nn.functional.{_op}, fp32 statistics",
        bench_shapes=((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536)),
        bench_dtypes=(torch.float32, torch.float16),
    ))
