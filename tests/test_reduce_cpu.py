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


# ---- the lane ------------------------------------------------------------------------------------
def test_dim_as_a_key_takes_only_what_the_checked_path_takes_as_such():
    """dim as a key of the call cache and the lanes: None, plain ints and tuples or lists of plain ints;
    not bools, floats or numpy ints (equal and hashing equal to ints, but refused by the checked path)."""
    import numpy as np

    from kernelkit.ops.reduction.reduce import dim_as_key

    assert dim_as_key(None) is None and dim_as_key(1) == 1 and dim_as_key(-1) == -1
    assert dim_as_key((0, 2)) == (0, 2) and dim_as_key([0, 2]) == (0, 2) and dim_as_key(()) == ()
    for bad in (True, 1.0, np.int64(1), (1, True), [0, 1.0], "0", {0}):
        assert dim_as_key(bad) is False, bad


def test_the_result_template_gives_the_checked_paths_layout():
    """empty_like of the lane's template: the shape, dtype and strides of x.new_empty(shape), for shapes
    with size-1 and size-0 dims too."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction.reduce import result_template

    x = torch.randn(3)
    for dtype in DTYPES:
        for shape in ((), (1,), (5,), (4, 1, 8), (1, 1), (1, 3), (3, 1), (0,), (3, 0, 2), (2, 3, 4), (1, 1, 2)):
            got = torch.empty_like(result_template(dtype, x.device, shape))
            want = x.to(dtype).new_empty(shape)
            assert (got.shape, got.dtype, got.stride()) == (want.shape, want.dtype, want.stride()), shape
    clear_plans()


def test_cpu_tensors_make_no_lane():
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import reduce

    clear_plans()
    for op in ("sum", "mean", "amax", "amin"):
        with pytest.raises(ValueError, match="CUDA tensor"):
            getattr(reduce, op)(torch.randn(4096))
    assert not reduce._lanes
