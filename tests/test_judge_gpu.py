"""The judge's verdicts on planted solutions of vector_add, on the GPU: each way to be wrong or to cheat
gets its verdict, and a right solution is accepted, timed and compared."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from kernelkit.judge import judge  # noqa: E402

PLANTED = Path(__file__).parent / "judge_solutions"


def _judge(name: str, **kw):
    return judge("vector_add", PLANTED / f"{name}.cu", seed=1234, **kw)


def test_a_right_solution_is_accepted_timed_and_compared():
    v = _judge("correct")
    assert v.status == "Accepted", v.message
    t = v.timing
    assert t["runs"] >= 5 and t["median_ms"] > 0 and 100 < t["gbs"] < 10_000
    assert t["copy_gbs"] > 0 and t["kernelkit_ms"] > 0 and t["torch_ms"] > 0


@pytest.mark.parametrize("name,status,words", [
    ("off_by_one", "Wrong Answer", "never written"),
    ("out_of_bounds", "Wrong Answer", "wrote past"),
    ("never_writes", "Wrong Answer", "never written"),
    ("reads_leftover", "Wrong Answer", "expected"),
    ("changes_input", "Wrong Answer", "changed its input A"),
    ("other_stream", "Wrong Answer", "another stream"),
    ("left_running", "Wrong Answer", "never written"),
    ("l2_window", "Rejected", "L2"),
    ("illegal_address", "Runtime Error", "illegal"),
    ("does_not_compile", "Compile Error", ""),
])
def test_each_wrong_or_cheating_solution_gets_its_verdict(name, status, words):
    v = _judge(name, time_solution=False)
    assert v.status == status, (v.status, v.message)
    assert words in v.message + v.log, v.message


def test_results_cached_from_an_earlier_call_fail_in_the_timed_runs():
    v = _judge("cached")
    assert v.status == "Wrong Answer" and "timed run" in v.message, v.message


def test_a_hang_is_a_time_limit_and_the_judge_survives():
    v = _judge("infinite_loop", time_solution=False, time_limit=30)
    assert v.status == "Time Limit Exceeded"
    assert _judge("correct", time_solution=False).status == "Accepted"


def test_every_problem_template_runs_and_is_wrong():
    """A template launches nothing: every problem's checked cases catch its unwritten outputs."""
    from kernelkit.judge import PROBLEMS, judge_sources, template

    for name, p in PROBLEMS.items():
        v = judge_sources(name, template(p), seed=7, time_solution=False)
        assert v.status == "Wrong Answer", (name, v.status, v.message)


def test_sanitize_runs_memcheck_and_racecheck():
    v = _judge("correct", time_solution=False, sanitize=True)
    assert v.status == "Accepted" and "memcheck and racecheck clean" in v.details.get("sanitizer", ""), v.log[-2000:]


def test_the_command_prints_the_verdict_and_the_comparisons():
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "kernelkit", "judge", "vector_add", str(PLANTED / "correct.cu"),
                          "--seed", "3"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "vector_add: Accepted (seed 3)" in res.stdout and "of the measured copy" in res.stdout
    assert "kernelkit:" in res.stdout and "torch:" in res.stdout
    res = subprocess.run([sys.executable, "-m", "kernelkit", "judge", "vector_add", str(PLANTED / "off_by_one.cu"),
                          "--no-time"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 1 and "Wrong Answer" in res.stdout
