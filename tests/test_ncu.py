"""Nsight Compute wrapper: CSV parsing on CPU; on a GPU, sectors per request prove the access widths."""
import shutil

import pytest
import torch

from kernelkit.analyze.ncu import derived, parse_csv

CSV = '''==PROF== Connected to process
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","gpu__time_duration.sum","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
"","","","","","","","nsecond","",""
"0","123","python3","vm","unary_scalar","1","7","10,240","32,768","131,072"
'''


def test_parse_csv_and_derived():
    res = parse_csv(CSV)
    m = res["unary_scalar"]
    assert m["gpu__time_duration.sum"] == 10240
    assert derived(m)["sectors_per_request"] == 4.0


def test_a_rung_of_two_kernels_adds_its_counts_and_keeps_its_longest_kernels_rates():
    from kernelkit.analyze.ncu import LADDER_ROWS, merge_kernels

    m = merge_kernels({"a": {"gpu__time_duration.sum": 1000, "sm__warps_active.avg.pct_of_peak_sustained_active": 50,
                             "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 10,
                             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 40},
                       "b": {"gpu__time_duration.sum": 3000, "sm__warps_active.avg.pct_of_peak_sustained_active": 80,
                             "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 30,
                             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 480}})
    assert m["gpu__time_duration.sum"] == 4000 and m["sm__warps_active.avg.pct_of_peak_sustained_active"] == 80
    rows = {name: read(m) for name, read in LADDER_ROWS}
    assert rows["time (us)"] == 4.0 and rows["sectors per request"] == 13.0 and rows["L2 hit rate (%)"] is None


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs ncu")
def test_profile_puts_every_rung_side_by_side():
    from kernelkit.analyze.ncu import profile_ladder

    rows = {r["metric"]: r for r in profile_ladder("gelu", ["scalar", "float4"], (1 << 20,), torch.float32)}
    assert rows["sectors per request"]["scalar"] == pytest.approx(4, rel=0.05)
    assert rows["sectors per request"]["float4"] == pytest.approx(16, rel=0.05)
    assert rows["global load requests"]["scalar"] > 3 * rows["global load requests"]["float4"]
    assert 0 <= rows["L2 hit rate (%)"]["scalar"] <= 100 and rows["achieved occupancy (%)"]["float4"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs ncu")
def test_sectors_per_request_match_access_width():
    from kernelkit.analyze.ncu import profile

    spr = {}
    for rung in ("scalar", "float4"):
        res = profile("gelu", rung, (1 << 20,), torch.float32)
        (metrics,) = res.values()
        spr[rung] = derived(metrics)["sectors_per_request"]
    assert spr["scalar"] == pytest.approx(4, rel=0.05)  # 32 lanes x 4 B = 4 sectors of 32 B
    assert spr["float4"] == pytest.approx(16, rel=0.05)  # 32 lanes x 16 B = 16 sectors
