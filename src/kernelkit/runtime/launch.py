"""Loading compiled kernels on a device and launching them on torch's current stream: the one launch path.

Every launch of every op (plain, cluster, cooperative, persistent) goes through ``launch``, so
``KERNELKIT_SYNC=1`` and the error naming the kernel hold for all of them. The hot path is a few
dict lookups and the driver call; no synchronisation and no allocation, so launches are capturable
in CUDA graphs.

Several GPUs: a kernel runs on the device of the tensors it is given, whatever device is current.
The launch makes that device current for the duration of the call (only when it is not already),
and loading a kernel never leaves another device's context current behind torch's back.
"""
from __future__ import annotations

import os
import threading

import torch

from .compiler import compile_source
from .errors import KernelLaunchError
from .support import check_device

_kernels: dict[tuple, object] = {}
_streams: dict[tuple[int, int], object] = {}
_configs: dict[tuple, object] = {}
_lock = threading.Lock()
_SYNC = os.environ.get("KERNELKIT_SYNC", "0") not in ("", "0")

# Bound once at import: an import or attribute lookup inside the hot path costs ~1 us a call.
try:
    from cuda.core import launch as _cc_launch
except ImportError:  # pragma: no cover - cuda.core is a dependency; compile-only tools still import
    _cc_launch = None
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # ~0.2 us, torch.cuda.current_stream() ~8
_get_device = getattr(torch._C, "_cuda_getDevice", None)
try:  # the C launch shim, built at install (setup.py); absent, launches go through cuda.core
    from ._fastlaunch import launch as _fast_launch
except ImportError:  # pragma: no cover - depends on the install
    _fast_launch = None
_exchange_device = getattr(torch._C, "_cuda_exchangeDevice", None)


def device_arch(device_index: int | None = None) -> str:
    """``sm_XY`` of a CUDA device (the current one by default)."""
    major, minor = torch.cuda.get_device_capability(device_index)
    return f"sm_{major}{minor}"


def stream_handle(device_index: int) -> int:
    """The raw handle of torch's current stream on a device (every device's default stream is 0)."""
    return _raw_stream(device_index)


class on_device:
    """Make ``device_index`` current inside the block and restore the previous device after it.

    Cheaper than ``torch.cuda.device``; the restore also undoes a context that cuda.core made
    current inside the block (the runtime call that restores the device sets its context)."""

    __slots__ = ("dev", "prev")

    def __init__(self, device_index: int):
        self.dev = device_index

    def __enter__(self):
        self.prev = _exchange_device(self.dev)

    def __exit__(self, *exc):
        _exchange_device(self.prev)
        return False


def get_kernel(source: str, name: str, *, device_index: int, arch_suffix: str = "", extra_options=()):
    """The loaded kernel for the instantiation ``name`` of ``csrc/<source>`` on a device.

    Each instantiation is its own NVRTC run (a few tenths of a second), so a first call builds only
    what it launches; ``kernelkit warmup`` builds the rest ahead of time. ``arch_suffix`` is "a" for
    kernels that use arch-specific instructions (wgmma, setmaxnreg). The first kernel loaded for a
    device checks that the device is supported (``support.check_device``: UnsupportedDeviceError below
    compute capability 8.0).
    """
    key = (device_index, source, name, arch_suffix, tuple(extra_options))
    kern = _kernels.get(key)
    if kern is not None:
        return kern
    from cuda.core import Device, ObjectCode

    check_device(device_index)  # a GPU older than sm_80: one clear error, before NVRTC runs
    arch = device_arch(device_index) + arch_suffix
    build = compile_source(source, (name,), arch, extra_options=extra_options)
    with on_device(device_index):
        Device(device_index).set_current()  # cuda.core keeps per-thread state of the current device
        obj = ObjectCode.from_cubin(build.cubin, name=source)
        kern = obj.get_kernel(build.mangled(name))  # by mangled name: no symbol map needed
    with _lock:
        _kernels[key] = kern
    return kern


def current_stream(device_index: int | None = None):
    """cuda.core Stream for torch's current stream on a device, cached by (device, handle)."""
    if device_index is None:
        device_index = torch.cuda.current_device()
    handle = _raw_stream(device_index)
    s = _streams.get((device_index, handle))
    if s is None:
        from cuda.core import Stream

        s = Stream.from_handle(handle)
        with _lock:
            _streams[(device_index, handle)] = s
    return s


def launch(kernel, grid, block, *args, shmem: int = 0, cluster: int = 1, cooperative: bool = False,
           name: str = "kernel", device_index: int) -> None:
    """Launch ``kernel`` with ``args`` on torch's current stream of ``device_index``.

    ``grid`` and ``block`` are ints or tuples; ``grid`` counts CTAs (with ``cluster`` > 1, a multiple of
    it: 1-D thread-block clusters). ``cooperative`` launches a grid whose CTAs may all wait on each
    other (it must fit the device at once). Python ints travel as 64-bit integers (pointers, sizes);
    pass numpy scalars for 32-bit or float parameters. A launch failure raises KernelLaunchError
    naming the kernel; KERNELKIT_SYNC=1 also synchronises after the launch so that a fault inside
    the kernel is reported against it.

    A plain launch goes through the C shim ``_fastlaunch`` where it was built (one C call, about half
    the host time of cuda.core's launch); clusters, cooperative grids and installs without the shim
    go through cuda.core's launch.
    """
    if _recorded is not None:
        _recorded.append((kernel, grid, block, shmem, cluster, cooperative, args, name, device_index))
    if _fast_launch is not None and cluster == 1 and not cooperative:
        handle = _handles.get(id(kernel)) or _handle(kernel)
        if type(grid) is int and type(block) is int:
            g, b = (grid, 1, 1), (block, 1, 1)
        else:
            g, b = _dims(grid), _dims(block)
        if _get_device() == device_index:
            err = _fast_launch(handle, g[0], g[1], g[2], b[0], b[1], b[2], shmem, _raw_stream(device_index), args)
        else:  # the kernel runs in the current context: make the tensors' device current for the launch
            with on_device(device_index):
                err = _fast_launch(handle, g[0], g[1], g[2], b[0], b[1], b[2], shmem, _raw_stream(device_index), args)
        if err:
            raise KernelLaunchError(f"launching {name} (grid={grid}, block={block}, shmem={shmem}) on "
                                    f"cuda:{device_index} failed: {_error_string(err)}")
    else:
        allow_wide_clusters(kernel, cluster, device_index)
        stream = _streams.get((device_index, _raw_stream(device_index)))
        if stream is None:
            stream = current_stream(device_index)
        # cuda.core takes no struct parameters: tensor maps (128-byte buffers) go through cuLaunchKernelEx
        packed = any(type(a) is bytes for a in args)
        cfg = None if packed else (_configs.get((grid, block, shmem, cluster, cooperative))
                                   or _make_config(grid, block, shmem, cluster, cooperative))

        def go():
            if packed:
                _launch_packed(stream, kernel, grid, block, shmem, cluster, cooperative, args)
            else:
                _cc_launch(stream, cfg, kernel, *args)
        try:
            if _get_device() == device_index:
                go()
            else:
                with on_device(device_index):
                    go()
        except Exception as exc:
            raise KernelLaunchError(f"launching {name} (grid={grid}, block={block}, shmem={shmem}, cluster={cluster}"
                                    f"{', cooperative' if cooperative else ''}) on cuda:{device_index} failed: {exc}"
                                    ) from exc
    if _SYNC:
        try:
            torch.cuda.synchronize(device_index)
        except Exception as exc:
            raise KernelLaunchError(f"kernel {name} on cuda:{device_index} failed: {exc}") from exc


def plain_launcher(kernel, device_index: int, name: str = "kernel"):
    """``run(blocks, threads, shmem, args)``: a 1-D plain launch of ``kernel`` on torch's current stream
    of ``device_index``, with everything but the arguments resolved now. The hot path of the small ops:
    one check of the current device and one C call where the shim is built; ``launch`` otherwise."""
    if _fast_launch is None or _SYNC:
        def run(blocks: int, threads: int, shmem: int, args: tuple) -> None:
            launch(kernel, blocks, threads, *args, shmem=shmem, name=name, device_index=device_index)
        return run
    handle = _handles.get(id(kernel)) or _handle(kernel)
    fast, raw, current, dev = _fast_launch, _raw_stream, _get_device, device_index

    def run(blocks: int, threads: int, shmem: int, args: tuple) -> None:
        if _recorded is not None:
            _recorded.append((kernel, blocks, threads, shmem, 1, False, args, name, dev))
        if current() == dev:
            err = fast(handle, blocks, 1, 1, threads, 1, 1, shmem, raw(dev), args)
        else:  # the kernel runs in the current context: make the tensors' device current for the launch
            with on_device(dev):
                err = fast(handle, blocks, 1, 1, threads, 1, 1, shmem, raw(dev), args)
        if err:
            raise KernelLaunchError(f"launching {name} (grid={blocks}, block={threads}, shmem={shmem}) on "
                                    f"cuda:{dev} failed: {_error_string(err)}")
    return run


_recorded: list | None = None  # while ``recording``: the launches made, as launch's arguments


class recording:
    """Record every launch made inside the block (kernel, grid, block, shmem, cluster, cooperative, args,
    name, device) into the list the block gets; they still run. How an op turns the launch of its checked
    path into a lane (runtime.lanes.record_fixed). Not reentrant."""

    def __enter__(self) -> list:
        global _recorded
        _recorded = []
        return _recorded

    def __exit__(self, *exc):
        global _recorded
        _recorded = None
        return False


_handles: dict[int, int] = {}


def _handle(kernel) -> int:
    """The driver handle of a loaded kernel as an int (the loaded-kernel cache keeps the kernel alive)."""
    h = int(kernel.handle)
    with _lock:
        _handles[id(kernel)] = h
    return h


def _error_string(code: int) -> str:
    from cuda.bindings import driver

    err, text = driver.cuGetErrorString(driver.CUresult(code))
    return f"{driver.CUresult(code).name}: {text.decode() if isinstance(text, bytes) else text}"


def _pack_args(args) -> tuple[bytes, list[int]]:
    """The kernel parameters laid out as the C shim lays them out: each at its natural alignment (ints as
    64-bit, floats as doubles, numpy scalars at their width, 128-byte tensor maps at 64 bytes)."""
    import struct

    data, offsets = bytearray(), []
    for a in args:
        if type(a) is bytes:
            raw, align = a, 64
        elif type(a) is bool:
            raw, align = struct.pack("<?", a), 1
        elif type(a) is int:
            raw, align = struct.pack("<q" if a < 0 else "<Q", a), 8
        elif type(a) is float:
            raw, align = struct.pack("<d", a), 8
        else:  # a numpy scalar
            raw = a.tobytes()
            align = len(raw)
        data.extend(bytes(-len(data) % align))
        offsets.append(len(data))
        data.extend(raw)
    return bytes(data), offsets


def _launch_packed(stream, kernel, grid, block, shmem: int, cluster: int, cooperative: bool, args) -> None:
    """cuLaunchKernelEx of ``kernel`` (``grid`` in CTAs, 1-D clusters of ``cluster``) with ``args`` packed as
    _pack_args packs them, so that tensor maps travel by value."""
    import ctypes

    from cuda.bindings import driver

    data, offsets = _pack_args(args)
    buf = ctypes.create_string_buffer(data, max(1, len(data)))
    ptrs = (ctypes.c_void_p * max(1, len(offsets)))(*[ctypes.addressof(buf) + o for o in offsets])
    c = driver.CUlaunchConfig()
    c.gridDimX, c.gridDimY, c.gridDimZ = _dims(grid)
    c.blockDimX, c.blockDimY, c.blockDimZ = _dims(block)
    c.sharedMemBytes = shmem
    c.hStream = driver.CUstream(int(stream.handle))
    attrs = []
    if cluster > 1:
        a = driver.CUlaunchAttribute()
        a.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster, 1, 1
        attrs.append(a)
    if cooperative:
        a = driver.CUlaunchAttribute()
        a.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        a.value.cooperative = 1
        attrs.append(a)
    c.attrs = attrs
    c.numAttrs = len(attrs)
    (err,) = driver.cuLaunchKernelEx(c, driver.CUfunction(int(kernel.handle)), ctypes.addressof(ptrs), 0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(_error_string(int(err)))


def _dims(v) -> tuple[int, int, int]:
    t = tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),)
    return (*t, *(1,) * (3 - len(t)))


def _make_config(grid, block, shmem: int, cluster: int, cooperative: bool):
    from cuda.core import LaunchConfig

    g = tuple(grid) if isinstance(grid, (tuple, list)) else (int(grid),)
    b = tuple(block) if isinstance(block, (tuple, list)) else (int(block),)
    extra = {}
    if cluster > 1:  # cuda.core counts the grid in clusters when a cluster shape is given
        if g[0] % cluster:
            raise KernelLaunchError(f"a grid of {g[0]} CTAs is not a whole number of clusters of {cluster}")
        g = (g[0] // cluster, *g[1:])
        extra["cluster"] = cluster
    if cooperative:
        extra["cooperative_launch"] = True
    cfg = LaunchConfig(grid=g, block=b, shmem_size=shmem, **extra)
    if len(_configs) < 8192:
        _configs[(grid, block, shmem, cluster, cooperative)] = cfg
    return cfg


_shared_opt_in: dict[tuple, int] = {}


def allow_shared(kernel, nbytes: int, device_index: int) -> None:
    """Let ``kernel`` take ``nbytes`` of dynamic shared memory on a device.

    Opted in for any amount: the default 48 KB limit counts the kernel's static shared memory too, so
    exactly 48 KB of dynamic memory beside a few hundred static bytes fails to launch. Set once per
    kernel, device and size."""
    if nbytes <= 0:
        return
    key = (id(kernel), device_index)
    if _shared_opt_in.get(key, 0) >= nbytes:
        return
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err,) = driver.cuKernelSetAttribute(attr, nbytes, kernel.handle, driver.CUdevice(device_index))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise KernelLaunchError(f"cannot give a kernel {nbytes} bytes of shared memory on cuda:{device_index}: {err}")
    _shared_opt_in[key] = nbytes


PORTABLE_CLUSTER = 8  # the largest cluster every cluster-capable GPU runs without the kernel's opt-in
_wide_clusters: set[tuple] = set()


def allow_wide_clusters(kernel, cluster: int, device_index: int) -> None:
    """Let ``kernel`` launch in clusters past PORTABLE_CLUSTER CTAs (the driver refuses 16 unless the kernel
    opts in). Set once per kernel and device; nothing for smaller clusters."""
    key = (id(kernel), device_index)
    if cluster <= PORTABLE_CLUSTER or key in _wide_clusters:
        return
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    (err,) = driver.cuKernelSetAttribute(attr, 1, kernel.handle, driver.CUdevice(device_index))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise KernelLaunchError(f"cannot launch a kernel in clusters of {cluster} on cuda:{device_index}: {err}")
    _wide_clusters.add(key)


_resident: dict[tuple, int] = {}


def resident_blocks(kernel, block: int, cluster: int, device_index: int, shmem: int = 0) -> int:
    """CTAs of ``kernel`` that fit on the device at once (a whole number of clusters): the grid of a
    persistent or cooperative launch. Asked of the driver's occupancy calculator once per shape."""
    key = (id(kernel), block, cluster, device_index, shmem)
    got = _resident.get(key)
    if got is not None:
        return got
    sms = torch.cuda.get_device_properties(device_index).multi_processor_count
    allow_wide_clusters(kernel, cluster, device_index)
    occ = kernel.occupancy
    with on_device(device_index):
        per_sm = int(occ.max_active_blocks_per_multiprocessor(block, shmem))
        got = max(1, per_sm) * sms
        if cluster > 1:  # clusters must fit inside one GPC: fewer than blocks / cluster may be resident
            from cuda.core import LaunchConfig

            cfg = LaunchConfig(grid=1, cluster=cluster, block=block, shmem_size=shmem)
            clusters = int(occ.max_active_clusters(cfg, stream=current_stream(device_index)))
            got = max(1, clusters) * cluster
    _resident[key] = got
    return got


def clear_loaded() -> None:
    """Forget every loaded kernel and launch configuration (the next call loads them again)."""
    with _lock:
        _kernels.clear()
        _handles.clear()
        _configs.clear()
        _resident.clear()
        _shared_opt_in.clear()
        _wide_clusters.clear()
