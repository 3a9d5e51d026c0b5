"""Which GPUs kernelkit runs on: compute capability 8.0 (sm_80, Ampere) and later.

The kernels use instructions that sm_80 brought (max/min propagating NaN, asynchronous copies to
shared memory) and are checked for sm_80 and sm_90 only; the sm_90 paths (thread-block clusters, bulk
copies) are chosen only on sm_90 and later. An older GPU is refused where a kernel is first loaded
for it (``launch.get_kernel``), with an error naming the GPU rather than an NVRTC failure inside the
first op.
"""
from __future__ import annotations

from .errors import UnsupportedDeviceError
from .headers import MIN_SM

MIN_COMPUTE_CAPABILITY = divmod(MIN_SM, 10)  # (8, 0)


def check_supported(major: int, minor: int, name: str) -> None:
    """Raise UnsupportedDeviceError unless compute capability ``major.minor`` is supported.

    ``name`` names the device in the message (e.g. "cuda:0 (Tesla T4)"). A pure function of its
    arguments: tests call it with any capability, no GPU needed.
    """
    if (major, minor) < MIN_COMPUTE_CAPABILITY:
        need = ".".join(map(str, MIN_COMPUTE_CAPABILITY))
        raise UnsupportedDeviceError(
            f"{name} has compute capability {major}.{minor} (sm_{major}{minor}); kernelkit needs compute "
            f"capability {need} or later (sm_80: A100, RTX 30 series, and newer GPUs)"
        )


_checked: set[int] = set()


def check_device(device_index: int) -> None:
    """check_supported for a CUDA device, once per device and process."""
    if device_index in _checked:
        return
    import torch

    major, minor = torch.cuda.get_device_capability(device_index)
    check_supported(major, minor, f"cuda:{device_index} ({torch.cuda.get_device_name(device_index)})")
    _checked.add(device_index)
