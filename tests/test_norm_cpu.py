"""The norms' configurations and rules without a GPU: each rung's rule one by one (packed rows, warp
slices, CTA rows, clusters, staged, bulk rings, rows in shared memory) and ``auto``'s order, that every
choice holds its row and fits the device, that ``configs`` lists what the rules choose, the register budget,
the text round trip through the custom op and the errors of a configuration that cannot run an input."""
import dataclasses

import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction import norm  # noqa: E402
from kernelkit.ops.reduction import norm_rules as nr  # noqa: E402
from kernelkit.ops.reduction._rows import (config_text, packed_rows_per_block, packed_tile, packs,  # noqa: E402
                                           parse_config, per_vec)
from kernelkit.ops.reduction.norm_configs import BulkRing, NormPacked, NormTile, SmemRows, Welford  # noqa: E402
from norm_cpu_helpers import BF16, DTYPES, F16, F32, A, W, WI  # noqa: E402

H100_SHARED = 227 * 1024


def rule(rung, dtype, len_, form=A, sm=90, smem=None):
    return nr.config_for(rung, dtype, len_, form=form, sm=sm, smem=smem)


# (rung, dtype, len, form, sm) -> (configuration, kernel, dynamic shared memory with weight and bias)
CHOSEN = [
    ("auto", F16, 7, W, 90, NormPacked(2, 4), "kk::norm_packed<__half, kk::PackedConfig<2, 4>>", 0),
    ("auto", F32, 1, A, 80, NormPacked(1, 1), "kk::norm_packed<float, kk::PackedConfig<1, 1>>", 0),
    ("auto", BF16, 1000, A, 90, NormTile(32, 4), "kk::norm_rows<__nv_bfloat16, kk::RowConfig<32, 4, 1, 1, 0, 0>>", 0),
    ("auto", BF16, 8191, W, 90, NormTile(288, 4, phased=True),
     "kk::norm_rows<__nv_bfloat16, kk::RowConfig<288, 4, 1, 2, 1, 2>>", 2 * 288 * 4 * 16),
    ("auto", F16, 127, W, 90, NormTile(8, 3, phased=True), "kk::norm_rows<__half, kk::RowConfig<8, 3, 1, 2, 1, 2>>",
     2 * 128 * 3 * 16),
    ("auto", F32, 1025, W, 90, NormTile(96, 3), "kk::norm_rows<float, kk::RowConfig<96, 3, 1, 2, 0, 0>>", 0),
    ("auto", F32, 12288, WI, 90, NormTile(448, 7), "kk::norm_rows<float, kk::RowConfig<448, 7, 1, 3, 0, 0>>", 0),
    ("auto", F16, 32001, W, 90, NormTile(512, 4, 2, staged=True, handout=True),
     "kk::norm_rows<__half, kk::RowConfig<512, 4, 2, 2, 2, 1>>", 2 * (512 * 4 + 2) * 16),
    # (phased, 1024 threads x 4 vectors would take 128 KB of slots: two CTAs an SM do not fit)
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
    assert rule("warp_rows", F16, 1017, W) == NormTile(32, 4, phased=True)
    assert rule("warp_rows", F16, 1018, W) == Welford()
    assert rule("cta_row", F32, 8192) == NormTile(512, 4)
    assert rule("cta_row", F32, 8196) == NormTile(416, 5)
    assert rule("cta_row", F32, 16384) == NormTile(512, 8) and rule("cta_row", F32, 16388) == Welford()
    assert rule("cta_row", F16, 16384) == NormTile(512, 4) and rule("cta_row", F16, 16392) == Welford()
    assert rule("cta_row", F16, 16392, sm=80) == NormTile(544, 4)
    assert rule("cta_row", F16, 32768, sm=80) == NormTile(1024, 4) and rule("cta_row", F16, 32776, sm=80) == Welford()


def test_phased_rule_and_grid():
    """16-bit rows at any alignment held by a warp slice or a CTA are phased (both window forms, sm_80 and
    sm_90) where two CTAs an SM have room for the slots; aligned and fp32 rows are not. A phased launch takes
    a CTA for every group of rows while the resident CTAs hold them at once, else the resident CTAs rounded
    down to a row stride that is a multiple of the phases."""
    for dtype in (F16, BF16):
        for len_ in (127, 257, 1025, 4097, 8191, 16377):
            for form in (W, WI):
                for sm in (80, 90):
                    got = rule("auto", dtype, len_, form, sm)
                    assert isinstance(got, NormTile) and got.phased and got.cluster == 1, (dtype, len_, form, sm)
                    assert 2 * (got.shared_bytes(True, True) + nr.STATIC_SHARED) <= nr.shared_per_block(sm)
                    assert got.shared_bytes(True, False) == got.block * got.vecs * 16
                    # rms_norm keeps the shifted reads (config_for's rms): the same tile, not phased
                    plain = nr.config_for("auto", dtype, len_, form=form, sm=sm, rms=True)
                    assert plain == dataclasses.replace(got, phased=False), (dtype, len_, form, sm)
            assert not rule("auto", dtype, len_ + (8 - len_ % 8), A).phased
    assert not rule("auto", F32, 1025, W).phased and not rule("auto", F32, 127, WI).phased
    assert rule("auto", F16, 32761, W, 80) == NormTile(1024, 4)  # 128 KB of slots: read shifted
    from kernelkit.ops.reduction.norm_configs import phased_grid
    assert phased_grid(100, 16, 1320, 8) == 7  # one wave: a CTA for every 16 rows
    assert phased_grid(1056832, 16, 1321, 8) == 1321  # 16 rows a CTA: every stride keeps the phase
    assert phased_grid(263689, 4, 1321, 8) == 1320  # 4 rows a CTA: an even grid
    assert phased_grid(131200, 1, 2111, 8) == 2104 and phased_grid(131200, 1, 2111, 4) == 2108
    assert phased_grid(131200, 1, 5, 8) == 8  # at least one stride of whole phase cycles
    with pytest.raises(ValueError, match="phased"):
        NormTile(128, 4, staged=True, phased=True)


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
                    want = next((c for c in (nr.packed_rows, nr.warp_rows, nr.cta_row, nr.cluster_row)
                                 for c in [c(dtype, len_, form, sm, nr.shared_per_block(sm))] if c is not None),
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
                assert c.shared_bytes(True, True) + nr.STATIC_SHARED <= nr.shared_per_block(sm), c
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
                assert cfg.shared_bytes(True, True) + nr.STATIC_SHARED <= H100_SHARED, cfg
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
