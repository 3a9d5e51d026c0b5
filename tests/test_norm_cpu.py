"""The norms' configurations and rules without a GPU: each rung's rule one by one (packed rows, warp
slices, CTA rows, clusters, staged, bulk rings, rows in shared memory) and ``auto``'s order, that every
choice holds its row and fits the device, that ``configs`` lists what the rules choose, the text round trip
through the custom op, the errors of a configuration that cannot run an input, the handout counters and the
lanes."""
import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction import norm  # noqa: E402
from kernelkit.ops.reduction import norm_configs as nc  # noqa: E402
from kernelkit.ops.reduction._rows import (ALIGNED, WINDOW, WINDOW_IN, HandoutCounters, config_text,  # noqa: E402
                                           packed_rows_per_block, packed_tile, packs, parse_config, per_vec)
from kernelkit.ops.reduction.norm_configs import BulkRing, NormPacked, NormTile, SmemRows, Welford  # noqa: E402

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
DTYPES = (F32, F16, BF16)
H100_SHARED = 227 * 1024
A, W, WI = ALIGNED, WINDOW, WINDOW_IN


def rule(rung, dtype, len_, form=A, sm=90, smem=None):
    return nc.config_for(rung, dtype, len_, form=form, sm=sm, smem=smem)


# (rung, dtype, len, form, sm) -> (configuration, kernel, dynamic shared memory with weight and bias)
CHOSEN = [
    ("auto", F16, 7, W, 90, NormPacked(2, 4), "kk::norm_packed<__half, kk::PackedConfig<2, 4>>", 0),
    ("auto", F32, 1, A, 80, NormPacked(1, 1), "kk::norm_packed<float, kk::PackedConfig<1, 1>>", 0),
    ("auto", BF16, 1000, A, 90, NormTile(32, 4), "kk::norm_rows<__nv_bfloat16, kk::RowConfig<32, 4, 1, 1, 0, 0>>", 0),
    ("auto", BF16, 8191, W, 90, NormTile(288, 4), "kk::norm_rows<__nv_bfloat16, kk::RowConfig<288, 4, 1, 2, 0, 0>>", 0),
    ("auto", F32, 12288, WI, 90, NormTile(448, 7), "kk::norm_rows<float, kk::RowConfig<448, 7, 1, 3, 0, 0>>", 0),
    ("auto", F16, 32001, W, 90, NormTile(512, 4, 2, staged=True, handout=True),
     "kk::norm_rows<__half, kk::RowConfig<512, 4, 2, 2, 2, 1>>", 2 * (512 * 4 + 2) * 16),
    ("auto", F16, 32001, W, 80, NormTile(1024, 4), "kk::norm_rows<__half, kk::RowConfig<1024, 4, 1, 2, 0, 0>>", 0),
    ("auto", F32, 65536, A, 90, NormTile(512, 8, 4, staged=True, handout=True),
     "kk::norm_rows<float, kk::RowConfig<512, 8, 4, 1, 2, 1>>", 2 * (512 * 8 + 2) * 16),
    ("auto", BF16, 262144, A, 90, NormTile(512, 4, 16, staged=True, handout=True),
     "kk::norm_rows<__nv_bfloat16, kk::RowConfig<512, 4, 16, 1, 2, 1>>", 2 * (512 * 4 + 2) * 16),
    ("auto", F32, 151936, A, 90, NormTile(480, 5, 16, staged=True, handout=True),
     "kk::norm_rows<float, kk::RowConfig<480, 5, 16, 1, 2, 1>>", 2 * (480 * 5 + 2) * 16),
    ("auto", F32, 262144, A, 90, NormTile(512, 8, 16, staged=True, handout=True),
     "kk::norm_rows<float, kk::RowConfig<512, 8, 16, 1, 2, 1>>", 2 * (512 * 8 + 2) * 16),
    ("auto", F16, 300001, W, 90, NormTile(800, 3, 16, staged=True, handout=True),
     "kk::norm_rows<__half, kk::RowConfig<800, 3, 16, 2, 2, 1>>", 2 * (800 * 3 + 2) * 16),
    ("auto", F16, 600001, W, 90, Welford(), "kk::norm_welford<__half, 512>", 0),
    ("staged", F16, 4096, A, 90, NormTile(128, 4, staged=True),
     "kk::norm_rows<__half, kk::RowConfig<128, 4, 1, 1, 1, 1>>", 2 * (128 * 4 + 2) * 16),
    ("bulk_ring", F16, 32768, A, 90, BulkRing(1024, 4, 1, 3, True, 4), "kk::norm_bulk_dyn<__half, 1024, 4, 3, true, 4>",
     3 * 1024 * 16 + 2 * 1024 * 4 * 16),
    ("bulk_ring", F32, 65536, A, 90, BulkRing(1024, 2, 8, 3, True), "kk::norm_bulk<float, 1024, 2, 8, 3, true, 1>",
     3 * 1024 * 2 * 16 + 2 * 1024 * 2 * 16),
    ("smem_rows", BF16, 65536, A, 90, SmemRows(1024, 2, 4, 7, 1), "kk::norm_smem<__nv_bfloat16, 1024, 2, 4, 7, 1>",
     7 * 1024 * 2 * 16),
    ("bulk_ring", F32, 65536, W, 90, Welford(), "kk::norm_welford<float, 512>", 0),
    ("welford", F32, 1000, A, 90, Welford(), "kk::norm_welford<float, 512>", 0),
]


@pytest.mark.parametrize("rung,dtype,len_,form,sm,want,name,shmem", CHOSEN)
def test_the_rule_chooses(rung, dtype, len_, form, sm, want, name, shmem):
    got = norm.config_for(rung, dtype, len_, form=form, sm=sm)
    assert got == want
    assert got.name(dtype, form) == name
    assert got.shared_bytes(True, True) == shmem


def test_packed_rows_rule():
    """Rows whose window (any alignment) spans at most 16 vectors pack: fp32 up to 61 elements, 16-bit up to
    121; the fewest power-of-two lanes taking 4 elements each, shorter rows one lane; a block's window fits
    its 256 x 4 vectors."""
    assert [packs(n, F32) for n in (1, 61, 62)] == [True, True, False]
    assert [packs(n, BF16) for n in (1, 121, 122)] == [True, True, False]
    assert [packed_tile(n) for n in (1, 3, 4, 5, 7, 8, 9, 31, 100, 121)] == [
        (1, 1), (1, 3), (1, 4), (2, 3), (2, 4), (2, 4), (4, 3), (8, 4), (32, 4), (32, 4)]
    for dtype in DTYPES:
        n = per_vec(dtype)
        for len_ in range(1, 16 * n - n + 2):
            per = packed_rows_per_block(len_, dtype)
            assert per * len_ + n - 1 <= 256 * 4 * n < (per + 1) * len_ + n - 1
            got = rule("packed_rows", dtype, len_, W)
            assert isinstance(got, NormPacked) and got.holds(dtype, len_, W) and got.elems <= 4
        assert rule("packed_rows", dtype, 16 * n - n + 2) == Welford()


def test_warp_and_cta_row_rules():
    """warp_rows: up to 128 vectors a power-of-two slice of a warp; cta_row: 4 vectors a thread up to 512
    threads where clusters exist (1024 otherwise), then up to 32 values a thread (fp32 8 vectors, 16-bit 4)."""
    assert rule("warp_rows", F16, 1024) == NormTile(32, 4) and rule("warp_rows", F16, 1025) == Welford()
    assert rule("warp_rows", F16, 1017, W) == NormTile(32, 4) and rule("warp_rows", F16, 1018, W) == Welford()
    assert rule("cta_row", F32, 8192) == NormTile(512, 4)
    assert rule("cta_row", F32, 8196) == NormTile(416, 5)
    assert rule("cta_row", F32, 16384) == NormTile(512, 8) and rule("cta_row", F32, 16388) == Welford()
    assert rule("cta_row", F16, 16384) == NormTile(512, 4) and rule("cta_row", F16, 16392) == Welford()
    assert rule("cta_row", F16, 16392, sm=80) == NormTile(544, 4)
    assert rule("cta_row", F16, 32768, sm=80) == NormTile(1024, 4) and rule("cta_row", F16, 32776, sm=80) == Welford()


def test_cluster_row_rule():
    """Rows past a CTA on sm_90: the smallest cluster (up to 16 CTAs on H100 and H200, a non-portable size;
    8 elsewhere) of CTAs of at most 512 threads x 32 values, then the largest cluster of up to 1024 threads at
    the vectors their staged weight and bias leave shared memory for (fp32: 7); persistent, staged, handed
    out; before sm_90 and beyond, welford; rows a CTA holds stay cta_row."""
    tile = NormTile(512, 4, 2, staged=True, handout=True)
    assert rule("cluster_row", F16, 16392) == NormTile(288, 4, 2, staged=True, handout=True)
    assert rule("cluster_row", F16, 32768) == tile and rule("cluster_row", F16, 32768 - 7, W) == tile
    assert rule("cluster_row", F16, 4096) == NormTile(128, 4)
    assert rule("cluster_row", F16, 40000, sm=80) == Welford()
    assert rule("cluster_row", BF16, 131072) == NormTile(512, 4, 8, staged=True, handout=True)
    assert rule("cluster_row", BF16, 262144) == NormTile(512, 4, 16, staged=True, handout=True)
    # the window's 7 more elements do not fit 8 CTAs: 16 of 704 threads
    assert rule("cluster_row", BF16, 262144, W) == NormTile(704, 3, 16, staged=True, handout=True)
    assert rule("cluster_row", F32, 8 * 1024 * 7 * 4) == NormTile(512, 7, 16, staged=True, handout=True)
    assert rule("cluster_row", F32, 8 * 1024 * 7 * 4 + 4) == NormTile(480, 8, 16, staged=True, handout=True)
    assert rule("cluster_row", F32, 300001) == NormTile(960, 5, 16, staged=True, handout=True)
    assert rule("cluster_row", F32, 16 * 1024 * 7 * 4) == NormTile(1024, 7, 16, staged=True, handout=True)
    assert rule("cluster_row", F32, 16 * 1024 * 7 * 4 + 4) == Welford()
    # a device with less shared memory a block: fewer vectors a thread of the 1024-thread fallback
    assert rule("cluster_row", F32, 16 * 1024 * 5 * 4, smem=163 * 1024) == NormTile(1024, 5, 16, staged=True,
                                                                                        handout=True)
    assert rule("cluster_row", F32, 16 * 1024 * 5 * 4 + 4, smem=163 * 1024) == Welford()


def test_staged_bulk_and_smem_rules():
    """staged: cta_row's tile, persistent and staged (clusters past a CTA); bulk_ring: one-CTA rings of 1024
    threads up to 4 vectors a thread (a vector a stage), clusters of 2-8 at 2 vectors, 8 CTAs up to 4, weight
    and bias staged where shared memory has room; smem_rows: 1024 x 2-vector chunks, a CTA or a cluster of 2.
    The last two take aligned rows on sm_90 only."""
    assert rule("staged", F32, 8192) == NormTile(512, 4, staged=True)
    assert rule("staged", F16, 40000) == rule("cluster_row", F16, 40000)
    assert rule("bulk_ring", F16, 16384) == BulkRing(1024, 2, 1, 3, True, 2)
    assert rule("bulk_ring", F32, 131072) == BulkRing(1024, 4, 8, 3, False)
    assert rule("bulk_ring", F16, 131072) == BulkRing(1024, 2, 8, 3, True)
    assert rule("bulk_ring", F16, 32768, W) == rule("bulk_ring", F16, 32768, sm=80) == Welford()
    assert rule("bulk_ring", F32, 8 * 1024 * 16 + 4) == Welford()
    assert rule("smem_rows", BF16, 65536) == SmemRows(1024, 2, 4, 7, 1)
    assert rule("smem_rows", F32, 65536) == SmemRows(1024, 2, 4, 7, 2)
    assert rule("smem_rows", F32, 65540) == Welford()


def test_auto_takes_the_first_holder():
    for dtype in DTYPES:
        for len_ in (1, 50, 200, 1500, 9000, 20000, 70000, 200000, 400000):
            for form in (A, W):
                for sm in (80, 90):
                    want = next((c for c in (nc.packed_rows, nc.warp_rows, nc.cta_row, nc.cluster_row)
                                 for c in [c(dtype, len_, form, sm, nc.shared_per_block(sm))] if c is not None),
                                Welford())
                    assert rule("auto", dtype, len_, form, sm) == want


LENS = sorted({1, 2, 3, 7, 31, 61, 62, 64, 100, 121, 122, 127, 128, 129, 512, 1000, 1024, 1025, 2048, 4096, 4097, 8191,
               8192, 8193, 16384, 16385, 20000, 24576, 32768, 32769, 40000, 65536, 65537, 100000, 131072, 131073,
               229376, 262144, 262145, 300000})
RUNGS = [v.name for v in kernelkit.ladder("layer_norm")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rung", RUNGS)
def test_every_choice_holds_its_row_and_fits(dtype, rung):
    """Over a dense sweep of inputs in every row form, the rule's choice takes the row (check() passes), its
    shared memory fits a block of the device beside the kernel's own, clusters and bulk copies only on sm_90,
    and it survives the trip through the custom op as text; a holder that leaves a row to welford holds no
    longer row."""
    for form in (A, W, WI):
        for sm in (80, 90):
            beyond = None
            for len_ in LENS:
                c = rule(rung, dtype, len_, form, sm)
                c.check("layer_norm", dtype, len_, form, sm)
                assert c.shared_bytes(True, True) + nc.STATIC_SHARED <= nc.shared_per_block(sm), c
                assert parse_config(config_text(c), norm.CONFIG_CLASSES) == c
                if isinstance(c, (BulkRing, SmemRows)) or (isinstance(c, NormTile) and c.cluster > 1):
                    assert sm >= 90, c
                if isinstance(c, Welford) and rung not in ("welford", "bulk_ring", "smem_rows"):
                    beyond = len_ if beyond is None else beyond
                else:
                    assert beyond is None or rung in ("bulk_ring", "smem_rows"), (c, len_, beyond)


def test_the_rungs_list_one_kernel_per_reachable_form():
    """Every kernel name once; a register tile in the forms that reach it (aligned rows, the window forms);
    rms_norm launches the same kernels as layer_norm."""
    for d in DTYPES:
        for rung in RUNGS:
            names = [k.name for k in norm.OPS["layer_norm"].variant(rung).kernels(d)]
            assert len(names) == len(set(names)) and names
            assert names == [k.name for k in norm.OPS["rms_norm"].variant(rung).kernels(d)]
        auto = [k.name for k in norm.OPS["layer_norm"].variant("auto").kernels(d)]
        tiles = [c for c in set(norm.configs(d, form=A)) | set(norm.configs(d, form=W)) if isinstance(c, NormTile)]
        assert all(any(f"RowConfig<{t.threads}, {t.vecs}, {t.cluster}, {f}," in n for n in auto)
                   for t in tiles for f in (1, 2, 3) if f == 1 and t in norm.configs(d, form=A) or f > 1
                   and t in norm.configs(d, form=W))


def test_the_register_budget_is_a_rule_of_the_values_a_thread_holds():
    """The kernels' __launch_bounds__ (reduce.cuh: row_registers, launch_registers, row_budget_blocks) in
    Python: the words a thread holds plus 32 (16-bit values 8 more, window forms 16 more, staged 8 more), in
    steps of 8, at most 64; the most blocks an SM for which ptxas still allows that many (each
    sub-partition's 16384 registers over its share of the warps, rounded up)."""
    def registers(words, extra=0):
        return min(64, -(-(words + 32 + extra) // 8) * 8)

    def allowed(blocks, block):
        return 16384 // (32 * -(-(blocks * -(-block // 32)) // 4)) // 8 * 8

    def blocks(block, words, extra=0):
        b = 65536 // (registers(words, extra) * block)
        while b > 1 and allowed(b, block) < registers(words, extra):
            b -= 1
        return max(1, b)

    assert [registers(w) for w in (4, 8, 16, 32)] == [40, 40, 48, 64]
    assert blocks(256, 16) == 5 and blocks(128, 16, 8) == 9 and blocks(1024, 16) == 1  # fp32 256 x 4, fp16 128 x 4
    assert blocks(64, 8, 8) == 20 and allowed(20, 64) >= 48 and allowed(21, 64) < 48
    assert blocks(512, 16, 24) == 2 and blocks(160, 16, 24) == 6


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_configuration_fits_an_sm90_and_round_trips(dtype):
    """Every configuration the rules choose: its shared memory fits beside the kernel's own, bulk copies
    move whole 16-byte vectors, shared-memory rows hold a slice and a chunk more, the staged chunks are the
    slice's and one each side; each survives the trip through the custom op as text."""
    for rung in RUNGS:
        for form in (A, W):
            for cfg in norm.configs(dtype, form=form, rung=rung):
                assert parse_config(config_text(cfg), norm.CONFIG_CLASSES) == cfg
                assert cfg.shared_bytes(True, True) + nc.STATIC_SHARED <= H100_SHARED, cfg
                if isinstance(cfg, BulkRing):
                    chunk = cfg.threads * cfg.vecs * 16 // cfg.chunks
                    assert chunk % 16 == 0  # cp.async.bulk moves multiples of 16 bytes
                    assert cfg.shared_bytes(True, True) == cfg.stages * chunk + (
                        2 * cfg.threads * cfg.vecs * 16 if cfg.staged else 0)
                if isinstance(cfg, SmemRows):
                    assert cfg.stages > cfg.chunks
                    assert cfg.shared_bytes() == cfg.stages * cfg.threads * cfg.per * 16
                if isinstance(cfg, NormTile) and cfg.staged:
                    assert cfg.shared_bytes(True, False) == (cfg.threads * cfg.vecs + 2) * 16
                    assert cfg.shared_bytes(True, True) == 2 * cfg.shared_bytes(True, False)
                if not isinstance(cfg, Welford):
                    assert cfg.kernel(dtype, form).dyn_shared == cfg.shared_bytes(True, True)


def test_a_configuration_that_cannot_run_the_input_raises():
    tile = NormTile(128, 4)
    tile.check("layer_norm", F16, 4096, A, 80)
    with pytest.raises(ValueError, match="holds 4096 elements, the row needs 4097"):
        tile.check("layer_norm", F16, 4097, A, 90)
    with pytest.raises(ValueError, match="the row needs 4103"):
        tile.check("layer_norm", F16, 4096, W, 90)
    with pytest.raises(ValueError, match="need sm_90"):
        NormTile(512, 4, 8, staged=True).check("layer_norm", F32, 1000, A, 80)
    with pytest.raises(ValueError, match="aligned"):
        rule("bulk_ring", F32, 65536).check("layer_norm", F32, 40000, W, 90)
    with pytest.raises(ValueError, match="need sm_90"):
        SmemRows(1024, 2, 4, 7, 1).check("rms_norm", BF16, 40000, A, 80)
    with pytest.raises(ValueError, match="holds rows of 12 elements"):
        NormPacked(4, 3).check("rms_norm", F32, 13, A, 90)
    Welford().check("layer_norm", F32, 10**7, W, 80)
    for bad in (lambda: NormTile(512, 4, 8), lambda: NormTile(32, 4, staged=True),
                lambda: NormTile(128, 4, handout=True), lambda: NormTile(32, 4, 2, staged=True),
                lambda: NormTile(48, 4), lambda: BulkRing(1024, 3, 2, 3, True, 2),
                lambda: SmemRows(512, 2, 4, 4), lambda: NormPacked(3, 4), lambda: NormPacked(8, 9)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="not a configuration"):
        parse_config("SoftmaxTile(threads=128, vecs=4, cluster=1)", norm.CONFIG_CLASSES)


def test_dynamic_shared_memory_is_opted_in_at_48k(monkeypatch):
    """48 KB of ring with no weight or bias staged plus the kernel's static shared memory is past the default
    limit: the opt-in is made for it too."""
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver

    from kernelkit.runtime import allow_shared

    shmem = BulkRing(1024, 4, 1, 3, True, 4).shared_bytes(False, False)
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


def test_kernel_claims_of_each_kind():
    """Register tiles: 128-bit loads, stores of 128 bits (window: partial vectors below), 32-bit pair stores
    out of phase; staged ones claim their asynchronous copies, handed-out ones their atomic; packed rows
    claim the copies in and 128-bit stores out; norm_smem claims bulk copies."""
    k = NormTile(512, 4, 2, staged=True, handout=True).kernel(F16, W)
    assert (k.load_bits, k.store_bits, k.sass, k.min_sm) == (128, 128, ("LDGSTS", "ATOMG"), 90)
    assert NormTile(32, 4).kernel(BF16, WI).store_bits == 32 and NormTile(32, 4).kernel(F32, A).sass == ()
    assert NormPacked(8, 4).kernel(F16, A).sass == ("LDGSTS",) and NormPacked(8, 4).kernel(F16, A).store_bits == 128
    assert SmemRows(1024, 2, 4, 7, 1).kernel(BF16).sass == ("UBLKCP",)


def test_per_vec():
    assert [per_vec(d) for d in DTYPES] == [4, 8, 8]


# ---- the lanes -----------------------------------------------------------------------------------
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
    """A fake form(vec): runners that record (vec, rows, args) instead of launching."""
    def form(vec):
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
                    want_eps = np.float32(torch.finfo(torch.float32).eps if eps is None else eps)
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


def test_the_lane_asks_a_form_once_per_row_form():
    """The lane keeps a runner per row form and asks the form once for each, whatever the row count."""
    asked = []

    def form(vec):
        asked.append(vec)
        return lambda r, args: None

    lane = norm.build_lane(F16, torch.device("cpu"), 4096, False, False, False, form)
    for rows in (1, 8192, 8193, 20000):
        assert lane(torch.empty(rows, 4096, dtype=F16), None, None, 1e-5) is not None
    x = torch.empty(3 * 4096 + 1, dtype=F16)[1:].view(3, 4096)
    assert lane(x, None, None, 1e-5) is not None
    assert asked == [ALIGNED, WINDOW_IN]


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_bulk_ring_stages_weight_and_bias_with_shared_stores(dtype):
    """The staged bulk ring copies each thread's weight and bias vectors into shared memory with shared
    stores (STS.128), and its global stores (STG.E.128) are the output's alone, as in the unstaged ring:
    writing the staging through the row tile's aligned store emitted st.global on shared addresses, which
    faults on the GPU ("operation not supported on global/shared address space")."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.sass import census, disassemble
    from kernelkit.runtime import compile_source

    def stores(staged):
        k = BulkRing(1024, 2, 1, 3, staged, 2).kernel(dtype)
        build = compile_source(k.source, (k.name,), "sm_90")
        ops = census(disassemble(build.cubin)[build.mangled(k.name)]).opcodes
        return ops.get("STG.E.128", 0), ops.get("STS.128", 0)

    (stg_staged, sts_staged), (stg_plain, sts_plain) = stores(True), stores(False)
    assert stg_staged == stg_plain > 0
    assert sts_staged >= sts_plain + 2 * 2  # weight and bias: 2 vectors a thread each
