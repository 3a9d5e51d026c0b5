"""layer_norm and rms_norm on the GPU: every rung x dtype x row length against float64, every
configuration the rules can choose (forced by config=), with and without weight/bias, multi-dim
normalized_shape, views, special values, packed short rows, cluster rows handed out, errors."""
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


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_rms_norm_default_eps_is_torchs(dtype):
    """rms_norm without eps adds float32's epsilon for every dtype, as torch computes it (not finfo(x.dtype).eps,
    which its documentation names): rows of a few small values, where the two differ by 30x, match torch."""
    x = torch.tensor([[1e-3], [2e-3], [-5e-4]], device="cuda", dtype=dtype)
    got = kernelkit.rms_norm(x, (1,))
    torch.testing.assert_close(got, torch.nn.functional.rms_norm(x, (1,)), rtol=1e-2, atol=0)
    assert_close(got, reference.rms_norm(x, (1,), eps=torch.finfo(torch.float32).eps), dtype, "eps None")
    y = (torch.randn(4096, 3, device="cuda") * 1e-2).to(dtype)
    torch.testing.assert_close(kernelkit.rms_norm(y, (3,)).float(), torch.nn.functional.rms_norm(y, (3,)).float(),
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("len_", (2, 3, 7))
def test_nearly_constant_short_rows_keep_float64(len_):
    """fp32 rows of a few nearly equal values (variance below eps, where rstd multiplies each rounding up to
    1 / sqrt(eps)): packed rows take the deviations from the row's first element, which keeps the result at
    float64's to fp32 precision of the spread, where deviations from an fp32 mean lose 3-4e-4 of it."""
    base = torch.randn(20000, 1, device="cuda") * 2 + 0.5
    x = base + torch.randn(20000, len_, device="cuda") * 3e-3
    w, b = torch.randn(2, len_, device="cuda")
    got = kernelkit.layer_norm(x, (len_,), w, b)
    want = reference.layer_norm(x, (len_,), w, b)
    err = (got.double() - want).abs() / (want.abs() + want.abs().max() / 64)
    assert float(err.max()) < 2e-5, float(err.max())


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


def _sm() -> int:
    return compute_capability(torch.cuda.current_device())


def _runs_here(cfg) -> bool:
    """Whether this device launches the configuration (clusters and bulk copies: sm_90)."""
    sm90 = getattr(cfg, "cluster", 1) > 1 or isinstance(cfg, (norm.BulkRing, norm.SmemRows))
    return _sm() >= 90 or not sm90


def _lengths(cfg, dtype, aligned: bool) -> list[int]:
    """Row lengths a configuration is tested at: the longest it holds, a vector short (aligned) or an odd
    length (misaligned), one vector (every CTA of a cluster but the first empty), a cluster's last CTA
    empty, a row ending inside a slice's second chunk."""
    n = per_vec(dtype)
    if isinstance(cfg, norm.Welford):
        return [1000, 4097] if aligned else [999, 4097]
    if isinstance(cfg, norm.NormPacked):
        cap = cfg.capacity(dtype)
        return sorted({max(1, v) for v in (cap, cap - 1, (cap + 1) // 2, 1)})
    cap, cluster, chunks = cfg.capacity(dtype), getattr(cfg, "cluster", 1), getattr(cfg, "chunks", 1)
    part = cap // cluster
    odd = 0 if aligned else 1
    if not aligned and isinstance(cfg, norm.NormTile):
        cap -= n - 1  # misaligned rows take the window form: N - 1 elements of the row before
    lens = {max(1, v) for v in (cap, cap - n - odd, n if aligned else 3)}
    if cluster > 1:
        lens.add(max(1, part * (cluster - 1) - n - odd))
    if chunks > 1:
        lens.add(part // chunks + n)
    return sorted(v for v in lens if v <= cap)


def _persistent(cfg) -> bool:
    if isinstance(cfg, norm.NormTile):
        return cfg.staged
    return isinstance(cfg, (norm.BulkRing, norm.SmemRows))


def _every_form(dtype):
    """(configuration, aligned) for every instantiation a rung of the norms can launch for dtype."""
    forms = {}
    for rung in RUNGS:
        for aligned in (True, False):
            for cfg in norm.configs(dtype, form=ALIGNED if aligned else WINDOW, rung=rung):
                if aligned or not isinstance(cfg, (norm.BulkRing, norm.SmemRows)):
                    forms[(cfg, aligned)] = None
    return list(forms)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_configuration(dtype):
    """Every configuration the rules can choose (each instantiation a rung lists: packed rows, warp slices,
    CTA rows, staged, handed-out clusters, bulk-copy rings, rows kept in shared memory), forced by config=
    onto the lengths of _lengths, misaligned views (the window forms) where they take them, more rows than
    resident CTAs for the persistent ones, with and without weight and bias, against float64 into poisoned
    outputs."""
    for cfg, aligned in _every_form(dtype):
        if not _runs_here(cfg):
            continue
        offset = 0 if aligned else 1
        rows = 301 if _persistent(cfg) else 5 if not isinstance(cfg, norm.NormPacked) else 3001
        for len_ in _lengths(cfg, dtype, aligned):
            x = random_input(rows * len_, dtype, offset).view(rows, len_).add_(1)  # a view: offset kept
            w, b = random_input(len_, dtype, offset), random_input(len_, dtype, offset)
            label = f"{cfg} aligned={aligned} len={len_}"
            for wb in ((w, b), (None, None)):
                got = kernelkit.layer_norm(x, (len_,), *wb, out=poisoned_like(x, offset), config=cfg)
                assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype,
                             f"layer_norm {label} weight={wb[0] is not None}")
            got = kernelkit.rms_norm(x, (len_,), w, out=poisoned_like(x, offset), config=cfg)
            assert_close(got, reference.rms_norm(x, (len_,), w), dtype, f"rms_norm {label}")


def test_config_that_cannot_run_the_input_raises():
    x = torch.randn(4, 4096, device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="holds 2048 elements, the row needs 4096"):
        kernelkit.layer_norm(x, (4096,), config=norm.NormTile(128, 2))
    with pytest.raises(ValueError, match="holds rows of 8 elements"):
        kernelkit.layer_norm(x, (4096,), config=norm.NormPacked(2, 4))
    if _sm() >= 90:
        with pytest.raises(ValueError, match="aligned"):
            kernelkit.rms_norm(x.flatten()[1:1 + 4 * 4088].view(4, 4088), (4088,),
                               config=norm.BulkRing(1024, 1, 1, 3, True, 1))
    with pytest.raises(ValueError, match="not both"):
        kernelkit.layer_norm(x, (4096,), variant="auto", config=norm.NormTile(128, 4))
    with pytest.raises(TypeError, match="config must be"):
        kernelkit.layer_norm(x, (4096,), config=(128, 4, 1))
    if _sm() < 90:
        with pytest.raises(ValueError, match="need sm_90"):
            kernelkit.layer_norm(x, (4096,), config=norm.NormTile(128, 4, 2, staged=True))


def _check_weight_bias_combinations(x, len_: int, dtype, label: str, config=None) -> None:
    """layer_norm of x's rows with every weight/bias combination and rms_norm with a weight, each into a
    poisoned output, against float64 (config: forced, else the default dispatch). The weight's spread is 1: with
    rows whose mean is 20x their spread, the float32 mean alone is off by up to half an ulp of it (4.8e-7 at
    10), so x-hat by up to 1e-6 in any float32 kernel; a weight of spread 3 (up to ~15) carries that past
    float32's 1e-5 absolute tolerance on outputs near 0."""
    w, b = random_input(len_, dtype, scale=1.0), random_input(len_, dtype)
    for wb in ((w, b), (w, None), (None, b), (None, None)):
        got = kernelkit.layer_norm(x, (len_,), *wb, out=poisoned_like(x), config=config)
        assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype,
                     f"{label} weight={wb[0] is not None} bias={wb[1] is not None}")
    got = kernelkit.rms_norm(x, (len_,), w, out=poisoned_like(x), config=config)
    assert_close(got, reference.rms_norm(x, (len_,), w), dtype, f"{label} rms_norm")


def _need_sm90():
    if _sm() < 90:
        pytest.skip("clusters and bulk copies need sm_90")


def _chosen(dtype, len_, form=ALIGNED):
    """What the default dispatch launches on this device."""
    return norm.config_for("auto", dtype, len_, form=form, sm=_sm())


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


@pytest.mark.parametrize("dtype", DTYPES)
def test_packed_rows(dtype):
    """Rows of up to 16 vectors move in blocks of whole rows through shared memory (the rule's packed_rows):
    every length up to the rule's last, row counts that leave the last block short, x and out at any phase
    (the same or another: stores gathered element by element), weight and bias off their boundaries, against
    float64 into poisoned outputs."""
    n = per_vec(dtype)
    for len_ in range(1, 16 * n - n + 2):
        assert isinstance(_chosen(dtype, len_, WINDOW), norm.NormPacked)
        per = 256 * 4 * n // len_
        rows = (2 * per + 3) if len_ % 5 else 7
        for xo, oo, wo in ((0, 0, 0), (1, 1, 3), (3, 0, 1)):
            x = (random_input(rows * len_, dtype, xo) + 0.5).view(rows, len_)
            w, b = random_input(len_, dtype, wo), random_input(len_, dtype, (wo + 1) % 8)
            out = poisoned_like(x, oo)
            kernelkit.layer_norm(x, (len_,), w, b, out=out)
            assert_close(out, reference.layer_norm(x, (len_,), w, b), dtype, f"packed {rows}x{len_} x+{xo} out+{oo}")
            out = poisoned_like(x, oo)
            kernelkit.rms_norm(x, (len_,), w, out=out)
            assert_close(out, reference.rms_norm(x, (len_,), w), dtype, f"packed rms {rows}x{len_} x+{xo} out+{oo}")


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


@pytest.mark.parametrize("dtype", (torch.float16, torch.float32))
def test_tight_rows_read_weight_and_bias_per_row(dtype):
    """One-CTA rows of 4 vectors a thread at 56 registers (the words a thread holds plus the overhead), that
    read weight and bias at the output: rows that end inside a thread's vectors, every weight/bias
    combination, a mean 13x the spread; against float64 with poisoned outputs."""
    rows = 301
    for len_ in (4096, 2056, 4088):
        if len_ == 4096:
            assert _chosen(dtype, len_) == norm.NormTile(128 if dtype == torch.float16 else 256, 4)
        x = random_input(rows * len_, dtype).view(rows, len_) * 3 + 40
        _check_weight_bias_combinations(x, len_, dtype, f"tight {rows}x{len_}")


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    as_int = torch.int32 if a.dtype == torch.float32 else torch.int16
    return a.shape == b.shape and a.stride() == b.stride() and torch.equal(a.view(as_int), b.view(as_int))


def _lane_call(op, x, ns, w, b, eps="default", out=None):
    kw = {} if eps == "default" else {"eps": eps}
    if op == "layer_norm":
        return kernelkit.layer_norm(x, ns, w, b, out=out, **kw)
    return kernelkit.rms_norm(x, ns, w, out=out, **kw)


@pytest.mark.parametrize("op", OPS)
def test_the_lane_gives_the_checked_paths_result(op):
    """A plain call takes the checked path and makes the lane of its (dtype, device, normalized shape,
    weight and bias given); the next calls take it, with other row counts, views off a 16-byte boundary,
    a Parameter weight and other eps values: the bits and layout of the checked path (out= given, which
    makes no lane), against float64."""
    from kernelkit.ops._shared.plans import clear_plans

    rms = op == "rms_norm"
    clear_plans()
    for dtype in DTYPES:
        for len_ in (3, 128, 1000, 4096, 40000):
            for with_bias in ((False,) if rms else (True, False)):
                for rows, offset in ((1, 0), (5, 1), (37, 0), (3, 8)):
                    x = (random_input(rows * len_, dtype, offset) + 0.7).view(rows, len_)
                    w = random_input(len_, dtype, offset)
                    b = random_input(len_, dtype) if with_bias else None
                    first = _lane_call(op, x, (len_,), w, b)
                    assert (dtype, x.device, len_, False, not with_bias) in norm._lanes[rms]
                    checked = _lane_call(op, x, (len_,), w, b, out=poisoned_like(x))
                    lanes = [_lane_call(op, x, (len_,), w, b), _lane_call(op, x, [len_], torch.nn.Parameter(w), b),
                             _lane_call(op, x, len_, w, b)]
                    for got in (first, *lanes):
                        assert _same_bits(got, checked), (op, dtype, len_, rows, offset)
                    # the op's default eps: rms_norm's is finfo(float32).eps, what torch computes (eps=None)
                    want = ref(op, x, len_, w, b, None) if rms else ref(op, x, len_, w, b)
                    assert_close(lanes[0], want, dtype, f"lane {op} {rows}x{len_} offset={offset}")
                for eps in (1e-3, 0.5) + ((None,) if rms else ()):
                    got = _lane_call(op, x, (len_,), w, b, eps)
                    assert _same_bits(got, _lane_call(op, x, (len_,), w, b, eps, out=poisoned_like(x))), eps
    # multi-dim normalized shape, and no weight
    x = random_input(6 * 5 * 48, torch.float32).view(6, 5, 48)
    for _ in range(2):
        got = _lane_call(op, x, (5, 48), None, None)
        assert _same_bits(got, _lane_call(op, x, (5, 48), None, None, out=poisoned_like(x)))
    assert (torch.float32, x.device, (5, 48), True, True) in norm._lanes[rms]


def test_a_lane_only_where_it_takes_the_call():
    """No lane after calls with out=, variant=, config=, a non-contiguous input or weight, or an empty
    input; one after a plain call; calls the checked path refuses still raise with a lane there, and one
    it copies (a non-contiguous weight) still gives its result."""
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    x, w = torch.randn(8, 256, device="cuda"), torch.randn(256, device="cuda")
    kernelkit.layer_norm(x, (256,), w, w, out=torch.empty_like(x))
    kernelkit.layer_norm(x, (256,), w, w, variant="auto")
    kernelkit.layer_norm(x, (256,), w, w, config=norm.NormTile(64, 1))
    kernelkit.layer_norm(torch.randn(256, 8, device="cuda").t(), (256,))
    kernelkit.layer_norm(x, (256,), torch.randn(512, device="cuda")[::2])
    kernelkit.rms_norm(torch.empty(0, 256, device="cuda"), (256,))
    assert not norm._lanes[False] and not norm._lanes[True]
    kernelkit.layer_norm(x, (256,), w, w)
    kernelkit.rms_norm(x, (256,), w)
    assert list(norm._lanes[False]) == [(torch.float32, x.device, 256, False, False)]
    assert list(norm._lanes[True]) == [(torch.float32, x.device, 256, False, True)]
    with pytest.raises(TypeError, match="weight must have dtype"):
        kernelkit.layer_norm(x, (256,), w.half(), w)
    with pytest.raises(ValueError, match="weight is on cpu"):
        kernelkit.rms_norm(x, (256,), w.cpu())
    with pytest.raises(ValueError, match="normalized_shape"):
        kernelkit.layer_norm(x, (256.0,), w, w)
    with pytest.raises(TypeError):
        kernelkit.layer_norm(x, (256,), w, w, None)  # layer_norm's eps is a number
    wt = torch.randn(512, device="cuda")[::2]
    assert_close(kernelkit.rms_norm(x, (256,), wt), reference.rms_norm(x, (256,), wt), torch.float32,
                 "non-contiguous weight beside a lane")


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_lanes_keep_to_their_device():
    """A lane made on cuda:1 takes only cuda:1 calls: a weight on cuda:0 beside x on cuda:1 is refused
    naming both, and the same call on cuda:0 makes and takes that device's own lane."""
    x = torch.randn(4, 64, device="cuda:1")
    w = torch.randn(64, device="cuda:1")
    with torch.cuda.device(0):
        first = kernelkit.layer_norm(x, (64,), w)
        assert _same_bits(kernelkit.layer_norm(x, (64,), w), first) and first.device == x.device
        with pytest.raises(ValueError, match=r"cuda:1.*cuda:0|cuda:0.*cuda:1"):
            kernelkit.layer_norm(x, (64,), w.to("cuda:0"))
        x0, w0 = x.to("cuda:0"), w.to("cuda:0")
        for _ in range(2):
            got = kernelkit.layer_norm(x0, (64,), w0)
            assert got.device == x0.device
            assert _same_bits(got.cpu(), first.cpu())
