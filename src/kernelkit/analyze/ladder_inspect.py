"""`kernelkit inspect <op>`: the static analysis of every rung, and the check of its SASS claims.

The kernels of a source are compiled several at a time (one NVRTC run and one disassembly a build),
the builds in parallel processes. A kernel's report joins its ptxas report (registers, spills), its
resource usage (shared memory, stack), the census of its SASS (global access widths, local-memory and
tensor-core instructions) and its theoretical occupancy at the block size the rung launches with.
The table shows each distinct kernel once, with the rungs and dtypes that launch it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable

import torch

from ..ladder import Kernel, Variant, get_op
from ..runtime import CompileError, compile_source
from ..warmup import default_jobs, run_parallel
from . import tools
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
    counts: tuple = ()  # (opcode prefix, count) of CENSUS found in the SASS

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
# the instructions a compute-bound kernel is made of: its math, and how operands reach it
CENSUS = ("FFMA", "DFMA", "HMMA", "IMMA", "DMMA", "LDSM", "LDGSTS", "LDS.128", "LDS.64")


def _census_counts(opcodes: dict) -> tuple:
    return tuple((p, n) for p in CENSUS
                 if (n := sum(c for op, c in opcodes.items() if op == p or op.startswith(p + "."))))


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


@dataclass(frozen=True)
class _Analysis:
    """What one compiled kernel shows: its mangled name, SASS census, resources and ptxas report."""

    mangled: str
    census: object
    resources: object
    ptxas: object


@dataclass(frozen=True)
class _Chunk:
    """Kernels of one source compiled together: one NVRTC run, one disassembly."""

    source: str
    arch: str
    names: tuple[str, ...]


MIN_CHUNK = 8  # kernels a build at least: each disassembly costs about 0.3 s of cuobjdump start-up


def _chunks(insts, arch: str, jobs: int) -> list[_Chunk]:
    """Each source's kernels in builds of at least MIN_CHUNK, as many as there are processes."""
    by_source: dict[tuple[str, str], list[str]] = {}
    for _v, _dt, _p, k in insts:
        names = by_source.setdefault((k.source, arch + k.arch_suffix), [])
        if k.name not in names:
            names.append(k.name)
    out = []
    for (source, build_arch), names in by_source.items():
        size = max(MIN_CHUNK, -(-len(names) // jobs))
        out += [_Chunk(source, build_arch, tuple(names[i:i + size])) for i in range(0, len(names), size)]
    return out


def _analyze(chunk: _Chunk) -> dict[str, _Analysis] | CompileError:
    """Compile a chunk (or find it on disk) and analyse each kernel; runs in a worker process.

    A compile error comes back as a value: CompileError's constructor does not survive pickling.
    """
    try:
        b = compile_source(chunk.source, chunk.names, chunk.arch)
    except CompileError as exc:
        return exc
    census, res, ptx = kernel_census(b.cubin), resource_usage(b.cubin), spills_from_log(b.log)
    out = {}
    for name in chunk.names:
        m = b.mangled(name)
        # their read-only mappings (mappingproxy) do not pickle: plain dicts cross to the parent process
        out[name] = _Analysis(m, replace(census[m], opcodes=dict(census[m].opcodes)),
                              replace(res[m], constant_banks=dict(res[m].constant_banks)), ptx.get(m))
    return out


def analyze_op(op_name: str, arch: str = "sm_90", dtypes: Iterable[torch.dtype] | None = None, *,
               variants: Iterable[str] | None = None, jobs: int | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[KernelReport]:
    """A report per (rung, dtype, kernel) of ``op_name`` compiled for ``arch``, the kernels it launches there
    (rungs that cannot be built here, ``Variant.unavailable()``, are left out).

    ``dtypes`` / ``variants`` (rung names) keep only those. The kernels of each source are compiled in
    ``jobs`` parallel processes (default: one a core), several kernels a build; ``progress(done, total)``
    counts kernels. Raises ToolNotFoundError before compiling anything when cuobjdump is missing.
    """
    tools.find_tool("cuobjdump")  # fail now, not after minutes of compiling
    op = get_op(op_name)
    wanted = set(variants or ())
    sm = int(arch[3:].rstrip("a"))
    rungs = [v for v in op.variants if (not wanted or v.name in wanted) and not v.unavailable()]
    insts = [i for i in _instances(rungs, tuple(dtypes or ()), op.param_combinations())
             if i[3].min_sm <= sm]  # kernels never launched on this arch are not held to claims there
    jobs = jobs or default_jobs(len(insts))
    chunks = _chunks(insts, arch, jobs)
    found: dict[tuple[str, str], _Analysis] = {}
    for chunk, result in zip(chunks, run_parallel(_analyze, chunks, jobs, progress, [len(c.names) for c in chunks])):
        if isinstance(result, CompileError):
            raise CompileError(result.source, result.arch, result.log)
        found.update({(chunk.source, chunk.arch, n): a for n, a in result.items()})
    reports = []
    for v, dt, params, k in insts:
        a = found[(k.source, arch + k.arch_suffix, k.name)]
        c, r, p = a.census, a.resources, a.ptxas
        regs = p.registers if p and p.registers else r.registers
        occ = theoretical_occupancy(arch, k.block, max(regs, 1), r.shared + k.dyn_shared)
        reports.append(KernelReport(
            variant=v.name, dtype=dt, params=params, kernel=k, mangled=a.mangled, registers=regs,
            spill_bytes=(p.spill_stores + p.spill_loads) if p else 0, stack=r.stack, shared=r.shared,
            load_widths=dict(c.global_load_widths), store_widths=dict(c.global_store_widths),
            local_ops=c.local_memory_ops,
            tensor_core_ops={o: n for o, n in c.opcodes.items() if o.split(".")[0] in _TENSOR_CORE},
            occupancy=occ.fraction, limiter=occ.limiter, opcodes=frozenset(c.opcodes),
            counts=_census_counts(c.opcodes),
        ))
    return reports


def _widths(w: dict[int, int]) -> str:
    return " ".join(f"{bits}b:{n}" for bits, n in sorted(w.items())) or "-"


_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "uint8": "u8", "int8": "i8",
          "int16": "i16", "int32": "i32", "int64": "i64", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2", "complex64": "c64", "complex128": "c128"}


def short_dtype(dtype: torch.dtype) -> str:
    """float32 -> f32, bfloat16 -> bf16, uint8 -> u8 (the table's "used by" cells)."""
    name = str(dtype).replace("torch.", "")
    return _SHORT.get(name, name)


def _dtype_set(mine: list[torch.dtype], rung: list[torch.dtype]) -> str:
    """The dtypes of a cell: by element size where they are every dtype of the rung of those sizes and
    that is shorter ("1/2/4-byte"), else by name ("f16 bf16")."""
    sizes = sorted({d.itemsize for d in mine})
    if len(sizes) < len(mine) and set(mine) == {d for d in rung if d.itemsize in sizes}:
        return "/".join(map(str, sizes)) + "-byte"
    return " ".join(map(short_dtype, mine))


def _used_by(op, uses: dict[str, list[torch.dtype]], dtypes) -> str:
    """The rungs that launch a kernel, in ladder order, each with the dtypes it launches it for unless
    those are all it takes: 'fast', 'fast (f16 bf16)', 'naive, tiled (1/2-byte)'."""
    cells: dict[str, list[str]] = {}  # dtype text -> rungs
    for v in op.variants:
        if v.name in uses:
            shown = [d for d in v.dtypes if not dtypes or d in dtypes]
            mine = uses[v.name]
            cells.setdefault("" if set(mine) == set(shown) else _dtype_set(mine, shown), []).append(v.name)
    return "; ".join(", ".join(rungs) + (f" ({text})" if text else "") for text, rungs in cells.items())


def inspect_op(op_name: str, arch: str = "sm_90", dtypes=None, variants=None, jobs=None, progress=None) -> list[dict]:
    """Table rows for `kernelkit inspect`: one a distinct kernel (its record: name, block, claims), in ladder
    order, with the rungs and dtypes that launch it ("used_by")."""
    op = get_op(op_name)
    dtypes = tuple(dtypes or ())
    groups: dict[Kernel, tuple[KernelReport, dict[str, list[torch.dtype]]]] = {}
    for r in analyze_op(op_name, arch, dtypes, variants=variants, jobs=jobs, progress=progress):
        first, uses = groups.setdefault(r.kernel, (r, {}))
        if r.dtype not in uses.setdefault(r.variant, []):
            uses[r.variant].append(r.dtype)
    rows = []
    for r, uses in groups.values():
        tc = sum(r.tensor_core_ops.values())
        rows.append({
            "kernel": r.kernel.name.replace("kk::", "") + (f" [{arch}{r.kernel.arch_suffix}]"
                                                          if r.kernel.arch_suffix else ""),
            "used_by": _used_by(op, uses, dtypes),
            "regs": r.registers,
            "spills": r.spill_bytes,
            "stack": r.stack,
            "smem": r.shared + r.kernel.dyn_shared,
            "ldg": _widths(r.load_widths),
            "stg": _widths(r.store_widths),
            "tensor_core": tc or "-",
            "block": r.kernel.block,
            "occupancy": f"{100 * r.occupancy:.0f}%",
            "limiter": r.limiter,
            "claims": "ok" if not r.claim_failures() else "; ".join(r.claim_failures()),
        })
        if op.compute_bound:
            rows[-1]["census"] = " ".join(f"{p}:{n}" for p, n in r.counts) or "-"
            rows[-1]["banks"] = (op.bank_model(r.kernel.name) if op.bank_model else None) or "-"
    for v in op.variants:  # a rung whose headers are missing here: one row saying why
        why = (not variants or v.name in variants) and v.unavailable()
        if why and (not dtypes or set(dtypes) & set(v.dtypes)):
            rows.append({"kernel": "-", "used_by": v.name, "claims": f"unavailable: {why}"})
    return rows


# (key, header, format); `kernelkit inspect` shows those not in WIDE_ONLY unless --wide
COLUMNS = [
    ("kernel", "kernel", None), ("used_by", "used by", None),
    ("regs", "regs", None), ("spills", "spill B", None), ("stack", "stack B", None), ("smem", "smem B", None),
    ("ldg", "loads", None), ("stg", "stores", None), ("tensor_core", "MMA", None), ("block", "block", None),
    ("occupancy", "occ.", None), ("limiter", "limited by", None), ("claims", "claims", None),
]
WIDE_ONLY = frozenset({"stack", "block", "limiter"})
# compute-bound ops (matmul): the instruction census and the static bank-conflict model in place of the
# global access widths
COMPUTE_COLUMNS = [
    ("kernel", "kernel", None), ("used_by", "used by", None),
    ("regs", "regs", None), ("spills", "spill B", None), ("smem", "smem B", None),
    ("census", "SASS census (static counts)", None), ("banks", "smem wavefronts / ideal (static model)", None),
    ("ldg", "loads", None), ("stg", "stores", None), ("block", "block", None),
    ("occupancy", "occ.", None), ("claims", "claims", None),
]
COMPUTE_WIDE_ONLY = frozenset({"ldg", "stg", "block"})
COMPUTE_CAPTION = ("census: instructions in the SASS (static, not executed counts); smem wavefronts / ideal: "
                   "one warp's fragment reads and cp.async writes of a K stage replayed through the kernel's "
                   "swizzle on CPU, 1.00 conflict-free (`kernelkit ncu matmul` measures the same on a GPU); "
                   "used by: the rungs (and dtypes) that launch it; claims: the SASS against the rung's claims")
CAPTION = ("used by: the rungs (and dtypes) that launch it; loads/stores: global memory instructions, bits:count; "
           "occ.: theoretical occupancy at the launch's block size; claims: the SASS against the rung's claims")
