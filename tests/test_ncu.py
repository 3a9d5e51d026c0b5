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
