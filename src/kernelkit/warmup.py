"""Build every kernel of every ladder for a GPU ahead of time (``kernelkit warmup``).

A call compiles only the kernel it launches (one NVRTC run, a few tenths of a second) and caches it
on disk; ``warmup`` builds all of them at once, in parallel processes (NVRTC holds the GIL), so
that no later call of any op compiles. It lists the same instantiations the ladders list for
``kernelkit inspect`` and the CPU compile tests, less those whose ``min_sm`` the GPU is below.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from .ladder import get_op, ops


@dataclass(frozen=True)
class Build:
    source: str
    name: str
    arch: str  # e.g. "sm_90", or "sm_90a" for arch-specific kernels


def planned_builds(arch: str, op_names=None, dtypes=None) -> list[Build]:
    """Every distinct kernel the ladders of ``op_names`` (default: all) can launch on ``arch`` ("sm_90")."""
    sm = int(arch[3:])
    seen: dict[Build, None] = {}
    for name in op_names or ops():
        op = get_op(name)
        for v in op.variants:
            for dtype in v.dtypes:
                if dtypes and dtype not in dtypes:
                    continue
                for params in op.param_combinations():
                    for k in v.kernels(dtype, **params):
                        if k.min_sm <= sm:
                            seen[Build(k.source, k.name, arch + k.arch_suffix)] = None
    return list(seen)


def _compile(build: Build) -> tuple[Build, bool, str]:
    from .runtime import CompileError, compile_source

    try:
        b = compile_source(build.source, (build.name,), build.arch)
        return build, b.from_disk, ""
    except CompileError as exc:
        return build, False, str(exc)


def warmup(arch: str, op_names=None, dtypes=None, jobs: int | None = None, progress=None) -> dict:
    """Compile (or find on disk) every kernel of the ladders for ``arch``; returns counts and seconds.

    ``progress(done, total)`` is called as builds finish. Compile errors are collected, not raised.
    """
    builds = planned_builds(arch, op_names, dtypes)
    jobs = jobs or max(1, min(len(builds), os.cpu_count() or 1))
    t0 = time.perf_counter()
    cached = built = 0
    errors: list[str] = []
    with ProcessPoolExecutor(jobs) as pool:
        for i, (b, from_disk, err) in enumerate(pool.map(_compile, builds, chunksize=4), 1):
            if err:
                errors.append(f"{b.source} {b.name}: {err}")
            elif from_disk:
                cached += 1
            else:
                built += 1
            if progress:
                progress(i, len(builds))
    return {"arch": arch, "kernels": len(builds), "compiled": built, "already_cached": cached,
            "errors": errors, "seconds": round(time.perf_counter() - t0, 1), "jobs": jobs}
