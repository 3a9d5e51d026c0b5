"""C lanes: the plain eager call of an allocating element-wise op as one C call.

A lane is made by an op once its checked path has accepted a kind of input (dtype, device and the
parameter that picks kernels) and stored in the op's lane dict under that kind's key. Later plain calls
hand the dict and the tensors to ``run_unary``, ``run_binary`` or ``run_axpy`` (the C launch shim), which look the lane
up, allocate the output through torch, read the pointers and launch, returning the output, or None
for an input the lane does not take (the op then takes its checked path). Without the shim, or with
``KERNELKIT_SYNC=1`` (whose synchronisation lives in ``launch``), ``make_lane`` returns None and every
call takes the checked path.
"""
from __future__ import annotations

import torch

from .errors import KernelLaunchError
from .launch import _SYNC, _error_string, _exchange_device, _get_device, _handle, _handles, _raw_stream

try:
    from . import _fastlaunch as _shim
except ImportError:  # pragma: no cover - depends on the install
    _shim = None

AVAILABLE = (_shim is not None and not _SYNC and None not in (_get_device, _raw_stream, _exchange_device))


def _failed(name: str, code: int, grid: int, block: int, shmem: int, dev: int):
    raise KernelLaunchError(f"launching {name} (grid={grid}, block={block}, shmem={shmem}) on cuda:{dev} failed: "
                            f"{_error_string(code)}")


if AVAILABLE:
    _shim.bind(torch.Tensor, torch.empty_like, _get_device, _raw_stream, _exchange_device, _failed)
    run_unary = _shim.unary
    run_binary = _shim.binary
    run_axpy = _shim.axpy
else:
    def run_unary(lanes: dict, x, param):
        """``f(x)`` by x's lane in ``lanes`` (key: x's dtype, device and ``param``), or None."""
        return None

    def run_binary(lanes: dict, a, b):
        """``a + b`` by the lane in ``lanes`` (key: a's and b's dtypes and devices), or None."""
        return None

    def run_axpy(lanes: dict, alpha, x, y):
        """True once ``y += alpha x`` ran by the lane in ``lanes`` (key: x's and y's dtypes and devices),
        or None."""
        return None


def make_lane(kernels: tuple, names: tuple[str, str], device_index: int, esize: int,
              shapes: tuple[tuple[int, int], tuple[int, int]], large_n: int = 0):
    """A lane of two kernels (element-wise and saxpy: [input aligned like the output, not]; add: [aligned,
    shuffle]) with their launch shapes ((block, dynamic shared bytes) each; element-wise: below
    ``large_n`` elements and from it; saxpy: the first for both), or None where lanes are not available."""
    if not AVAILABLE:
        return None
    h0, h1 = (_handles.get(id(k)) or _handle(k) for k in kernels)
    (b0, m0), (b1, m1) = shapes
    return _shim.make_lane(h0, h1, names[0], names[1], device_index, esize, b0, m0, b1, m1, large_n)
