"""Matrix multiplication: matmul and linear, on a ladder from one output per thread to tensor cores.

``from kernelkit.ops.gemm import MatmulTile``: the block tile that ``config=`` takes; ``WgmmaTile`` that of
the Hopper rungs (tma_wgmma, ws), and ``tma_fallback_reason(a, b)`` the constraint that sends a problem
from them to the mma rung; ``Fp8Tile`` and ``fp8_fallback_reason(a, b)`` the same for scaled_matmul's Hopper
rungs (tma_wgmma, ws) and its dequant rung.
"""
from ._fp8_hopper import Fp8Tile, fp8_fallback_reason  # noqa: F401
from ._hopper import WgmmaTile, tma_fallback_reason  # noqa: F401
from ._tile import MatmulTile  # noqa: F401
