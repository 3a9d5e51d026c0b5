"""Build step beside pyproject.toml: the optional C launch shim and lanes (kernelkit.runtime._fastlaunch).

Optional: where no C compiler is found the install goes on and launches go through cuda.core's
launch instead (a few microseconds more host time a call).
"""
from setuptools import Extension, setup

RUNTIME = "src/kernelkit/runtime/"
setup(ext_modules=[Extension("kernelkit.runtime._fastlaunch",
                             [RUNTIME + f for f in ("_fastlaunch.c", "lanes.c", "fixed_lanes.c")],
                             depends=[RUNTIME + "fastlaunch.h"], libraries=["dl"],
                             extra_compile_args=["-O2", "-std=c11"], optional=True)])
