"""The judge: build, check and time a user's own ``extern "C" void solve(...)`` kernel file.

    kernelkit judge --list                      # the problems
    kernelkit judge --template softmax          # a starter file with the signature
    kernelkit judge softmax my_softmax.cu       # verdict, time, GB/s, share of the ceiling, vs kernelkit and torch
"""
from .judge import Verdict, clear_builds, compile_solution, judge, judge_sources
from .problems import PROBLEMS, Problem, get_problem, template

__all__ = ["PROBLEMS", "Problem", "Verdict", "clear_builds", "compile_solution", "get_problem", "judge",
           "judge_sources", "template"]
