"""CPU tests of the public API's logic and the command line (no GPU needed)."""
import json

import pytest
import torch

import kernelkit
from kernelkit import cli
from kernelkit.bench.ladder_run import parse_shape


def test_ops_and_ladders_are_data():
    assert "gelu" in kernelkit.ops()
    names = [v.name for v in kernelkit.ladder("gelu")]
    assert names[0] == "scalar" and names[-1] == "fast"
    for op in kernelkit.ops():
        ladder = kernelkit.ladder(op)
        assert len({v.name for v in ladder}) == len(ladder), f"{op}: duplicate rung names"
        assert sum(v.default for v in ladder) == 1
        for v in ladder:
            assert v.technique and v.dtypes
            assert callable(v.bytes_moved) and callable(v.flops), f"{op}/{v.name}: no cost model"
            for dt in v.dtypes:
                for params in kernelkit.get_op(op).param_combinations():
                    assert v.kernels(dt, **params), f"{op}/{v.name}/{dt}: no kernels"


def test_unknown_op_and_variant_errors():
    with pytest.raises(ValueError, match="unknown op"):
        kernelkit.ladder("nope")
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.get_op("gelu").variant("nope")


def test_gelu_rejects_bad_input_before_touching_a_gpu():
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        kernelkit.gelu(torch.randn(4))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        kernelkit.gelu([1.0, 2.0])


def test_gelu_cost_model():
    op = kernelkit.get_op("gelu")
    x = torch.empty(1000, dtype=torch.float16)
    assert op.bytes_moved(x) == 4000
    assert op.flops(x) > 0


@pytest.mark.parametrize("text,shape", [("2^28", (1 << 28,)), ("4096x4096", (4096, 4096)),
                                        ("16384x16384x4", (16384, 16384, 4)), ("1000", (1000,))])
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


def test_cli_ops_and_cache(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    assert cli.main(["ops"]) == 0
    assert "gelu" in capsys.readouterr().out
    assert cli.main(["cache", "info"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["path"] == str(tmp_path)
    assert cli.main(["cache", "clear"]) == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_cli_ladder_without_gpu_falls_back_to_static_analysis(capsys):
    pytest.importorskip("cuda.core")
    assert cli.main(["ladder", "gelu", "--dtype", "float16"]) == 0
    out = capsys.readouterr().out
    assert "No CUDA GPU" in out and "half2_x4" in out and "128b" in out


def test_cli_inspect_reports_every_rung(capsys):
    pytest.importorskip("cuda.core")
    assert cli.main(["inspect", "gelu", "--arch", "sm_80", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    for rung in ("scalar", "float2", "float4", "fast"):
        assert rung in out
    assert "half2" not in out  # fp32 only
