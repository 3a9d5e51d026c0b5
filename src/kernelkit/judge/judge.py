"""The judge: build a user's ``solve()``, check it in a child process, time it, give a verdict.

Verdicts: Compile Error (nvcc's log), Runtime Error (the CUDA error, or how the process died), Time
Limit Exceeded (the child is killed), Wrong Answer (the first mismatching index, got, expected and the
largest error, or which rule the solution broke), Rejected (an L2 setting the judge does not time
with), Accepted (with its time, rate, share of the device's measured ceiling and speed against
kernelkit's default rung and torch).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .build import DEFAULT_ARCH, build
from .problems import get_problem
from .runner import MARKER

TIME_LIMIT_S = 120.0  # the child's wall time: every case, the timed runs and the comparisons


@dataclass
class Verdict:
    status: str
    message: str = ""
    problem: str = ""
    seed: Optional[int] = None
    details: dict = field(default_factory=dict)
    timing: Optional[dict] = None
    log: str = ""  # the compile log, the sanitizer's report

    @property
    def accepted(self) -> bool:
        return self.status == "Accepted"

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "", {})}


def _build_dir() -> Path:
    from ..runtime import cache_dir

    return Path(cache_dir()) / "judge"


def _arch(arch: Optional[str]) -> str:
    if arch:
        return arch
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
    except Exception:  # noqa: BLE001 - no usable GPU: the default target
        pass
    return DEFAULT_ARCH


def compile_solution(problem: str, source: str | os.PathLike, arch: Optional[str] = None) -> tuple[Verdict, Optional[Path]]:
    """(verdict, library): "Compiled" and the library, or "Compile Error" with nvcc's log. No GPU needed."""
    get_problem(problem)
    res = build(Path(source), _arch(arch), _build_dir())
    if not res.ok:
        return Verdict("Compile Error", "nvcc could not build the solution", problem, log=res.log), None
    return Verdict("Compiled", "", problem, log=res.log), res.library


def _child(args: list[str], timeout: float, env: Optional[dict] = None, prefix: tuple = ()) -> tuple[Optional[dict], str, int]:
    """Run the runner as a child; (its result, its output, its exit status); result None if it printed none."""
    cmd = [*prefix, sys.executable, "-m", "kernelkit.judge.runner", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the solution's process and anything it started
        proc.communicate()
        raise
    result = None
    for line in out.splitlines():
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER):])
    return result, out, proc.returncode


def _died(code: int) -> str:
    if code < 0:
        try:
            return f"the process was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the process was killed by signal {-code}"
    return f"the process exited with status {code} without a result"


def judge(problem: str, source: str | os.PathLike, *, arch: Optional[str] = None, seed: Optional[int] = None,
          time_solution: bool = True, sanitize: bool = False, device: int = 0,
          time_limit: float = TIME_LIMIT_S) -> Verdict:
    """Build ``source`` (a .cu file defining ``extern "C" void solve(...)`` with the problem's signature),
    check it on every case of ``problem`` against the float64 reference, time it (unless
    ``time_solution`` is False) and, with ``sanitize``, run compute-sanitizer's memcheck and racecheck on
    the first cases. The solution runs in a child process limited to ``time_limit`` seconds."""
    verdict, lib = compile_solution(problem, source, arch)
    if lib is None:
        return verdict
    seed = secrets.randbelow(2**31) if seed is None else seed
    args = [problem, str(lib), "--seed", str(seed), "--device", str(device)] + ([] if time_solution else ["--no-time"])
    try:
        result, out, code = _child(args, time_limit)
    except subprocess.TimeoutExpired:
        return Verdict("Time Limit Exceeded", f"the solution did not finish within {time_limit:g} s", problem, seed)
    if result is None:
        return Verdict("Runtime Error", _died(code), problem, seed, log=out[-4000:])
    v = Verdict(result["status"], result.get("message", ""), problem, seed, result.get("details", {}),
                result.get("timing"))
    if v.accepted and sanitize:
        v = _sanitize(v, lib, seed, device)
    return v


def _sanitize(v: Verdict, lib: Path, seed: int, device: int) -> Verdict:
    """Accepted stays Accepted only when memcheck and racecheck find nothing on the first three cases."""
    from ..analyze.tools import find_tool

    tool = find_tool("compute-sanitizer")
    reports = []
    for check in ("memcheck", "racecheck"):
        prefix = (tool, "--tool", check, "--error-exitcode", "9", "--report-api-errors", "no")
        try:
            _, out, code = _child([v.problem, str(lib), "--seed", str(seed), "--device", str(device), "--no-time",
                                   "--cases", "3"], 600, prefix=prefix)
        except subprocess.TimeoutExpired:
            return Verdict("Time Limit Exceeded", f"compute-sanitizer {check} did not finish", v.problem, v.seed)
        reports.append(f"== {check} ==\n{out[-3000:]}")
        if code != 0:
            return Verdict("Runtime Error", f"compute-sanitizer {check} found errors", v.problem, v.seed,
                           log="\n".join(reports))
    v.log = "\n".join(reports)
    v.details["sanitizer"] = "memcheck and racecheck clean on the first 3 cases"
    return v


def judge_sources(problem: str, text: str, **kwargs) -> Verdict:
    """``judge`` of a solution given as text (tests, notebooks)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "solution.cu"
        path.write_text(text)
        return judge(problem, path, **kwargs)


def clear_builds() -> None:
    shutil.rmtree(_build_dir(), ignore_errors=True)
