"""Nsight Compute metrics of one rung (`kernelkit ncu`) or of every rung side by side (`kernelkit profile`).

ncu profiles a child process (``python -m kernelkit.analyze.ncu_target``) that builds the op's
benchmark input, runs the rung once to compile and load it, then once more under the profiler;
only the rung's own kernels are profiled (``--kernel-name regex``), and only that second call.
"""
from __future__ import annotations

import csv
import glob
import io
import re
import subprocess
import sys

from .tools import ToolNotFoundError, find_tool

# What the ladders are argued with: DRAM traffic and throughput, sectors per request
# (4 for 32-bit accesses, 16 for 128-bit), shared-memory bank conflicts, achieved occupancy.
DEFAULT_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
)

PERMISSION_HINT = ("ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): run it as root, or let "
                   "every user profile (the nvidia driver option NVreg_RestrictProfilingToAdminUsers=0)")


class ProfilerError(RuntimeError):
    """ncu ran but could not profile: ``hint`` says what to do (one line)."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


def find_ncu() -> str:
    """The path of ncu (tools.find_tool: cuda.pathfinder, /usr/local/cuda/bin, PATH), else the newest
    standalone Nsight Compute under /opt/nvidia/nsight-compute. Raises ToolNotFoundError."""
    standalone = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)  # newest version first
    try:
        return find_tool("ncu")
    except ToolNotFoundError:
        if standalone:
            return standalone[0]
        raise


def _kernel_regex(op_name: str, variant: str, dtype) -> str:
    from ..ladder import get_op

    op = get_op(op_name)
    v = op.variant(variant)
    bases = set()
    for params in op.param_combinations():
        for k in v.kernels(dtype, **params):
            bases.add(re.sub(r"<.*", "", k.name).split("::")[-1])  # kk::unary_fast<...> -> unary_fast
    return "regex:^(" + "|".join(sorted(bases)) + ")$"


def parse_csv(text: str) -> dict[str, dict[str, float]]:
    """ncu --csv --page raw output -> {kernel name: {metric: value}} (the last launch of each name)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return {}
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, body = rows[0], rows[1:]
    name_col = header.index("Kernel Name")
    out: dict[str, dict[str, float]] = {}
    for row in body:
        if len(row) != len(header) or not row[0].strip().isdigit():
            continue  # the units row
        metrics = {}
        for h, val in zip(header, row):
            if "__" in h:
                try:
                    metrics[h] = float(val.replace(",", ""))
                except ValueError:
                    pass
        out[row[name_col]] = metrics
    return out


def profile(op_name: str, variant: str, shape: tuple[int, ...], dtype, metrics=DEFAULT_METRICS,
            params: dict | None = None, timeout: float = 300) -> dict[str, dict[str, float]]:
    """Metrics per kernel for one call of ``variant`` of ``op_name`` on the op's example input."""
    dtype_name = str(dtype).replace("torch.", "")
    cmd = [find_ncu(), "--csv", "--page", "raw", "--metrics", ",".join(metrics),
           "--kernel-name", _kernel_regex(op_name, variant, dtype), "--launch-skip", "1", "--launch-count", "1",
           sys.executable, "-m", "kernelkit.analyze.ncu_target", op_name, variant, "x".join(map(str, shape)),
           dtype_name]
    for k, v in (params or {}).items():
        cmd.append(f"{k}={v}")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if "ERR_NVGPUCTRPERM" in r.stdout + r.stderr:
        raise ProfilerError("ncu lacks permission to read the GPU's counters", PERMISSION_HINT)
    if r.returncode != 0:
        raise ProfilerError(f"ncu failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    result = parse_csv(r.stdout)
    if not result:
        raise ProfilerError(f"ncu profiled no kernel of {op_name}/{variant}:\n{r.stdout[-2000:]}")
    return result


# The side-by-side table of ``profile_ladder``: (row name, how to read it from a rung's merged metrics).
LADDER_ROWS = (
    ("time (us)", lambda m: m.get("gpu__time_duration.sum", 0) / 1e3),
    ("global load requests", lambda m: m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")),
    ("sectors per request", lambda m: derived(m).get("sectors_per_request")),
    ("L1 hit rate (%)", lambda m: m.get("l1tex__t_sector_hit_rate.pct")),
    ("L2 hit rate (%)", lambda m: m.get("lts__t_sector_hit_rate.pct")),
    ("achieved occupancy (%)", lambda m: m.get("sm__warps_active.avg.pct_of_peak_sustained_active")),
    ("DRAM throughput (% of peak)", lambda m: m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed")),
    ("DRAM GB/s", lambda m: derived(m).get("dram_gbs")),
    ("shared load bank conflicts", lambda m: m.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")),
    ("shared store bank conflicts", lambda m: m.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")),
    ("registers per thread", lambda m: m.get("launch__registers_per_thread")),
)


def merge_kernels(per_kernel: dict[str, dict[str, float]]) -> dict[str, float]:
    """One rung's metrics over its kernels (a rung may launch two): times, bytes, requests, sectors and
    conflicts add up; rates and occupancy are those of its longest kernel."""
    if len(per_kernel) == 1:
        return dict(next(iter(per_kernel.values())))
    longest = max(per_kernel.values(), key=lambda m: m.get("gpu__time_duration.sum", 0))
    out = dict(longest)
    for key in ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"):
        out[key] = sum(m.get(key, 0) for m in per_kernel.values())
    return out


def profile_ladder(op_name: str, rungs, shape: tuple[int, ...], dtype, params: dict | None = None,
                   progress=None) -> list[dict]:
    """Every rung's metrics on one input, as the rows of a side-by-side table: one row a metric
    (``LADDER_ROWS``), one column a rung. Each rung is its own ncu run of a child process."""
    merged = {}
    for rung in rungs:
        if progress:
            progress(rung)
        merged[rung] = merge_kernels(profile(op_name, rung, shape, dtype, params=params))
    return [{"metric": name, **{r: read(m) for r, m in merged.items()}} for name, read in LADDER_ROWS]


def derived(m: dict[str, float]) -> dict[str, float]:
    """The numbers the ladders are argued with, from raw metrics."""
    out = {}
    req = m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    if req:
        out["sectors_per_request"] = m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / req
    t = m.get("gpu__time_duration.sum")
    if t:
        out["dram_gbs"] = (m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)) / t
    return out
