"""Per-kernel resource usage (registers, shared, stack, constant banks) and
ptxas spill reports.

Why: registers and shared memory decide occupancy, and stack / spill bytes
are the first sign that a kernel is falling off a performance cliff.  The
numbers come from ``cuobjdump --dump-resource-usage`` so that they describe
the exact cubin we will load, and from ptxas' ``-v`` log when it is at hand
(only the log distinguishes spill stores/loads from a local array).

cuobjdump's format (CUDA 13)::

    Resource usage:
     Common:
      GLOBAL:0 CONSTANT[3]:4096
     Function _Z2tkIfEvPT_:
      REG:8 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:360 TEXTURE:0 SURFACE:0 SAMPLER:0

On sm_90 ptxas bakes the 1 KB per-block system reservation
(``.nv.shared.reserved.0``) into each kernel's shared section, so SHARED
reads 3072 for a kernel whose ``__shared__`` arrays total 2048 bytes (sm_80
reports 2048).  :attr:`ResourceUsage.shared` removes that reservation so the
value means the same on every architecture and can be fed to
:func:`kernelkit.analyze.theoretical_occupancy`, which adds the reservation
itself.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .sass import run_cuobjdump

__all__ = ["PtxasInfo", "ResourceUsage", "resource_usage", "spills_from_log"]

RESERVED_SHARED_BYTES = 1024  # cudaDevAttrReservedSharedMemoryPerBlock on sm_80+

_RES_FUNC_RE = re.compile(r"^\s*Function\s+(.+?):\s*$")
_RES_FIELD_RE = re.compile(r"([A-Z]+)(?:\[(\d+)\])?:(\d+)")


@dataclass(frozen=True)
class ResourceUsage:
    """Static resources of one kernel, in bytes except ``registers``."""

    registers: int
    shared: int  # static __shared__ bytes, system reservation excluded
    stack: int
    local: int
    constant: int  # sum over the kernel's constant banks
    constant_banks: Mapping[int, int] = field(default_factory=dict)
    shared_reported: int = 0  # SHARED exactly as cuobjdump printed it


def _elf_section_names(blob: bytes) -> list[str]:
    """Section names of a 64-bit little-endian ELF (a cubin); [] otherwise.

    Only used to spot ``.nv.shared.reserved.*``; a tiny reader keeps us free
    of an ELF dependency and of a second, much longer cuobjdump dump.
    """
    if len(blob) < 64 or blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        return []
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    if shoff == 0 or shentsize < 64 or shstrndx >= shnum:
        return []
    if shoff + shnum * shentsize > len(blob):
        return []

    def header(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        name_off = struct.unpack_from("<I", blob, base)[0]
        offset, size = struct.unpack_from("<QQ", blob, base + 0x18)
        return name_off, offset, size

    _, str_off, str_size = header(shstrndx)
    strtab = blob[str_off:str_off + str_size]
    names = []
    for i in range(shnum):
        name_off = header(i)[0]
        end = strtab.find(b"\0", name_off)
        names.append(strtab[name_off:end if end >= 0 else None].decode("ascii", "replace"))
    return names


def _has_reserved_shared(cubin: bytes) -> bool:
    return any(n.startswith(".nv.shared.reserved") for n in _elf_section_names(cubin))


def _parse_resource_usage(text: str, reserved: int) -> dict[str, ResourceUsage]:
    """Parse cuobjdump's resource listing; ``reserved`` is subtracted from SHARED."""
    out: dict[str, ResourceUsage] = {}
    name: str | None = None
    for line in text.splitlines():
        m = _RES_FUNC_RE.match(line)
        if m:
            name = m.group(1)
            continue
        if name is None or "REG:" not in line:
            continue
        plain: dict[str, int] = {}
        banks: dict[int, int] = {}
        for key, bank, value in _RES_FIELD_RE.findall(line):
            if bank:
                banks[int(bank)] = banks.get(int(bank), 0) + int(value)
            else:
                plain[key] = int(value)
        reported = plain.get("SHARED", 0)
        out[name] = ResourceUsage(
            registers=plain.get("REG", 0),
            shared=max(0, reported - reserved) if reported else 0,
            stack=plain.get("STACK", 0),
            local=plain.get("LOCAL", 0),
            constant=sum(banks.values()),
            constant_banks=MappingProxyType(dict(sorted(banks.items()))),
            shared_reported=reported,
        )
        name = None
    return out


def resource_usage(cubin: bytes) -> dict[str, ResourceUsage]:
    """Resources of every kernel in ``cubin``, keyed by (mangled) name.

    Keys match :func:`kernelkit.analyze.disassemble`.  Per-module entries
    (``Common:``, e.g. ``__constant__`` arrays in bank 3) are not included.
    """
    reserved = RESERVED_SHARED_BYTES if _has_reserved_shared(bytes(cubin)) else 0
    return _parse_resource_usage(run_cuobjdump(cubin, "--dump-resource-usage"), reserved)


@dataclass(frozen=True)
class PtxasInfo:
    """What ptxas ``-v`` said about one function (``None``: not reported)."""

    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    registers: int | None = None
    barriers: int | None = None
    shared: int | None = None  # "N bytes smem", static, reservation excluded

    @property
    def spills(self) -> bool:
        """True if ptxas had to spill registers to local memory."""
        return self.spill_stores > 0 or self.spill_loads > 0


_LOG_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)'")
_LOG_PROPS_RE = re.compile(r"Function properties for (\S+)")
_LOG_FRAME_RE = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_LOG_REGS_RE = re.compile(r"Used (\d+) registers")
_LOG_BARS_RE = re.compile(r"used (\d+) barriers")
_LOG_SMEM_RE = re.compile(r"(\d+) bytes smem")


def spills_from_log(nvrtc_log: str) -> dict[str, PtxasInfo]:
    """Parse ptxas ``-v`` lines from an NVRTC program log, per function.

    Compile with ``ProgramOptions(ptxas_options="-v")`` and pass the text
    written to ``Program.compile(..., logs=io.StringIO())``.  The log reads::

        ptxas info    : Compiling entry function '_Z2tkIfEvPT_' for 'sm_80'
        ptxas info    : Function properties for _Z2tkIfEvPT_
        ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]

    Non-entry (noinline) device functions get a properties line but no
    "Used" line.  Returns {} when the log holds no ptxas info.
    """
    fields: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in nvrtc_log.splitlines():
        m = _LOG_ENTRY_RE.search(line) or _LOG_PROPS_RE.search(line)
        if m:
            current = m.group(1)
            fields.setdefault(current, {})
            continue
        if current is None:
            continue
        m = _LOG_FRAME_RE.search(line)
        if m:
            f = fields[current]
            f["stack_frame"], f["spill_stores"], f["spill_loads"] = map(int, m.groups())
            continue
        m = _LOG_REGS_RE.search(line)
        if m:
            f = fields[current]
            f["registers"] = int(m.group(1))
            for key, rx in (("barriers", _LOG_BARS_RE), ("shared", _LOG_SMEM_RE)):
                hit = rx.search(line)
                if hit:
                    f[key] = int(hit.group(1))
            f.setdefault("shared", 0)
    return {name: PtxasInfo(**f) for name, f in fields.items()}
