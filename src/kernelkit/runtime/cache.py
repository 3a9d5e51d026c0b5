"""The on-disk cubin cache.

One file per build, ``<dir>/<key[:2]>/<key>.kkc``: a magic line, a JSON header (symbol map, log,
cubin digest) and the cubin. Writes go to a temp file in the same directory and are renamed into
place, so a reader sees a whole entry or none. A file lock per key makes concurrent processes
compile once (the second re-checks after taking the lock). An entry that fails its digest or
cannot be parsed is treated as a miss and rewritten: a corrupt cache is never fatal.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .._io import atomic_write_bytes

MAGIC = b"KKCUBIN1\n"


def cache_dir() -> Path:
    """$KERNELKIT_CACHE_DIR, else $XDG_CACHE_HOME/kernelkit, else ~/.cache/kernelkit."""
    if os.environ.get("KERNELKIT_CACHE_DIR"):
        return Path(os.environ["KERNELKIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernelkit"


def kernels_dir() -> Path:
    return cache_dir() / "kernels"


@dataclass(frozen=True)
class CacheEntry:
    cubin: bytes
    symbols: dict[str, str]  # name expression -> mangled name
    log: str


def entry_path(key: str) -> Path:
    return kernels_dir() / key[:2] / f"{key}.kkc"


def lock_path(key: str) -> Path:
    return kernels_dir() / key[:2] / f"{key}.lock"


def load(key: str) -> CacheEntry | None:
    """The entry for ``key``, or None if absent or damaged."""
    try:
        data = entry_path(key).read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(MAGIC):
            return None
        header_end = data.index(b"\n", len(MAGIC))
        header = json.loads(data[len(MAGIC):header_end])
        cubin = data[header_end + 1:]
        if len(cubin) != header["size"] or hashlib.sha256(cubin).hexdigest() != header["sha256"]:
            return None
        return CacheEntry(cubin, dict(header["symbols"]), header.get("log", ""))
    except (ValueError, KeyError, TypeError):
        return None


def store(key: str, entry: CacheEntry) -> Path:
    """Write atomically (temp file + rename); returns the entry's path."""
    header = {
        "size": len(entry.cubin),
        "sha256": hashlib.sha256(entry.cubin).hexdigest(),
        "symbols": entry.symbols,
        "log": entry.log,
    }
    return atomic_write_bytes(entry_path(key), MAGIC + json.dumps(header).encode() + b"\n" + entry.cubin)


def info() -> dict:
    """Where the cache is and what it holds."""
    root = kernels_dir()
    files = list(root.glob("*/*.kkc")) if root.is_dir() else []
    return {
        "path": str(cache_dir()),
        "entries": len(files),
        "bytes": sum(f.stat().st_size for f in files),
    }


def clear() -> int:
    """Remove every cached kernel; returns how many entries were removed."""
    n = info()["entries"]
    shutil.rmtree(kernels_dir(), ignore_errors=True)
    return n
