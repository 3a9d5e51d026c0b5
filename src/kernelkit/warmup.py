"""Build every kernel of every ladder for a GPU ahead of time (``kernelkit warmup``).

A call compiles only the kernel it launches (one NVRTC run, a few tenths of a second) and caches it
on disk; ``warmup`` builds all of them at once, in parallel processes (NVRTC holds the GIL), so
that no later call of any op compiles. It lists the same instantiations the ladders list for
``kernelkit inspect`` and the CPU compile tests, less those whose ``min_sm`` the GPU is below.
``run_parallel`` is the process pool; `kernelkit inspect` compiles and analyses through it too.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from .ladder import get_op, ops

T = TypeVar("T")


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
            if v.unavailable():  # its headers are missing here: nothing to build (inspect and ladder say why)
                continue
            for dtype in v.dtypes:
                if dtypes and dtype not in dtypes:
                    continue
                for params in op.param_combinations():
                    for k in v.kernels(dtype, **params):
                        if k.min_sm <= sm:
                            seen[Build(k.source, k.name, arch + k.arch_suffix)] = None
    return list(seen)


def default_jobs(n: int) -> int:
    """Processes for ``n`` builds: one a CPU core this process may use, at most one a build."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(n, cores))


def run_parallel(fn: Callable[[Any], T], items: Sequence[Any], jobs: int | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 weights: Sequence[int] | None = None) -> list[T]:
    """``[fn(item) for item in items]``, in parallel processes where there are several items (NVRTC holds
    the GIL, so threads would not help). ``fn`` must be a module-level function. ``progress(done, total)``
    is called with 0 at the start, then as items finish, counting each as its weight (default 1):
    kernels, for builds of several kernels."""
    jobs = jobs or default_jobs(len(items))
    weights = list(weights) if weights is not None else [1] * len(items)
    total, done = sum(weights), 0
    results: list = [None] * len(items)
    if progress:
        progress(0, total)
    if jobs <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            results[i] = fn(item)
            done += weights[i]
            if progress:
                progress(done, total)
        return results
    with ProcessPoolExecutor(jobs) as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            done += weights[i]
            if progress:
                progress(done, total)
    return results


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
    jobs = jobs or default_jobs(len(builds))
    t0 = time.perf_counter()
    cached = built = 0
    errors: list[str] = []
    for b, from_disk, err in run_parallel(_compile, builds, jobs, progress):
        if err:
            errors.append(f"{b.source} {b.name}: {err}")
        elif from_disk:
            cached += 1
        else:
            built += 1
    return {"arch": arch, "kernels": len(builds), "compiled": built, "already_cached": cached,
            "errors": errors, "seconds": round(time.perf_counter() - t0, 1), "jobs": jobs}
