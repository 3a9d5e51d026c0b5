"""C lanes: the plain eager call of an op as one C call (lanes.c and fixed_lanes.c of the launch shim).

A lane is made by an op once its checked path has accepted a kind of input and stored in the op's lane
dict under that kind's key. Later plain calls hand the dict and the tensors to a ``run_*`` function,
which looks the lane up, allocates the output through torch, reads the pointers and launches,
returning the output, or None for an input the lane does not take (the op then takes its checked path).

- ``make_lane`` + ``run_unary`` / ``run_binary`` / ``run_axpy``: the element-wise ops (gelu and relu,
  add, saxpy), keyed by dtype and device (and a parameter): any size, any alignment.
- ``record_fixed`` + ``run_fixed``: any op whose one launch is a function of its input's shape, keyed by
  (dtype, device, shape, parameter): the launch of the checked path, recorded, replayed for later inputs
  of that key whose data starts on a 16-byte boundary.

The lanes read tensors through the torch bridge (``runtime.torch_bridge``) where ``kernelkit warmup``
has built it, else through the tensors' Python methods.

Without the shim, or with ``KERNELKIT_SYNC=1`` (whose synchronisation lives in ``launch``), no lane is
made and every call takes the checked path.
"""
from __future__ import annotations

import torch

from .errors import KernelLaunchError
from .launch import (_SYNC, _dims, _error_string, _exchange_device, _get_device, _handle, _handles, _raw_stream,
                     recording)

try:
    from . import _fastlaunch as _shim
except ImportError:  # pragma: no cover - depends on the install
    _shim = None

AVAILABLE = (_shim is not None and not _SYNC and None not in (_get_device, _raw_stream, _exchange_device))


def _failed(name: str, code: int, grid: int, block: int, shmem: int, dev: int):
    raise KernelLaunchError(f"launching {name} (grid={grid}, block={block}, shmem={shmem}) on cuda:{dev} failed: "
                            f"{_error_string(code)}")


def use_bridge() -> bool:
    """Read tensors and allocate outputs through the torch bridge if it is built for this torch
    (``runtime.torch_bridge``); True if the lanes use it."""
    if not AVAILABLE:
        return False
    from . import torch_bridge

    global new_like
    module = torch_bridge.load()
    if module is None:
        return False
    _shim.use_bridge(module.BRIDGE)
    new_like = module.empty_like
    return True


new_like = torch.empty_like  # a new contiguous tensor like x; the bridge's (a quarter less host time) once loaded


if AVAILABLE:
    _shim.bind(torch.Tensor, torch.empty_like, _get_device, _raw_stream, _exchange_device, _failed)
    use_bridge()
    run_unary = _shim.unary
    run_binary = _shim.binary
    run_axpy = _shim.axpy
    run_fixed = _shim.fixed
else:
    def run_unary(lanes: dict, x, param):
        """``f(x)`` by x's lane in ``lanes`` (key: x's dtype, device and ``param``), or None."""
        return None

    def run_binary(lanes: dict, a, b):
        """``a + b`` by the lane in ``lanes`` (key: a's and b's dtypes and devices), or None."""
        return None

    def run_fixed(lanes: dict, x, param):
        """The output of x's fixed lane in ``lanes`` (key: x's dtype, device, shape and ``param``), or None."""
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


def fixed_key(x, param) -> tuple:
    """The key of x's fixed lane in an op's lane dict, as ``run_fixed`` builds it."""
    return (x.dtype, x.get_device(), x.shape, param)


def record_fixed(x, call, out_shape=None):
    """``(out, lane)``: ``out = call()``, the op's checked path for a plain call on ``x`` returning a new
    output, run while its launches are recorded, and the fixed lane made of that launch if it was exactly
    one plain launch taking x's and the output's addresses, both on a 16-byte boundary (else None). The
    op stores the lane under ``fixed_key(x, param)``; later such calls replay it (``run_fixed``) with
    their own addresses. ``out_shape``: the output's shape where it is not x's (None: ``empty_like(x)``)."""
    if not AVAILABLE:
        return call(), None
    with recording() as launches:
        out = call()
    if len(launches) != 1:
        return out, None
    kernel, grid, block, shmem, cluster, cooperative, args, name, dev = launches[0]
    xp, op = x.data_ptr(), out.data_ptr()
    slots = [i for i, a in enumerate(args) if type(a) is int and a in (xp, op)]
    if cluster != 1 or cooperative or (xp | op) & 15 or xp == op or len(slots) != 2:
        return out, None
    in_slot, out_slot = slots if args[slots[0]] == xp else slots[::-1]
    handle = _handles.get(id(kernel)) or _handle(kernel)
    lane = _shim.make_fixed(handle, _dims(grid), _dims(block), shmem, dev, tuple(args), in_slot, out_slot,
                            None if out_shape is None else tuple(out_shape), name)
    return out, lane
