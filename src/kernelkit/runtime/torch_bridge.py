"""The torch bridge: a small C++ module through which the launch shim's lanes read tensors and allocate
their outputs with ATen calls instead of Python method calls (``torch_bridge.cpp``).

A lane's Python calls (``get_device``, ``is_contiguous``, ``numel``, ``data_ptr``, ``torch.empty_like``)
cost a plain call one to two microseconds of host time; through the bridge they are field reads and
one ``at::empty_like``. The module must be compiled against the torch it runs with, so it is not built
by ``pip install`` (whose isolated build has no torch) but by ``kernelkit warmup`` (or ``build()``), with
the system's C++ compiler, into the kernel cache: ``<cache>/torch-bridge/<torch version>/``. Once there, the
runtime loads it at import. Without it (no compiler, a failed build) every lane works as before, through
Python calls; nothing else changes.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import torch

from .cache import cache_dir

SOURCE = Path(__file__).with_name("torch_bridge.cpp")
MODULE = "kernelkit.runtime._torch_bridge"


class BridgeBuildError(RuntimeError):
    """The C++ compiler is missing or failed; the message holds the command and its output."""


def _tag() -> str:
    """What the built module depends on: torch's version and build, the interpreter's ABI, the source."""
    git = getattr(torch.version, "git_version", "") or ""
    source = hashlib.sha256(SOURCE.read_bytes() + SOURCE.with_name("fastlaunch.h").read_bytes()).hexdigest()
    return f"torch-{torch.__version__}-{git[:10]}-{sys.implementation.cache_tag}-{source[:12]}".replace("+", "_")


def path() -> Path:
    """Where the bridge for this torch and interpreter is (or would be) built."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return cache_dir() / "torch-bridge" / _tag() / f"_torch_bridge{suffix}"


def compiler() -> str | None:
    """The C++ compiler: $CXX, else c++ or g++ on the PATH."""
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def command(out: Path) -> list[str]:
    """The compile-and-link command of the bridge into ``out``."""
    cxx = compiler()
    if cxx is None:
        raise BridgeBuildError("no C++ compiler found (set CXX or install g++): the lanes keep their Python calls")
    torch_dir = Path(torch.__file__).parent
    lib = torch_dir / "lib"
    abi = int(torch.compiled_with_cxx11_abi())
    return [cxx, "-O2", "-shared", "-fPIC", "-std=c++20", "-w", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
            f"-I{sysconfig.get_paths()['include']}", f"-I{torch_dir / 'include'}",
            f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}", f"-I{SOURCE.parent}",
            str(SOURCE), "-o", str(out), f"-L{lib}", "-ltorch_python", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}"]


def build(force: bool = False) -> tuple[Path, float]:
    """Compile the bridge for this torch unless it is there; ``(its path, seconds spent)``.
    Raises BridgeBuildError with the compiler's output on failure."""
    target = path()
    if target.exists() and not force:
        return target, 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        cmd = command(out)
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise BridgeBuildError(f"{' '.join(cmd)}\n{res.stdout}{res.stderr}")
        os.replace(out, target)  # whole or absent for a concurrent reader
    return target, time.perf_counter() - start


def load():
    """The built bridge module for this torch, or None when it is not built or does not load."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    target = path()
    if not target.exists():
        return None
    try:
        spec = importlib.util.spec_from_file_location(MODULE, target)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, OSError):  # built for another torch build, or damaged: the lanes keep Python calls
        return None
    sys.modules[MODULE] = module
    return module
