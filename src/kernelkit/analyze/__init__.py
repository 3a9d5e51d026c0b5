"""Static analysis of compiled kernels: SASS census, resource usage, occupancy.

Everything here is a pure function of cubin bytes (or of numbers), runs on a
machine without a GPU, and needs only the ``cuobjdump`` binary (pip:
``nvidia-cuda-cuobjdump``) -- so the kernel ladders can be checked for
"really vectorised / no spills / uses tensor cores" in CPU-only CI.
"""

from .occupancy import ARCH_LIMITS, ArchLimits, Occupancy, theoretical_occupancy
from .resources import PtxasInfo, ResourceUsage, resource_usage, spills_from_log
from .sass import InstructionCensus, access_width, census, disassemble, kernel_census
from .tools import ToolNotFoundError, find_tool

__all__ = [
    "ARCH_LIMITS",
    "ArchLimits",
    "InstructionCensus",
    "Occupancy",
    "PtxasInfo",
    "ResourceUsage",
    "ToolNotFoundError",
    "access_width",
    "census",
    "disassemble",
    "find_tool",
    "kernel_census",
    "resource_usage",
    "spills_from_log",
    "theoretical_occupancy",
]
