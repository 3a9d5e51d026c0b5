"""What softmax and the norms share: row-in-registers configurations, kernel loading, cluster launch.

A row kernel (softmax_rows, norm_rows) is instantiated per configuration ``(group, vecs, cluster)``:
``group`` threads (a warp slice when <= 32, else a whole CTA) hold ``vecs`` 16-byte vectors each, and
``cluster`` CTAs (sm_90 thread-block clusters) split one row. Its capacity is
group * vecs * (16 / element size) * cluster elements; a row uses the smallest configuration that
holds it. Each family (softmax.py, norm.py) has its tables, sized so that no instantiation spills.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...ladder import Kernel
from ...runtime import allow_shared, get_kernel, launch, resident_blocks, stream_handle
from .._shared.launch_rules import compute_capability
from .._shared.cxx import CXX_TYPE

ROW_BLOCK = 128  # the block size of kernels packing several rows per block (group <= 32)


def per_vec(dtype: torch.dtype) -> int:
    return 128 // torch.finfo(dtype).bits  # elements per 16-byte vector


@dataclass(frozen=True)
class RowTables:
    """A family's configurations by capacity, per elements-per-vector N (4: fp32, 8: 16-bit):
    ``fast`` with clusters (sm_90), ``fast_flat`` without (sm_80), ``registers`` (one CTA per row);
    ``spares``: measured alternatives of the fast rung, compiled and tested with it, launched when a
    tuning run puts them in the table."""

    fast: dict
    fast_flat: dict
    registers: dict
    spares: dict = None

    def table(self, kind: str, dtype: torch.dtype, dev: int) -> dict[int, tuple[int, int, int]]:
        """The configurations a rung uses on a device, by capacity."""
        n = per_vec(dtype)
        if kind == "registers":
            return self.registers[n]
        return self.fast[n] if has_clusters(dev) else self.fast_flat[n]

    def configs(self, kind: str, dtype: torch.dtype) -> list[tuple[int, int, int]]:
        """Every configuration a rung may launch on any device (what its kernels() lists)."""
        n = per_vec(dtype)
        if kind == "registers":
            return sorted(set(self.registers[n].values()))
        spares = set((self.spares or {}).get(n, ()))
        return sorted(set(self.fast[n].values()) | set(self.fast_flat[n].values()) | spares)


def flat(fast: dict, extra: dict) -> dict:
    """The cluster-free subset of a table plus replacements (sm_80)."""
    return {n: {c: g for c, g in t.items() if g[2] == 1} | extra.get(n, {}) for n, t in fast.items()}


def has_clusters(dev: int) -> bool:
    return compute_capability(dev) >= 90


def pick(len_: int, tab: dict[int, tuple[int, int, int]]):
    """The smallest configuration holding a row of ``len_`` elements, or None (too long)."""
    for cap in sorted(tab):
        if cap >= len_:
            return tab[cap]
    return None


def row_name(kernel: str, dtype: torch.dtype, cfg: tuple[int, int, int], vec: bool, *extra: bool) -> str:
    g, v, c = cfg
    flags = "".join(f", {'true' if f else 'false'}" for f in (vec, *extra))
    return f"kk::{kernel}<{CXX_TYPE[dtype]}, {g}, {v}, {c}{flags}>"


def row_kernels(source: str, kernel: str, tables: RowTables, kind: str, dtype: torch.dtype,
                extras=lambda cfg: [()], vec_only=frozenset(), spilling=frozenset()) -> tuple[Kernel, ...]:
    """Every instantiation a row rung can launch for ``dtype``: each configuration, aligned or not
    (and each set of the kernel's further flags that ``extras(cfg)`` lists). Configurations in
    ``vec_only`` serve aligned rows only (the element-by-element form would spill: unaligned rows
    take another configuration); those in ``spilling`` are allowed local memory (measured faster
    than every spill-free configuration for their rows)."""
    bits = torch.finfo(dtype).bits
    out = []
    for cfg in tables.configs(kind, dtype):
        block = cfg[0] if cfg[0] > 32 else ROW_BLOCK
        sm = 90 if cfg[2] > 1 else 0  # clusters: launched (and their claims held) on sm_90 only
        for extra in extras(cfg):
            out.append(Kernel(source, row_name(kernel, dtype, cfg, True, *extra), 128, 128, block=block,
                              spills=cfg in spilling, min_sm=sm))
            if cfg not in vec_only:
                out.append(Kernel(source, row_name(kernel, dtype, cfg, False, *extra), bits, bits, block=block,
                                  spills=cfg in spilling, min_sm=sm))
    return tuple(out)


def vec_ok(len_: int, dtype: torch.dtype, *tensors) -> bool:
    """Rows can move as 16-byte vectors: every pointer aligned and the row a whole number of vectors."""
    return len_ % per_vec(dtype) == 0 and all(t is None or t.data_ptr() % 16 == 0 for t in tensors)


def grid_for_rows(rows: int, cfg: tuple[int, int, int]) -> tuple[int, int, int]:
    """(blocks, block size, cluster) of a row launch."""
    g, _v, c = cfg
    if g <= 32:
        return -(-rows // (ROW_BLOCK // g)), ROW_BLOCK, 1
    return rows * c, g, c


class SourceNames:
    """All instantiations of one .cu file for one dtype across the ops that use it: one NVRTC run.

    Every rung loads its kernels with the same name list, so a process compiles each source once per
    (dtype, arch) instead of once per (op, rung, dtype); the three dtypes' builds can run in parallel.
    """

    def __init__(self, source: str, ops: tuple[str, ...]):
        self.source, self.ops = source, ops
        self._names: dict[torch.dtype, tuple[str, ...]] = {}

    def names(self, dtype: torch.dtype) -> tuple[str, ...]:
        got = self._names.get(dtype)
        if got is None:
            from ...ladder import get_op

            seen: dict[str, None] = {}
            for name in self.ops:
                op = get_op(name)
                for v in op.variants_for(dtype):
                    for params in op.param_combinations():
                        for k in v.kernels(dtype, **params):
                            if k.source == self.source:
                                seen[k.name] = None
            got = self._names[dtype] = tuple(seen)
        return got

    def load(self, name: str, dtype: torch.dtype, dev: int):
        return get_kernel(self.source, name, device_index=dev)


def launch_cluster(kernel, blocks: int, block: int, cluster: int, *args, dev: int, shmem: int = 0) -> None:
    """Launch with 1-D thread-block clusters of ``cluster`` CTAs (``blocks`` counts CTAs)."""
    launch(kernel, blocks, block, *args, shmem=shmem, cluster=cluster, name="row cluster kernel", device_index=dev)


# ---- rows kept whole in shared memory (csrc/smemrows.cuh: softmax_smem, norm_smem), sm_90 --------
# A configuration is (threads, 16-byte vectors a thread per chunk, chunks a slice, ring stages, CTAs per
# cluster): a CTA's slice of a row is `chunks` chunks of threads x vectors x 16 bytes, resident in a
# ring of `stages` chunk stages of dynamic shared memory that bulk copies fill as far ahead as it allows.
SMEM_ROWS_MAX_SHARED = 227 * 1024 - 1024  # the opt-in maximum a CTA, less the kernels' static shared memory


def smem_rows_capacity(dtype: torch.dtype, cfg: tuple[int, int, int, int, int]) -> int:
    """Elements of the longest row a configuration holds."""
    block, per, chunks, _stages, cluster = cfg
    return block * per * per_vec(dtype) * chunks * cluster


def smem_rows_shared(cfg: tuple[int, int, int, int, int]) -> int:
    """Bytes of dynamic shared memory (the ring) a configuration launches with."""
    block, per, _chunks, stages, _cluster = cfg
    return stages * block * per * 16


def smem_rows_configs(tables, spares: dict, dtype: torch.dtype) -> list[tuple]:
    """Every configuration of the tables (each {elements per vector: {capacity: cfg}}) and spares
    ({elements per vector: [cfg]}) for dtype: what a fast rung may launch, so compiles and tests."""
    n = per_vec(dtype)
    return sorted({c for t in tables for c in t[n].values()} | set(spares[n]))


def smem_rows_pick(table: dict, dtype: torch.dtype, len_: int, start: int):
    """The configuration of table (as above) for an aligned row longer than `start` elements, or None."""
    return pick(len_, table[per_vec(dtype)]) if len_ > start else None


def smem_rows_name(kernel: str, dtype: torch.dtype, cfg: tuple[int, int, int, int, int]) -> str:
    return f"kk::{kernel}<{CXX_TYPE[dtype]}, {', '.join(map(str, cfg))}>"


def smem_rows_kernels(source: str, kernel: str, dtype: torch.dtype, cfgs) -> tuple[Kernel, ...]:
    """The Kernel records of the shared-memory-resident row configurations (sm_90): the row arrives by
    bulk copies (UBLKCP; no global load of it to claim a width for) and leaves by 16-byte stores."""
    return tuple(Kernel(source, smem_rows_name(kernel, dtype, c), None, 128, block=c[0], min_sm=90,
                        sass=("UBLKCP",), dyn_shared=smem_rows_shared(c)) for c in sorted(set(cfgs)))


def launch_persistent(kernel, rows: int, block: int, cluster: int, shmem: int, *args, dev: int) -> None:
    """A persistent row launch: only the CTAs (whole clusters) that fit the device at once, at most a
    cluster per row, ``shmem`` bytes of dynamic shared memory each; the kernel loops over rows."""
    allow_shared(kernel, shmem, dev)
    blocks = min(rows * cluster, resident_blocks(kernel, block, cluster, dev, shmem))
    if cluster > 1:
        launch_cluster(kernel, blocks, block, cluster, *args, dev=dev, shmem=shmem)
    else:
        launch(kernel, blocks, block, *args, shmem=shmem, device_index=dev)


_handout: dict[tuple[int, int], tuple[torch.Tensor, int]] = {}


def handout_counters(dev: int) -> int:
    """The address of the counter that a kernel handing rows out at run time (RowHandout in
    csrc/reduce.cuh) uses on torch's current stream of ``dev``: zero before each launch, because the
    cluster that took the previous launch's last number set it back. One buffer a stream, so launches on
    different streams never share one (keyed by device too: every device's default stream is handle 0)."""
    key = (dev, stream_handle(dev))
    got = _handout.get(key)
    if got is None:
        buf = torch.zeros(1, dtype=torch.int32, device=f"cuda:{dev}")
        got = _handout[key] = (buf, buf.data_ptr())
    return got[1]


def launch_smem_rows(kernel, cfg: tuple[int, int, int, int, int], rows: int, *args, dev: int) -> None:
    """A persistent launch of a shared-memory-resident row kernel."""
    launch_persistent(kernel, rows, cfg[0], cfg[4], smem_rows_shared(cfg), *args, dev=dev)
