"""layer_norm and rms_norm on the GPU: every rung x dtype x row length against float64, with and
without weight/bias, multi-dim normalized_shape, views, special values, errors."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from gpu_helpers import assert_close, poisoned_like, random_input

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
RUNGS = [v.name for v in kernelkit.ladder("layer_norm")]
OPS = ("layer_norm", "rms_norm")
CASES = [(op, r, d) for op in OPS for r in RUNGS for d in DTYPES]
IDS = [f"{o}-{r}-{str(d)[6:]}" for o, r, d in CASES]

SMALL_LENS = (1, 3, 127, 128, 129, 1000, 1024, 1025, 2048, 3000, 4096, 4100, 8192, 16385, 20000, 32768, 40000)
LARGE_LENS = (65536, 65537, 131072, 131073, 200003)


def call(op, x, n, w, b, out, variant, eps=1e-5):
    if op == "layer_norm":
        return kernelkit.layer_norm(x, (n,), w, b, eps, out=out, variant=variant)
    return kernelkit.rms_norm(x, (n,), w, eps, out=out, variant=variant)


def ref(op, x, n, w, b, eps=1e-5):
    return reference.layer_norm(x, (n,), w, b, eps) if op == "layer_norm" else reference.rms_norm(x, (n,), w, eps)


def check_rows(op, variant, dtype, lens, offsets=(0, 1)):
    for i, len_ in enumerate(lens):
        rows = max(1, min(37, 2**20 // len_))
        for offset in offsets:
            x = (random_input(rows * len_, dtype, offset) + 0.7).view(rows, len_)
            w = random_input(len_, dtype, offset) if i % 3 != 2 else None
            b = random_input(len_, dtype, offset) if i % 3 == 0 else None
            out = poisoned_like(x, offset)
            got = call(op, x, len_, w, b, out, variant)
            assert got is out
            assert_close(out, ref(op, x, len_, w, b), dtype, f"{op} {variant} rows={rows} len={len_} offset={offset}")


@pytest.mark.parametrize("op,variant,dtype", CASES, ids=IDS)
def test_small_every_rung_every_length(op, variant, dtype):
    check_rows(op, variant, dtype, SMALL_LENS)


@pytest.mark.parametrize("op,variant,dtype", CASES, ids=IDS)
def test_long_rows_every_rung(op, variant, dtype):
    check_rows(op, variant, dtype, LARGE_LENS, offsets=(0,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_shapes_like_torch(dtype):
    x = torch.randn(6, 5, 48, device="cuda", dtype=dtype) * 4 + 100  # a large mean: no cancellation allowed
    w = torch.randn(5, 48, device="cuda", dtype=dtype)
    b = torch.randn(5, 48, device="cuda", dtype=dtype)
    assert_close(kernelkit.layer_norm(x, (5, 48), w, b), reference.layer_norm(x, (5, 48), w, b), dtype, "2-d shape")
    assert_close(kernelkit.rms_norm(x, [48]), reference.rms_norm(x, [48]), dtype, "rms, eps None")
    torch.testing.assert_close(kernelkit.layer_norm(x, 48, eps=1e-3).float(),
                               torch.nn.functional.layer_norm(x, (48,), eps=1e-3).float(), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(kernelkit.rms_norm(x, (48,), w[0]).float(),
                               torch.nn.functional.rms_norm(x, (48,), w[0]).float(), rtol=2e-2, atol=2e-2)
    xt = x.transpose(0, 1)  # non-contiguous
    assert_close(kernelkit.layer_norm(xt, (48,)), reference.layer_norm(xt, (48,)), dtype, "transposed")
    out = poisoned_like(xt.contiguous()).view(5, 6, 48).transpose(0, 1)
    kernelkit.rms_norm(x, (48,), out=out)
    assert_close(out, reference.rms_norm(x, (48,)), dtype, "non-contiguous out")
    assert kernelkit.layer_norm(torch.empty(0, 8, device="cuda", dtype=dtype), (8,)).shape == (0, 8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_special_values_match_torch(dtype):
    inf, nan = float("inf"), float("nan")
    for len_ in (7, 1000, 3000, 40000):
        x = torch.randn(5, len_, device="cuda", dtype=dtype)
        x[1, len_ // 2] = inf  # layer_norm: a NaN row; rms_norm: 0 and NaN (torch gives that for 1000
        x[2, len_ // 3] = nan  # elements but a NaN row for 7: row 1 of rms_norm is checked by formula)
        x[3, :] = 5.0  # constant row: var 0, output 0 (x - mean exactly 0)
        x[4] = x[4] * (1e3 if dtype == torch.float16 else 1e15)  # x^2 stays finite in fp32
        for op in OPS:
            want = (torch.nn.functional.layer_norm(x, (len_,)) if op == "layer_norm"
                    else torch.nn.functional.rms_norm(x, (len_,)))
            if op == "rms_norm":
                want = want.clone()
                want[1] = 0.0
                want[1, len_ // 2] = nan
            for variant in RUNGS:
                got = call(op, x, len_, None, None, None, variant)
                assert torch.equal(torch.isnan(got), torch.isnan(want)), (op, variant, len_)
                fin = ~torch.isnan(want[4])
                torch.testing.assert_close(got[4][fin].float(), want[4][fin].float(), rtol=3e-2, atol=3e-2)
                if op == "rms_norm":
                    assert (got[1][~torch.isnan(got[1])] == 0).all(), (variant, len_)


def test_bad_arguments_raise_clearly():
    x = torch.randn(3, 4, device="cuda")
    with pytest.raises(ValueError, match="normalized_shape"):
        kernelkit.layer_norm(x, (5,))
    with pytest.raises(ValueError, match="weight has shape"):
        kernelkit.layer_norm(x, (4,), torch.ones(5, device="cuda"))
    with pytest.raises(TypeError, match="weight must have dtype"):
        kernelkit.rms_norm(x, (4,), torch.ones(4, device="cuda", dtype=torch.float16))
    with pytest.raises(TypeError, match="x must have dtype"):
        kernelkit.rms_norm(torch.ones(3, 4, device="cuda", dtype=torch.int32), (4,))
    with pytest.raises(ValueError, match="unknown variant"):
        kernelkit.layer_norm(x, (4,), variant="nope")


def test_same_bits_and_graph_and_compile():
    x = torch.randn(256, 40000, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(40000, device="cuda", dtype=torch.bfloat16)
    a = kernelkit.layer_norm(x, (40000,), w, w)
    assert torch.equal(a, kernelkit.layer_norm(x, (40000,), w, w))
    f = torch.compile(lambda t: kernelkit.rms_norm(t, (1000,)) + 1, fullgraph=True)
    y = torch.randn(33, 1000, device="cuda")
    assert_close(f(y), reference.rms_norm(y, (1000,)) + 1, torch.float32, "compiled")
    out = torch.empty_like(x)
    kernelkit.layer_norm(x, (40000,), w, w, out=out)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.layer_norm(x, (40000,), w, w, out=out)
    x.copy_(torch.randn_like(x))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, reference.layer_norm(x, (40000,), w, w), torch.bfloat16, "graph replay")


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
def test_every_configuration(dtype, monkeypatch):
    """Every instantiation a rung lists (each table entry, aligned and element-wise, with and without
    the prefetch of cluster rows), forced onto rows it holds exactly and rows one vector shorter."""
    import sys

    from kernelkit.ops.reduction._rows import has_clusters, per_vec

    mod = sys.modules["kernelkit.ops.reduction.norm"]
    n = per_vec(dtype)
    for kind in ("registers", "fast"):
        for cfg in mod.TABLES.configs(kind, dtype):
            if cfg[2] > 1 and not has_clusters(0):
                continue
            cap = cfg[0] * cfg[1] * cfg[2] * n
            for prefetch in (f[0] for f in mod._extras(cfg)):
                monkeypatch.setattr(mod, "pick", lambda _len, _tab, c=cfg: c)
                monkeypatch.setattr(mod, "_bulk_for", lambda _dt, _len, _rms: None)
                monkeypatch.setattr(mod, "_smem_for", lambda *_a: None)  # test_smem_rows_gpu's
                monkeypatch.setattr(mod, "_cluster_rows_for", lambda *_a: None)  # test_cluster_rows_*
                monkeypatch.setattr(mod, "PREFETCH", prefetch)
                mod._plans.clear()
                for len_ in {cap, max(1, cap - n - 1)}:
                    rows = 300 if cfg[2] > 1 else 5  # cluster rows: more than are resident
                    x = random_input(rows * len_, dtype).view(rows, len_)
                    w, b = random_input(len_, dtype), random_input(len_, dtype)
                    for op in OPS:
                        got = call(op, x, len_, w, b, None, kind)
                        assert_close(got, ref(op, x, len_, w, b), dtype, f"{op} {kind} {cfg} prefetch={prefetch} len={len_}")
    mod._plans.clear()


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_bulk_configuration(dtype, monkeypatch):
    """Each bulk-copy configuration (sm_90) on rows it holds exactly, one vector shorter, and so short
    that the cluster's last CTA has nothing (it must still take part in every barrier; one vector for a
    single-CTA configuration); more rows
    than resident clusters, so each ring of stages wraps around several times."""
    import sys

    from kernelkit.ops.reduction._rows import has_clusters, per_vec

    if not has_clusters(0):
        pytest.skip("bulk copies need sm_90")
    mod = sys.modules["kernelkit.ops.reduction.norm"]
    n = per_vec(dtype)
    monkeypatch.setattr(mod, "BULK_FROM", 0)
    monkeypatch.setattr(mod, "_smem_for", lambda *_a: None)  # test_smem_rows_gpu's
    monkeypatch.setattr(mod, "_cluster_rows_for", lambda *_a: None)  # test_cluster_rows_*
    for cfg in sorted({c for c in mod.BULK[n].values()} | set(mod.BULK_SPARES.get(n, ()))):
        g, v, c = cfg[:3]
        slice_ = g * v * n
        monkeypatch.setattr(mod, "_bulk_config", lambda _dt, _len, c=cfg: c)
        mod._plans.clear()
        for len_ in (slice_ * c, slice_ * c - n, slice_ * (c - 2) + n if c > 1 else n):
            rows = 301
            x = random_input(rows * len_, dtype).view(rows, len_) * 3 + 1
            w, b = random_input(len_, dtype), random_input(len_, dtype)
            for op in OPS:
                for wb in ((w, b), (None, None)):
                    got = call(op, x, len_, *wb, poisoned_like(x), "fast")
                    assert_close(got, ref(op, x, len_, *wb), dtype, f"{op} bulk {cfg} len={len_} weight={wb[0] is not None}")
    mod._plans.clear()


def _check_weight_bias_combinations(x, len_: int, dtype, label: str) -> None:
    """layer_norm of x's rows with every weight/bias combination and rms_norm with a weight, each into a
    poisoned output, against float64."""
    w, b = random_input(len_, dtype), random_input(len_, dtype)
    for wb in ((w, b), (w, None), (None, b), (None, None)):
        got = kernelkit.layer_norm(x, (len_,), *wb, out=poisoned_like(x))
        assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype,
                     f"{label} weight={wb[0] is not None} bias={wb[1] is not None}")
    got = kernelkit.rms_norm(x, (len_,), w, out=poisoned_like(x))
    assert_close(got, reference.rms_norm(x, (len_,), w), dtype, f"{label} rms_norm")


def _norm_with_clusters():
    """kernelkit.ops.norm with its plan cache cleared, on an sm_90 device (else the test skips)."""
    import sys

    from kernelkit.ops.reduction._rows import has_clusters

    if not has_clusters(0):
        pytest.skip("clusters need sm_90")
    mod = sys.modules["kernelkit.ops.reduction.norm"]
    mod._plans.clear()
    return mod


def test_cluster_rows_take_fp16_64k_rows():
    """fp16 rows of 32K-64K elements on sm_90 run the tight register-tile clusters (norm.CLUSTER_ROWS:
    persistent, weight and bias staged, 64 registers): the default dispatch picks them, and they match
    float64 on more rows than resident clusters, at lengths that fill the cluster, end a vector short, or
    leave its last CTAs empty, with every weight/bias combination and a mean 20x the spread."""
    mod = _norm_with_clusters()
    dtype = torch.float16
    want = mod.CLUSTER_ROWS[dtype][65536]
    for rows, len_ in ((700, 65536), (301, 65528), (301, 40000), (150, 32776)):
        x = (random_input(rows * len_, dtype).view(rows, len_) + 0.3) if len_ != 40000 else \
            (torch.randn(rows, len_, device="cuda") * 0.5 + 10).to(dtype)
        _check_weight_bias_combinations(x, len_, dtype, f"cluster rows {rows}x{len_}")
        assert {plan[1] for key, plan in mod._plans.items() if key[3] == len_} == {(*want, "handout")}, len_


def test_cluster_rows_take_fp32_64k_rms_norm_rows():
    """fp32 rms_norm rows of 32K-64K elements on sm_90 run the tight clusters of 4 x 512 threads
    (norm.CLUSTER_ROWS_RMS, the weight slice alone staged, rows handed out): picked by the default dispatch,
    matching float64 with and without a weight on more rows than resident clusters, at lengths that fill
    the cluster, end a vector short, or leave its last CTAs empty."""
    mod = _norm_with_clusters()
    dtype = torch.float32
    want = mod.CLUSTER_ROWS_RMS[dtype][65536]
    for rows, len_ in ((301, 65536), (130, 65532), (130, 40000), (70, 32772)):
        x = random_input(rows * len_, dtype).view(rows, len_) * 3 + 20
        w = random_input(len_, dtype)
        for weight in (w, None):
            got = kernelkit.rms_norm(x, (len_,), weight, out=poisoned_like(x))
            assert_close(got, reference.rms_norm(x, (len_,), weight), dtype, f"fp32 cluster rows {rows}x{len_}")
        assert {plan[1] for key, plan in mod._plans.items() if key[3] == len_ and key[5]} == {(*want, "handout")}


def test_cluster_rows_take_fp32_32k_layer_norm_rows():
    """fp32 layer_norm rows of 31K-32K elements on sm_90 run the tight clusters of 2 x 512 threads
    (norm.CLUSTER_ROWS_LN, weight and bias staged, rows handed out): picked by the default dispatch, matching
    float64 with every weight/bias combination on more rows than resident clusters, at lengths that fill the
    cluster, end a vector short, or leave the second CTA's slice short, and giving the fixed stride's bits;
    shorter rows keep the one-CTA tile."""
    mod = _norm_with_clusters()
    dtype = torch.float32
    want = mod.CLUSTER_ROWS_LN[dtype][32768]
    for rows, len_ in ((301, 32768), (150, 32764), (150, 32000), (70, 31748)):
        x = random_input(rows * len_, dtype).view(rows, len_) * 3 + 20
        _check_weight_bias_combinations(x, len_, dtype, f"fp32 cluster rows {rows}x{len_}")
        assert {plan[1] for key, plan in mod._plans.items() if key[3] == len_ and not key[5]} == {(*want, "handout")}
        assert not any(plan[1] == (*want, "handout") for key, plan in mod._plans.items() if key[5])  # rms_norm
    kernelkit.layer_norm(random_input(3 * 24576, dtype).view(3, 24576), (24576,))
    assert not any(plan[1] == (*want, "handout") for key, plan in mod._plans.items() if key[3] == 24576)
    x = random_input(301 * 32768, dtype).view(301, 32768)
    w, b = random_input(32768, dtype), random_input(32768, dtype)
    handed_out = kernelkit.layer_norm(x, (32768,), w, b)
    mod.HANDOUT = False
    try:
        fixed = kernelkit.layer_norm(x, (32768,), w, b)
    finally:
        mod.HANDOUT = True
    assert torch.equal(handed_out, fixed)


def test_cluster_rows_handed_out_give_the_fixed_stride_bits_on_any_stream():
    """CLUSTER_ROWS' clusters take rows handed out by a counter (norm.HANDOUT, RowHandout in reduce.cuh):
    every row computed once, the same bits as rows dealt in a fixed stride, launch after launch (the cluster
    taking the last number resets the counter), with fewer rows than clusters, on a second stream (a buffer
    of its own) and replayed from a CUDA graph; the counters read zero after."""
    from kernelkit.ops.reduction import _rows as _rowwise

    mod = _norm_with_clusters()
    rows, len_ = 1500, 65536  # more rows than resident clusters (62 on an H100)
    x = random_input(rows * len_, torch.float16).view(rows, len_) + 0.3
    w, b = random_input(len_, torch.float16), random_input(len_, torch.float16)
    for op, args in (("layer_norm", (w, b)), ("rms_norm", (w, None))):
        mod.HANDOUT = False
        try:
            fixed = call(op, x, len_, *args, poisoned_like(x), None)
        finally:
            mod.HANDOUT = True
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
    assert len(_rowwise._handout) >= 2
    _assert_counters_zero()


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_bulk_rows_handed_out_give_the_fixed_stride_bits(dtype):
    """layer_norm's one-CTA bulk-copy rings (norm.BULK_LAYER_NORM, 16-bit rows of 16K-32K) with rows handed
    out at run time (norm_bulk_dyn, norm.BULK_HANDOUT) give the bits of rows dealt in a fixed stride and
    match float64: more rows than resident CTAs, fewer, lengths whose last chunk is short or empty, with
    and without weight and bias, launch after launch and replayed from a CUDA graph; the counters read zero
    after."""
    mod = _norm_with_clusters()
    saved = mod.BULK_HANDOUT
    try:
        for rows, len_ in ((400, 32768), (40, 32768), (300, 32760), (150, 20000)):
            x = random_input(rows * len_, dtype).view(rows, len_) * 2 + 5
            w, b = random_input(len_, dtype), random_input(len_, dtype)
            for wb in ((w, b), (None, None)):
                mod.BULK_HANDOUT = False
                fixed = call("layer_norm", x, len_, *wb, poisoned_like(x), None)
                mod.BULK_HANDOUT = True
                assert_close(fixed, ref("layer_norm", x, len_, *wb), dtype, f"fixed stride {rows}x{len_}")
                for i in range(2):
                    got = call("layer_norm", x, len_, *wb, poisoned_like(x), None)
                    assert torch.equal(got, fixed), f"{rows}x{len_} launch {i}: handed out differs"
                plans = {plan[1] for key, plan in mod._plans.items() if key[3] == len_ and key[8]}
                assert plans == {(*mod.BULK_LAYER_NORM[mod.per_vec(dtype)][32768], "bulk handout")}, plans
        want = call("layer_norm", x, len_, w, b, poisoned_like(x), None)
        _assert_graph_replays_give(want, lambda out: call("layer_norm", x, len_, w, b, out, None), "bulk rings")
    finally:
        mod.BULK_HANDOUT = saved
        mod._plans.clear()
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
    from kernelkit.ops.reduction import _rows as _rowwise

    torch.cuda.synchronize()
    for buf, _ptr in _rowwise._handout.values():
        assert buf.tolist() == [0]


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_staged_rows_loop_over_more_rows_than_resident_ctas(dtype):
    """16-bit layer_norm rows of 2K-4K elements run persistent CTAs that stage weight and bias once and
    loop over rows (norm.STAGED_ROWS): more rows than resident CTAs, with and without weight and bias,
    against float64."""
    for rows, len_ in ((3001, 4096), (2500, 2056)):
        x = random_input(rows * len_, dtype).view(rows, len_) + 0.3
        w, b = random_input(len_, dtype), random_input(len_, dtype)
        for wb in ((w, b), (w, None), (None, b), (None, None)):
            got = kernelkit.layer_norm(x, (len_,), *wb, out=poisoned_like(x))
            assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype,
                         f"staged {rows}x{len_} weight={wb[0] is not None} bias={wb[1] is not None}")


def test_staged_rms_norm_rows():
    """fp16 rms_norm rows of 2K-4K elements in norm.STAGED_RMS_ROWS' row range run the staged persistent
    kernel (the weight staged by asynchronous copies, more rows than resident CTAs): with and without a
    weight, rows ending inside a thread's vectors, against float64 with poisoned outputs."""
    import importlib

    norm = importlib.import_module("kernelkit.ops.reduction.norm")
    lo, hi = norm.STAGED_RMS_ROWS[torch.float16]
    for rows, len_ in ((lo, 4096), (hi, 2056), (4099, 4088)):
        assert lo <= rows <= hi
        x = random_input(rows * len_, torch.float16).view(rows, len_) * 3 + 1
        w = random_input(len_, torch.float16)
        for wt in (w, None):
            got = kernelkit.rms_norm(x, (len_,), wt, out=poisoned_like(x))
            assert_close(got, reference.rms_norm(x, (len_,), wt), torch.float16,
                         f"staged rms_norm {rows}x{len_} weight={wt is not None}")


@pytest.mark.parametrize("dtype", (torch.float16, torch.float32))
def test_tight_rows_read_weight_and_bias_per_row(dtype):
    """The tight one-CTA rows (norm.cu's norm_tight_blocks: values kept as loaded, few registers) that
    read weight and bias at the output: fp16 4096-element layer_norm rows past norm.STAGED_MAX_ROWS, and
    fp32 rows of 2K-4K elements (both ops); rows that end inside a thread's vectors, every weight/bias
    combination, a mean 13x the spread; against float64 with poisoned outputs."""
    import importlib

    norm = importlib.import_module("kernelkit.ops.reduction.norm")
    rows = norm.STAGED_MAX_ROWS[dtype] + 3 if dtype == torch.float16 else 301
    for len_ in (4096, 2056, 4088):
        x = random_input(rows * len_, dtype).view(rows, len_) * 3 + 40
        _check_weight_bias_combinations(x, len_, dtype, f"tight {rows}x{len_}")
