"""layer_norm and rms_norm on the GPU: every rung x dtype x row length against float64, every
configuration the rules can choose (forced by config=), with and without weight/bias, multi-dim
normalized_shape, views, special values, packed short rows, tight rows, errors, the lanes of plain calls.
Cluster rows, rows handed out, bulk rings, rows in shared memory, staged rows: test_norm_cluster_gpu.py."""
import pytest
import torch

import kernelkit
from kernelkit.ops.reduction._rows import ALIGNED, WINDOW
from kernelkit import reference
from kernelkit.ops.reduction import norm
from kernelkit.ops.reduction._rows import per_vec
from gpu_helpers import assert_close, poisoned_like, random_input
from norm_helpers import DTYPES, _check_weight_bias_combinations, _chosen, _sm, call, ref

pytestmark = pytest.mark.gpu

RUNGS = [v.name for v in kernelkit.ladder("layer_norm")]
OPS = ("layer_norm", "rms_norm")
CASES = [(op, r, d) for op in OPS for r in RUNGS for d in DTYPES]
IDS = [f"{o}-{r}-{str(d)[6:]}" for o, r, d in CASES]

SMALL_LENS = (1, 3, 127, 128, 129, 1000, 1024, 1025, 2048, 3000, 4096, 4100, 8192, 16385, 20000, 32768, 40000)
LARGE_LENS = (65536, 65537, 131072, 131073, 200003)


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
        return cfg.staged or cfg.phased
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
