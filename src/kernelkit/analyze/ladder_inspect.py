"""`kernelkit inspect <op>`: the static analysis of every rung, and the check of its SASS claims.

All instantiations of a source file are compiled in one NVRTC run per arch; each kernel's row joins
its ptxas report (registers, spills), its resource usage (shared memory, stack), the census of its
SASS (global access widths, local-memory and tensor-core instructions) and its theoretical occupancy
at the block size the rung launches with.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

import torch

from ..ladder import Kernel, Variant, get_op
from ..runtime.compiler import compile_source
from .occupancy import theoretical_occupancy
from .resources import resource_usage, spills_from_log
from .sass import kernel_census


@dataclass(frozen=True)
class KernelReport:
    variant: str
    dtype: torch.dtype
    params: dict
    kernel: Kernel
    mangled: str
    registers: int
    spill_bytes: int
    stack: int
    shared: int
    load_widths: dict[int, int]
    store_widths: dict[int, int]
    local_ops: int
    tensor_core_ops: dict[str, int]
    occupancy: float
    limiter: str
    opcodes: frozenset = frozenset()  # every SASS opcode (with modifiers) the kernel contains

    def claim_failures(self) -> list[str]:
        """How the SASS contradicts what the rung claims (empty when it holds)."""
        bad = []
        k = self.kernel
        if k.load_bits is not None and max(self.load_widths, default=0) != k.load_bits:
            bad.append(f"widest global load {max(self.load_widths, default=0)} bits, claims {k.load_bits}")
        if k.store_bits is not None and max(self.store_widths, default=0) != k.store_bits:
            bad.append(f"widest global store {max(self.store_widths, default=0)} bits, claims {k.store_bits}")
        if not k.spills and (self.local_ops or self.spill_bytes):
            bad.append(f"{self.local_ops} local-memory instructions, {self.spill_bytes} spill bytes")
        for prefix in k.sass:
            if not any(op.startswith(prefix) for op in self.opcodes):
                bad.append(f"no {prefix} instruction")
        if k.tensor_core and not any(op.startswith(k.tensor_core) for op in self.tensor_core_ops):
            bad.append(f"no {k.tensor_core} instruction (found {dict(self.tensor_core_ops) or 'none'})")
        return bad


_TENSOR_CORE = ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA")


def _instances(variants: Iterable[Variant], dtypes, param_combos) -> list[tuple[Variant, torch.dtype, dict, Kernel]]:
    out = []
    for v in variants:
        for dt in v.dtypes:
            if dtypes and dt not in dtypes:
                continue
            seen = set()
            for params in param_combos:
                for k in v.kernels(dt, **params):
                    if (k.name, k.arch_suffix) not in seen:
                        seen.add((k.name, k.arch_suffix))
                        out.append((v, dt, params, k))
    return out


def analyze_op(op_name: str, arch: str = "sm_90", dtypes: Iterable[torch.dtype] | None = None) -> list[KernelReport]:
    """A report per distinct kernel of every rung of ``op_name``, compiled for ``arch``."""
    op = get_op(op_name)
    dtypes = tuple(dtypes or ())
    insts = _instances(op.variants, dtypes, op.param_combinations())
    by_build: dict[tuple[str, str], list[str]] = defaultdict(list)
    for _v, _dt, _p, k in insts:
        if k.name not in by_build[(k.source, k.arch_suffix)]:
            by_build[(k.source, k.arch_suffix)].append(k.name)
    builds = {}
    for (source, suffix), names in by_build.items():
        b = compile_source(source, tuple(names), arch + suffix)
        builds[(source, suffix)] = (b, kernel_census(b.cubin), resource_usage(b.cubin), spills_from_log(b.log))
    reports = []
    sm = int(arch[3:].rstrip("a"))
    for v, dt, params, k in insts:
        if k.min_sm > sm:  # compiled (every name of a source builds together), never launched here
            continue
        b, cens, res, ptx = builds[(k.source, k.arch_suffix)]
        m = b.mangled(k.name)
        c, r, p = cens[m], res[m], ptx.get(m)
        regs = p.registers if p and p.registers else r.registers
        occ = theoretical_occupancy(arch, k.block, max(regs, 1), r.shared + k.dyn_shared)
        reports.append(KernelReport(
            variant=v.name, dtype=dt, params=params, kernel=k, mangled=m, registers=regs,
            spill_bytes=(p.spill_stores + p.spill_loads) if p else 0, stack=r.stack, shared=r.shared,
            load_widths=dict(c.global_load_widths), store_widths=dict(c.global_store_widths),
            local_ops=c.local_memory_ops,
            tensor_core_ops={o: n for o, n in c.opcodes.items() if o.split(".")[0] in _TENSOR_CORE},
            occupancy=occ.fraction, limiter=occ.limiter, opcodes=frozenset(c.opcodes),
        ))
    return reports


def _widths(w: dict[int, int]) -> str:
    return " ".join(f"{bits}b:{n}" for bits, n in sorted(w.items())) or "-"


def inspect_op(op_name: str, arch: str = "sm_90", dtypes=None) -> list[dict]:
    """Table rows for `kernelkit inspect`."""
    rows = []
    for r in analyze_op(op_name, arch, dtypes):
        tc = sum(r.tensor_core_ops.values())
        rows.append({
            "variant": r.variant,
            "dtype": str(r.dtype).replace("torch.", ""),
            "kernel": r.kernel.name.replace("kk::", ""),
            "regs": r.registers,
            "spills": r.spill_bytes,
            "stack": r.stack,
            "smem": r.shared + r.kernel.dyn_shared,
            "ldg": _widths(r.load_widths),
            "stg": _widths(r.store_widths),
            "tensor_core": tc or "-",
            "block": r.kernel.block,
            "occupancy": f"{100 * r.occupancy:.0f}% ({r.limiter})",
            "claims": "ok" if not r.claim_failures() else "; ".join(r.claim_failures()),
        })
    return rows


COLUMNS = [
    ("variant", "rung", None), ("dtype", "dtype", None), ("kernel", "kernel", None),
    ("regs", "regs", None), ("spills", "spill B", None), ("stack", "stack B", None), ("smem", "smem B (static + dynamic)", None),
    ("ldg", "global loads (bits:count)", None), ("stg", "global stores", None),
    ("tensor_core", "MMA", None), ("block", "block", None), ("occupancy", "occupancy", None),
    ("claims", "SASS vs claim", None),
]
