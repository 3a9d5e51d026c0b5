"""kernelkit: hand-written CUDA C++ kernels for neural-network operators, each with its ladder of
variants from naive to fast, and the workbench to verify, time and analyse them."""
from .ops import gelu  # noqa: I001  (first: it imports the kernelkit.ladder module)
from .ladder import get_op, ladder, ops  # binds the name `ladder` to the function, over the module

__version__ = "0.1.0"
__all__ = ["gelu", "get_op", "ladder", "ops", "__version__"]
