"""layer_norm and rms_norm (torch.nn.functional semantics): ladder, dispatch, public functions.

Both ops live here because they share every kernel (norm.cu takes `rms` as a run-time flag) and one
dispatcher: Welford over a looping block, then the row in registers (mean, then squared deviations
from it: two passes over registers), then per row length warp-packed rows, a CTA per row or a cluster
per row, and on sm_90 bulk-copy rings and rows kept in shared memory. The configurations and the rule
choosing one are in norm_configs.py; ``config=`` launches a given one (tuning and tests). A plain eager
call on contiguous tensors, once accepted by the checked path, makes a lane for its (dtype, device,
normalized shape, weight and bias given): later such calls check those tensors' dtype, shape, device
and layout, allocate and launch the same plan's runner.
"""
from __future__ import annotations

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
from ._rows import ALIGNED, WINDOW, WINDOW_IN, config_text, parse_config, per_vec, row_form
from .norm_configs import (CONFIG_CLASSES, SRC, BulkRing, NormConfig, NormTile, SmemRows, Welford,  # noqa: F401
                           config_for, config_order, configs, rows_class, rows_matter)

__all__ = ["layer_norm", "rms_norm"]


def _kernels(rung: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    """The instantiations the rung launches for dtype at the rule's sample lengths: each configuration it
    chooses, in the row forms that reach it (aligned rows: 16-byte vectors; others: the window forms, or
    element by element)."""
    forms = {f: set(configs(dtype, aligned=f, rung=rung)) for f in (ALIGNED, WINDOW, WINDOW_IN)}
    seen: dict[str, Kernel] = {}
    for c in sorted(set().union(*forms.values()), key=config_order):
        for f in (ALIGNED, WINDOW, WINDOW_IN):
            if c in forms[f]:
                k = c.kernel(dtype, f)
                seen.setdefault(k.name, k)
    return tuple(seen.values())


_plans = plan_cache()


def _plan(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, vec: bool, rms: bool,
          rows: int, weight: bool, bias: bool) -> tuple:
    """(configuration, loaded kernel, dynamic shared bytes, runner ``go(rows, args)``) for a plan key."""
    op = "rms_norm" if rms else "layer_norm"
    sm = compute_capability(dev)
    if text is None:
        cfg = config_for(rung, dtype, len_, aligned=vec, rms=rms, rows=rows, sm=sm)
    else:
        cfg = parse_config(text, CONFIG_CLASSES)
        cfg.check(op, dtype, len_, vec, sm)
    kernel = get_kernel(SRC, cfg.name(dtype, cfg.form(vec) if hasattr(cfg, "form") else vec), device_index=dev)
    shmem = cfg.shared_bytes(weight, bias)
    return cfg, kernel, shmem, cfg.runner(kernel, shmem, dev)


def _runner(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, vec: bool, rms: bool,
            rows: int, weight: bool, bias: bool):
    """The runner of the plan for this input (the plan key holds what config_for reads of ``rows``)."""
    key = (rung, text, dtype, dev, len_, vec, rms, rows_class(dtype, rows, rms), weight, bias)
    plan = _plans.get(key)
    if plan is None:
        plan = remember(_plans, key, _plan(rung, text, dtype, dev, len_, vec, rms, rows, weight, bias))
    return plan[3]


_eps32 = plan_cache()  # eps (a float) -> np.float32, the kernels' parameter
_RMS = (np.int32(0), np.int32(1))


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
    go = _runner(rung, text, x.dtype, x.get_device(), len_, row_form(len_, x.dtype, xp, op, wp, bp), rms, rows,
                 w is not None, b is not None)
    go(rows, (xp, op, wp, bp, rows, len_, _f32(eps), _RMS[rms]))


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


# ---- the lanes: a norm of a contiguous CUDA tensor with contiguous weight and bias, checks made once ---
# A lane per (dtype, device, normalized shape, weight given, bias given) of each op, made by the checked
# path; the public functions look it up for plain tensors x outside torch.compile.
_lanes = {False: plan_cache(), True: plan_cache()}  # by rms: layer_norm's, rms_norm's
_Tensor, _Parameter, _Size = torch.Tensor, torch.nn.Parameter, torch.Size
_compiling = torch.compiler.is_compiling
_empty_like = torch.empty_like
_CONTIGUOUS = torch.contiguous_format


def _shape_key(normalized_shape):
    """normalized_shape as a lane key: an int for one dim, a tuple for several; None where it is not a
    plain int or a tuple, list or torch.Size of plain ints (such calls take the checked path)."""
    t = type(normalized_shape)
    if t is int:
        return normalized_shape
    if t is not tuple and t is not list and t is not _Size:
        return None
    for s in normalized_shape:
        if type(s) is not int:
            return None
    n = len(normalized_shape)
    return normalized_shape[0] if n == 1 else tuple(normalized_shape) if n else None


def build_lane(dtype: torch.dtype, device: torch.device, shape_key, has_weight: bool, has_bias: bool, rms: bool,
               form):
    """``lane(x, weight, bias, eps)``: the checked path's launch for x of ``dtype`` on ``device`` normalised
    over ``shape_key`` (an int or a tuple of ints) with a weight and bias where ``has_weight``/``has_bias``,
    or None for a call it does not take: x or a weight or bias not contiguous, a weight or bias of another
    dtype, shape or device or not a plain tensor (or Parameter), eps not a float (rms_norm: or None),
    x empty or not ending in the normalized shape. ``form(vec, rows)`` gives the runner of the plan
    for the alignment and row count (asked once per alignment and rows_class)."""
    ns = (shape_key,) if type(shape_key) is int else shape_key
    k, len_ = len(ns), math.prod(ns)
    whole = len_ % per_vec(dtype) == 0
    by_rows = rows_matter(dtype, rms)
    forms: dict = {}
    eps_of: dict = {}
    none_eps = np.float32(torch.finfo(dtype).eps) if rms else None
    rms32 = _RMS[rms]

    def lane(x: torch.Tensor, w, b, eps) -> Optional[torch.Tensor]:
        shape = x.shape
        if (shape[-k:] != ns if k > 1 else not shape or shape[-1] != len_) or not x.is_contiguous():
            return None
        if has_weight:
            if ((type(w) is not _Tensor and type(w) is not _Parameter) or w.dtype is not dtype or w.shape != ns
                    or w.device != device or not w.is_contiguous()):
                return None
            wp = w.data_ptr()
        else:
            wp = 0
        if has_bias:
            if ((type(b) is not _Tensor and type(b) is not _Parameter) or b.dtype is not dtype or b.shape != ns
                    or b.device != device or not b.is_contiguous()):
                return None
            bp = b.data_ptr()
        else:
            bp = 0
        if type(eps) is float:
            e = eps_of.get(eps)
            if e is None or not eps:  # zeros: 0.0 and -0.0 are one key
                if len(eps_of) >= 64:
                    eps_of.clear()
                e = eps_of[eps] = np.float32(eps)
        elif eps is None and none_eps is not None:
            e = none_eps
        else:
            return None
        n = x.numel()
        if not n:
            return None
        out = _empty_like(x, memory_format=_CONTIGUOUS)
        xp, op = x.data_ptr(), out.data_ptr()
        rows = n // len_
        vec = ALIGNED if whole and not (xp | op | wp | bp) & 15 else WINDOW if not (xp ^ op) & 15 else WINDOW_IN
        fk = (vec, rows_class(dtype, rows, rms)) if by_rows else vec
        go = forms.get(fk)
        if go is None:
            go = forms[fk] = form(vec, rows)
        go(rows, (xp, op, wp, bp, rows, len_, e, rms32))
        return out
    return lane


def _make_lane(rms: bool, x: torch.Tensor, normalized_shape, weight, bias) -> None:
    """The lane of this call's (dtype, device, normalized shape, weight and bias presence), made once the
    checked path has accepted it, where the lane would take such a call."""
    if type(x) is not _Tensor or not x.numel() or not x.is_contiguous() or _compiling():
        return
    if any(t is not None and (type(t) not in (_Tensor, _Parameter) or not t.is_contiguous()) for t in (weight, bias)):
        return
    shape_key = _shape_key(normalized_shape)
    key = (x.dtype, x.device, shape_key, weight is None, bias is None)
    if shape_key is None or key in _lanes[rms]:
        return
    dtype, dev, has_w, has_b = x.dtype, x.get_device(), weight is not None, bias is not None
    rung = OPS["rms_norm" if rms else "layer_norm"].default_variant.name
    len_ = math.prod((shape_key,) if type(shape_key) is int else shape_key)

    def form(vec: bool, rows: int):
        return _runner(rung, None, dtype, dev, len_, vec, rms, rows, has_w, has_b)

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
    ``variant``: a rung of ``kernelkit.ladder("layer_norm")`` (naive first); None runs the default.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``Welford``, ``NormTile``, ``BulkRing`` or ``SmemRows`` of kernelkit.ops.reduction.norm;
    ``norm.configs(dtype, aligned=...)`` lists those the rules choose); raises ValueError if it cannot
    run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, a weight or bias of another dtype,
    an ``out`` of another dtype or a config of another class; ValueError for a CPU tensor, a
    ``normalized_shape`` that is empty or does not end x's shape, a weight or bias of another shape,
    tensors on different devices, an ``out`` of another shape or device, an unknown variant, both
    ``variant`` and ``config``, or a config the input cannot take.
    """
    if out is None and variant is None and config is None and type(x) is _Tensor and not _compiling():
        lane = _lanes[False].get((x.dtype, x.device, _shape_key(normalized_shape), weight is None, bias is None))
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
    ``torch.finfo(x.dtype).eps``, as in torch.
    ``out``: optional result of x's shape, dtype and device, returned. None: a new contiguous tensor.
    ``variant``: a rung of ``kernelkit.ladder("rms_norm")`` (naive first); None runs the default.
    ``config``: for tuning and tests; the configuration to launch instead of the rule's choice (a
    ``Welford``, ``NormTile``, ``BulkRing`` or ``SmemRows`` of kernelkit.ops.reduction.norm;
    ``norm.configs(dtype, aligned=...)`` lists those the rules choose); raises ValueError if it cannot
    run this input.

    Raises TypeError for a non-tensor, a dtype other than the three, a weight of another dtype, an
    ``out`` of another dtype or a config of another class; ValueError for a CPU tensor, a
    ``normalized_shape`` that is empty or does not end x's shape, a weight of another shape, tensors on
    different devices, an ``out`` of another shape or device, an unknown variant, both ``variant`` and
    ``config``, or a config the input cannot take.
    """
    if out is None and variant is None and config is None and type(x) is _Tensor and not _compiling():
        lane = _lanes[True].get((x.dtype, x.device, _shape_key(normalized_shape), weight is None, True))
        if lane is not None:
            got = lane(x, weight, None, eps)
            if got is not None:
                return got
    fresh = out is None
    len_, out = _check("rms_norm", x, normalized_shape, weight, None, out)
    eps = torch.finfo(x.dtype).eps if eps is None else float(eps)
    text = _config_arg("rms_norm", variant, config)
    _norm_out(x, out, weight, None, len_, eps, True, variant, text)
    if fresh and text is None and variant is None:
        _make_lane(True, x, normalized_shape, weight, None)
    return out


RUNGS = (
    ("welford", "one block per row: Welford (count, mean, M2) per thread in one read, merged by Chan's "
     "formula; a second read writes (2 reads + 1 write)"),
    ("registers", "one CTA per row holding it in registers: mean, then squared deviations (two passes "
     "over registers), then the output; one read, one write; > 16K elements fall back to welford"),
    ("fast", "per row length and dtype (norm_configs.config_for): rows packed into warps, a CTA per row, or "
     "(sm_90) a thread-block cluster per row merging (mean, M2) through distributed shared memory, persistent "
     "with weight and bias staged in shared memory once by asynchronous copies; 16-bit rows of 2K-4K elements: "
     "persistent CTAs staging weight and bias once (layer_norm, fp16 up to 8K rows; fp16 rms_norm at 3.5K-5.5K "
     "rows), fp16 rms_norm otherwise requesting them before the row; aligned rows on sm_90: fp16 rows of "
     "32K-64K, fp32 rms_norm rows of 32K-64K "
     "and fp32 layer_norm rows of 31K-32K as persistent clusters held to 64 registers that take their rows "
     "handed out at run time by a counter, bf16 rows of 32K-64K kept whole in shared memory, the rest past 32K "
     "elements (16-bit layer_norm: past 16K) by bulk (TMA) copies into rings of shared-memory stages; "
     "welford beyond the tables"),
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
        variants=kind_variants(RUNGS, _kernels),
        bytes_moved=_bytes,
        flops=lambda x, *a, **k: 8 * x.numel(),
        call=_fn, torch_fn=_torch, example=_example(_op),
        doc=f"torch.nn.functional.{_op}, fp32 statistics",
        bench_shapes=((4096, 4096), (16384, 8192), (32768, 32768), (65536, 1024), (1024, 65536)),
        bench_dtypes=(torch.float32, torch.float16),
    ))
