"""norm_grid (csrc/norm_grid.cuh, ops/_grid.py): rows shared by the whole grid, statistics meeting in global
memory. Every dtype, lengths that leave most CTAs' slices empty or fill the largest configuration, every
weight/bias combination, more rows than one launch takes; the same bits launch after launch, on a second
stream and from a CUDA graph; the exchange buffers as every launch must leave them."""
import sys

import pytest
import torch

import kernelkit
from kernelkit import reference
from gpu_helpers import assert_close, poisoned_like, random_input
from test_norm_gpu import _assert_graph_replays_give, _check_weight_bias_combinations

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@pytest.fixture
def grid_everywhere(monkeypatch):
    """kernelkit.ops.norm with every aligned row that fits norm_grid taking it (both ops, every dtype)."""
    mod = sys.modules["kernelkit.ops.norm"]
    monkeypatch.setattr(mod, "GRID_FROM", {op: {4: 0, 8: 0} for op in ("layer_norm", "rms_norm")})
    mod._plans.clear()
    yield mod
    mod._plans.clear()


def _grid_plans(mod, len_):
    return {plan[1] and plan[1][-1] for key, plan in mod._plans.items() if key[3] == len_}


def _assert_buffers_as_found() -> None:
    """Every stream's exchange buffers as the next launch needs them: every slot empty, and the statistics
    words of the set the next launch uses (gen & 1)."""
    from kernelkit.ops import _grid

    torch.cuda.synchronize()
    assert _grid._buffers, "no grid launch ran"
    for (partials, stats, gen), _ptrs in _grid._buffers.values():
        assert int(gen.item()) > 0
        assert bool((partials == _grid.EMPTY).all()) and bool((stats[int(gen.item()) & 1] == _grid.EMPTY).all())


@pytest.mark.parametrize("dtype", DTYPES)
def test_grid_rows_every_length(dtype, grid_everywhere):
    """Lengths of a few vectors (most CTAs hold no slice), around one vector a CTA, and filling the two
    configurations; 1 to 300 rows; a mean 20x the spread."""
    from kernelkit.ops import _grid

    n = 128 // torch.finfo(dtype).bits  # elements a vector
    ctas = _grid.ctas(0)
    longest = 32 * max(_grid.CONFIGS) * ctas * n  # CONFIGS' keys: vectors a lane
    for rows, len_ in ((3, 2 * n), (17, 1000 // n * n), (1, ctas * n), (300, 4096), (40, 32768 + n), (20, longest)):
        x = random_input(rows * len_, dtype).view(rows, len_) * 3 + 20
        _check_weight_bias_combinations(x, len_, dtype, f"grid rows {rows}x{len_}")
        assert _grid_plans(grid_everywhere, len_) == {"grid"}, (len_, _grid_plans(grid_everywhere, len_))
    # too long for any configuration, or not whole vectors: another kernel, still right
    for len_ in (longest + n, 4096 + 1):
        x = random_input(3 * len_, dtype).view(3, len_)
        got = kernelkit.layer_norm(x, (len_,), out=poisoned_like(x))
        assert_close(got, reference.layer_norm(x, (len_,)), dtype, f"past the grid {len_}")
        assert "grid" not in _grid_plans(grid_everywhere, len_)
    _assert_buffers_as_found()


def test_grid_rows_past_one_launch(grid_everywhere):
    """More rows than a launch's buffers hold (ops/_grid.MAX_ROWS): one launch per MAX_ROWS rows."""
    from kernelkit.ops import _grid

    rows, len_, dtype = _grid.MAX_ROWS + 5, 2048, torch.float32
    x = random_input(rows * len_, dtype).view(rows, len_) + 0.5
    w, b = random_input(len_, dtype), random_input(len_, dtype)
    got = kernelkit.layer_norm(x, (len_,), w, b, out=poisoned_like(x))
    assert_close(got, reference.layer_norm(x, (len_,), w, b), dtype, "grid rows past a launch")
    _assert_buffers_as_found()


@pytest.mark.parametrize("op", ("layer_norm", "rms_norm"))
def test_grid_rows_same_bits_any_stream_and_graph(op, grid_everywhere):
    """Whichever CTA combines a row, its bits are fixed: the same output launch after launch, on a second
    stream (buffers of its own) and replayed from a CUDA graph; the buffers end as they started."""
    rows, len_, dtype = 257, 65536, torch.float32
    x = random_input(rows * len_, dtype).view(rows, len_) * 2 + 5
    w, b = random_input(len_, dtype), random_input(len_, dtype)

    def run(out):
        if op == "layer_norm":
            kernelkit.layer_norm(x, (len_,), w, b, out=out)
        else:
            kernelkit.rms_norm(x, (len_,), w, out=out)

    want = poisoned_like(x)
    run(want)
    ref = reference.layer_norm(x, (len_,), w, b) if op == "layer_norm" else reference.rms_norm(x, (len_,), w)
    assert_close(want, ref, dtype, f"grid {op}")
    assert _grid_plans(grid_everywhere, len_) == {"grid"}
    for _ in range(3):
        out = poisoned_like(x)
        run(out)
        assert torch.equal(out, want)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = poisoned_like(x)
        run(out)
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(out, want)
    _assert_graph_replays_give(want, run, f"grid {op}")
    _assert_buffers_as_found()


def test_grid_rows_default_for_fp32_64k_layer_norm():
    """The default dispatch sends fp32 layer_norm rows of 64K to norm_grid where they fit (GRID_FROM) and
    rms_norm's elsewhere."""
    from kernelkit.ops import _grid

    mod = sys.modules["kernelkit.ops.norm"]
    mod._plans.clear()
    if _grid.config_for(torch.float32, 65536, _grid.ctas(0)) is None:
        pytest.skip("too few SMs for 64K fp32 rows on the grid")
    x = random_input(130 * 65536, torch.float32).view(130, 65536)
    _check_weight_bias_combinations(x, 65536, torch.float32, "default grid")
    plans = {key[5]: plan[1][-1] for key, plan in mod._plans.items() if key[3] == 65536}
    assert plans[False] == "grid" and plans[True] != "grid", plans
    mod._plans.clear()
