"""Building a solution: nvcc (the ``judge`` extra's wheels or a CUDA toolkit) into a shared library.

The solution is compiled as it is, with ``-shared -Xcompiler -fPIC`` and the CUDA runtime linked
statically (nvcc's default), so the library loads in the judge's child process beside torch. Building
needs no GPU: without one the target is ``--arch`` (default sm_90).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..analyze.tools import ToolNotFoundError, find_tool

DEFAULT_ARCH = "sm_90"
COMPILE_TIMEOUT_S = 300


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    library: Optional[Path]  # the shared library, when ok
    log: str  # nvcc's output (the compile errors when not ok)
    command: tuple


def host_compiler() -> Optional[str]:
    """The C++ compiler nvcc will use (nvcc needs one on PATH), or None."""
    for name in (os.environ.get("CXX", ""), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def find_nvcc() -> str:
    """nvcc's path; ToolNotFoundError with the places searched and how to install it."""
    return find_tool("nvcc")


def build(source: Path, arch: str, out_dir: Path) -> BuildResult:
    """Compile ``source`` for ``arch`` (``sm_XY``) into a shared library under ``out_dir`` (named by the
    source's hash and the arch, so a rebuild of the same file is free)."""
    nvcc = find_nvcc()
    if host_compiler() is None:
        raise ToolNotFoundError("nvcc needs a host C++ compiler (g++ or clang++) on PATH; none was found",
                                tool="g++", hint="install g++ (e.g. apt install g++) or set CXX")
    text = Path(source).read_bytes()
    digest = hashlib.sha256(text + arch.encode()).hexdigest()[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / f"solution-{digest}-{arch}.so"
    cmd = (nvcc, "-O3", "-std=c++17", "-lineinfo", "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}",
           *_wheel_library_dirs(nvcc), "-o", str(lib), str(source))
    if lib.exists():
        return BuildResult(True, lib, "(cached build)", cmd)
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return BuildResult(False, None, f"nvcc ran past {COMPILE_TIMEOUT_S} s", cmd)
    log = (res.stdout + res.stderr).strip()
    if res.returncode != 0 or not lib.exists():
        return BuildResult(False, None, log or f"nvcc exited with status {res.returncode}", cmd)
    missing = _missing_solve(lib)
    if missing:
        lib.unlink(missing_ok=True)
        return BuildResult(False, None, missing, cmd)
    return BuildResult(True, lib, log, cmd)


def _wheel_library_dirs(nvcc: str) -> tuple:
    """The pip wheels put the CUDA runtime's static library in <top>/lib, where nvcc's profile does not
    look (it names lib64): pass that folder when it holds the library."""
    lib = Path(nvcc).resolve().parent.parent / "lib"
    return ("-L" + str(lib),) if (lib / "libcudart_static.a").is_file() else ()


def _missing_solve(lib: Path) -> str:
    """'' when the library exports a C symbol ``solve``, else why not (checked without loading it)."""
    nm = shutil.which("nm")
    if nm is None:
        return ""
    res = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True)
    names = {line.split()[-1] for line in res.stdout.splitlines() if line.strip()}
    if "solve" in names:
        return ""
    if any("solve" in n for n in names):
        return 'the library has no C symbol "solve": declare it extern "C" void solve(...) (C++ names are mangled)'
    return 'the library has no function "solve": define extern "C" void solve(...) with the problem\'s signature'
