"""sum, mean, amax, amin on the CPU: the configuration surface and the instantiations each rung lists."""
import pytest
import torch

import kernelkit
from kernelkit.ops.reduction.reduce import FULL, ROWS, ReduceConfig

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def test_reduce_config_validates_its_fields():
    assert ReduceConfig(32, 1, 1) and ReduceConfig(1024, 16, 64)
    for bad in ((96, 2, 2), (2048, 2, 2), (16, 2, 2)):
        with pytest.raises(ValueError, match="power of two"):
            ReduceConfig(*bad)
    with pytest.raises(ValueError, match="unroll"):
        ReduceConfig(256, 17, 2)
    with pytest.raises(ValueError, match="blocks_per_sm"):
        ReduceConfig(256, 2, 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", ("sum", "mean", "amax", "amin"))
def test_the_fast_rung_lists_the_launches_its_rules_choose(op, dtype):
    """The rule's two reduce_fast shapes, the warp-per-row kernel and the column kernels, each once."""
    names = [k.name for k in kernelkit.get_op(op).variant("fast").kernels(dtype)]
    assert len(names) == len(set(names))
    for cfg in (FULL, ROWS):
        assert sum("reduce_fast<" in n and n.endswith(f", {cfg.block}, {cfg.unroll}>") for n in names) == 1
    assert sum("reduce_warp_rows" in n for n in names) == 1
    # 16-bit: (input, result, partials) x (16-byte loads or not); fp32's partials are its input type
    assert sum("reduce_cols" in n for n in names) == (2 if dtype == torch.float32 else 6)
    for v in kernelkit.ladder(op):
        assert v.kernels(dtype), v.name
