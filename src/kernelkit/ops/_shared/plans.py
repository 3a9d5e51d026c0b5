"""The one cache of launch plans, and loading a rung's kernels.

A plan is what a call needs beyond its pointers: the loaded kernels and the launch shape, resolved
once per key (op, rung, dtype, device and whatever of the problem changes the choice). Every op keeps
its plans in a dict made by ``plan_cache()``; ``clear_plans()`` empties all of them (with the
runtime's loaded kernels), so a test or a tuner starts from nothing through one call.
"""
from __future__ import annotations

from typing import Iterable

from ...ladder import Kernel
from ...runtime import clear_loaded, get_kernel
from ...runtime.lanes import fixed_key, record_fixed

_caches: list[dict] = []
MAX_PLANS = 4096  # a cache that grows past this (shapes that never repeat) is emptied, not grown


def plan_cache() -> dict:
    """A dict of plans, registered so that ``clear_plans()`` reaches it."""
    cache: dict = {}
    _caches.append(cache)
    return cache


def remember(cache: dict, key, plan):
    """Store ``plan`` under ``key`` and return it; empties the cache first if it is full."""
    if len(cache) >= MAX_PLANS:
        cache.clear()
    cache[key] = plan
    return plan


def clear_plans() -> None:
    """Forget every plan and loaded kernel: the next call of each op resolves and loads again."""
    for cache in _caches:
        cache.clear()
    clear_loaded()


def load(kernels: Iterable[Kernel], dev: int) -> tuple:
    """The loaded cuda kernels of these records on device ``dev``, in order (each its own build)."""
    return tuple(get_kernel(k.source, k.name, device_index=dev, arch_suffix=k.arch_suffix) for k in kernels)


def with_fixed_lane(lanes: dict, x, param, call, out_shape=None):
    """``call()``, a plain call's checked path returning a new output; its one launch, recorded, becomes the
    fixed lane of (x's dtype, device, shape, ``param``) in ``lanes`` (runtime.lanes.record_fixed), which
    later calls replay through ``run_fixed(lanes, x, param)``."""
    out, lane = record_fixed(x, call, out_shape)
    if lane is not None:
        remember(lanes, fixed_key(x, param), lane)
    return out
