"""The lanes of layer_norm and rms_norm: the launch of a plain eager call whose checks were made once.

Once the checked path (norm.py) has accepted a call on a contiguous CUDA tensor with contiguous weight and
bias, it makes a lane for the call's (dtype, device, normalized shape, weight given, bias given); later such
calls find it by ``lane_key`` and run it, which checks only what can differ between them (the tensors'
shape, dtype, device and layout, eps) and launches the runner of the plan for the row form; a call it does
not take goes back to the checked path.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch

from ._rows import ALIGNED, WINDOW, WINDOW_IN, per_vec

# rms_norm's eps where none is given, filled in by rms_norm and by its lanes alike: float32's, the precision of
# the statistics, for every input dtype, which is what torch computes (its documentation names
# torch.finfo(x.dtype).eps; for 16-bit rows of a few elements, whose mean square can be as small as that, the
# two differ: docs/design/row-reductions.md)
RMS_EPS = torch.finfo(torch.float32).eps
RMS_ARG = (np.int32(0), np.int32(1))  # the kernels' rms argument: layer_norm's, rms_norm's

_Tensor, _Parameter, _Size = torch.Tensor, torch.nn.Parameter, torch.Size
_empty_like = torch.empty_like
_CONTIGUOUS = torch.contiguous_format


def lane_key(normalized_shape):
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
    x empty or not ending in the normalized shape. ``form(vec)`` gives the runner of the plan for the row
    form (asked once per form)."""
    ns = (shape_key,) if type(shape_key) is int else shape_key
    k, len_ = len(ns), math.prod(ns)
    whole = len_ % per_vec(dtype) == 0
    forms: dict = {}
    eps_of: dict = {}
    none_eps = np.float32(RMS_EPS) if rms else None
    rms32 = RMS_ARG[rms]

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
        go = forms.get(vec)
        if go is None:
            go = forms[vec] = form(vec)
        go(rows, (xp, op, wp, bp, rows, len_, e, rms32))
        return out
    return lane
