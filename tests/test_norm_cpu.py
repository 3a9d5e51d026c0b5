"""The norms' configurations and rules without a GPU: what the rule chooses for a set of inputs (recorded
from the dispatcher before the configurations became dataclasses), that ``configs`` lists exactly what
the rule can choose, that every configuration fits the device and travels through the custom op, the
errors of a configuration that cannot run an input, and the handout counters' keys."""
import itertools

import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction import norm  # noqa: E402
from kernelkit.ops.reduction import norm_configs as nc  # noqa: E402
from kernelkit.ops.reduction._rows import WINDOW, WINDOW_IN, HandoutCounters, config_text, parse_config, per_vec  # noqa: E402
from kernelkit.ops.reduction.norm_configs import BulkRing, NormTile, SmemRows, Welford  # noqa: E402

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
DTYPES = (F32, F16, BF16)
SM90_MAX_DYNAMIC_SHARED = 227 * 1024
STATIC_SHARED = 1024  # the kernels' own shared memory: reductions, slots, mbarriers (< 1 KB)

# (rung, op, dtype, len, rows, aligned, sm) -> (configuration, kernel, dynamic shared memory with weight
# and bias), as the tuple-configured dispatcher launched them.
CHOSEN = [
    ("fast", "layer_norm", F16, 65536, 300, True, 90, NormTile(256, 4, 8, staged=True, handout=True),
     "kk::norm_rows_dyn<__half, 256, 4, 8>", 32768),
    ("fast", "rms_norm", F32, 65536, 300, True, 90, NormTile(512, 8, 4, staged=True, handout=True),
     "kk::norm_rows_dyn<float, 512, 8, 4>", 65536),  # rms_norm: no bias slice
    ("fast", "layer_norm", F32, 65536, 300, True, 90, BulkRing(1024, 2, 8, 3, True),
     "kk::norm_bulk<float, 1024, 2, 8, 3, true, 1>", 163840),
    ("fast", "layer_norm", F32, 32768, 300, True, 90, NormTile(512, 8, 2, staged=True, handout=True),
     "kk::norm_rows_dyn<float, 512, 8, 2>", 131072),
    ("fast", "layer_norm", F32, 24576, 300, True, 90, NormTile(1024, 6),
     "kk::norm_rows<float, 1024, 6, 1, 1, false, false>", 0),
    ("fast", "layer_norm", BF16, 32001, 300, WINDOW, 90, NormTile(1024, 4),
     "kk::norm_rows<__nv_bfloat16, 1024, 4, 1, 2, false, false>", 0),
    ("fast", "rms_norm", BF16, 5120, 300, True, 90, NormTile(160, 4),
     "kk::norm_rows<__nv_bfloat16, 160, 4, 1, 1, false, false>", 0),
    ("fast", "layer_norm", BF16, 5123, 300, WINDOW_IN, 90, NormTile(192, 4),
     "kk::norm_rows<__nv_bfloat16, 192, 4, 1, 3, false, false>", 0),
    ("fast", "layer_norm", F16, 40001, 300, WINDOW, 90, NormTile(1024, 4, 2, staged=True),
     "kk::norm_rows<__half, 1024, 4, 2, 0, false, true>", 131072),
    ("fast", "rms_norm", F32, 32768, 300, True, 90, NormTile(1024, 8),
     "kk::norm_rows<float, 1024, 8, 1, 1, false, false>", 0),
    ("fast", "layer_norm", F16, 32768, 300, True, 90, BulkRing(1024, 4, 1, 3, True, 4),
     "kk::norm_bulk_dyn<__half, 1024, 4, 3, true, 4>", 180224),
    ("fast", "rms_norm", F16, 32768, 300, True, 90, NormTile(1024, 4),
     "kk::norm_rows<__half, 1024, 4, 1, 1, false, false>", 0),
    ("fast", "layer_norm", F16, 32768, 300, True, 80, NormTile(1024, 4),
     "kk::norm_rows<__half, 1024, 4, 1, 1, false, false>", 0),
    ("fast", "layer_norm", BF16, 65536, 300, True, 90, SmemRows(512, 2, 4, 6, 2),
     "kk::norm_smem<__nv_bfloat16, 512, 2, 4, 6, 2>", 98304),
    ("fast", "rms_norm", BF16, 65536, 300, True, 90, SmemRows(1024, 2, 4, 7, 1),
     "kk::norm_smem<__nv_bfloat16, 1024, 2, 4, 7, 1>", 229376),
    ("fast", "layer_norm", F16, 131072, 300, True, 90, BulkRing(1024, 4, 4, 3, False),
     "kk::norm_bulk<__half, 1024, 4, 4, 3, false, 1>", 196608),
    ("fast", "layer_norm", F16, 4096, 8192, True, 90, NormTile(128, 4, staged=True),
     "kk::norm_rows<__half, 128, 4, 1, 1, false, true>", 16384),
    ("fast", "layer_norm", F16, 4096, 8193, True, 90, NormTile(128, 4),
     "kk::norm_rows<__half, 128, 4, 1, 1, false, false>", 0),
    ("fast", "layer_norm", BF16, 4096, 20000, True, 90, NormTile(128, 4, staged=True),
     "kk::norm_rows<__nv_bfloat16, 128, 4, 1, 1, false, true>", 16384),
    ("fast", "rms_norm", F16, 4096, 3584, True, 90, NormTile(128, 4, staged=True),
     "kk::norm_rows<__half, 128, 4, 1, 1, false, true>", 16384),
    ("fast", "rms_norm", F16, 4096, 3583, True, 90, NormTile(128, 4, early=True),
     "kk::norm_rows<__half, 128, 4, 1, 1, true, false>", 0),
    ("fast", "rms_norm", BF16, 4096, 4096, True, 90, NormTile(128, 4),
     "kk::norm_rows<__nv_bfloat16, 128, 4, 1, 1, false, false>", 0),
    ("fast", "layer_norm", F32, 32768, 300, False, 90, NormTile(256, 4, 8, staged=True),
     "kk::norm_rows<float, 256, 4, 8, 0, false, true>", 32768),
    ("fast", "layer_norm", F32, 32768, 300, False, 80, Welford(), "kk::norm_welford<float, 512>", 0),
    ("fast", "layer_norm", F16, 65536, 300, False, 90, NormTile(1024, 4, 2, staged=True),
     "kk::norm_rows<__half, 1024, 4, 2, 0, false, true>", 131072),
    ("fast", "layer_norm", F32, 65536, 300, True, 80, Welford(), "kk::norm_welford<float, 512>", 0),
    ("registers", "layer_norm", F32, 32768, 300, True, 90, Welford(), "kk::norm_welford<float, 512>", 0),
    ("fast", "layer_norm", F32, 1000, 300, False, 90, NormTile(64, 4),
     "kk::norm_rows<float, 64, 4, 1, 0, false, false>", 0),
    ("welford", "layer_norm", F32, 1000, 300, True, 90, Welford(), "kk::norm_welford<float, 512>", 0),
]


@pytest.mark.parametrize("rung,op,dtype,len_,rows,aligned,sm,want,name,shmem", CHOSEN)
def test_the_rule_chooses_what_the_dispatcher_chose(rung, op, dtype, len_, rows, aligned, sm, want, name, shmem):
    got = norm.config_for(rung, dtype, len_, aligned=aligned, rms=op == "rms_norm", rows=rows, sm=sm)
    assert got == want
    assert got.name(dtype, aligned) == name
    assert got.shared_bytes(True, op == "layer_norm") == shmem


# lengths at and around every table boundary, row counts around every row range
LENS = sorted({1, 3, 127, 128, 129, 512, 1000, 1024, 1025, 2048, 2056, 3000, 4088, 4096, 4097, 8192, 8193, 16384,
               16385, 20000, 24576, 31744, 31745, 32768, 32769, 40000, 65536, 65537, 100000, 131072, 131073, 300000})
ROWS = (1, 5, 300, 3583, 3584, 4096, 5632, 5633, 8192, 8193, 20000)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rung", ["welford", "registers", "fast"])
def test_the_rule_holds_every_row_and_lists_every_tuned_form(dtype, rung):
    """Over a dense sweep of inputs in every row form, the rule's choice takes the row (check() passes);
    every persistent, cluster, bulk and shared-memory configuration it reaches is listed by configs() (so
    the CPU compile test and warmup build it); the plain register tiles are sampled there."""
    from kernelkit.ops.reduction._rows import ALIGNED, ELEMS

    for form in (ALIGNED, ELEMS, WINDOW, WINDOW_IN):
        listed = set(norm.configs(dtype, aligned=form, rung=rung))
        for len_, rows, rms, sm in itertools.product(LENS, ROWS, (False, True), (80, 90)):
            c = norm.config_for(rung, dtype, len_, aligned=form, rms=rms, rows=rows, sm=sm)
            c.check("layer_norm", dtype, len_, form, sm)
            if not isinstance(c, NormTile) or c.staged or c.cluster > 1 or c.early:
                assert c in listed, (c, len_, rows, form)


def test_the_rungs_list_one_kernel_per_reachable_form():
    """The kernel lists (compiled by the CPU compile test and `kernelkit inspect`): the counts recorded when
    the unreachable spares, prefetch forms and fixed-stride alternatives left them."""
    counts = {(r, d): len(norm.OPS["layer_norm"].variant(r).kernels(d)) for r in ("welford", "registers", "fast")
              for d in DTYPES}
    assert counts == {("welford", F32): 1, ("welford", F16): 1, ("welford", BF16): 1,
                      ("registers", F32): 22, ("registers", F16): 28, ("registers", BF16): 28,
                      ("fast", F32): 49, ("fast", F16): 48, ("fast", BF16): 48}
    for d in DTYPES:
        names = [k.name for k in norm.OPS["rms_norm"].variant("fast").kernels(d)]
        assert len(names) == len(set(names))
        assert names == [k.name for k in norm.OPS["layer_norm"].variant("fast").kernels(d)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_configuration_fits_an_sm90_and_round_trips(dtype):
    """Every configuration the rules choose: its shared memory fits beside the kernel's own, bulk copies
    move whole 16-byte vectors, shared-memory rows hold a slice and a chunk more; each survives the trip
    through the custom op as text."""
    for aligned in (True, False):
        for cfg in norm.configs(dtype, aligned=aligned):
            assert parse_config(config_text(cfg), norm.CONFIG_CLASSES) == cfg
            assert cfg.shared_bytes(True, True) + STATIC_SHARED <= SM90_MAX_DYNAMIC_SHARED, cfg
            if isinstance(cfg, BulkRing):
                assert aligned and cfg.vecs % cfg.chunks == 0
                chunk = cfg.threads * cfg.vecs * 16 // cfg.chunks
                assert chunk % 16 == 0  # cp.async.bulk moves multiples of 16 bytes
                assert cfg.shared_bytes(True, True) == cfg.stages * chunk + (
                    2 * cfg.threads * cfg.vecs * 16 if cfg.staged else 0)
            if isinstance(cfg, SmemRows):
                assert aligned and cfg.stages > cfg.chunks
                assert cfg.shared_bytes() == cfg.stages * cfg.threads * cfg.per * 16
                assert cfg.capacity(dtype) == 65536
            if isinstance(cfg, (NormTile, BulkRing, SmemRows)):
                assert cfg.kernel(dtype, aligned).dyn_shared == cfg.shared_bytes(True, True)


def test_tables_pick_the_smallest_holding_configuration():
    for n, table in nc.BULK.items():
        dtype = F32 if n == 4 else F16
        for cap, cfg in table.items():
            assert cfg.capacity(dtype) >= cap
    assert norm.config_for("fast", F32, 40000, aligned=True, rms=False, rows=7, sm=90) == nc.BULK[4][65536]
    assert norm.config_for("fast", F32, 65537, aligned=True, rms=True, rows=7, sm=90) == nc.BULK[4][131072]
    assert norm.config_for("fast", F32, 131073, aligned=True, rms=False, rows=7, sm=90) == Welford()
    # 16-bit layer_norm rows of 16K-32K: one-CTA bulk rings; rms_norm and fp32 keep the register tile
    ring = nc.BULK_LAYER_NORM[8][32768]
    assert norm.config_for("fast", BF16, 20000, aligned=True, rms=False, rows=7, sm=90) == ring
    assert norm.config_for("fast", F16, 16384, aligned=True, rms=False, rows=7, sm=90) == NormTile(512, 4)
    assert norm.config_for("fast", F16, 32768, aligned=True, rms=True, rows=7, sm=90) == NormTile(1024, 4)


def test_cluster_rows_pick_their_lengths():
    """The tight register-tile clusters: fp16 rows of 32K-64K (both ops), fp32 rms_norm rows of 32K-64K,
    fp32 layer_norm rows of 31K-32K; aligned rows on sm_90 only."""
    def rule(dtype, len_, rms=False, aligned=True, sm=90):
        return norm.config_for("fast", dtype, len_, aligned=aligned, rms=rms, rows=300, sm=sm)

    fp16 = nc.CLUSTER_ROWS[F16][65536]
    assert rule(F16, 65536) == rule(F16, 40000) == rule(F16, 40000, rms=True) == fp16
    assert rule(F16, nc.CLUSTER_ROWS_FROM) != fp16 and rule(F16, 65537) != fp16
    assert rule(F16, 65536, aligned=False) == NormTile(1024, 4, 2, staged=True)
    assert rule(BF16, 65536) == nc.SMEM["layer_norm"][BF16][65536]
    fp32 = nc.CLUSTER_ROWS_RMS[F32][65536]
    assert rule(F32, 65536, rms=True) == fp32 and rule(F32, 65536) == nc.BULK[4][65536]
    ln32 = nc.CLUSTER_ROWS_LN[F32][32768]
    assert rule(F32, 32768) == rule(F32, 31748) == ln32
    assert rule(F32, nc.CLUSTER_ROWS_LN_FROM) == NormTile(992, 8)  # a half-empty cluster is slower
    assert rule(F32, 32768, rms=True) == NormTile(1024, 8)
    assert rule(F32, 32768, sm=80) == NormTile(1024, 8)
    for cfg, dtype in ((fp16, F16), (fp32, F32), (ln32, F32)):
        assert cfg.handout and cfg.staged and cfg.name(dtype, True).startswith("kk::norm_rows_dyn<")
        assert cfg.capacity(dtype) == (32768 if cfg is ln32 else 65536)


def test_4096_element_rows_staged_by_row_count():
    """fp16 layer_norm rows of 2K-4K elements: staged persistent CTAs up to STAGED_MAX_ROWS rows, the tight
    tile a CTA a row (weight and bias read at the output) beyond; bf16 staged at any row count; fp16
    rms_norm staged within STAGED_RMS_ROWS, early weight reads outside; bf16 rms_norm never staged."""
    def rule(dtype, len_, rows, rms=False):
        return norm.config_for("fast", dtype, len_, aligned=True, rms=rms, rows=rows, sm=90)

    staged, plain = NormTile(128, 4, staged=True), NormTile(128, 4)
    limit = nc.STAGED_MAX_ROWS[F16]
    lo, hi = nc.STAGED_RMS_ROWS[F16]
    for len_ in (4096, 2056):
        assert rule(F16, len_, limit) == staged and rule(F16, len_, limit + 1) == plain
        assert rule(BF16, len_, 10 * limit) == staged
        for rows in (lo - 1, hi + 1, limit):
            assert rule(F16, len_, rows, rms=True) == NormTile(128, 4, early=True)
        for rows in (lo, 4096, hi):
            assert rule(F16, len_, rows, rms=True) == staged
        assert rule(BF16, len_, 4096, rms=True) == plain
    assert norm.config_for("fast", F16, 4096, aligned=False, rms=True, rows=4096, sm=90) == plain
    names = {k.name for k in norm.OPS["layer_norm"].variant("fast").kernels(F16)}
    assert {c.name(F16, True) for c in (staged, plain, NormTile(128, 4, early=True))} <= names


def test_a_configuration_that_cannot_run_the_input_raises():
    tile = NormTile(128, 4)
    tile.check("layer_norm", F16, 4096, True, 80)
    with pytest.raises(ValueError, match="holds 4096 elements, the row needs 4097"):
        tile.check("layer_norm", F16, 4097, True, 90)
    with pytest.raises(ValueError, match="need sm_90"):
        NormTile(512, 4, 8, staged=True).check("layer_norm", F32, 1000, True, 80)
    with pytest.raises(ValueError, match="aligned"):
        NormTile(128, 4, early=True).check("rms_norm", F16, 4095, False, 90)
    with pytest.raises(ValueError, match="aligned"):
        nc.BULK[4][65536].check("layer_norm", F32, 40000, False, 90)
    with pytest.raises(ValueError, match="need sm_90"):
        nc.SMEM["rms_norm"][BF16][65536].check("rms_norm", BF16, 40000, True, 80)
    Welford().check("layer_norm", F32, 10**7, False, 80)
    for bad in (lambda: NormTile(512, 4, 8), lambda: NormTile(128, 4, 1, early=True, staged=True),
                lambda: NormTile(128, 4, handout=True), lambda: NormTile(32, 4, 2, staged=True),
                lambda: NormTile(48, 4), lambda: BulkRing(1024, 3, 2, 3, True, 2),
                lambda: SmemRows(512, 2, 4, 4)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="not a configuration"):
        parse_config("SoftmaxTile(threads=128, vecs=4, cluster=1)", norm.CONFIG_CLASSES)


def test_dynamic_shared_memory_is_opted_in_at_48k(monkeypatch):
    """48 KB of ring with no weight or bias staged (16K-32K 16-bit layer_norm rows without them) plus the
    kernel's static shared memory is past the default limit: the opt-in is made for it too."""
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver

    from kernelkit.runtime import allow_shared

    shmem = nc.BULK_LAYER_NORM[8][32768].shared_bytes(False, False)
    assert shmem == 48 * 1024  # the case that once failed to launch
    calls = []
    monkeypatch.setattr(driver, "cuKernelSetAttribute",
                        lambda attr, n, handle, dev: calls.append(n) or (driver.CUresult.CUDA_SUCCESS,))
    monkeypatch.setattr(driver, "CUdevice", lambda dev: dev)

    class FakeKernel:
        handle = object()

    k = FakeKernel()
    allow_shared(k, shmem, 0)
    allow_shared(k, shmem, 0)  # asked once per kernel and size
    allow_shared(k, 0, 0)  # nothing to opt into
    assert calls == [shmem]


def test_handout_counters_one_buffer_per_device_and_stream():
    """One zeroed buffer per (device, stream), allocated on that device and reused by later launches on the
    same stream; devices never share one even where their stream handles match (every device's default
    stream is handle 0)."""
    made = []

    class FakeBuf:
        def __init__(self, dev):
            self.device = f"cuda:{dev}"
            made.append(self)

        def data_ptr(self):
            return 1000 + len(made)

    handles = {0: 0, 1: 0}
    counters = HandoutCounters(alloc=FakeBuf, stream=lambda dev: handles[dev])
    a, b = counters(0), counters(1)
    assert a != b and [m.device for m in made] == ["cuda:0", "cuda:1"]
    assert counters(0) == a and len(made) == 2  # reused
    handles[0] = 77  # another stream on device 0
    assert counters(0) not in (a, b) and len(made) == 3
    assert set(counters.buffers) == {(0, 0), (1, 0), (0, 77)}


def test_norm_smem_kernels_claim_bulk_copies_and_wide_stores():
    """Every norm_smem kernel on sm_90: UBLKCP in its SASS, 128-bit stores, no spills; a report without the
    bulk copy fails its claim."""
    pytest.importorskip("cuda.core")
    import dataclasses

    from kernelkit.analyze.ladder_inspect import analyze_op

    smem = [r for r in analyze_op("rms_norm", "sm_90") if r.variant == "fast" and "norm_smem<" in r.kernel.name]
    want = {c.name(d) for d in DTYPES for c in norm.configs(d, aligned=True) if isinstance(c, SmemRows)}
    assert want and {r.kernel.name for r in smem} == want
    for r in smem:
        assert not r.claim_failures(), (r.kernel.name, r.claim_failures())
        assert any(o.startswith("UBLKCP") for o in r.opcodes) and max(r.store_widths) == 128 and r.local_ops == 0
    assert dataclasses.replace(smem[0], opcodes=frozenset({"FADD"})).claim_failures()


def test_per_vec():
    assert [per_vec(d) for d in DTYPES] == [4, 8, 8]


# ---- the lanes -----------------------------------------------------------------------------------
def test_rows_matter_exactly_where_the_rule_reads_the_row_count():
    """rows_matter is False only where rows_class is (False, False) for every row count."""
    rows = sorted({r + e for r in ROWS for e in (-1, 0, 1)} - {0})
    for dtype in DTYPES:
        for rms in (False, True):
            classes = {nc.rows_class(dtype, r, rms) for r in rows}
            assert nc.rows_matter(dtype, rms) == (classes != {(False, False)}), (dtype, rms)


def test_the_lane_key_of_normalized_shape():
    """An int for one dim, a tuple for several, from ints, tuples, lists and torch.Size of plain ints;
    None (the checked path) for anything the checked path could read otherwise or refuses."""
    import numpy as np

    key = norm._shape_key
    assert key(4096) == key((4096,)) == key([4096]) == key(torch.Size([4096])) == 4096
    assert key((8, 512)) == key([8, 512]) == key(torch.Size([8, 512])) == (8, 512)
    for bad in ((), [], (4096.0,), 4096.0, True, (True,), np.int64(4096), (np.int64(4096),), "4096", None):
        assert key(bad) is None, bad


def _recording_form(record):
    """A fake form(vec, rows): runners that record (vec, rows class, rows, args) instead of launching."""
    def form(vec, rows):
        return lambda r, args: record.append((vec, r, args))
    return form


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rms", (False, True))
def test_the_lane_launches_what_the_checked_path_launches(dtype, rms):
    """build_lane's lane on CPU tensors with a recording form: the checked path's alignment test over x,
    out, weight and bias, its arguments (pointers, 0 for an absent weight or bias, rows, length,
    np.float32 eps, np.int32 rms) and output layout, for weight and bias present or not and views
    starting off a 16-byte boundary."""
    import numpy as np

    from kernelkit.ops.reduction._rows import row_form

    dev = torch.device("cpu")
    for ns in (4096, 1000, 7, (4, 24)):
        shape = (ns,) if isinstance(ns, int) else ns
        len_ = int(np.prod(shape))
        for has_w, has_b in ((True, True), (True, False), (False, False), (False, True)):
            if rms and has_b:
                continue
            record = []
            lane = norm.build_lane(dtype, dev, ns, has_w, has_b, rms, _recording_form(record))
            for rows, offset, woff in ((1, 0, 0), (3, 0, 0), (5, 1, 0), (2, 0, 1), (6, 8, 8)):
                x = torch.randn(rows * len_ + offset).to(dtype)[offset:].view(rows, *shape)
                w = torch.randn(len_ + woff).to(dtype)[woff:].view(shape) if has_w else None
                b = torch.randn(len_ + woff).to(dtype)[woff:].view(shape) if has_b else None
                for eps in ((None,) if rms else ()) + (1e-5, 0.25, 0.0, -0.0, 1e-5):
                    out = lane(x, w, b, eps)
                    assert out.shape == x.shape and out.dtype == dtype
                    assert out.stride() == torch.empty(x.shape).stride()
                    wp, bp = (0 if t is None else t.data_ptr() for t in (w, b))
                    want_eps = np.float32(torch.finfo(dtype).eps if eps is None else eps)
                    args = (x.data_ptr(), out.data_ptr(), wp, bp, rows, len_, want_eps, np.int32(rms))
                    vec = row_form(len_, dtype, x.data_ptr(), out.data_ptr(), wp, bp)
                    got_vec, got_rows, got_args = record[-1]
                    assert (got_vec, got_rows) == (vec, rows)
                    assert got_args == args and [type(a) for a in got_args] == [type(a) for a in args]
                    assert np.signbit(got_args[6]) == np.signbit(args[6])


@pytest.mark.parametrize("rms", (False, True))
def test_the_lane_lets_through_what_it_does_not_take(rms):
    """None (the checked path, which raises or copies) for: x not ending in the normalized shape, x empty
    or not contiguous, a weight or bias of another dtype, shape, or layout, or not a plain tensor, eps
    not a float (layer_norm's None included); a Parameter weight is taken."""
    record = []
    lane = norm.build_lane(F32, torch.device("cpu"), 64, True, not rms, rms, _recording_form(record))
    x, w = torch.randn(3, 64), torch.randn(64)
    b = None if rms else torch.randn(64)
    assert lane(x, w, b, 1e-5) is not None
    assert lane(x, torch.nn.Parameter(w), b, 1e-5) is not None
    bad_calls = [
        (torch.randn(3, 65), w, b, 1e-5), (torch.randn(64, 3).t(), w, b, 1e-5), (torch.randn(0, 64), w, b, 1e-5),
        (torch.randn(()), w, b, 1e-5), (x, w.double(), b, 1e-5), (x, w.half(), b, 1e-5), (x, torch.randn(65), b, 1e-5),
        (x, torch.randn(1, 64), b, 1e-5), (x, torch.randn(128)[::2], b, 1e-5), (x, w.numpy(), b, 1e-5),
        (x, w, b, 1), (x, w, b, "1e-5"), (x, w, b, torch.tensor(1e-5)),
    ]
    if not rms:
        bad_calls += [(x, w, b.double(), 1e-5), (x, w, torch.randn(128)[::2], 1e-5), (x, w, b, None)]
    n = len(record)
    for args in bad_calls:
        assert lane(*args) is None, [getattr(a, "shape", a) for a in args]
    assert len(record) == n  # nothing launched


def test_cpu_tensors_make_no_lane():
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    x, w = torch.randn(2, 64), torch.randn(64)
    with pytest.raises(ValueError, match="CUDA tensor"):
        norm.layer_norm(x, (64,), w, w)
    with pytest.raises(ValueError, match="CUDA tensor"):
        norm.rms_norm(x, (64,), w)
    assert not norm._lanes[False] and not norm._lanes[True]


def test_the_lane_asks_a_form_per_rows_class_where_rows_matter():
    """fp16 rows of 4096: the rule reads the row count (staged up to 8192 rows; rms_norm within its row
    range), so the lane keeps a runner per (alignment, rows_class) and asks the form with the rows of the
    first call of each; fp32: one per alignment."""
    for dtype, rms, rows_list in ((F16, False, (1, 8192, 8193, 20000)), (F16, True, (1, 3583, 3584, 5632, 5633, 8193)),
                                  (F32, False, (1, 8193))):
        asked = []

        def form(vec, rows):
            asked.append((vec, rows))
            return lambda r, args: None

        lane = norm.build_lane(dtype, torch.device("cpu"), 4096, False, False, rms, form)
        for rows in rows_list:
            assert lane(torch.empty(rows, 4096, dtype=dtype), None, None, 1e-5) is not None
        classes = {nc.rows_class(dtype, r, rms) for r in rows_list}
        want = [(True, r) for r in rows_list if nc.rows_matter(dtype, rms)] or [(True, rows_list[0])]
        seen, firsts = set(), []
        for vec, r in want:
            if nc.rows_class(dtype, r, rms) not in seen:
                seen.add(nc.rows_class(dtype, r, rms))
                firsts.append((vec, r))
        assert asked == firsts and len(asked) == (len(classes) if nc.rows_matter(dtype, rms) else 1)
