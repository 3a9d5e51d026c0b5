"""layer_norm and rms_norm on the GPU, the rows past a CTA: persistent cluster rows staging weight and bias,
rows handed out at run time (the same bits as a fixed stride, on any stream, from a CUDA graph, on a second GPU,
the counters zero after), the bulk-copy rings, rows kept in shared memory, the staged rung's persistent CTAs."""
import dataclasses

import pytest
import torch

import kernelkit
from kernelkit.ops.reduction._rows import ALIGNED, WINDOW
from kernelkit import reference
from kernelkit.ops._shared.launch_rules import compute_capability
from kernelkit.ops.reduction import norm
from kernelkit.ops.reduction._rows import handout_counters, per_vec
from gpu_helpers import assert_close, poisoned_like, random_input
from norm_helpers import DTYPES, _check_weight_bias_combinations, _chosen, _sm, call, ref

pytestmark = pytest.mark.gpu


def _need_sm90():
    if _sm() < 90:
        pytest.skip("clusters and bulk copies need sm_90")


@pytest.mark.parametrize("dtype", DTYPES)
def test_persistent_cluster_rows(dtype):
    """More cluster rows than resident CTAs: each CTA loops over rows with its staged weight slice."""
    for rows, len_ in ((300, 40000), (1500, 32768), (130, 65536), (1000, 65536), (77, 131072)):
        x = random_input(rows * len_, dtype).view(rows, len_) + 0.3
        w = random_input(len_, dtype)
        b = random_input(len_, dtype)
        assert_close(kernelkit.layer_norm(x, (len_,), w, b), reference.layer_norm(x, (len_,), w, b), dtype,
                     f"layer_norm {rows}x{len_}")
        assert_close(kernelkit.rms_norm(x, (len_,), w), reference.rms_norm(x, (len_,), w), dtype,
                     f"rms_norm {rows}x{len_}")
        assert_close(kernelkit.layer_norm(x, (len_,)), reference.layer_norm(x, (len_,)), dtype, "no weight")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cluster_rows(dtype):
    """Rows past a CTA on sm_90 run persistent clusters staging weight and bias and taking rows handed out
    (the rule's cluster_row): the default dispatch picks them, and they match float64 on more rows than
    resident clusters, aligned and misaligned (the window forms, weight and bias read shifted from their staged
    chunks), at lengths that fill the cluster, end a vector short, or leave its last CTAs empty, with every
    weight/bias combination and a mean 20x the spread; the same clusters dealt rows in a fixed stride give the
    same bits."""
    _need_sm90()
    for len_ in (65536, 40000, 16400, 131072):
        cfg = _chosen(dtype, len_)
        assert cfg.cluster > 1 and cfg.handout and cfg.staged, cfg
        part = cfg.capacity(dtype) // cfg.cluster
        for rows, n, offset in ((301, len_, 0), (150, len_ - 1, 1), (150, part + 3, 1), (77, len_ - per_vec(dtype), 0)):
            if n > cfg.capacity(dtype) - per_vec(dtype) * offset or n <= part:
                continue
            x = (torch.randn(rows * n + offset, device="cuda") * 0.5 + 10).to(dtype)[offset:].view(rows, n)
            _check_weight_bias_combinations(x, n, dtype, f"cluster rows {cfg} {rows}x{n} offset {offset}", cfg)
        x = random_input(301 * len_, dtype).view(301, len_)
        w, b = random_input(len_, dtype), random_input(len_, dtype)
        handed_out = kernelkit.layer_norm(x, (len_,), w, b)
        fixed = kernelkit.layer_norm(x, (len_,), w, b, config=dataclasses.replace(cfg, handout=False))
        assert torch.equal(handed_out, fixed), (dtype, len_)


@pytest.mark.parametrize("dtype", DTYPES)
def test_wide_cluster_rows(dtype):
    """Rows past 8 CTAs of 1024 threads (H100, H200) run in clusters of 16 (a non-portable size the kernel opts
    into): the default dispatch picks them at 300001 (and fp32 262144), aligned and misaligned, on more rows
    than resident clusters, with every weight/bias combination, into poisoned outputs against float64; the
    handed-out rows give the fixed stride's bits."""
    _need_sm90()
    for len_ in (300001, 262144):
        for rows, offset in ((37, 0), (20, 1)):
            form = ALIGNED if offset == 0 and len_ % per_vec(dtype) == 0 else None
            cfg = _chosen(dtype, len_, form) if form is not None else None
            if cfg is not None:
                assert cfg.cluster == 16 or len_ == 262144 and dtype != torch.float32, cfg
            x = (torch.randn(rows * len_ + offset, device="cuda") * 0.5 + 10).to(dtype)[offset:].view(rows, len_)
            _check_weight_bias_combinations(x, len_, dtype, f"wide cluster rows {rows}x{len_} offset {offset}")
    cfg = _chosen(dtype, 300001 - 300001 % per_vec(dtype))
    assert cfg.cluster == 16, cfg
    n = 300001 - 300001 % per_vec(dtype)
    x = random_input(30 * n, dtype).view(30, n)
    w, b = random_input(n, dtype), random_input(n, dtype)
    fixed = kernelkit.layer_norm(x, (n,), w, b, config=dataclasses.replace(cfg, handout=False))
    assert torch.equal(kernelkit.layer_norm(x, (n,), w, b), fixed), dtype


def test_cluster_rows_handed_out_give_the_fixed_stride_bits_on_any_stream():
    """The tight clusters take rows handed out by a counter (RowHandout in reduce.cuh): every row computed
    once, the same bits as the same clusters dealt rows in a fixed stride (config=, handout=False), launch
    after launch (the cluster taking the last number resets the counter), with fewer rows than clusters,
    on a second stream (a buffer of its own) and replayed from a CUDA graph; the counters read zero after."""
    _need_sm90()
    rows, len_ = 1500, 65536  # more rows than resident clusters (62 on an H100)
    x = random_input(rows * len_, torch.float16).view(rows, len_) + 0.3
    w, b = random_input(len_, torch.float16), random_input(len_, torch.float16)
    stride = dataclasses.replace(_chosen(torch.float16, len_), handout=False)
    for op, args in (("layer_norm", (w, b)), ("rms_norm", (w, None))):
        if op == "layer_norm":
            fixed = kernelkit.layer_norm(x, (len_,), *args, out=poisoned_like(x), config=stride)
        else:
            fixed = kernelkit.rms_norm(x, (len_,), w, 1e-5, out=poisoned_like(x), config=stride)
        assert_close(fixed, ref(op, x, len_, *args), torch.float16, f"{op} fixed stride")
        for i in range(3):
            got = call(op, x, len_, *args, poisoned_like(x), None)
            assert torch.equal(got, fixed), f"{op}: launch {i} handed out differs from the fixed stride"
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = call(op, x, len_, *args, poisoned_like(x), None)
        torch.cuda.current_stream().wait_stream(side)
        assert torch.equal(got, fixed), f"{op}: handed out on a second stream differs"
        few = x[:40]  # fewer rows than clusters: every cluster's first row by position, one number each
        got = call(op, few, len_, *args, poisoned_like(few), None)
        assert torch.equal(got, fixed[:40]), f"{op}: 40 rows differ"
        _assert_graph_replays_give(fixed, lambda out: call(op, x, len_, *args, out, None), op)
    assert len(handout_counters.buffers) >= 2
    _assert_counters_zero()


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_bulk_rows_handed_out_give_the_same_bits_every_launch(dtype):
    """The bulk_ring rung's one-CTA bulk-copy rings (16-bit rows of up to 4 x 1024 vectors) take rows handed
    out at run time (norm_bulk_dyn): which CTA takes a row changes from launch to launch, its bits do not;
    they match float64 with more rows than resident CTAs, fewer, lengths whose last chunk is short or
    empty, with and without weight and bias, on a second stream and replayed from a CUDA graph; the counters
    read zero after."""
    _need_sm90()
    want = norm.config_for("bulk_ring", dtype, 32768, form=ALIGNED, sm=_sm())
    assert isinstance(want, norm.BulkRing) and want.cluster == 1
    for rows, len_ in ((400, 32768), (40, 32768), (300, 32760), (150, 20000)):
        x = random_input(rows * len_, dtype).view(rows, len_) * 2 + 5
        w, b = random_input(len_, dtype), random_input(len_, dtype)
        for wb in ((w, b), (None, None)):
            first = call("layer_norm", x, len_, *wb, poisoned_like(x), "bulk_ring")
            assert_close(first, ref("layer_norm", x, len_, *wb), dtype, f"bulk rings {rows}x{len_}")
            for i in range(2):
                got = call("layer_norm", x, len_, *wb, poisoned_like(x), "bulk_ring")
                assert torch.equal(got, first), f"{rows}x{len_} launch {i}: bits differ"
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                got = call("layer_norm", x, len_, *wb, poisoned_like(x), "bulk_ring")
            torch.cuda.current_stream().wait_stream(side)
            assert torch.equal(got, first), f"{rows}x{len_}: a second stream differs"
    want_bits = call("layer_norm", x, len_, w, b, poisoned_like(x), "bulk_ring")
    _assert_graph_replays_give(want_bits, lambda out: call("layer_norm", x, len_, w, b, out, "bulk_ring"),
                               "bulk rings")
    _assert_counters_zero()


def test_handed_out_rows_on_a_second_gpu():
    """Rows handed out on cuda:1 while cuda:0 is current: the counter is that device's own (keyed by device
    and stream, allocated there), the launch runs there, and the result matches float64."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    if compute_capability(1) < 90:
        pytest.skip("clusters need sm_90")
    x = (random_input(300 * 65536, torch.float16) + 0.3).view(300, 65536)
    w = random_input(65536, torch.float16)
    with torch.cuda.device(0):
        x1, w1 = x.to("cuda:1"), w.to("cuda:1")
        got = kernelkit.rms_norm(x1, (65536,), w1, out=poisoned_like(x1))
        assert got.device == x1.device
        assert_close(got, reference.rms_norm(x1, (65536,), w1), torch.float16, "cuda:1")
    devices = {buf.device for buf in handout_counters.buffers.values()}
    assert torch.device("cuda:1") in devices
    _assert_counters_zero()


def _assert_graph_replays_give(want, run, label: str) -> None:
    """run(out) captured in a CUDA graph and replayed three times gives `want` each time: a handed-out launch
    replays with the same counter buffer, so it must find it zero each time. run is called once outside the
    capture first, so that the stream's counter buffer is allocated there."""
    graph_stream = torch.cuda.Stream()
    graph_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(graph_stream):
        out = poisoned_like(want)
        run(out)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=graph_stream):
            run(out)
    for i in range(3):
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, want), f"{label}: graph replay {i} differs"


def _assert_counters_zero() -> None:
    """Every stream's row-handout counter reads zero once the launches are done."""
    for buf in handout_counters.buffers.values():
        torch.cuda.synchronize(buf.device)
        assert buf.tolist() == [0]


def test_smem_rows_keep_a_large_mean_exact():
    """Rows kept in shared memory (norm_smem): a mean 25x the spread, where E[x^2] - E[x]^2 in fp32 would
    lose 4 digits; the two passes over the resident row must not (every configuration holding 64K rows)."""
    _need_sm90()
    len_ = 65536
    for dtype in DTYPES:
        y = (torch.randn(6, len_, device="cuda") * 2 + 50).to(dtype)
        w, b = random_input(len_, dtype, scale=1.0), random_input(len_, dtype, scale=1.0)
        for cfg in norm.configs(dtype, form=ALIGNED, rung="smem_rows"):
            if isinstance(cfg, norm.SmemRows) and cfg.capacity(dtype) >= len_:
                got = kernelkit.layer_norm(y, (len_,), w, b, config=cfg)
                assert_close(got, reference.layer_norm(y, (len_,), w, b), dtype, f"layer_norm large mean {cfg}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_staged_rows_loop_over_more_rows_than_resident_ctas(dtype):
    """The staged rung: persistent CTAs staging weight and bias once and looping over more rows than are
    resident, aligned (each thread its own chunks) and misaligned (the CTA's chunks, read shifted), every
    weight/bias combination and rms_norm, against float64."""
    for rows, len_, offset in ((3001, 4096, 0), (2500, 2056, 0), (2000, 4099, 1), (1500, 1000, 3)):
        cfg = norm.config_for("staged", dtype, len_, form=WINDOW if offset or len_ % per_vec(dtype) else ALIGNED,
                              sm=_sm())
        assert cfg.staged and cfg.cluster == 1, cfg
        x = (random_input(rows * len_, dtype, offset) + 0.3).view(rows, len_)
        w, b = random_input(len_, dtype, offset), random_input(len_, dtype)
        for wb in ((w, b), (w, None), (None, b), (None, None)):
            got = call("layer_norm", x, len_, *wb, poisoned_like(x, offset), "staged")
            assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype,
                         f"staged {rows}x{len_} weight={wb[0] is not None} bias={wb[1] is not None}")
        got = call("rms_norm", x, len_, w, None, poisoned_like(x, offset), "staged")
        assert_close(got, reference.rms_norm(x, (len_,), w), dtype, f"staged rms_norm {rows}x{len_}")
