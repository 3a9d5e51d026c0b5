"""Matrix multiplication: matmul and linear, on a ladder from one output per thread to tensor cores.

``from kernelkit.ops.gemm import MatmulTile``: the block tile that ``config=`` takes.
"""
from ._ladder import MatmulTile  # noqa: F401
