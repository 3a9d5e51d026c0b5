"""Lanes: the eager hot path of the element-wise ops' plain call.

A lane is a closure made once per kind of input (dtype, device and whatever parameter selects the
kernels), after the checked path has accepted such an input. It holds the default rung's kernels as
``runtime.plain_launcher`` runners (one C call a launch) and the launch shape its rule chose, so a
later call of that kind costs one dict lookup, the allocation, a few integer operations and the
launch. It launches exactly what the checked path would (kernel, grid, block, shared memory,
arguments); what it cannot tell cheaply (layout, overlap, unusual argument types) it leaves to the
checked path by returning None. Each op tries its lane only for the plain eager call: no ``out=``,
``variant=`` or ``config=``, arguments of type ``torch.Tensor`` exactly, not under torch.compile.
Lanes live in ``plans.plan_cache()`` dicts, so ``clear_plans()`` drops them with the plans.
"""
from __future__ import annotations

import numpy as np
import torch

# Bound once: an attribute lookup on torch costs a fraction of a microsecond per call.
TENSOR = torch.Tensor
EMPTY_LIKE = torch.empty_like
COMPILING = torch.compiler.is_compiling
F32 = np.float32
