"""Disassemble cubins and count the SASS instructions that matter for
performance work.

Why: the question "did my float4 load really become one 128-bit load?", "does
this kernel spill to local memory?" or "is the tensor core actually used?" is
answered by the machine code, not by the C++.  The mnemonics below were taken
from ``cuobjdump -sass`` listings of small NVRTC-compiled kernels for sm_80 and
sm_90(a), e.g. ``LDG.E.128.CONSTANT``, ``LDG.E.LTC128B``, ``LDL.LU.64``,
``LDSM.16.M88.4``, ``LDGSTS.E.BYPASS.128``, ``HMMA.16816.F32``,
``HGMMA.64x16x16.F32``, ``UTMALDG.2D``, ``UBLKCP.S.G``, ``REDG.E.ADD...``.

Opcodes are matched on their *base* (the text before the first dot), never on
substrings: ``HFMA2.MMA`` is an ordinary half FMA (ptxas uses it as a register
move) and must not count as a tensor-core instruction.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .tools import find_tool

__all__ = ["InstructionCensus", "census", "disassemble", "kernel_census"]

_FUNCTION_RE = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
# "/*0050*/   @!P0 LDG.E R0, desc[UR4][R2.64] ;   /* 0x... */"
_INSTR_RE = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)")

# Size tokens that may appear as opcode modifiers, in bits.  Anything else
# (``E``, ``CONSTANT``, ``EL``, ``LTC128B``, ``STRONG`` ...) is not a width.
_WIDTH_TOKENS: Mapping[str, int] = MappingProxyType({
    "U8": 8, "S8": 8, "U16": 16, "S16": 16,
    "8": 8, "16": 16, "32": 32, "64": 64, "128": 128, "256": 256,
})
# Memory opcodes whose access width we record.
_WIDTH_OPS = frozenset({"LDG", "STG", "LDL", "STL", "LDS", "STS", "LD", "ST"})

TENSOR_CORE_OPS = frozenset({"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA"})
# TMA / bulk-copy engine (sm_90+).  UTMACMDFLUSH is bookkeeping, not a copy.
TMA_OPS = frozenset({"UBLKCP", "UBLKRED", "UBLKPF", "UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF"})
ATOMIC_OPS = frozenset({"RED", "REDG", "ATOM", "ATOMG", "ATOMS"})


def access_width(opcode: str) -> int:
    """Width in bits of a load/store opcode such as ``LDG.E.128.CONSTANT``.

    The last size token among the modifiers wins; without one the access is
    32 bits (``LDG.E``, ``LDG.E.EL``, ``LDS``).
    """
    for token in reversed(opcode.split(".")[1:]):
        if token in _WIDTH_TOKENS:
            return _WIDTH_TOKENS[token]
    return 32


@dataclass(frozen=True)
class InstructionCensus:
    """Counts of SASS opcodes in one kernel.

    ``opcodes`` maps each full opcode (with modifiers, predicate stripped) to
    its count; the properties aggregate it.  NOPs are kept out of ``opcodes``
    because cuobjdump pads every function with them.
    """

    opcodes: Mapping[str, int] = field(default_factory=dict)

    def count(self, *bases: str) -> int:
        """Instructions whose base opcode (text before the first dot) is in ``bases``."""
        wanted = set(bases)
        return sum(n for op, n in self.opcodes.items() if op.split(".", 1)[0] in wanted)

    def widths(self, base: str) -> dict[int, int]:
        """Access width in bits -> count for the memory opcode ``base`` (e.g. ``"LDG"``)."""
        if base not in _WIDTH_OPS:
            raise ValueError(f"no width tracking for {base!r}; one of {sorted(_WIDTH_OPS)}")
        out: Counter[int] = Counter()
        for op, n in self.opcodes.items():
            if op.split(".", 1)[0] == base:
                out[access_width(op)] += n
        return dict(sorted(out.items()))

    @property
    def total(self) -> int:
        """All instructions except NOP padding."""
        return sum(self.opcodes.values())

    @property
    def global_loads(self) -> int:
        return self.count("LDG")

    @property
    def global_stores(self) -> int:
        return self.count("STG")

    @property
    def global_load_widths(self) -> dict[int, int]:
        return self.widths("LDG")

    @property
    def global_store_widths(self) -> dict[int, int]:
        return self.widths("STG")

    @property
    def generic_loads(self) -> int:
        """``LD``: address space unknown to ptxas (could be global or shared)."""
        return self.count("LD")

    @property
    def generic_stores(self) -> int:
        return self.count("ST")

    @property
    def local_loads(self) -> int:
        return self.count("LDL")

    @property
    def local_stores(self) -> int:
        return self.count("STL")

    @property
    def local_memory_ops(self) -> int:
        return self.local_loads + self.local_stores

    @property
    def shared_loads(self) -> int:
        return self.count("LDS")

    @property
    def shared_stores(self) -> int:
        return self.count("STS")

    @property
    def shared_load_widths(self) -> dict[int, int]:
        return self.widths("LDS")

    @property
    def shared_store_widths(self) -> dict[int, int]:
        return self.widths("STS")

    @property
    def ldmatrix_ops(self) -> int:
        """``LDSM`` (ldmatrix)."""
        return self.count("LDSM")

    @property
    def cp_async_ops(self) -> int:
        """``LDGSTS`` (Ampere cp.async global->shared)."""
        return self.count("LDGSTS")

    @property
    def tma_ops(self) -> int:
        """Bulk / tensor-map copies issued to the TMA unit (sm_90+)."""
        return self.count(*TMA_OPS)

    @property
    def tensor_core_ops(self) -> int:
        return self.count(*TENSOR_CORE_OPS)

    @property
    def shuffles(self) -> int:
        return self.count("SHFL")

    @property
    def barriers(self) -> int:
        return self.count("BAR")

    @property
    def mufu_ops(self) -> int:
        """Special-function unit (``MUFU.EX2``, ``MUFU.RSQ`` ...)."""
        return self.count("MUFU")

    @property
    def atomics(self) -> int:
        """Reductions and atomics on global or shared memory."""
        return self.count(*ATOMIC_OPS)

    def summary(self) -> dict[str, object]:
        """Plain-dict view, handy for printing or JSON."""
        names = (
            "total", "global_loads", "global_load_widths", "global_stores",
            "global_store_widths", "generic_loads", "generic_stores", "local_loads",
            "local_stores", "shared_loads", "shared_load_widths", "shared_stores",
            "shared_store_widths", "ldmatrix_ops", "cp_async_ops", "tma_ops",
            "tensor_core_ops", "shuffles", "barriers", "mufu_ops", "atomics",
        )
        return {n: getattr(self, n) for n in names}


def census(sass_text: str) -> InstructionCensus:
    """Count the opcodes of one kernel's SASS listing (as from :func:`disassemble`)."""
    counts: Counter[str] = Counter()
    for line in sass_text.splitlines():
        m = _INSTR_RE.match(line)
        if m and m.group(1) != "NOP":
            counts[m.group(1)] += 1
    return InstructionCensus(MappingProxyType(dict(counts)))


def _split_functions(listing: str) -> dict[str, str]:
    """Cut a ``cuobjdump -sass`` listing into {function name: its lines}."""
    out: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if name is None:
            return
        if name in out:
            raise ValueError(
                f"function {name!r} appears twice in the listing; pass a "
                "single-architecture cubin, not a multi-arch fatbin"
            )
        out[name] = "\n".join(lines) + "\n"

    for line in listing.splitlines():
        m = _FUNCTION_RE.match(line)
        if m:
            flush()
            name, lines = m.group(1), [line]
        elif name is not None:
            lines.append(line)
    flush()
    return out


def run_cuobjdump(cubin: bytes, *args: str) -> str:
    """Run ``cuobjdump <args> <tmpfile>`` on in-memory cubin bytes; return stdout."""
    if not isinstance(cubin, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected cubin bytes, got {type(cubin).__name__}")
    tool = find_tool("cuobjdump")
    fd, path = tempfile.mkstemp(suffix=".cubin", prefix="kernelkit_")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(bytes(cubin))
        proc = subprocess.run(
            [tool, *args, path], capture_output=True, text=True, check=False
        )
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(
            f"cuobjdump {' '.join(args)} failed (exit {proc.returncode}): "
            f"{proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout


def disassemble(cubin: bytes) -> dict[str, str]:
    """SASS of every kernel in ``cubin``: {mangled name: listing}.

    Keys are the names as cuobjdump prints them after ``Function :`` -- the
    mangled symbol (``_Z2tkIfEvPT_``) or the plain name for ``extern "C"``.
    """
    return _split_functions(run_cuobjdump(cubin, "-sass"))


def kernel_census(cubin: bytes) -> dict[str, InstructionCensus]:
    """:func:`census` of every kernel in ``cubin``, keyed like :func:`disassemble`."""
    return {name: census(text) for name, text in disassemble(cubin).items()}
