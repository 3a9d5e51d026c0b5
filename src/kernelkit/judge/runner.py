"""The judge's child process: load a built solution, check it on every case, time it.

    python -m kernelkit.judge.runner PROBLEM LIBRARY --seed S [--device D] [--no-time] [--cases K]

Runs in its own process so that a crash, an illegal address or a sticky CUDA error ends only this
process (the parent gives the verdict). The result is one line on stdout starting with ``MARKER``
(the solution may print too): JSON with ``status`` and the details.

How a solution is checked, and which tricks that rules out:

- Outputs are filled with NaN (bytes: 0xA5) first, inside a larger buffer whose guard zones on both
  sides are checked afterwards: an output left unwritten, or a write past either end, fails.
- Inputs are fresh random values of each case and run (a seed from the parent), and the expected
  outputs are computed only after ``solve`` returned, in float64, from copies of the inputs the
  solution never sees: results cached from an earlier call, or read from a buffer the reference
  left behind, fail; so does a solution that changes its inputs.
- After ``solve`` returns, only the default stream is waited for before the outputs are read; they are
  read again after the whole device is synchronised. Work left running on another stream shows up as
  a difference.
- An L2 set-aside for persisting accesses or an access-policy window on the default stream is refused.
- Every timed run's output is checked too.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
import traceback

import torch

from .problems import U8, Buffer, get_problem, make_inputs

MARKER = "KERNELKIT-JUDGE "
GUARD = 1024  # elements of guard zone on each side of an output
RUNS = 20
TIME_BUDGET_S = 20.0


class Failed(Exception):
    """A verdict other than Accepted, found while checking: (status, message, details)."""

    def __init__(self, status: str, message: str, **details):
        super().__init__(message)
        self.status, self.message, self.details = status, message, details


def _poison_value(dtype):
    return float("nan") if dtype.is_floating_point else 0xA5


def _guarded(buf: Buffer, shape: tuple, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(whole buffer, the output view in its middle), every element poisoned."""
    n = 1
    for d in shape:
        n *= d
    whole = torch.full((n + 2 * GUARD,), _poison_value(buf.dtype), dtype=buf.dtype, device=device)
    return whole, whole[GUARD:GUARD + n].view(shape)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN equals NaN)."""
    return torch.equal(a.view(torch.uint8) if a.dtype == U8 else a.view(torch.int32), b.view(torch.uint8) if
                       b.dtype == U8 else b.view(torch.int32))


class Solution:
    def __init__(self, problem, library: str):
        self.problem = problem
        self.lib = ctypes.CDLL(library, mode=ctypes.RTLD_LOCAL)
        self.solve = self.lib.solve
        self.solve.restype = None
        self.solve.argtypes = [ctypes.c_void_p if isinstance(p, Buffer) else ctypes.c_int for p in problem.params]

    def __call__(self, sizes: dict, tensors: dict) -> None:
        args = [tensors[p.name].data_ptr() if isinstance(p, Buffer) else sizes[p.name] for p in self.problem.params]
        self.solve(*args)


def _l2_settings() -> tuple[int, int]:
    """(bytes of L2 set aside for persisting accesses, bytes of the default stream's access-policy window)."""
    from cuda.bindings import driver

    err, size = driver.cuCtxGetLimit(driver.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    limit = int(size) if err == driver.CUresult.CUDA_SUCCESS else 0
    attr = driver.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
    err, value = driver.cuStreamGetAttribute(driver.CUstream(driver.CU_STREAM_LEGACY), attr)
    window = int(value.accessPolicyWindow.num_bytes) if err == driver.CUresult.CUDA_SUCCESS else 0
    return limit, window


_L2_BEFORE: list = []  # the settings before the solution was loaded (a device may set aside L2 by default)


def _l2_tricks() -> str:
    """Why the solution's L2 settings are refused (it changed them from what the process started with), or ''."""
    limit, window = _l2_settings()
    limit0, window0 = _L2_BEFORE[0] if _L2_BEFORE else (0, 0)
    if limit > limit0:
        return f"it sets aside {limit} bytes of L2 for persisting accesses (cudaLimitPersistingL2CacheSize)"
    if window != window0:
        return "it sets an L2 access-policy window on the default stream"
    return ""


def _compare(problem, sizes, outputs: dict, expected: dict, what: str) -> None:
    rtol, atol = problem.tolerance(sizes)
    for name, want in expected.items():
        got = outputs[name]
        if got.dtype == U8:
            bad = (got.to(torch.int16) != want.to(torch.int16)).flatten().nonzero().flatten()
            err = (got.to(torch.int16) - want.to(torch.int16)).abs().max().item() if got.numel() else 0
        else:
            g, w = got.double().flatten(), want.double().flatten()
            close = ((g - w).abs() <= atol + rtol * w.abs()) | (torch.isnan(g) & torch.isnan(w))
            bad = (~close).nonzero().flatten()
            diff = (g - w).abs()
            err = diff[~torch.isnan(diff)].max().item() if (~torch.isnan(diff)).any() else float("nan")
        if bad.numel():
            i = int(bad[0])
            g0, w0 = got.flatten()[i].item(), want.flatten()[i].item()
            unwritten = got.dtype != U8 and bool(torch.isnan(got.flatten()[bad]).all() and not torch.isnan(want).any())
            hint = " (never written: still the NaN it was filled with)" if unwritten else ""
            raise Failed("Wrong Answer", f"{what}: {name}[{i}] is {g0!r}, expected {w0!r}{hint}; {bad.numel()} of "
                         f"{want.numel()} elements off, largest error {err:.3g}",
                         case=sizes, index=i, got=g0, expected=w0, mismatches=int(bad.numel()), max_error=err)


def run_case(sol: Solution, sizes: dict, gen: torch.Generator, device, what: str, timer=None) -> float:
    """Check one call of solve on fresh inputs of ``sizes``; returns its time in ms (with ``timer``)."""
    problem = sol.problem
    inputs = make_inputs(problem, sizes, gen)
    pristine = {k: v.clone() for k, v in inputs.items()}
    tensors, wholes = {}, {}
    for b in problem.buffers:
        if b.role == "in":
            tensors[b.name] = inputs[b.name]
            continue
        wholes[b.name], tensors[b.name] = _guarded(b, b.shape(sizes), device)
        if b.role == "inout":
            tensors[b.name].copy_(inputs[b.name])
    torch.cuda.synchronize(device)
    ms = timer(lambda: sol(sizes, tensors)) if timer else (sol(sizes, tensors) or 0.0)
    torch.cuda.current_stream(device).synchronize()  # the default stream only
    at_return = {k: tensors[k].clone() for k in wholes}  # enqueued after solve's default-stream work
    torch.cuda.current_stream(device).synchronize()
    torch.cuda.synchronize(device)  # every stream: a sticky error of the solution surfaces here
    for name in wholes:
        if not _same(at_return[name], tensors[name]):
            raise Failed("Wrong Answer", f"{what}: {name} changed after the default stream finished: solve left "
                         "work running on another stream (launch on the default stream, or wait for your streams "
                         "before returning)", case=sizes)
        whole, n = wholes[name], tensors[name].numel()
        poison = torch.full((GUARD,), _poison_value(whole.dtype), dtype=whole.dtype, device=device)
        for side, zone in (("before", whole[:GUARD]), ("past", whole[GUARD + n:])):
            if not _same(zone, poison):
                raise Failed("Wrong Answer", f"{what}: solve wrote {side} the {n} elements of {name}", case=sizes)
    for name, original in pristine.items():
        b = next(b for b in problem.buffers if b.name == name)
        if b.role == "in" and not _same(inputs[name], original):
            raise Failed("Wrong Answer", f"{what}: solve changed its input {name}", case=sizes)
    trick = _l2_tricks()
    if trick:
        raise Failed("Rejected", f"{what}: {trick}; the judge times with a cold L2", case=sizes)
    as64 = {k: (v if v.dtype == U8 else v.double()) for k, v in pristine.items()}
    expected = problem.reference(sizes, **as64)
    _compare(problem, sizes, {k: tensors[k] for k in expected}, expected, what)
    return ms


def _timer(device):
    """time_one(fn): ms of one call of fn by CUDA events, after the L2 flush of the library's timing."""
    from ..bench.timing import _l2_flush

    flush = _l2_flush(device.index)

    def time_one(fn) -> float:
        flush()  # the timed call starts with a cold L2
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    return time_one


def time_solution(sol: Solution, gen: torch.Generator, device) -> dict:
    problem, sizes = sol.problem, sol.problem.timing
    timer = _timer(device)
    times = [run_case(sol, sizes, gen, device, "timed run 1", timer)]
    deadline = time.perf_counter() + TIME_BUDGET_S
    for r in range(2, RUNS + 1):
        if time.perf_counter() > deadline and r > 4:
            break
        times.append(run_case(sol, sizes, gen, device, f"timed run {r}", timer))
    times.sort()
    ms = times[len(times) // 2]
    result = {"median_ms": ms, "min_ms": times[0], "runs": len(times), "sizes": sizes,
              "gbs": problem.bytes_moved(sizes) / ms / 1e6}
    if problem.flops(sizes):
        result["tflops"] = problem.flops(sizes) / ms / 1e9
    result.update(_comparisons(problem, sizes, gen, device, timer))
    return result


def _comparisons(problem, sizes, gen, device, timer) -> dict:
    """The device's measured ceiling, kernelkit's default rung and torch on the same inputs (ms)."""
    out = {}
    inputs = make_inputs(problem, sizes, gen)
    try:
        from ..bench import ceilings

        out["copy_gbs"] = ceilings.copy_bandwidth()
        if problem.flops(sizes):
            out["matmul_tflops"] = ceilings.matmul_rate("float32")
    except Exception as exc:  # noqa: BLE001 - a ceiling that cannot be measured leaves its share out
        out["ceiling_error"] = str(exc)
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for name, fn in (("kernelkit", problem.kernelkit), ("torch", problem.torch_fn)):
            if fn is None:
                continue
            import kernelkit

            call = (lambda: fn(kernelkit, **inputs)) if name == "kernelkit" else (lambda: fn(**inputs))
            try:
                call()
                torch.cuda.synchronize(device)
                ts = sorted(timer(call) for _ in range(10))
                out[f"{name}_ms"] = ts[len(ts) // 2]
            except Exception as exc:  # noqa: BLE001 - a comparison that cannot run is reported, not fatal
                out[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="the judge's child process (kernelkit judge runs it)")
    p.add_argument("problem")
    p.add_argument("library")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--no-time", action="store_true")
    p.add_argument("--cases", type=int, default=None, help="check only the first K cases (sanitizer runs)")
    a = p.parse_args(argv)
    problem = get_problem(a.problem)
    device = torch.device("cuda", a.device)
    torch.cuda.set_device(device)
    gen = torch.Generator(device=device).manual_seed(a.seed)
    result: dict = {"status": "Accepted", "problem": problem.name, "seed": a.seed}
    try:
        torch.cuda.synchronize(device)  # the context exists before its settings are read
        _L2_BEFORE.append(_l2_settings())
        sol = Solution(problem, a.library)
        cases = problem.cases if a.cases is None else problem.cases[:a.cases]
        for i, sizes in enumerate(cases):
            run_case(sol, sizes, gen, device, f"case {i + 1} {sizes}")
        result["cases"] = len(cases)
        if not a.no_time:
            result["timing"] = time_solution(sol, gen, device)
    except Failed as f:
        result.update(status=f.status, message=f.message, details=f.details)
    except Exception as exc:  # noqa: BLE001 - a CUDA error of the solution, or a crash of the harness
        result.update(status="Runtime Error", message=f"{type(exc).__name__}: {exc}",
                      details={"traceback": traceback.format_exc(limit=3)})
    print(MARKER + json.dumps(result, default=str), flush=True)
    sys.stdout.flush()
    return 0 if result["status"] == "Accepted" else 1


if __name__ == "__main__":
    raise SystemExit(main())
