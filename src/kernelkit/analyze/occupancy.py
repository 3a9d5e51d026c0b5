"""Theoretical occupancy, computed the way the CUDA occupancy calculator does.

Why: knowing how many blocks fit on an SM -- and which resource stops more
from fitting -- explains many performance jumps (e.g. a kernel going from 128
to 129 registers per thread).  This is a pure function of the architecture and
the kernel's resources, so it runs without a GPU.

Rules (per SM):

* threads: ``ceil(block_size / 32)`` warps per block against the SM's warp
  limit;
* blocks: the hardware limit on resident blocks;
* registers: each warp gets ``ceil(regs * 32 / 256) * 256`` registers; the
  register file (65536) is split over 4 sub-partitions (SMSPs) and a warp
  lives in one, so warps are counted per sub-partition (as in
  ``cuda_occupancy.h``), then whole blocks are taken;
* shared: each block takes its shared bytes rounded up to 128 B plus 1 KB
  reserved by the system, against the largest shared carve-out of the SM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ArchLimits", "Occupancy", "ARCH_LIMITS", "theoretical_occupancy"]

WARP_SIZE = 32
REGISTERS_PER_SM = 65536
REGISTER_ALLOC_UNIT = 256  # registers, allocated per warp
MAX_REGISTERS_PER_THREAD = 255
SUB_PARTITIONS = 4
SHARED_ALLOC_UNIT = 128  # bytes
RESERVED_SHARED_PER_BLOCK = 1024  # bytes
MAX_THREADS_PER_BLOCK = 1024


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits of one compute capability (CUDA programming guide table)."""

    max_threads: int
    max_blocks: int
    shared_per_sm: int  # largest carve-out, bytes
    max_shared_per_block: int  # opt-in maximum, bytes

    @property
    def max_warps(self) -> int:
        return self.max_threads // WARP_SIZE


KB = 1024
ARCH_LIMITS: dict[str, ArchLimits] = {
    "sm_80": ArchLimits(max_threads=2048, max_blocks=32, shared_per_sm=164 * KB,
                        max_shared_per_block=163 * KB),
    "sm_86": ArchLimits(max_threads=1536, max_blocks=16, shared_per_sm=100 * KB,
                        max_shared_per_block=99 * KB),
    "sm_89": ArchLimits(max_threads=1536, max_blocks=24, shared_per_sm=100 * KB,
                        max_shared_per_block=99 * KB),
    "sm_90": ArchLimits(max_threads=2048, max_blocks=32, shared_per_sm=228 * KB,
                        max_shared_per_block=227 * KB),
}

_ARCH_RE = re.compile(r"^(?:sm_|compute_)?(\d+)[af]?$")


@dataclass(frozen=True)
class Occupancy:
    """Result of :func:`theoretical_occupancy`.

    ``limiter`` names the resource that allows the fewest blocks: one of
    ``"threads"``, ``"blocks"``, ``"registers"``, ``"shared"`` (ties go to
    the earlier name in that order).
    """

    blocks_per_sm: int
    active_warps: int
    max_warps: int
    fraction: float
    limiter: str


def _limits_for(arch: str) -> ArchLimits:
    """Accept ``sm_90``, ``sm_90a``, ``compute_90`` or ``90``."""
    m = _ARCH_RE.match(arch.strip().lower())
    key = f"sm_{m.group(1)}" if m else arch
    if key not in ARCH_LIMITS:
        raise ValueError(
            f"unknown architecture {arch!r}; known: {', '.join(sorted(ARCH_LIMITS))}"
        )
    return ARCH_LIMITS[key]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _blocks_by_registers(registers_per_thread: int, warps_per_block: int) -> int:
    if registers_per_thread == 0:
        return 1 << 30  # no register limit
    regs_per_warp = _round_up(registers_per_thread * WARP_SIZE, REGISTER_ALLOC_UNIT)
    warps_per_partition = (REGISTERS_PER_SM // SUB_PARTITIONS) // regs_per_warp
    return (warps_per_partition * SUB_PARTITIONS) // warps_per_block


def _blocks_by_shared(limits: ArchLimits, shared_per_block: int) -> int:
    per_block = _round_up(shared_per_block + RESERVED_SHARED_PER_BLOCK, SHARED_ALLOC_UNIT)
    if per_block > limits.max_shared_per_block + RESERVED_SHARED_PER_BLOCK:
        return 0  # the launch itself would fail
    return limits.shared_per_sm // per_block


def theoretical_occupancy(
    arch: str,
    block_size: int,
    registers_per_thread: int,
    shared_per_block: int = 0,
) -> Occupancy:
    """Blocks and warps resident per SM for a kernel launch.

    Args:
        arch: ``"sm_80"``, ``"sm_86"``, ``"sm_89"`` or ``"sm_90"`` (``a``/``f``
            suffixes and ``compute_`` prefixes are accepted).
        block_size: threads per block (1..1024).
        registers_per_thread: as reported by ptxas / :func:`resource_usage`.
        shared_per_block: static plus dynamic shared bytes, *without* the
            1 KB system reservation (it is added here).

    A configuration that cannot launch (too much shared memory, or too many
    registers for the block) yields ``blocks_per_sm == 0`` with the limiter
    that caused it.

    Raises:
        ValueError: unknown arch, or arguments outside hardware ranges.
    """
    limits = _limits_for(arch)
    if not 1 <= block_size <= MAX_THREADS_PER_BLOCK:
        raise ValueError(f"block_size must be in 1..{MAX_THREADS_PER_BLOCK}, got {block_size}")
    if not 0 <= registers_per_thread <= MAX_REGISTERS_PER_THREAD:
        raise ValueError(
            f"registers_per_thread must be in 0..{MAX_REGISTERS_PER_THREAD}, "
            f"got {registers_per_thread}"
        )
    if shared_per_block < 0:
        raise ValueError(f"shared_per_block must be >= 0, got {shared_per_block}")

    warps_per_block = -(-block_size // WARP_SIZE)
    candidates = (
        ("threads", limits.max_warps // warps_per_block),
        ("blocks", limits.max_blocks),
        ("registers", _blocks_by_registers(registers_per_thread, warps_per_block)),
        ("shared", _blocks_by_shared(limits, shared_per_block)),
    )
    limiter, blocks = min(candidates, key=lambda kv: kv[1])  # min keeps first on ties
    active_warps = blocks * warps_per_block
    return Occupancy(
        blocks_per_sm=blocks,
        active_warps=active_warps,
        max_warps=limits.max_warps,
        fraction=active_warps / limits.max_warps,
        limiter=limiter,
    )
