"""NVRTC compilation of kernelkit's CUDA C++ through cuda.core, with the disk and memory caches.

A build is one .cu file of ``csrc/`` compiled for one arch with a set of template instantiations
(name expressions). The cache key covers everything that changes the cubin: every csrc source (a
header edit must invalidate its users), the options, the arch, the NVRTC version, the header mode
and the name expressions. Sources named ``*_cute.cu`` compile with the CuTe header set (cute_headers).
"""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from filelock import FileLock

from . import cache, cute_headers
from .errors import CompileError
from .headers import header_options, nvrtc_version

CSRC = Path(__file__).resolve().parent.parent / "csrc"
CXX_STD = "c++17"


@dataclass(frozen=True)
class Build:
    """A compiled cubin and the mangled name of each instantiation it was asked for."""

    source: str
    arch: str
    cubin: bytes
    symbols: dict[str, str]
    log: str
    key: str
    from_disk: bool

    def mangled(self, name_expression: str) -> str:
        return self.symbols[name_expression]


def lineinfo_enabled() -> bool:
    return os.environ.get("KERNELKIT_LINEINFO", "0") not in ("", "0", "false", "no")


@functools.cache
def _csrc_digest() -> str:
    h = hashlib.sha256()
    for f in sorted(CSRC.rglob("*.cu*")):
        h.update(str(f.relative_to(CSRC)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def source_path(source: str) -> Path:
    """A kernelkit source by its path under csrc/ (``"elementwise/gelu.cu"``), or any .cu file by absolute path."""
    p = Path(source)
    return p if p.is_absolute() else CSRC / source


def _options(source: str, arch: str, extra: Sequence[str], lineinfo: bool) -> dict:
    path = source_path(source)
    opts = dict(
        name=path.name,  # NVRTC's log then says "gelu.cu(42): error ..."
        arch=arch,
        std=CXX_STD,
        include_path=list(dict.fromkeys([str(path.parent), str(CSRC / "include")])),
        lineinfo=lineinfo or None,
        ptxas_options=["-v"],  # register/spill report lands in the log, read by `kernelkit inspect`
    )
    hdr = dict(cute_headers.header_options() if cute_headers.is_cute_source(source) else header_options())
    opts["include_path"] = opts["include_path"] + hdr.pop("include_path", [])
    opts.update(hdr)
    for flag in extra:  # the few flags a kernel family may need, spelled as ProgramOptions fields
        k, _, v = flag.partition("=")
        if k == "define_macro":  # repeatable: NVRTC takes a list of them
            opts[k] = [*opts.get(k, ()), v]
        else:
            opts[k] = True if v == "" else v
    return opts


def build_key(source: str, arch: str, names: Sequence[str], options: dict) -> str:
    fields = {"cute": cute_headers.stamp()} if cute_headers.is_cute_source(source) else {}  # header releases
    payload = json.dumps(
        {
            **fields,
            "csrc": _csrc_digest(),
            "source": source,
            "text": hashlib.sha256(source_path(source).read_bytes()).hexdigest(),
            "arch": arch,
            "names": sorted(names),
            "options": {k: options[k] for k in sorted(options) if k != "include_path"},
            "include_path": options.get("include_path"),
            "nvrtc": nvrtc_version(),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


_memory: dict[tuple, Build] = {}
_memory_lock = threading.Lock()
# NVRTC runs of this process: (count, seconds); benchmarks/overhead.py splits a first call's time with it
nvrtc_runs = [0, 0.0]


def compile_source(
    source: str,
    names: Sequence[str],
    arch: str,
    *,
    extra_options: Sequence[str] = (),
    lineinfo: bool | None = None,
) -> Build:
    """Compile ``csrc/<source>`` for ``arch`` (e.g. "sm_90", "sm_90a"), instantiating ``names``.

    Served from memory, then disk; NVRTC runs only on a miss. Raises CompileError with the log.
    """
    lineinfo = lineinfo_enabled() if lineinfo is None else lineinfo
    # a user's file (absolute path) may be edited while the process runs: its mtime joins the key
    stamp = source_path(source).stat().st_mtime_ns if Path(source).is_absolute() else 0
    mem_key = (source, stamp, tuple(names), arch, tuple(extra_options), lineinfo)
    hit = _memory.get(mem_key)
    if hit is not None:
        return hit
    options = _options(source, arch, extra_options, lineinfo)
    key = build_key(source, arch, names, options)
    entry = cache.load(key)
    from_disk = entry is not None
    if entry is None:
        cache.lock_path(key).parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(cache.lock_path(key))):
            entry = cache.load(key)  # another process may have built it while we waited
            from_disk = entry is not None
            if entry is None:
                t0 = time.perf_counter()
                entry = _nvrtc(source, names, arch, options)
                nvrtc_runs[0] += 1
                nvrtc_runs[1] += time.perf_counter() - t0
                cache.store(key, entry)
    build = Build(source, arch, entry.cubin, entry.symbols, entry.log, key, from_disk)
    with _memory_lock:
        _memory[mem_key] = build
    return build


def _nvrtc(source: str, names: Sequence[str], arch: str, options: dict) -> cache.CacheEntry:
    from cuda.core import Program, ProgramOptions

    text = source_path(source).read_text()
    log = io.StringIO()
    try:
        program = Program(text, "c++", ProgramOptions(**options))
        obj = program.compile("cubin", name_expressions=tuple(names), logs=log)
    except Exception as exc:  # cuda.core raises NVRTCError with the log in its message
        raise CompileError(source, arch, log.getvalue() or str(exc)) from None
    symbols = {}
    for n in names:  # cuda.core gives the mangled names as bytes
        m = obj.symbol_mapping[n]
        symbols[n] = m.decode() if isinstance(m, bytes) else str(m)
    return cache.CacheEntry(bytes(obj.code), symbols, log.getvalue())


def clear_memory_cache() -> None:
    with _memory_lock:
        _memory.clear()
