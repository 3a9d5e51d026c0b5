"""`explain` (kernelkit inspect matmul --shape): its words name the constraint, and its tile is the one
matmul's own dispatch launches on an sm_90 device (the device calls stubbed)."""
from __future__ import annotations

import pytest
import torch

from kernelkit.cli import main
from matmul_helpers import stub_sm90
from kernelkit.ops.gemm import _hopper as hop
from kernelkit.ops.gemm.dispatch import DeviceModel, explain

BF16, F16 = torch.bfloat16, torch.float16


def test_the_fallback_names_its_constraint():
    lines = explain("matmul", 4096, 4096, 4093, BF16)
    assert "8186 bytes" in lines[1] and lines[-1].startswith("best: mma")
    assert "6 bytes past a 16-byte boundary" in explain("matmul", 512, 512, 512, F16, offset=3)[1]
    assert "compute capability 9.0 only, not 8.0" in explain("linear", 512, 512, 512, BF16,
                                                            device=DeviceModel(80, 108, 166912, "an A100"))[1]
    assert explain("matmul", 64, 64, 64, torch.float32)[-1].startswith("best: simt_best")
    assert explain("matmul", 64, 64, 64, torch.float32, allow_tf32=True)[-1].startswith("best: mma")
    assert explain("matmul", 64, 64, 64, torch.float64)[-1].startswith("best: dmma")
    fp8 = explain("scaled_matmul", 4096, 4096, 4100, torch.float8_e4m3fn)
    assert "multiples of 16" in fp8[1]
    with pytest.raises(ValueError, match="at least 1"):
        explain("matmul", 0, 4, 4, BF16)


@pytest.fixture
def stubbed(monkeypatch):
    """matmul's body on CPU tensors for an sm_90 device of 132 SMs, launches recorded."""
    from kernelkit.ops.gemm import matmul as mm
    return mm, stub_sm90(monkeypatch)


@pytest.mark.parametrize("m,n,k,kmajor", [(4096, 4096, 4096, False), (1, 4096, 4096, True), (16, 4096, 14336, False),
                                          (128, 4096, 4096, True), (300, 257, 520, True), (16384, 1024, 64, False)])
def test_explain_matches_the_launch(stubbed, m, n, k, kmajor):
    mm, launched = stubbed
    a = torch.empty(m, k, dtype=BF16)
    b = torch.empty(n, k, dtype=BF16).t() if kmajor else torch.empty(k, n, dtype=BF16)
    mm._matmul_into(a, b, None, torch.empty(m, n, dtype=BF16), False, None, None)
    (name, args), = launched
    grid = args[0]
    said = explain("matmul", m, n, k, BF16, b_kmajor=kmajor)
    a_rows = hop.a_box_rows(True, m)  # A row-major: k-major, its box M rounded up to 8 rows below 128
    tile = hop.tile_for(m, n, 1, 132, hop.SM90_SHARED, k, a_rows)
    assert str(tile) in said[1]
    assert (f"A in boxes of {a_rows} rows" in said[1]) == (m <= 120)
    assert args[11] >> 8 & 0xFF == (a_rows // 8 if m <= 120 else 0)  # flags: the kernels read the box from it
    if tile.split > 1:  # best splits K on tma_wgmma
        assert said[-1] == "best: tma_wgmma (K split)"
        assert name.startswith("kk::mm_tma_wgmma<") and f", {tile.block_n}, {tile.stages}, " in name
        assert grid == (hop.cdiv(m, hop.BM) * hop.cdiv(n, tile.block_n), tile.split, 1)
    else:  # else the persistent rung: one block an SM at most
        pt = hop.persistent_tile(m, n, 1, 132, hop.SM90_SHARED)
        assert said[-1] == "best: persistent" and str(pt) in said[2]
        assert name.startswith("kk::mm_persistent<") and f", {pt.block_n}, {pt.stages}, " in name
        assert grid == (min(132, hop.cdiv(m, hop.BM) * hop.cdiv(n, pt.block_n)), 1, 1)


def test_explain_names_the_cluster_and_tma_store_plans():
    """The cluster rung's pairs of tiles along M, and whether tma_store can write a fresh C by the TMA (rows of
    N 16-bit elements start on 16 bytes where N is a multiple of 8)."""
    said = explain("matmul", 1000, 1024, 1024, BF16)
    assert said[3].startswith("cluster: the same tiles in pairs along M (") and "(32 pairs)" in said[3]
    assert said[4] == "tma_store: as persistent, C written by TMA stores"
    said = explain("matmul", 1000, 1001, 1024, BF16, b_kmajor=True)
    assert said[4].endswith("(not a fresh output of N = 1001: threads' stores)")


def test_explain_fused_linear_keeps_tma_wgmma(stubbed):
    """linear with a fused epilogue: best keeps tma_wgmma where a plain call takes the persistent rung."""
    mm, launched = stubbed
    x, w = torch.empty(4096, 1024, dtype=BF16), torch.empty(4096, 1024, dtype=BF16)
    mm._matmul_into(x, w.t(), None, torch.empty(4096, 4096, dtype=BF16), False, None, None, None, 3)
    assert launched[-1][0].startswith("kk::mm_tma_wgmma<") and launched[-1][0].endswith(", 3>")
    assert explain("linear", 4096, 4096, 1024, BF16, fused=True)[-1] == "best: tma_wgmma (fused epilogue)"
    assert explain("linear", 4096, 4096, 1024, BF16)[-1] == "best: persistent"
    assert main(["inspect", "linear", "--shape", "4096x4096x1024", "--fused"]) == 0
    assert main(["inspect", "matmul", "--shape", "64x64x64", "--fused"]) == 2


def test_explain_matches_the_fallback(stubbed):
    for a, b in ((torch.empty(256, 4093, dtype=BF16), torch.empty(4093, 256, dtype=BF16)),
                 (torch.empty(256 * 512 + 3, dtype=F16)[3:].view(256, 512), torch.empty(512, 256, dtype=F16))):
        reason = hop.tma_fallback_reason(a, b)
        said = explain("matmul", 256, 256, a.shape[1], a.dtype, offset=a.storage_offset())
        assert reason and said[1] == f"{', '.join(hop.RUNGS)}: cannot run it: {reason}"


def test_cli_prints_the_dispatch(capsys):
    assert main(["inspect", "matmul", "--shape", "4096x4096x4093"]) == 0
    out = capsys.readouterr().out
    assert "8186 bytes" in out and "best: mma" in out
    assert main(["inspect", "linear", "--shape", "1x4096x4096", "--dtype", "fp16"]) == 0
    out = capsys.readouterr().out
    assert "k-major" in out and "float16" in out and "K in" in out
    assert main(["inspect", "gelu", "--shape", "4x4x4"]) == 2
    assert "--shape explains" in capsys.readouterr().err
