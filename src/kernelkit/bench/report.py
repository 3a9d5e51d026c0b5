"""Results that can be trusted later: environment capture, atomic JSON, rich tables.

A timing without the device, driver, compiler and library versions next to it cannot
be compared with another one, so every JSON written here carries ``environment()``.
Writes go to a temporary file in the same directory followed by ``os.replace``: a
crash or Ctrl-C mid-write then leaves the old file intact instead of a truncated one.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import socket
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .._io import atomic_write_bytes

__all__ = [
    "environment",
    "atomic_write_json",
    "write_json",
    "render_table",
    "print_table",
]


def _safe(fn: Callable[[], Any]) -> Any:
    """Environment probes are best effort: a missing library must not lose a result."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - any failure simply means "unknown"
        return None


def _nvrtc_version() -> str | None:
    from ..runtime import nvrtc_version

    return "{}.{}".format(*nvrtc_version())


def _driver_cuda_version() -> str | None:
    from ..runtime import driver_cuda_version

    return driver_cuda_version()


def _driver_version() -> str | None:
    """Kernel-module version (e.g. 580.65.06), read where the driver publishes it on Linux."""
    text = Path("/proc/driver/nvidia/version").read_text()
    for tok in text.split():
        parts = tok.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return tok
    return None


def _package_version(name: str) -> str | None:
    from importlib import metadata

    return metadata.version(name)


def _kernelkit_version() -> str | None:
    v = _safe(lambda: _package_version("kernelkit"))
    if v is None:
        import kernelkit

        v = getattr(kernelkit, "__version__", None)
    return v


def _device_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {"device": None, "cc": None, "sm_count": None, "l2_bytes": None}
    import torch

    if not torch.cuda.is_available():
        return fields
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    fields.update(
        device=props.name,
        cc=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=int(getattr(props, "L2_cache_size", 0)) or None,
    )
    return fields


def environment() -> dict[str, Any]:
    """Where and with what a result was produced; works without a GPU (device fields None)."""
    import torch

    env: dict[str, Any] = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": _safe(socket.gethostname),
    }
    env.update(_safe(_device_fields) or {"device": None, "cc": None, "sm_count": None, "l2_bytes": None})
    env.update(
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        cuda_core=_safe(lambda: _package_version("cuda-core")),
        cuda_bindings=_safe(lambda: _package_version("cuda-bindings")),
        nvrtc=_safe(_nvrtc_version),
        driver=_safe(_driver_version),
        driver_cuda=_safe(_driver_cuda_version),
        python=platform.python_version(),
        kernelkit=_safe(_kernelkit_version),
    )
    return env


def _jsonable(obj: Any) -> Any:
    """Fallback encoder: dataclasses, numpy/torch scalars, paths and dtypes."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "item") and callable(obj.item):
        try:
            return obj.item()
        except Exception:  # noqa: BLE001 - multi-element tensors fall through to str
            pass
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def _finite(obj: Any) -> Any:
    """JSON has no NaN/Infinity; write null so every parser can read the file."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as JSON via temp file + fsync + os.replace (never a half-written file)."""
    text = json.dumps(_finite(json.loads(json.dumps(obj, default=_jsonable))), indent=2, sort_keys=False)
    return atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def write_json(path: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """Atomically write ``payload`` with ``environment()`` under "environment".

    A payload that already carries an "environment" (e.g. re-written results) keeps it.
    """
    doc = dict(payload)
    doc.setdefault("environment", environment())
    return atomic_write_json(path, doc)


Column = tuple[str, str, "str | Callable[[Any], str] | None"]


def _fmt(value: Any, fmt: str | Callable[[Any], str] | None) -> str:
    if value is None:
        return "-"
    if callable(fmt):
        return fmt(value)
    if fmt:
        try:
            return format(value, fmt)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def render_table(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[Column],
    title: str | None = None,
):
    """Build a rich Table; ``fmt`` is a format spec (".2f"), a callable, or None for str().

    Numeric columns are right-aligned so digits line up; missing values show as "-".
    """
    from rich.markup import escape
    from rich.table import Table

    rows = list(rows)
    table = Table(title=title)
    for key, header, _fmt_spec in columns:
        numeric = any(
            isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool) for r in rows
        )
        table.add_column(header, justify="right" if numeric else "left")
    for r in rows:  # cells are text, not rich markup: "kernelkit[cute]" must print as written
        table.add_row(*(escape(_fmt(r.get(key), spec)) for key, _h, spec in columns))
    return table


def print_table(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[Column],
    title: str | None = None,
    console=None,
) -> None:
    """Render and print to ``console`` (a rich Console; a new stdout one by default)."""
    from rich.console import Console

    (console or Console()).print(render_table(rows, columns, title))
