"""Build step beside pyproject.toml: the optional C launch shim (kernelkit.runtime._fastlaunch).

Optional: where no C compiler is found the install goes on and launches go through cuda.core's
launch instead (a few microseconds more host time a call).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("kernelkit.runtime._fastlaunch", ["src/kernelkit/runtime/_fastlaunch.c"],
                             libraries=["dl"], extra_compile_args=["-O2", "-std=c11"], optional=True)])
