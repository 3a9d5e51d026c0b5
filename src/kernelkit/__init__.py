"""kernelkit: hand-written CUDA C++ kernels for neural-network operators, each with its ladder of
variants from naive to fast, and the workbench to verify, time and analyse them."""
from . import ops as _ops  # noqa: I001  (first: importing the families imports the kernelkit.ladder module)
from .ops import *  # noqa: F401,F403  the public ops (gelu, ...), as listed by each family's __all__
from .ladder import get_op, ladder, ops  # binds `ladder` to the function, over the module of that name

__version__ = "0.1.0"
__all__ = [*_ops.__all__, "get_op", "ladder", "ops", "__version__"]
