"""Locate the CUDA binary utilities (``cuobjdump``, ``nvdisasm``, ``ncu``, the judge's ``nvcc``) kernelkit shells out to.

kernelkit must work on machines with no CUDA toolkit at all (CI, laptops), where the only copies of
cuobjdump and nvdisasm come from the ``nvidia-cuda-cuobjdump`` / ``nvidia-cuda-nvdisasm`` pip wheels,
which are not on ``PATH``. cuda.pathfinder knows those wheel layouts, conda, ``$CUDA_PATH`` /
``$CUDA_HOME`` and the toolkit of the loaded libcudart; ``/usr/local/cuda/bin`` and ``PATH``, which it
does not search, come after it. When nothing is found the error lists every place searched and how to
install the tool.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

__all__ = ["ToolNotFoundError", "find_tool"]

_PIP_HINT = "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"
_WHEEL = {"cuobjdump": "nvidia-cuda-cuobjdump", "nvdisasm": "nvidia-cuda-nvdisasm", "nvcc": "nvidia-cuda-nvcc"}
_NCU_HINT = "install Nsight Compute (it comes with the CUDA toolkit) and put ncu on PATH or set CUDA_HOME"


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


def _from_pathfinder(name: str) -> str | None:
    """cuda.pathfinder's answer; None where it finds nothing or does not know the name."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility(name)
    except Exception:  # noqa: BLE001 - a name outside its set, or an older pathfinder: "not here"
        return None
    return str(found) if found else None


@functools.cache
def find_tool(name: str) -> str:
    """Return the absolute path of the CUDA binary utility ``name``.

    Search order: cuda.pathfinder (pip wheels, conda, ``$CUDA_PATH`` / ``$CUDA_HOME``, the toolkit of
    the loaded libcudart), ``/usr/local/cuda/bin``, then ``PATH``. Successful lookups are cached for
    the life of the process (failures are not, so installing the tool and retrying works).

    Raises:
        ToolNotFoundError: listing every location searched and how to install the tool.
    """
    searched = ["cuda.pathfinder.find_nvidia_binary_utility (pip wheels, conda, $CUDA_PATH, $CUDA_HOME, "
                "the loaded libcudart's toolkit)"]
    found = _from_pathfinder(name)
    if found:
        return found

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
    if name == "ncu":
        hint = _NCU_HINT
    else:
        install = f"pip install {_WHEEL[name]}" if name in _WHEEL else _PIP_HINT
        hint = f"{install}, or put a CUDA toolkit's bin on PATH"
    raise ToolNotFoundError(f"could not find the CUDA utility {name!r}. Searched:\n  {places}\n{hint}",
                            tool=name, hint=hint, searched=tuple(searched))
