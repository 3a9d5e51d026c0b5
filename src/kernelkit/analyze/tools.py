"""Locate the CUDA binary utilities (``cuobjdump``, ``nvdisasm``) that the
static analysis shells out to.

Why a dedicated finder: kernelkit must work on machines with no CUDA toolkit
installed at all (CI, laptops), where the only copies of these tools come from
the ``nvidia-cuda-cuobjdump`` / ``nvidia-cuda-nvdisasm`` pip wheels.  Those
wheels put the binaries under ``site-packages/nvidia/...`` which is not on
``PATH``, so a plain ``shutil.which`` is not enough.  When nothing is found we
raise an error that lists every place we looked, so the fix is obvious.
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import sys
from pathlib import Path

__all__ = ["ToolNotFoundError", "find_tool"]

# Layouts used by NVIDIA's pip wheels: the CUDA 13 wheels share one
# ``nvidia/cu13/bin`` folder; the CUDA 12 era wheels used per-package folders.
_WHEEL_SUBDIRS: tuple[str, ...] = (
    "nvidia/cu13/bin",
    "nvidia/cu12/bin",
    "nvidia/cuda_cuobjdump/bin",
    "nvidia/cuda_nvdisasm/bin",
)

_PIP_HINT = "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"
_WHEEL = {"cuobjdump": "nvidia-cuda-cuobjdump", "nvdisasm": "nvidia-cuda-nvdisasm"}


class ToolNotFoundError(RuntimeError):
    """A CUDA binary utility could not be found anywhere we know to look.

    ``tool`` names it, ``hint`` says how to install it (one line), ``searched`` lists where we looked.
    """

    def __init__(self, message: str, tool: str = "", hint: str = "", searched: tuple[str, ...] = ()):
        super().__init__(message)
        self.tool, self.hint, self.searched = tool, hint, tuple(searched)

    def __reduce__(self):  # keeps the fields across process boundaries (parallel analysis)
        return type(self), (str(self), self.tool, self.hint, self.searched)


def _executable(path: Path) -> str | None:
    """Return ``path`` (or ``path.exe`` on Windows) if it is a runnable file."""
    for candidate in (path, path.with_name(path.name + ".exe")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _site_roots() -> list[str]:
    """Every directory a pip wheel might have been installed into."""
    roots: list[str] = []
    try:
        roots.extend(site.getsitepackages())
    except AttributeError:  # some virtualenv flavours lack it
        pass
    try:
        roots.append(site.getusersitepackages())
    except AttributeError:
        pass
    roots.extend(p for p in sys.path if p)
    seen: set[str] = set()
    unique = []
    for r in roots:
        if r not in seen:
            seen.add(r)
            unique.append(r)
    return unique


def _from_pathfinder(name: str, searched: list[str]) -> str | None:
    """Ask ``cuda.pathfinder`` first: it knows conda and toolkit layouts too.

    ``find_nvidia_binary_utility`` only exists from cuda-pathfinder 1.8 on and
    rejects names outside its supported set, so every failure is tolerated.
    """
    searched.append("cuda.pathfinder.find_nvidia_binary_utility")
    try:
        import cuda.pathfinder as pathfinder  # noqa: PLC0415 - optional dep

        finder = getattr(pathfinder, "find_nvidia_binary_utility", None)
        if finder is None:
            searched[-1] += " (not available in this cuda-pathfinder)"
            return None
        found = finder(name)
    except Exception:  # noqa: BLE001 - any failure just means "not here"
        return None
    return str(found) if found else None


@functools.cache
def find_tool(name: str) -> str:
    """Return the absolute path of the CUDA binary utility ``name``.

    Search order: cuda.pathfinder, the pip wheel folders under every
    site-packages / ``sys.path`` entry, ``$CUDA_HOME/bin`` (and
    ``$CUDA_PATH/bin``), ``/usr/local/cuda/bin``, then ``PATH``.  Successful
    lookups are cached for the life of the process (failures are not, so
    installing the wheel and retrying works).

    Raises:
        ToolNotFoundError: listing every location searched.
    """
    searched: list[str] = []
    found = _from_pathfinder(name, searched)
    if found:
        return found

    for root in _site_roots():
        for sub in _WHEEL_SUBDIRS:
            folder = Path(root) / sub
            searched.append(str(folder))
            hit = _executable(folder / name)
            if hit:
                return hit

    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home:
            folder = Path(home) / "bin"
            searched.append(f"${var}/bin = {folder}")
            hit = _executable(folder / name)
            if hit:
                return hit
        else:
            searched.append(f"${var}/bin (${var} not set)")

    folder = Path("/usr/local/cuda/bin")
    searched.append(str(folder))
    hit = _executable(folder / name)
    if hit:
        return hit

    searched.append("PATH")
    hit = shutil.which(name)
    if hit:
        return hit

    places = "\n  ".join(searched)
    install = f"pip install {_WHEEL[name]}" if name in _WHEEL else _PIP_HINT
    raise ToolNotFoundError(
        f"could not find the CUDA utility {name!r}. Searched:\n  {places}\n"
        f"Install it with: {install}",
        tool=name, hint=f"{install}, or put a CUDA toolkit's bin on PATH", searched=tuple(searched),
    )
