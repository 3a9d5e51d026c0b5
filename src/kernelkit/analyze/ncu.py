"""Nsight Compute metrics of one rung on one input: `kernelkit ncu <op> --variant <rung>`.

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
)


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
    if r.returncode != 0:
        raise RuntimeError(f"ncu failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    result = parse_csv(r.stdout)
    if not result:
        raise RuntimeError(f"ncu profiled no kernel of {op_name}/{variant}:\n{r.stdout[-2000:]}")
    return result


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
