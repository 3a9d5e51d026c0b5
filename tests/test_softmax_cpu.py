"""softmax's configurations and rule without a GPU: the choices recorded from the tuple-configured
dispatcher, ``configs`` against the rule, the text round trip and the errors."""
import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction import softmax as sm  # noqa: E402
from kernelkit.ops.reduction._rows import config_text, parse_config  # noqa: E402

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
DTYPES = (F32, F16, BF16)
Tile, Loop = sm.SoftmaxTile, sm.Loop

# (rung, dtype, len, aligned, sm) -> (configuration, kernel) as the dispatcher launched them
CHOSEN = [
    ("fast", F32, 65536, True, 90, Tile(512, 8, 4), "kk::softmax_rows<float, 512, 8, 4, true>"),
    ("fast", F32, 65536, True, 80, Loop("online"), "kk::softmax_online<float, 512>"),
    ("fast", F16, 1000, False, 90, Tile(128, 1), "kk::softmax_rows<__half, 128, 1, 1, false>"),
    ("fast", F32, 1000, True, 80, Tile(32, 8), "kk::softmax_rows<float, 32, 8, 1, true>"),
    ("registers", F16, 65536, True, 90, Loop("online"), "kk::softmax_online<__half, 512>"),
    ("fast", BF16, 300000, True, 90, Loop("online"), "kk::softmax_online<__nv_bfloat16, 512>"),
    ("fast", BF16, 262144, True, 90, Tile(1024, 4, 8),
     "kk::softmax_rows<__nv_bfloat16, 1024, 4, 8, true>"),
    ("three_pass", F32, 1000, True, 90, Loop("three_pass"), "kk::softmax_three_pass<float, 512>"),
]


@pytest.mark.parametrize("rung,dtype,len_,aligned,sm_,want,name", CHOSEN)
def test_the_rule_chooses_what_the_dispatcher_chose(rung, dtype, len_, aligned, sm_, want, name):
    got = sm.config_for(rung, dtype, len_, sm=sm_)
    assert got == want and got.name(dtype, aligned) == name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rung", ["three_pass", "online", "registers", "fast"])
def test_configs_lists_exactly_what_the_rule_chooses(dtype, rung):
    lens = [1, 3, 100] + [2 ** k + d for k in range(5, 20) for d in (-1, 0, 1)]
    chosen = {sm.config_for(rung, dtype, n, sm=s) for n in lens for s in (80, 90)}
    assert chosen == set(sm.configs(dtype, rung))
    for cfg in chosen:
        assert parse_config(config_text(cfg), sm.CONFIG_CLASSES) == cfg


def test_the_fast_rung_lists_every_tile_in_both_forms_and_no_smem_rows():
    names = [k.name for k in kernelkit.ladder("softmax")[-1].kernels(F16)]
    assert len(names) == len(set(names)) == 2 * len(set(sm.FAST[8].values())) + 1
    assert not [n for n in names if "smem" in n]


def test_a_configuration_that_cannot_run_the_input_raises():
    Tile(1024, 8).check(F32, 32768, True, 80)
    with pytest.raises(ValueError, match="holds 32768 elements, the row has 32769"):
        Tile(1024, 8).check(F32, 32769, True, 90)
    with pytest.raises(ValueError, match="need sm_90"):
        Tile(512, 8, 4).check(F32, 65536, True, 80)
    for bad in (lambda: Tile(100, 4), lambda: Tile(32, 4, 2), lambda: Loop("fast")):
        with pytest.raises(ValueError):
            bad()


# ---- the lane ------------------------------------------------------------------------------------
def _recording_form(record):
    """A fake form(vec): runners that record (vec, rows, args) instead of launching."""
    def form(vec):
        record.append(("form", vec))
        return lambda rows, args: record.append((vec, rows, args))
    return form


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_lane_launches_what_the_checked_path_launches(dtype):
    """build_lane's lane on CPU tensors with a recording form: the runner of the checked path's alignment
    test (x and out 16-byte aligned, whole vectors), the checked path's arguments and output layout, each
    form asked for once; inputs it does not take fall through (None) before allocating anything."""
    from kernelkit.ops.reduction._rows import per_vec, vec_ok

    for len_ in (1, 3, 128, 129, 1000, 4096):
        record = []
        lane = sm.build_lane(dtype, len_, _recording_form(record))
        for rows, offset in ((1, 0), (7, 0), (7, 1), (33, 3), (2, per_vec(dtype))):
            x = torch.randn(rows * len_ + offset).to(dtype)[offset:].view(rows, len_)
            out = lane(x)
            assert out.shape == x.shape and out.dtype == dtype
            assert out.stride() == torch.empty(x.shape).stride()
            vec = vec_ok(len_, dtype, x.data_ptr(), out.data_ptr())
            assert record[-1] == (vec, rows, (x.data_ptr(), out.data_ptr(), rows, len_))
        assert sorted(r for r in record if r[0] == "form") == sorted(set(r for r in record if r[0] == "form"))
        assert lane(torch.randn(0, len_).to(dtype)) is None
        if len_ > 1:
            assert lane(torch.randn(len_, 4).to(dtype).t()) is None  # not contiguous
    size1 = torch.randn(1, 128).as_strided((1, 128), (1, 1))  # contiguous, odd stride on its size-1 dim
    assert sm.build_lane(F32, 128, _recording_form([]))(size1).stride() == (128, 1)


def test_cpu_tensors_make_no_lane():
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    with pytest.raises(ValueError, match="CUDA tensor"):
        sm.softmax(torch.randn(4, 128))
    assert not sm._lanes
