"""Which CUDA headers NVRTC compiles against.

NVRTC >= 13.3 ships the CUDA headers inside itself (``use_bundled_headers``), so a machine with only
the pip wheels can compile. Older NVRTC needs include directories: cuda.pathfinder's answer for the
CUDA runtime headers (pip wheels, conda, $CUDA_PATH / $CUDA_HOME, the toolkit of the loaded libcudart),
then /usr/local/cuda, which pathfinder does not search; each with its ``cccl`` sub-directory (libcu++
and friends).
"""
from __future__ import annotations

import functools
from pathlib import Path

from .errors import HeadersNotFoundError, KernelkitError

BUNDLED_HEADERS_SINCE = (13, 3)
_PROBE_HEADER = "cuda_fp16.h"  # every kernelkit source needs it; cuda_runtime.h alone is not enough


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if int(err) != 0:
        raise HeadersNotFoundError(f"nvrtcVersion failed: {err}")
    return int(major), int(minor)


def driver_cuda_version() -> str | None:
    """The CUDA version the installed driver supports (e.g. "13.0"), or None without a driver."""
    from cuda.bindings import driver

    err, ver = driver.cuDriverGetVersion()
    if int(err) != 0:
        return None
    return f"{ver // 1000}.{(ver % 1000) // 10}"


def _candidate_include_dirs() -> list[tuple[str, Path | None]]:
    """(where it came from, directory or None) in search order; a directory may not exist."""
    try:
        import cuda.pathfinder as pathfinder

        d = pathfinder.find_nvidia_header_directory("cudart")
    except Exception:  # pathfinder missing or broken: the fixed location below still counts
        d = None
    return [("cuda.pathfinder('cudart') (wheels, conda, $CUDA_PATH, $CUDA_HOME, the loaded libcudart's toolkit)",
             Path(d) if d else None),
            ("/usr/local/cuda/include", Path("/usr/local/cuda/include"))]


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """The first candidate directory holding cuda_fp16.h, plus its cccl directory when present."""
    searched = []
    for origin, d in _candidate_include_dirs():
        searched.append(f"{origin}: {d or 'nothing found'}")
        if d is not None and (d / _PROBE_HEADER).is_file():
            dirs = [str(d)]
            if (d / "cccl").is_dir():
                dirs.append(str(d / "cccl"))
            return tuple(dirs)
    raise HeadersNotFoundError(
        f"NVRTC {'.'.join(map(str, nvrtc_version()))} has no bundled headers (they come with NVRTC "
        f">= {'.'.join(map(str, BUNDLED_HEADERS_SINCE))}) and no CUDA include directory holding "
        f"{_PROBE_HEADER} was found. Searched:\n  " + "\n  ".join(searched)
        + "\nSet CUDA_HOME to a CUDA toolkit, or `pip install -U nvidia-cuda-nvrtc` for bundled headers."
    )


def header_options() -> dict:
    """Keyword arguments for cuda.core's ProgramOptions that make the CUDA headers visible."""
    if nvrtc_version() >= BUNDLED_HEADERS_SINCE:
        return {"use_bundled_headers": True}
    return {"include_path": list(include_dirs())}


MIN_SM = 80  # kernelkit's kernels use sm_80 features (cp.async, bfloat16 arithmetic, 164 KB shared memory)


@functools.cache
def nvrtc_archs() -> tuple[int, ...]:
    """The SM versions this NVRTC compiles for (e.g. (75, 80, 86, ..., 120)), from nvrtcGetSupportedArchs."""
    from cuda.bindings import nvrtc

    err, archs = nvrtc.nvrtcGetSupportedArchs()
    if int(err) != 0:
        raise KernelkitError(f"nvrtcGetSupportedArchs failed: {err}")
    return tuple(int(a) for a in archs)


def supported_archs() -> tuple[str, ...]:
    """The archs kernelkit can build for here: NVRTC's, from sm_80 (``MIN_SM``) on, as "sm_XX"."""
    return tuple(f"sm_{a}" for a in nvrtc_archs() if a >= MIN_SM)
