"""Loading compiled kernels on the current device and launching them on torch's current stream.

The hot path of an op is: look up a cached ``cuda.core.Kernel`` by (device, build, name), look up
the cached cuda.core Stream wrapping torch's current stream handle, launch. No synchronisation and no
allocation, so launches are capturable in CUDA graphs.
"""
from __future__ import annotations

import os
import threading
from typing import Sequence

import torch

from .compiler import compile_source
from .errors import KernelLaunchError

_kernels: dict[tuple, object] = {}
_tls = threading.local()
_streams: dict[int, object] = {}
_devices_ready: set[int] = set()
_lock = threading.Lock()
_SYNC = os.environ.get("KERNELKIT_SYNC", "0") not in ("", "0")


def device_arch(device_index: int | None = None) -> str:
    """``sm_XY`` of a CUDA device (the current one by default)."""
    major, minor = torch.cuda.get_device_capability(device_index)
    return f"sm_{major}{minor}"


def _ensure_context(device_index: int) -> None:
    # cuda.core needs its Device made current once per thread; it shares torch's primary context.
    if device_index in _devices_ready and getattr(_tls, "device", None) == device_index:
        return
    from cuda.core import Device

    Device(device_index).set_current()
    _tls.device = device_index
    _devices_ready.add(device_index)



def get_kernel(
    source: str,
    name: str,
    *,
    device_index: int,
    arch_suffix: str = "",
    extra_options: Sequence[str] = (),
    names: Sequence[str] | None = None,
):
    """The loaded kernel for the instantiation ``name`` of ``csrc/<source>`` on a device.

    ``names`` lists all instantiations to build together with this one (one NVRTC run per file);
    ``arch_suffix`` is "a" for kernels that use arch-specific instructions (wgmma, setmaxnreg).
    """
    key = (device_index, source, name, arch_suffix, tuple(extra_options))
    kern = _kernels.get(key)
    if kern is not None:
        return kern
    from cuda.core import ObjectCode

    _ensure_context(device_index)
    arch = device_arch(device_index) + arch_suffix
    build = compile_source(source, tuple(names or (name,)), arch, extra_options=extra_options)
    obj = ObjectCode.from_cubin(build.cubin, name=source)
    kern = obj.get_kernel(build.mangled(name))  # by mangled name: no symbol map needed
    with _lock:
        _kernels[key] = kern
    return kern


try:  # bound once at import: an import or attribute lookup inside the hot path costs ~1 us a call
    from cuda.core import launch as _cc_launch
except ImportError:  # pragma: no cover - cuda.core is a dependency; compile-only tools still import
    _cc_launch = None


# torch's current stream handle: ~0.2 us, where torch.cuda.current_stream() costs ~8
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # absent from CPU-only builds


def current_stream(device_index: int | None = None):
    """cuda.core Stream for torch's current stream on a device, cached by handle."""
    if device_index is None:
        device_index = torch.cuda.current_device()
    handle = _raw_stream(device_index)
    s = _streams.get(handle)
    if s is None:
        from cuda.core import Stream

        s = Stream.from_handle(handle)
        with _lock:
            _streams[handle] = s
    return s


_configs: dict[tuple, object] = {}


def launch(kernel, grid, block, *args, shmem: int = 0, name: str = "kernel", device_index: int | None = None) -> None:
    """Launch ``kernel`` with ``args`` on torch's current stream of ``device_index``.

    ``grid`` and ``block`` are ints or tuples. Python ints travel as 64-bit integers (pointers,
    sizes); pass numpy scalars for 32-bit or float parameters. A launch failure raises
    KernelLaunchError naming the kernel; KERNELKIT_SYNC=1 also synchronises after the launch so
    that a fault inside the kernel is reported against it.

    This is every op's hot path, written for a small host cost: two dict lookups and the launch.
    """
    cfg = _configs.get((grid, block, shmem))
    if cfg is None:
        cfg = _make_config(grid, block, shmem)
    stream = _streams.get(_raw_stream(device_index)) if device_index is not None else None
    if stream is None:
        stream = current_stream(device_index)
    try:
        _cc_launch(stream, cfg, kernel, *args)
    except Exception as exc:
        raise KernelLaunchError(f"launching {name} (grid={grid}, block={block}, shmem={shmem}) failed: {exc}") from exc
    if _SYNC:
        try:
            stream.sync()
        except Exception as exc:
            raise KernelLaunchError(f"kernel {name} failed: {exc}") from exc


def _make_config(grid, block, shmem: int):
    from cuda.core import LaunchConfig

    g = tuple(grid) if isinstance(grid, (tuple, list)) else (int(grid),)
    b = tuple(block) if isinstance(block, (tuple, list)) else (int(block),)
    cfg = LaunchConfig(grid=g, block=b, shmem_size=shmem)
    if len(_configs) < 8192:
        _configs[(grid, block, shmem)] = cfg
    return cfg
