"""The block tile of the warp-tiled matmul rungs (``MatmulTile``, the ``config=`` record for tuners and
tests) and the operand layouts a rung's kernels are listed for. Both the SIMT rules (_simt.py) and the
tensor-core ones (_ladder.py) build on them."""
from __future__ import annotations

from dataclasses import dataclass

# (A k-major, B k-major): every pair of operand layouts, each its own instantiation where a kernel's
# loads depend on it
LAYOUTS = ((True, True), (True, False), (False, True), (False, False))


@dataclass(frozen=True)
class MatmulTile:
    """A block tile of the warp-tiled rungs (``simt_best``, ``warp_tile``, ``mma``, ``best``):
    ``block_m`` x ``block_n`` outputs a block, ``warp_m`` x ``warp_n`` a warp (threads: 32 a warp).
    ``stages``: cp.async stages of the mma rung's copy-only kernel (0: as many as shared memory holds,
    up to 4); ``min_blocks``: blocks an SM the SIMT kernel's registers are capped for (0: the rule's)."""

    block_m: int
    block_n: int
    warp_m: int
    warp_n: int
    stages: int = 0
    min_blocks: int = 0

    @property
    def threads(self) -> int:
        return (self.block_m // self.warp_m) * (self.block_n // self.warp_n) * 32

    def check(self, tensor_cores: bool, op: str) -> None:
        """ValueError naming what this tile breaks (of the kernels' static requirements)."""
        bm, bn, wm, wn = self.block_m, self.block_n, self.warp_m, self.warp_n
        bad = []
        if min(bm, bn, wm, wn) <= 0 or bm % wm or bn % wn:
            bad.append("block sides must be positive multiples of the warp sides")
        elif not 32 <= self.threads <= 1024:
            bad.append(f"{self.threads} threads a block (32 to 1024)")
        elif tensor_cores and (wm % 16 or wn % 16 or (4 * bm) % self.threads or (4 * bn) % self.threads):
            bad.append("mma tiles: warp sides multiples of 16, 4 * block sides multiples of the threads")
        elif not tensor_cores and (wm % 32 or wn % 16 or (4 * bm) % self.threads or (4 * bn) % self.threads):
            bad.append("SIMT tiles: warp_m a multiple of 32, warp_n of 16, 4 * block sides multiples of the threads")
        elif self.stages and not 2 <= self.stages <= 8:
            bad.append("stages: 2 to 8")
        elif self.min_blocks and not 1 <= self.min_blocks <= 4:
            bad.append("min_blocks: 1 to 4")
        if bad:
            raise ValueError(f"{op}: config {self} cannot run: {bad[0]}")
