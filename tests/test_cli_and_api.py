"""CPU tests of the public API's logic (no GPU needed); the command line is in test_cli.py."""
import pytest
import torch

import kernelkit
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


def test_kind_variants_build_a_ladder_in_order():
    from kernelkit.ladder import kind_variants

    seen = []
    ladder = kind_variants((("slow", "one"), ("fast", "two")), lambda kind, dt: seen.append((kind, dt)) or (kind,),
                           dtypes=(torch.float16,))
    assert [(v.name, v.technique, v.default, v.params) for v in ladder] == [
        ("slow", "one", False, {"kind": "slow"}), ("fast", "two", True, {"kind": "fast"})]
    assert ladder[0].kernels(torch.float16) == ("slow",) and ladder[1].kernels(torch.float16, extra=1) == ("fast",)
    assert seen == [("slow", torch.float16), ("fast", torch.float16)]  # each rung asks for its own kind
    assert [v.default for v in kind_variants((("a", "x"), ("b", "y")), lambda k, d: (), default="a")] == [True, False]


def test_output_for_allocates_or_checks():
    from kernelkit.ops._shared.checks import output_for

    x = torch.randn(3, 4).t()  # non-contiguous: the fresh output is contiguous all the same
    fresh = output_for(None, x, "op")
    assert fresh.shape == x.shape and fresh.dtype == x.dtype and fresh.is_contiguous()
    given = torch.empty(4, 3)
    assert output_for(given, x, "op") is given
    with pytest.raises(ValueError, match="op: out has shape"):
        output_for(torch.empty(3, 4), x, "op")
    with pytest.raises(TypeError, match="op: out has dtype"):
        output_for(torch.empty(4, 3, dtype=torch.float16), x, "op")
    with pytest.raises(TypeError, match="out must be a torch.Tensor"):
        output_for([0.0], x, "op")


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
