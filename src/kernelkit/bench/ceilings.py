"""Measured device ceilings (copy bandwidth, matmul rates), cached on disk per device.

Kernels are judged against what this device actually achieves, not datasheet peaks:
a plain device-to-device copy is the practical bandwidth roof for memory-bound ops
and cuBLAS (through torch) is the practical compute roof.  Measuring takes seconds,
so results are cached as JSON keyed by device name and CUDA version; a corrupt or
foreign file is ignored and re-measured.  A file lock keeps concurrent processes
from measuring (and disturbing each other's measurement) at the same time.
"""
from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable

import torch
from filelock import FileLock

from .report import atomic_write_json
from .timing import time_cuda

__all__ = ["cache_dir", "cache_path", "copy_bandwidth", "matmul_rate", "device_ceilings",
           "measure_all", "MATMUL_KINDS"]

# 2: the timing's L2 flush is a read of a clean buffer, for working sets up to 8x L2; copies measured
# under schema 1 (a write flush, up to 2x L2) are stale
SCHEMA = 2
MAX_SIZED_ENTRIES = 64
LARGE_BUFFER_BYTES = 1 << 30
MATMUL_N = 8192
MATMUL_KINDS = ("fp16", "bf16", "tf32", "fp32", "int8")
_ALIASES = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "bfloat16": "bf16",
            "tf32": "tf32", "fp32": "fp32", "float32": "fp32", "float": "fp32", "int8": "int8"}
_SECTIONS = ("copy_gbs", "copy_gbs_by_size", "matmul_tflops")
_TORCH_DTYPES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.int8: "int8"}


def cache_dir() -> Path:
    """``$KERNELKIT_CACHE_DIR`` or ``~/.cache/kernelkit`` (read on every call, so tests can redirect it)."""
    env = os.environ.get("KERNELKIT_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kernelkit"


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "unknown"


def _device_info() -> dict[str, Any]:
    """Identity of the current device; the cache key and the header of device_ceilings()."""
    if not torch.cuda.is_available():
        raise RuntimeError("device ceilings need a CUDA device (torch.cuda.is_available() is False)")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"device": props.name, "cc": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count, "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
            "total_memory_bytes": int(props.total_memory), "torch_cuda": torch.version.cuda}


def cache_path(info: dict[str, Any] | None = None) -> Path:
    """``<cache_dir>/ceilings-<sanitized device name>-<torch.version.cuda>.json``."""
    info = info or _device_info()
    return cache_dir() / f"ceilings-{_sanitize(str(info['device']))}-{info.get('torch_cuda')}.json"


def _load(path: Path, info: dict[str, Any]) -> dict[str, Any]:
    """The cached document, or a fresh one if missing, unreadable or for another device."""
    fresh = {"schema": SCHEMA, "device": info, **{name: {} for name in _SECTIONS}}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return fresh
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != SCHEMA
        or not all(isinstance(doc.get(name), dict) for name in _SECTIONS)
        or not isinstance(doc.get("device"), dict)
        or doc["device"].get("device") != info.get("device")
    ):
        return fresh
    return doc


def _cached(section: str, key: str, measure: Callable[[], float], *, max_entries: int | None = None) -> float:
    """Return ``doc[section][key]``, measuring and persisting it first if absent."""
    info = _device_info()
    path = cache_path(info)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        doc = _load(path, info)
        value = doc[section].get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
        value = float(measure())
        entries = doc[section]
        entries.pop(key, None)
        entries[key] = value  # insertion order = age, so the oldest entries go first
        if max_entries is not None:
            while len(entries) > max_entries:
                entries.pop(next(iter(entries)))
        doc["device"] = info
        atomic_write_json(path, doc)
        return value


# ---------------------------------------------------------------- copy bandwidth


def _large_buffer_bytes() -> int:
    """1 GiB per buffer, or less so that src + dst fit in 80% of free memory."""
    free, _total = torch.cuda.mem_get_info()
    return int(max(1 << 20, min(LARGE_BUFFER_BYTES, int(free * 0.8) // 2)))


# Where dst sits relative to src changes a copy's rate: on an H100 the same 2^29-byte copy measured
# 2545 GB/s in one process and 2964 in another (docs/design/timing.md), the kind of loss DRAM channel conflicts give when two streams sit a large power of
# two apart. A ceiling is the best the device does, so the copy is timed in two placements (separate
# allocations, and one buffer with dst an odd number of 4 KiB pages past src) and the faster counts.
_PLACEMENT_GAP = (1 << 20) + 3 * 4096


def _measure_copy(nbytes: int | None) -> float:
    """GB/s of a device copy counting read + write (``nbytes`` total moved): the best of two placements."""
    per_buf = _large_buffer_bytes() if nbytes is None else max(1, int(nbytes) // 2)
    best = 0.0
    for placement in ("separate", "gapped"):
        if placement == "separate":
            src = torch.randint(0, 256, (per_buf,), dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
        else:
            buf = torch.randint(0, 256, (2 * per_buf + _PLACEMENT_GAP,), dtype=torch.uint8, device="cuda")
            src, dst = buf[:per_buf], buf[per_buf + _PLACEMENT_GAP:]
        timing = time_cuda(lambda: dst.copy_(src), working_set_bytes=2 * per_buf)
        best = max(best, 2 * per_buf / timing.seconds / 1e9)
        del src, dst
        if placement == "gapped":
            del buf
    return best


def copy_bandwidth(nbytes: int | None = None) -> float:
    """Achieved device copy bandwidth in GB/s (read + write).

    ``None`` measures large buffers (the asymptotic roof).  Given the bytes an op moves,
    a copy moving that many bytes is measured with the same cold-L2 rule as
    :func:`time_cuda`, so small ops are compared with a copy that pays the same launch
    and tail costs.  Cached per exact size (the most recent 64 sizes are kept).
    """
    if nbytes is None:
        return _cached("copy_gbs", "large", lambda: _measure_copy(None))
    if int(nbytes) < 1:
        raise ValueError("nbytes must be >= 1")
    return _cached("copy_gbs_by_size", str(int(nbytes)), lambda: _measure_copy(int(nbytes)),
                   max_entries=MAX_SIZED_ENTRIES)


# ---------------------------------------------------------------- matmul rates


def _kind(dtype: torch.dtype | str) -> str:
    """Normalise a dtype or name; torch.float32 means strict fp32, tf32 only by name."""
    if isinstance(dtype, torch.dtype):
        if dtype not in _TORCH_DTYPES:
            raise ValueError(f"no matmul ceiling for {dtype}; use one of {MATMUL_KINDS}")
        return _TORCH_DTYPES[dtype]
    kind = _ALIASES.get(str(dtype).lower().removeprefix("torch."))
    if kind is None:
        raise ValueError(f"unknown matmul kind {dtype!r}; use one of {MATMUL_KINDS}")
    return kind


def _matmul_n(elem_in: int, elem_out: int) -> int:
    """8192, halved while A + B + C would not fit in 80% of free memory."""
    free, _total = torch.cuda.mem_get_info()
    n = MATMUL_N
    while n > 1024 and (2 * elem_in + elem_out) * n * n > 0.8 * free:
        n //= 2
    return n


@contextmanager
def _fp32_matmul_mode(tf32: bool):
    """Allow or forbid TF32 for fp32 matmuls, restoring the caller's setting afterwards.

    torch >= 2.9 has ``matmul.fp32_precision``; reading the legacy ``allow_tf32`` there
    raises once a caller has used the new API, so the new one is used where it exists.
    """
    matmul = torch.backends.cuda.matmul
    try:
        saved, attr, value = matmul.fp32_precision, "fp32_precision", ("tf32" if tf32 else "ieee")
    except AttributeError:
        saved, attr, value = matmul.allow_tf32, "allow_tf32", tf32
    setattr(matmul, attr, value)
    try:
        yield
    finally:
        setattr(matmul, attr, saved)


def _measure_matmul(kind: str) -> float:
    """TFLOP/s (TOPS for int8) of an n^3 product through torch, on random inputs.

    Random data matters: zeros let the tensor cores' power management clock higher
    than real data allows, which would inflate the roof.
    """
    gen = torch.Generator(device="cuda").manual_seed(0)
    if kind == "int8":
        n = _matmul_n(1, 4)
        a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda", generator=gen)
        # column-major B (a transposed view): the row x column layout cuBLASLt's int8 GEMM prefers
        b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda", generator=gen).t()
        fn: Callable[[], object] = lambda: torch._int_mm(a, b)
        return 2 * n**3 / time_cuda(fn, working_set_bytes=6 * n * n).seconds / 1e12
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(kind, torch.float32)
    size = torch.finfo(dtype).bits // 8
    n = _matmul_n(size, size)
    a = torch.randn(n, n, dtype=dtype, device="cuda", generator=gen)
    b = torch.randn(n, n, dtype=dtype, device="cuda", generator=gen)
    out = torch.empty(n, n, dtype=dtype, device="cuda")
    with _fp32_matmul_mode(kind == "tf32") if dtype == torch.float32 else nullcontext():
        timing = time_cuda(lambda: torch.matmul(a, b, out=out), working_set_bytes=3 * size * n * n)
    return 2 * n**3 / timing.seconds / 1e12


def matmul_rate(dtype: torch.dtype | str) -> float:
    """Measured dense matmul rate in TFLOP/s for fp16, bf16, tf32, fp32 or int8 (TOPS)."""
    kind = _kind(dtype)
    return _cached("matmul_tflops", kind, lambda: _measure_matmul(kind))


# ---------------------------------------------------------------- all ceilings


def device_ceilings() -> dict[str, Any]:
    """Device identity plus large-copy GB/s and every matmul rate, measured lazily.

    A kind the device or torch build cannot run (e.g. int8 on an old GPU) is reported
    as None and not cached, so it is retried after an upgrade.
    """
    result: dict[str, Any] = dict(_device_info())
    result["copy_gbs"] = copy_bandwidth(None)
    rates: dict[str, float | None] = {}
    for kind in MATMUL_KINDS:
        try:
            rates[kind] = matmul_rate(kind)
        except (RuntimeError, NotImplementedError):
            rates[kind] = None
    result["matmul_tflops"] = rates
    result["cache_file"] = str(cache_path(result))
    return result


def measure_all(force: bool = False) -> dict[str, Any]:
    """Measure (or load) every ceiling; ``force`` discards the device's cache file first."""
    if force:
        path = cache_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
    return device_ceilings()
