"""The header set of the CuTe rungs: CUTLASS's CuTe headers, a CCCL they compile with, the CUDA headers.

A kernel source whose file name ends in ``_cute.cu`` includes ``<cute/tensor.hpp>``; NVRTC compiles
it with its own header set, in C++17 with ``-default-device`` (CuTe's functions carry no execution
space). The pieces, each searched in order:

- CUTLASS (``cute/``, ``cutlass/``): the ``nvidia-cutlass`` wheel, ``cutlass_library/source/include``
  (found without importing the package, whose import pulls in cuda-python);
- CCCL (``cuda/std``, reached by CUTLASS as ``<cccl/cuda/std/...>`` under CUDA 13, so the folder above
  it joins the path too): the one beside the CUDA headers, the ``nvidia-cuda-cccl`` wheel in any
  ``nvidia`` package folder, /usr/local/cuda/include/cccl. Only a tested CCCL counts: CUTLASS 4.2's CuTe
  compiles with CCCL 3.0 (CUDA 13.0's, ``nvidia-cuda-cccl==13.0.85``) and not with NVRTC 13.5's bundled
  CCCL (conflicting declarations in cute/container/array.hpp), so a CCCL of another release is passed over;
- the CUDA headers (``cuda_runtime_api.h``, which NVRTC's bundled headers lack): ``headers.include_dirs``.

``pip install "kernelkit[cute]"`` installs the first two. Where a piece is missing, ``missing()`` says
which and what was searched; the CuTe rungs are then unavailable (``unavailable(source)``), and
compiling one raises HeadersNotFoundError with that reason.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from .errors import HeadersNotFoundError

CUTE_SUFFIX = "_cute.cu"
TESTED_CCCL = ((3, 0),)  # (major, minor) releases of CCCL that CUTLASS 4.2's CuTe compiles with under NVRTC
INSTALL_HINT = 'pip install "kernelkit[cute]" (nvidia-cutlass==4.2.0.0, nvidia-cuda-cccl==13.0.85)'


def is_cute_source(source: str) -> bool:
    """Whether a kernel source (a path under csrc/, or absolute) is compiled with the CuTe header set."""
    return Path(source).name.endswith(CUTE_SUFFIX)


@dataclass(frozen=True)
class HeaderSet:
    """The include folders of a CuTe build and the versions that make its cubins differ."""

    cccl: Path  # holds cuda/std
    cutlass: Path  # holds cute/ and cutlass/
    cuda: Path  # holds cuda_runtime_api.h
    cccl_version: tuple[int, int, int]
    cutlass_version: tuple[int, int, int]

    def include_path(self) -> list[str]:
        # CCCL first: a CUDA include folder may hold a cccl/ of another release that <cccl/cuda/std/...> would find
        return list(dict.fromkeys(map(str, (self.cccl, self.cccl.parent, self.cutlass, self.cuda))))


def _define(text: str, name: str) -> Optional[int]:
    m = re.search(rf"^\s*#\s*define\s+{name}\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def cccl_version(d: Path) -> Optional[tuple[int, int, int]]:
    """The CCCL release in folder ``d`` (which holds cuda/std), or None where there is none."""
    try:
        v = _define((d / "cuda/std/__cccl/version.h").read_text(errors="replace"), "CCCL_VERSION")
    except OSError:
        return None
    return None if v is None else (v // 1000000, v // 1000 % 1000, v % 1000)


def cutlass_version(d: Path) -> Optional[tuple[int, int, int]]:
    """The CUTLASS release in folder ``d`` (which holds cute/ and cutlass/), or None where CuTe is missing."""
    if not (d / "cute/tensor.hpp").is_file():
        return None
    try:
        text = (d / "cutlass/version.h").read_text(errors="replace")
    except OSError:
        return None
    parts = [_define(text, f"CUTLASS_{k}") for k in ("MAJOR", "MINOR", "PATCH")]
    return None if None in parts else tuple(parts)


def _cutlass_candidates() -> list[tuple[str, Optional[Path]]]:
    spec = importlib.util.find_spec("cutlass_library")  # the package is found, not imported
    dirs = [Path(loc) / "source/include" for loc in (spec.submodule_search_locations or ())] if spec else []
    return [("the nvidia-cutlass wheel (cutlass_library/source/include)", d) for d in dirs or [None]]


def _cccl_candidates() -> list[tuple[str, Optional[Path]]]:
    from . import headers

    out: list[tuple[str, Optional[Path]]] = []
    try:
        out.append(("beside the CUDA headers", Path(headers.include_dirs()[0]) / "cccl"))
    except HeadersNotFoundError:
        out.append(("beside the CUDA headers", None))
    spec = importlib.util.find_spec("nvidia")  # a namespace package: every site folder's nvidia/
    for root in (spec.submodule_search_locations or ()) if spec else ():
        out.append(("the nvidia-cuda-cccl wheel", Path(root) / "cu13/include/cccl"))
    out.append(("/usr/local/cuda/include/cccl", Path("/usr/local/cuda/include/cccl")))
    return out


def find_header_set(cuda_dirs: Iterable[str], cccl: Iterable[tuple[str, Optional[Path]]],
                    cutlass: Iterable[tuple[str, Optional[Path]]]) -> HeaderSet | str:
    """The first CUTLASS with CuTe, the first CCCL of a tested release and the CUDA headers, or the
    reason (one line: what is missing, what was searched, how to install it) where one is missing."""
    cuda = next(iter(cuda_dirs), None)
    found_cutlass = next(((d, v) for _o, d in cutlass if d is not None and (v := cutlass_version(d))), None)
    seen, found_cccl = [], None
    for origin, d in cccl:
        v = cccl_version(d) if d is not None else None
        if v is not None and v[:2] in TESTED_CCCL:
            found_cccl = (d, v)
            break
        seen.append(f"{origin}: " + (f"CCCL {'.'.join(map(str, v))} at {d}" if v else f"{d or 'nothing found'}"))
    why = []
    if found_cutlass is None:
        why.append("no CUTLASS headers with CuTe (searched " + "; ".join(f"{o}: {d or 'nothing found'}"
                                                                          for o, d in cutlass) + ")")
    if found_cccl is None:
        tested = " or ".join(f"{a}.{b}" for a, b in TESTED_CCCL)
        why.append(f"no CCCL {tested} (searched " + "; ".join(seen) + ")")
    if cuda is None:
        why.append("no CUDA headers (cuda_runtime_api.h)")
    if why:
        return "the CuTe rungs need " + INSTALL_HINT + ": " + "; ".join(why)
    return HeaderSet(found_cccl[0], found_cutlass[0], Path(cuda), found_cccl[1], found_cutlass[1])


@functools.cache
def header_set() -> HeaderSet | str:
    """This machine's CuTe header set, or the reason there is none (searched once a process)."""
    from . import headers

    try:
        cuda = headers.include_dirs()[:1]
    except HeadersNotFoundError:
        cuda = ()
    return find_header_set(cuda, _cccl_candidates(), _cutlass_candidates())


def missing() -> Optional[str]:
    """Why the CuTe rungs cannot be compiled here, or None when they can."""
    found = header_set()
    return found if isinstance(found, str) else None


def unavailable(source: str) -> Optional[str]:
    """Why kernel ``source`` cannot be compiled here (a CuTe source without its headers), or None."""
    return missing() if is_cute_source(source) else None


def header_options() -> dict:
    """ProgramOptions keywords of a CuTe build; HeadersNotFoundError with the reason where headers are missing."""
    found = header_set()
    if isinstance(found, str):
        raise HeadersNotFoundError(found)
    return {"include_path": found.include_path(), "device_as_default_execution_space": True}


def stamp() -> str:
    """The header releases a CuTe build depends on, for the build cache key."""
    found = header_set()
    if isinstance(found, str):
        return "missing"
    return f"cccl {'.'.join(map(str, found.cccl_version))}, cutlass {'.'.join(map(str, found.cutlass_version))}"
