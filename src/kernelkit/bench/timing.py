"""GPU timing with CUDA events, warm-up, optional cold L2 and an adaptive rep count.

Why it is built this way:

* One ``torch.cuda.Event`` pair per repetition, recorded on the current stream
  directly around ``fn``: host-side timers would also count launch overhead and
  Python noise, and a single pair around the whole loop would hide the spread.
* Warm-up calls run first so JIT compilation, module loading and allocator growth
  are never timed.
* Small working sets would otherwise be served from L2 (50 MB on an H100) on every
  rep after the first, which flatters a kernel compared with how it runs inside a
  network.  Reading a buffer of twice the L2 size before each rep (outside the timed
  region) evicts it and leaves L2 clean.  Not writing one: a write flush leaves L2
  full of dirty lines whose write-back then lands inside the next timed call (~50 MB
  of DRAM writes the kernel never made).  Measured on an H100
  (docs/design/timing.md): GELU fp16 2^24 elements, ours / torch, 2362 / 2359
  GB/s after a write flush, 2979 / 2834 after a read flush.
* The median is reported: it is robust to the occasional preempted or clock-ramping
  rep, while min/p20/p80 show the spread.
* The device is synchronised once at the end, so the host never stalls between reps
  and back-to-back launches keep the GPU busy.
* Before each start event the GPU spins for ``HOST_COVER_CYCLES`` (``torch.cuda._sleep``,
  untimed), so that the host has issued the timed call before the GPU reaches its start
  event: otherwise a call whose host path outlasts the flush before it (a kernelkit norm at
  4096 x 4096: 24.7 us of host on one lent H100 against a ~23 us kernel) is timed with the
  GPU waiting for it. Measured there (docs/design/timing.md): the same kernel
  launched bare 95.1% of a same-bytes copy, through kernelkit.layer_norm 93.6%. Host cost
  per call is a separate figure (benchmarks/overhead.py).
"""
from __future__ import annotations

import inspect
import math
import random
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

__all__ = ["Timing", "summarize_times", "should_flush_l2", "time_cuda", "time_interleaved", "l2_cache_bytes"]

MIN_REPS = 10
HOST_COVER_CYCLES = 100_000  # ~50-70 us of GPU clock: more than any op's host path measured so far


@dataclass(frozen=True)
class Timing:
    """Summary statistics (milliseconds) of one timed function."""

    median_ms: float
    min_ms: float
    p20_ms: float
    p80_ms: float
    reps: int

    @property
    def median_us(self) -> float:
        return self.median_ms * 1e3

    @property
    def min_us(self) -> float:
        return self.min_ms * 1e3

    @property
    def p20_us(self) -> float:
        return self.p20_ms * 1e3

    @property
    def p80_us(self) -> float:
        return self.p80_ms * 1e3

    @property
    def seconds(self) -> float:
        """Median in seconds, the unit rates (GB/s, FLOP/s) are computed from."""
        return self.median_ms * 1e-3


def _percentile(sorted_vals: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    pos = (len(sorted_vals) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    frac = pos - lo
    return sorted_vals[lo] * (1.0 - frac) + sorted_vals[hi] * frac


def summarize_times(times_ms: Sequence[float]) -> Timing:
    """Pure reduction of per-rep times to a :class:`Timing`; kept free of CUDA so it is testable."""
    vals = sorted(float(t) for t in times_ms)
    if not vals:
        raise ValueError("summarize_times needs at least one time")
    if any(math.isnan(v) or v < 0 for v in vals):
        raise ValueError("times must be non-negative numbers")
    return Timing(
        median_ms=_percentile(vals, 50.0),
        min_ms=vals[0],
        p20_ms=_percentile(vals, 20.0),
        p80_ms=_percentile(vals, 80.0),
        reps=len(vals),
    )


def should_flush_l2(flush_l2: bool | None, working_set_bytes: int | None, l2_bytes: int) -> bool:
    """The cold-L2 rule shared by :func:`time_cuda` and the copy ceiling.

    An explicit ``flush_l2`` wins.  Otherwise flush unless the working set is over 8x
    the L2 size: up to there what the previous repetition left in L2 (its output, the
    end of its input; up to a fifth of a 2-4x-L2 working set, with the output block
    reused by the allocator) measurably moves a memory-bound kernel, while past it the
    flush costs only wall time.  An unknown
    working set is flushed too.
    """
    if flush_l2 is not None:
        return bool(flush_l2)
    if working_set_bytes is None:
        return True
    return working_set_bytes <= 8 * max(int(l2_bytes), 0)


def plan_reps(reps: int, per_rep_ms: float | None, max_seconds: float) -> int:
    """Cap ``reps`` so the timed loop takes about ``max_seconds``, never below MIN_REPS.

    A caller asking for fewer than MIN_REPS gets what it asked for.
    """
    if reps <= MIN_REPS or per_rep_ms is None or per_rep_ms <= 0:
        return max(int(reps), 1)
    budget = int(max_seconds * 1e3 / per_rep_ms)
    return max(MIN_REPS, min(int(reps), budget))


def _wants_index(fn: Callable) -> bool:
    """True when ``fn`` has exactly one required positional parameter (the rep index)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have no signature: call them bare
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [
        p for p in sig.parameters.values()
        if p.kind in kinds and p.default is inspect.Parameter.empty
    ]
    if len(required) > 1:
        raise TypeError(f"fn must take zero or one positional argument, got {sig}")
    return len(required) == 1


_L2_FLUSH: dict[int, Callable[[], None]] = {}


def l2_cache_bytes(device: int | None = None) -> int:
    """L2 size in bytes as reported by the driver (0 if unknown)."""
    dev = torch.cuda.current_device() if device is None else device
    return int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0)


def _l2_flush(device: int) -> Callable[[], None]:
    """The L2 flush of a device: a read of a buffer of >= 2x L2 (at least 64 MiB if L2 is unreported),
    written once at allocation and only read after, so that L2 is left holding clean lines."""
    flush = _L2_FLUSH.get(device)
    if flush is None:
        nbytes = max(2 * l2_cache_bytes(device), 64 << 20)
        buf = torch.ones(nbytes // 4, dtype=torch.int32, device=torch.device("cuda", device))
        flush = _L2_FLUSH[device] = lambda: buf.max()
    return flush


def time_cuda(
    fn: Callable[[int], None] | Callable[[], None],
    *,
    warmup: int = 10,
    reps: int = 100,
    flush_l2: bool | None = None,
    working_set_bytes: int | None = None,
    max_seconds: float = 2.0,
    cover_host: bool = True,
) -> Timing:
    """Time ``fn`` on the current CUDA stream and return median/min/p20/p80 in ms.

    ``fn`` may take one positional argument, the repetition index, so callers can
    rotate through several input buffers.  See the module docstring for the method.
    """
    return time_interleaved([fn], warmup=warmup, reps=reps, flush_l2=flush_l2,
                            working_set_bytes=working_set_bytes, max_seconds=max_seconds,
                            cover_host=cover_host)[0]


def time_interleaved(
    fns: Sequence[Callable[[int], None] | Callable[[], None]],
    *,
    warmup: int = 10,
    reps: int = 100,
    flush_l2: bool | None = None,
    working_set_bytes: int | None = None,
    max_seconds: float = 2.0,
    cover_host: bool = True,
    shuffle: bool = False,
) -> list[Timing]:
    """Time several functions under the same conditions: each repetition runs them in turn.

    Why: two kernels timed one after the other can differ by a few percent for reasons that are
    neither kernel's (clock drift, and above all where the caching allocator places the output:
    on an H100 a 32 MB output landing elsewhere moved a memory-bound kernel by 2.5%). Run in turn,
    each call gets the block the previous call freed, so the functions compared see the same
    placement and the same moment. ``max_seconds`` bounds the whole loop.

    ``shuffle`` draws each round's order anew (a fixed seed, so every run the same orders), so that no
    function keeps one place in the round. Measured on an H100
    (docs/design/timing.md): identical calls timed in a fixed order differed by 0.03-0.11 us, shuffled the
    same, so the place alone biases nothing; comparisons shuffle anyway, as differing functions beside each
    other might.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("time_cuda needs a CUDA device (torch.cuda.is_available() is False)")
    if reps < 1:
        raise ValueError("reps must be >= 1")
    if not fns:
        raise ValueError("time_interleaved needs at least one function")
    calls = [fn if _wants_index(fn) else (lambda _i, fn=fn: fn()) for fn in fns]
    device = torch.cuda.current_device()
    stream = torch.cuda.current_stream(device)
    flush = should_flush_l2(flush_l2, working_set_bytes, l2_cache_bytes(device))
    l2_flush = _l2_flush(device) if flush else None

    # Warm-up.  The first calls may compile, so the estimate uses only the later ones
    # (wall clock: it includes launch overhead and the flush, like the real loop).
    per_round_ms: float | None = None
    if warmup > 0:
        for call in calls:
            call(0)
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for i in range(1, warmup):
            for call in calls:
                if l2_flush is not None:
                    l2_flush()
                call(i)
        torch.cuda.synchronize(device)
        if warmup > 1:
            per_round_ms = (time.perf_counter() - t0) * 1e3 / (warmup - 1)
    n = plan_reps(reps, per_round_ms, max_seconds)

    starts = [[torch.cuda.Event(enable_timing=True) for _ in range(n)] for _ in calls]
    ends = [[torch.cuda.Event(enable_timing=True) for _ in range(n)] for _ in calls]
    rng = random.Random(0)  # the same orders every run
    order = list(range(len(calls)))
    for i in range(n):
        if shuffle:
            rng.shuffle(order)
        for j in order:
            call = calls[j]
            if l2_flush is not None:
                l2_flush()  # same stream, so it finishes before the start event
            if cover_host:
                torch.cuda._sleep(HOST_COVER_CYCLES)  # untimed: the host issues call(i) meanwhile
            starts[j][i].record(stream)
            call(i)
            ends[j][i].record(stream)
    torch.cuda.synchronize(device)
    return [summarize_times([s.elapsed_time(e) for s, e in zip(st, en)]) for st, en in zip(starts, ends)]
