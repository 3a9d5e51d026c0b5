"""sum, mean, amax, amin on the CPU: the configuration surface and the instantiations each rung lists."""
import pytest
import torch

import kernelkit
from kernelkit.ops._shared.cxx import CXX_TYPE
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
    """The rule's two reduce_fast shapes, the warp-per-row kernel and the column kernels, each once per
    result type: the input's, and fp32 for sum and mean of 16-bit inputs (their dtype= argument)."""
    names = [k.name for k in kernelkit.get_op(op).variant("fast").kernels(dtype)]
    assert len(names) == len(set(names))
    wide = op in ("sum", "mean") and dtype != torch.float32
    touts = (CXX_TYPE[dtype], "float") if wide else (CXX_TYPE[dtype],)
    for t in touts:
        for cfg in (FULL, ROWS):
            assert sum(f"reduce_fast<{CXX_TYPE[dtype]}, {t}," in n and n.endswith(f", {cfg.block}, {cfg.unroll}>")
                       for n in names) == 1
        assert sum(f"reduce_warp_rows<{CXX_TYPE[dtype]}, {t}," in n for n in names) == 1
    # the column kernel: 16-byte loads or not, once per result type (its split rows finish in one launch)
    assert sum("reduce_cols" in n for n in names) == 2 * len(touts)
    finish = [n for n in kernelkit.get_op(op).variant("vector").kernels(dtype) if "reduce_finish" in n.name]
    assert len(finish) == len(touts)
    for v in kernelkit.ladder(op):
        assert v.kernels(dtype), v.name


@pytest.mark.parametrize("op", ("sum", "mean"))
def test_dtype_argument_is_checked_before_anything_runs(op):
    """dtype=, as torch's: a float dtype; anything else raises TypeError naming the op and what is allowed
    (checked before x, so a CPU tensor shows it too)."""
    fn = getattr(kernelkit, op)
    x = torch.randn(8)
    for bad in (torch.float64, torch.int32, torch.bool, torch.complex64):
        with pytest.raises(TypeError, match=rf"{op}: dtype must be float32, float16 or bfloat16 .*got {str(bad)[6:]}"):
            fn(x, dtype=bad)
    for bad in ("float32", 32, float):
        with pytest.raises(TypeError, match=rf"{op}: dtype must be a torch.dtype or None, got"):
            fn(x, dtype=bad)
    for good in DTYPES:  # accepted: the next check is x's (a CPU tensor)
        with pytest.raises(ValueError, match="CUDA tensor"):
            fn(x, dtype=good)
    with pytest.raises(TypeError, match="dtype"):
        kernelkit.amax(torch.randn(8), dtype=torch.float32)  # torch.amax takes no dtype either


def test_reduction_signatures_follow_torch():
    import inspect

    for op in ("sum", "mean"):
        params = inspect.signature(getattr(kernelkit, op)).parameters
        assert list(params)[:3] == ["x", "dim", "keepdim"] and params["dtype"].kind is inspect.Parameter.KEYWORD_ONLY
    for op in ("amax", "amin"):
        assert "dtype" not in inspect.signature(getattr(kernelkit, op)).parameters


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


def test_column_split_fills_one_wave():
    """A column reduction splits its rows over the most blocks that keep the grid within one wave of
    resident blocks, each split at least COL_MIN_ROWS rows; a grid of a wave or more is not split."""
    from kernelkit.ops.reduction.reduce import COL_MIN_ROWS, col_split
    wave = 132 * 8
    assert col_split(8192, 64, wave) == 16  # 8192 x 8192 fp32 over dim 0: 64 column blocks of 128 columns
    assert col_split(8192, 32, wave) == 33  # the 16-bit one: 32 column blocks of 256
    for R, tiles in ((8192, 64), (8192, 32), (1000003, 4), (4097, 128), (197, 384), (100, 3), (10**6, 1)):
        k = col_split(R, tiles, wave)
        assert k * tiles <= wave and (k == 1 or R // k >= COL_MIN_ROWS)
        assert k == 1 or (k + 1) * tiles > wave or R // (k + 1) < COL_MIN_ROWS  # no more blocks would fit
    assert col_split(8192, wave, wave) == col_split(8192, 5 * wave + 1, wave) == 1
    assert col_split(100, 3, wave) == 1  # too few rows to split
