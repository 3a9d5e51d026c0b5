"""layer_norm and rms_norm (torch.nn.functional semantics): ladder, dispatch, public functions.

Both ops live here because they share every kernel (norm.cu takes `rms` as a run-time flag) and one
dispatcher: Welford over a looping block, then the row in registers (mean, then squared deviations
from it: two passes over registers), then per row length warp-packed rows, a CTA per row or a cluster
per row, and on sm_90 bulk-copy rings and rows kept in shared memory. The configurations and the rule
choosing one are in norm_configs.py; ``config=`` launches a given one (tuning and tests).
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
from ._rows import config_text, parse_config, vec_ok
from .norm_configs import (CONFIG_CLASSES, SRC, BulkRing, NormConfig, NormTile, SmemRows, Welford,  # noqa: F401
                           config_for, config_order, configs, rows_class)

__all__ = ["layer_norm", "rms_norm"]


def _kernels(rung: str, dtype: torch.dtype) -> tuple[Kernel, ...]:
    """Every instantiation the rung can launch for dtype: each configuration the rule can choose, in the
    forms that reach it (aligned rows: 16-byte vectors; others: element by element)."""
    forms = {vec: set(configs(dtype, aligned=vec, rung=rung)) for vec in (True, False)}
    seen: dict[str, Kernel] = {}
    for c in sorted(forms[True] | forms[False], key=config_order):
        for vec in (True, False):
            if c in forms[vec]:
                k = c.kernel(dtype, vec)
                seen.setdefault(k.name, k)
    return tuple(seen.values())


_plans = plan_cache()


def _plan(rung: str, text: Optional[str], dtype: torch.dtype, dev: int, len_: int, vec: bool, rms: bool,
          rows: int, weight: bool, bias: bool) -> tuple:
    op = "rms_norm" if rms else "layer_norm"
    sm = compute_capability(dev)
    if text is None:
        cfg = config_for(rung, dtype, len_, aligned=vec, rms=rms, rows=rows, sm=sm)
    else:
        cfg = parse_config(text, CONFIG_CLASSES)
        cfg.check(op, dtype, len_, vec, sm)
    kernel = get_kernel(SRC, cfg.name(dtype, vec), device_index=dev)
    return cfg, kernel, cfg.shared_bytes(weight, bias)


def _run(rung: str, text: Optional[str], x, out, w, b, rows: int, len_: int, eps: float, rms: bool) -> None:
    dev = x.get_device()
    vec = vec_ok(len_, x.dtype, x, out, w, b)
    key = (rung, text, x.dtype, dev, len_, vec, rms, rows_class(x.dtype, rows, rms), w is None, b is None)
    plan = _plans.get(key)
    if plan is None:
        plan = remember(_plans, key, _plan(rung, text, x.dtype, dev, len_, vec, rms, rows, w is not None,
                                           b is not None))
    cfg, kernel, shmem = plan
    args = (x.data_ptr(), out.data_ptr(), 0 if w is None else w.data_ptr(), 0 if b is None else b.data_ptr(),
            rows, len_, np.float32(eps), np.int32(rms))
    cfg.launch(kernel, rows, args, shmem, dev)


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


def layer_norm(x: torch.Tensor, normalized_shape: Shape, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5, *, out: Optional[torch.Tensor] = None,
               variant: Optional[str] = None, config: Optional[NormConfig] = None) -> torch.Tensor:
    """torch.nn.functional.layer_norm: (x - mean) / sqrt(var + eps) * weight + bias over the trailing
    ``normalized_shape`` (biased variance, fp32 statistics); weight and bias in x's dtype.

    ``variant``: a rung of ``kernelkit.ladder("layer_norm")``; None runs the default. ``config``: for
    tuning and tests; the configuration to launch instead of the rule's choice (a ``Welford``,
    ``NormTile``, ``BulkRing`` or ``SmemRows`` of kernelkit.ops.reduction.norm; ``norm.configs(dtype,
    aligned=...)`` lists those the rules choose); raises ValueError if it cannot run this input.
    """
    len_, out = _check("layer_norm", x, normalized_shape, weight, bias, out)
    text = _config_arg("layer_norm", variant, config)
    _norm_out(x, out, weight, bias, len_, float(eps), False, variant, text)
    return out


def rms_norm(x: torch.Tensor, normalized_shape: Shape, weight: Optional[torch.Tensor] = None,
             eps: Optional[float] = None, *, out: Optional[torch.Tensor] = None,
             variant: Optional[str] = None, config: Optional[NormConfig] = None) -> torch.Tensor:
    """torch.nn.functional.rms_norm: x / sqrt(mean(x^2) + eps) * weight; eps None is finfo(x.dtype).eps.

    ``variant`` and ``config`` as for layer_norm: ``config`` is for tuning and tests; the configuration
    to launch instead of the rule's choice; raises ValueError if it cannot run this input.
    """
    len_, out = _check("rms_norm", x, normalized_shape, weight, None, out)
    eps = torch.finfo(x.dtype).eps if eps is None else float(eps)
    text = _config_arg("rms_norm", variant, config)
    _norm_out(x, out, weight, None, len_, eps, True, variant, text)
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
