"""Plain eager calls of ``linear`` and ``matmul`` replayed on the Hopper rungs without their checks.

A small call's host cost was 2.6-3.1x torch's (58-63 us against 20-22 for a 64x64 bf16 problem): the
checks, the operand probe, the plan lookup and the tensor maps, all in Python, where at decode shapes
(M = 1-16) the GPU needs 10-50 us. A call whose checked path launched one Hopper kernel on a 2-D
problem leaves a ``TmaReplay`` behind (``capture``); the op keeps it under the call's signature
(``signature``: shapes, strides, dtypes and devices of the tensors, and the keyword arguments) in a plan
cache, and the next call of that signature replays it: a new output, the two tensor maps for the
operands' addresses (cached by address), the launch. What the signature does not fix is checked again
at each replay: the operands' 16-byte alignment (the tensor maps need it) and the current device. A
replay declines (returns None, the op takes its checked path) where launches are recorded, under
``KERNELKIT_SYNC``, without the launch shim, and while torch.compile traces (``replays_possible``).
"""
from __future__ import annotations

import threading
from importlib import import_module
from typing import Optional

import torch

from ...runtime.errors import KernelLaunchError
from ...runtime.tensor_map import encode_tiled
from .._shared.plans import remember

_launch_mod = import_module("kernelkit.runtime.launch")  # the module (the package's `launch` is the function)


class TmaReplay:
    """One Hopper launch of a 2-D problem, everything but the addresses resolved."""

    __slots__ = ("handle", "grid", "block", "shmem", "dev", "dtype", "a_map", "b_map", "out_shape", "scalars",
                 "split", "name", "read")

    def __init__(self, handle: int, grid, block: int, shmem: int, dev: int, dtype: torch.dtype, a_map: tuple,
                 b_map: tuple, scalars: tuple, split: Optional[tuple], name: str, read: tuple):
        self.handle, self.grid, self.block, self.shmem, self.dev = handle, grid, block, shmem, dev
        self.dtype, self.a_map, self.b_map, self.out_shape = dtype, a_map, b_map, None  # the op sets out_shape
        self.scalars, self.split, self.name = scalars, split, name  # (m, n, k, ldc, bsc, flags); (floats, tiles)
        self.read = read  # the operands' addresses the captured launch read (a copy's are not the call's)

    def __call__(self, a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """The op's result for operands ``a`` and ``b`` whose data the kernels read where they start (the
        call's own tensors, of the captured signature), or None where the replay does not hold (the
        caller takes its checked path)."""
        pa, pb = a.data_ptr(), b.data_ptr()
        if (pa | pb) & 15 or _launch_mod._recorded is not None or _launch_mod._get_device() != self.dev:
            return None
        out = torch.empty(self.out_shape, dtype=self.dtype, device=a.device)
        ta = encode_tiled(self.dtype, pa, *self.a_map)
        tb = encode_tiled(self.dtype, pb, *self.b_map)
        ws = tickets = 0
        if self.split is not None:
            from ._hopper import split_workspace  # _hopper imports this module
            ws, tickets = split_workspace(self.dev, *self.split)
        g = self.grid
        err = _launch_mod._fast_launch(self.handle, g[0], g[1], g[2], self.block, 1, 1, self.shmem,
                                       _launch_mod._raw_stream(self.dev),
                                       (ta, tb, out.data_ptr(), 0 if bias is None else bias.data_ptr(),
                                        *self.scalars, 0, 0, ws, tickets))
        if err:
            raise KernelLaunchError(f"launching {self.name} (grid={g}, block={self.block}, shmem={self.shmem}) on "
                                    f"cuda:{self.dev} failed: {_launch_mod._error_string(err)}")
        return out


_captured = threading.local()  # the replay the current thread's last Hopper launch left, if any


def launch_handle(kernel) -> int:
    """The driver handle ``launch`` passes for a loaded kernel."""
    return _launch_mod._handles.get(id(kernel)) or _launch_mod._handle(kernel)


def replays_possible() -> bool:
    """Whether a call may replay or leave a replay: the launch shim built, no KERNELKIT_SYNC, launches not
    being recorded, torch.compile not tracing."""
    return (_launch_mod._fast_launch is not None and not _launch_mod._SYNC and _launch_mod._recorded is None
            and not torch.compiler.is_compiling())


def offer(replay: TmaReplay) -> None:
    """Called by the Hopper launch of a 2-D problem: the replay of what it just launched."""
    _captured.last = replay


def begin() -> None:
    _captured.last = None


def capture(a: torch.Tensor, b: torch.Tensor, out_shape: tuple) -> Optional[TmaReplay]:
    """The replay the checked path since ``begin`` left for operands ``a`` and ``b``, if it launched one
    Hopper kernel reading them where they lie (not copies), its output of ``out_shape`` new and contiguous."""
    got = getattr(_captured, "last", None)
    _captured.last = None
    if got is None or got.read != (a.data_ptr(), b.data_ptr()):
        return None
    got.out_shape = tuple(out_shape)
    return got


def signature(*tensors, params: tuple) -> tuple:
    """What a call's checks and plan depend on, apart from addresses: each tensor's shape, strides, dtype
    and device (None for an absent one), and the call's other arguments."""
    return (*((None if t is None else (t.shape, t.stride(), t.dtype, t.device)) for t in tensors), params)


def keep(replays: dict, key: tuple, replay: Optional[TmaReplay]) -> None:
    """Store a captured replay (a plan cache: ``clear_plans`` forgets it with the kernels it launches)."""
    if replay is not None:
        remember(replays, key, replay)
