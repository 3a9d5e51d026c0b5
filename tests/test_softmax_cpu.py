"""softmax's configurations and rule without a GPU: the rule's choices and each holder's rule, the tiles'
fit to their rows, the row forms, the text round trip, the errors and the lane."""
import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction import softmax as sm  # noqa: E402
from kernelkit.ops.reduction._rows import (ALIGNED, WINDOW, WINDOW_IN, cluster_tile, config_text,  # noqa: E402
                                           cta_tile, parse_config, per_vec, row_form, warp_tile, window_len)

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
DTYPES = (F32, F16, BF16)
Tile, Loop, Packed = sm.SoftmaxTile, sm.Loop, sm.SoftmaxPacked

# (rung, dtype, len, form, sm) -> (configuration, kernel)
A, W, WI = ALIGNED, WINDOW, WINDOW_IN
CHOSEN = [
    ("auto", F32, 65536, A, 90, Tile(512, 8, 4), "kk::softmax_rows<float, kk::RowConfig<512, 8, 4, 1>>"),
    ("auto", F32, 65536, A, 80, Loop("online"), "kk::softmax_online<float, 512>"),
    ("auto", F16, 1000, W, 90, Tile(32, 4), "kk::softmax_rows<__half, kk::RowConfig<32, 4, 1, 2>>"),
    ("auto", BF16, 7, W, 90, Packed(2, 4), "kk::softmax_packed<__nv_bfloat16, kk::PackedConfig<2, 4>>"),
    ("auto", F32, 3, WI, 90, Packed(1, 3), "kk::softmax_packed<float, kk::PackedConfig<1, 3>>"),
    ("auto", F16, 121, W, 80, Packed(32, 4), "kk::softmax_packed<__half, kk::PackedConfig<32, 4>>"),
    ("auto", F16, 122, W, 90, Tile(8, 3), "kk::softmax_rows<__half, kk::RowConfig<8, 3, 1, 2>>"),
    ("packed_rows", F32, 62, A, 90, Loop("online"), "kk::softmax_online<float, 512>"),
    ("auto", BF16, 50257, W, 90, Tile(224, 4, 8, True, True),
     "kk::softmax_handout<__nv_bfloat16, kk::RowConfig<224, 4, 8, 2, 2>, 1>"),
    ("auto", BF16, 32001, W, 90, Tile(256, 4, 4), "kk::softmax_rows<__nv_bfloat16, kk::RowConfig<256, 4, 4, 2>>"),
    ("auto", BF16, 32001, W, 80, Tile(1024, 4), "kk::softmax_rows<__nv_bfloat16, kk::RowConfig<1024, 4, 1, 2>>"),
    ("auto", F16, 16384, A, 90, Tile(512, 4), "kk::softmax_rows<__half, kk::RowConfig<512, 4, 1, 1>>"),
    ("auto", F16, 151936, A, 90, Tile(320, 4, 16, True, True),
     "kk::softmax_handout<__half, kk::RowConfig<320, 4, 16, 1, 2>, 1>"),
    ("auto", F32, 151936, A, 90, Tile(320, 8, 16, True, True),
     "kk::softmax_handout<float, kk::RowConfig<320, 8, 16, 1, 2>, 1>"),
    ("auto", F32, 50257, W, 90, Tile(480, 7, 4), "kk::softmax_rows<float, kk::RowConfig<480, 7, 4, 2>>"),
    ("auto", BF16, 5120, A, 90, Tile(160, 4), "kk::softmax_rows<__nv_bfloat16, kk::RowConfig<160, 4, 1, 1>>"),
    ("auto", BF16, 300001, W, 90, Tile(960, 5, 8), "kk::softmax_rows<__nv_bfloat16, kk::RowConfig<960, 5, 8, 2>>"),
    ("auto", F32, 300001, W, 90, Tile(960, 10, 8), "kk::softmax_rows<float, kk::RowConfig<960, 10, 8, 2>>"),
    ("auto", F32, 330000, W, 90, Loop("online"), "kk::softmax_online<float, 512>"),
    ("warp_rows", F16, 2000, A, 90, Loop("online"), "kk::softmax_online<__half, 512>"),
    ("cta_row", F16, 7, A, 90, Tile(64, 1), "kk::softmax_rows<__half, kk::RowConfig<64, 1, 1, 1>>"),
    ("cluster_row", F16, 1000, A, 90, Tile(64, 2), "kk::softmax_rows<__half, kk::RowConfig<64, 2, 1, 1>>"),
    ("cluster_row", F16, 50000, A, 90, Tile(224, 4, 8, True, True),
     "kk::softmax_handout<__half, kk::RowConfig<224, 4, 8, 1, 2>, 1>"),
    ("cta_row", F16, 20000, A, 90, Loop("online"), "kk::softmax_online<__half, 512>"),
    ("cta_row", F16, 20000, A, 80, Tile(640, 4), "kk::softmax_rows<__half, kk::RowConfig<640, 4, 1, 1>>"),
    ("cluster_row", F16, 1000, A, 80, Loop("online"), "kk::softmax_online<__half, 512>"),
    ("three_pass", F32, 1000, A, 90, Loop("three_pass"), "kk::softmax_three_pass<float, 512>"),
]


@pytest.mark.parametrize("rung,dtype,len_,form,sm_,want,name", CHOSEN)
def test_the_rule_chooses(rung, dtype, len_, form, sm_, want, name):
    got = sm.config_for(rung, dtype, len_, sm=sm_, form=form)
    assert got == want and got.name(dtype, form) == name


LENS = [1, 2, 3, 7, 100, 129, 257, 1000, 4097, 32001, 32768, 50257, 65537, 131072, 262145, 300001, 600000]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", [ALIGNED, WINDOW])
def test_every_tile_holds_its_row_and_no_smaller_one_would(dtype, form):
    """The rule's tiles hold the row's window; a tile of one warp fewer (or one vector a thread fewer)
    would not, so the tile wastes less than a warp's (or a thread's) worth."""
    n = per_vec(dtype)
    for len_ in LENS + list(range(1, 300)):
        for sm_ in (80, 90):
            c = sm.config_for("auto", dtype, len_, sm=sm_, form=form)
            if isinstance(c, Loop):
                assert window_len(len_, dtype, form) > 32768 and (sm_ == 80 or len_ > 327000), (len_, sm_)
                continue
            if isinstance(c, Packed):
                assert len_ + per_vec(dtype) - 1 <= 16 * per_vec(dtype) and c.holds(dtype, len_, form)
                assert c.group == 1 or c.group // 2 * 4 < len_  # the fewest lanes of 4 elements
                continue
            assert len_ + per_vec(dtype) - 1 > 16 * per_vec(dtype)
            need = window_len(len_, dtype, form)
            assert c.holds(dtype, len_, form) and c.capacity(dtype) >= need
            vectors = -(-need // (n * c.cluster))
            if c.threads > 64:
                assert (c.threads - 32) * c.vecs < vectors, c
            assert c.threads * (c.vecs - 1) < vectors or c.vecs == 1, c
            assert c.cluster == 1 or sm_ >= 90


def test_each_holder_rule():
    """The holders one by one: warp slices up to 128 vectors, CTAs up to 1024 x 32 values, then clusters of
    CTAs of <= 512 threads, then 8 CTAs of 1024 (16-bit up to 64 values a thread)."""
    assert warp_tile(1) == (1, 1) and warp_tile(4) == (1, 4) and warp_tile(5) == (2, 3)
    assert warp_tile(128) == (32, 4) and warp_tile(129) is None
    assert cta_tile(129, 4) == (64, 3) and cta_tile(640, 4) == (160, 4) and cta_tile(4096, 4) == (1024, 4)
    assert cta_tile(4097, 4) is None and cta_tile(8192, 8) == (1024, 8) and cta_tile(4097, 8) == (832, 5)
    assert cluster_tile(4097, 4, 8) == (288, 4, 4)  # 2 x 1025 threads would not fit 512; 4 CTAs do
    assert cluster_tile(16384, 8, 8) == (512, 8, 4)
    assert cluster_tile(37502, 4, 8) == (960, 5, 8) and cluster_tile(70000, 4, 8) is None
    assert sm.config_for("auto", F16, 2**17, sm=90) == Tile(256, 4, 16, handout=True, prefetch=True)
    assert sm.config_for("auto", F16, 2**17, sm=80) == Loop("online")
    # fp32 rows past 8 x 1024 x 32 values: 40 values a thread, exponentials recomputed (softmax_rows' kKeep)
    assert sm.config_for("auto", F32, 300001, sm=90, form=WINDOW) == Tile(960, 10, 8)
    assert sm.packed_rows(F16, 122, WINDOW, 90) is None and sm.packed_rows(F32, 61, WINDOW, 90) == Packed(16, 4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_configs_round_trip(dtype):
    for rung in ("three_pass", "online", "packed_rows", "warp_rows", "cta_row", "cluster_row", "auto"):
        for cfg in sm.configs(dtype, rung):
            assert parse_config(config_text(cfg), sm.CONFIG_CLASSES) == cfg


def test_the_auto_rung_lists_every_tile_in_three_forms():
    """A register tile in each form; a packed tile (any form) and the online fallback once."""
    names = [k.name for k in kernelkit.ladder("softmax")[-1].kernels(F16)]
    tiles = [c for c in sm.configs(F16, "auto") if isinstance(c, Tile)]
    packed = [c for c in sm.configs(F16, "auto") if isinstance(c, Packed)]
    assert packed and len(names) == len(set(names)) == 3 * len(tiles) + len(packed) + 1


def test_row_forms():
    assert row_form(8, F16, 0, 32) == ALIGNED and row_form(7, F16, 0, 32) == WINDOW
    assert row_form(8, F16, 2, 34) == WINDOW and row_form(8, F16, 2, 32) == WINDOW_IN
    assert row_form(8, F16, 0, 0, 2) == WINDOW  # a weight off its boundary: the shifted weight loads


def test_a_configuration_that_cannot_run_the_input_raises():
    Tile(1024, 8).check(F32, 32768, ALIGNED, 80)
    with pytest.raises(ValueError, match="holds 32768 elements, the row needs 32769"):
        Tile(1024, 8).check(F32, 32769, ALIGNED, 90)
    with pytest.raises(ValueError, match="the row needs 32771"):
        Tile(1024, 8).check(F32, 32768, WINDOW, 90)
    with pytest.raises(ValueError, match="need sm_90"):
        Tile(512, 8, 4).check(F32, 65536, ALIGNED, 80)
    with pytest.raises(ValueError, match="holds rows of 8 elements"):
        Packed(2, 4).check(F32, 9, ALIGNED, 90)
    for bad in (lambda: Tile(100, 4), lambda: Tile(48, 4), lambda: Tile(32, 4, 2), lambda: Loop("fast"),
                lambda: Packed(6, 2), lambda: Packed(64, 1), lambda: Packed(4, 0)):
        with pytest.raises(ValueError):
            bad()


# ---- the lane ------------------------------------------------------------------------------------
def test_cpu_tensors_make_no_lane():
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    with pytest.raises(ValueError, match="CUDA tensor"):
        sm.softmax(torch.randn(4, 128))
    assert not sm._lanes


def test_long_16bit_rows_small_ctas_then_handed_out():
    """16-bit rows on sm_90: one CTA up to CTA_ROW_16 threads, then the smallest cluster of CTAs of at most
    SMALL_CTA threads x 4 vectors (up to 16 on sm_90), then 16 CTAs of up to CLUSTER_CTA; clusters of 8 and
    16 CTAs of at most CLUSTER_CTA threads take rows handed out with the next row prefetched; 8 CTAs of more
    threads (the longest rows, 40 values a thread) stay a cluster a row."""
    for dtype in (F16, BF16):
        for len_ in range(16385, 262145, 3331):
            for form in (A, W):
                c = sm.config_for("auto", dtype, len_, sm=90, form=form)
                assert c.vecs == 4 and c.cluster >= 4 and c.handout == c.prefetch == (c.cluster >= 8), (len_, c)
                assert c.threads <= (sm.SMALL_CTA if c.cluster < 16 else 512), (len_, c)
                smaller = sm._fit(-(-window_len(len_, dtype, form) // 8), 4, sm.SMALL_CTA, (c.cluster // 2,))
                assert c.cluster == 4 or c.threads > sm.SMALL_CTA or smaller is None, (len_, c)
        assert sm.config_for("auto", dtype, 300001, sm=90, form=W) == Tile(960, 5, 8)
    # fp32: main's clusters up to 8 x 512 x 8, then 16 x <= 512 handed out before 8 CTAs of more threads
    assert sm.config_for("auto", F32, 100003, sm=90, form=W) == Tile(448, 7, 8, True, True)
    assert sm.config_for("auto", F32, 262144, sm=90) == Tile(512, 8, 16, True, True)
    assert sm.config_for("auto", F32, 262145, sm=90, form=W) == Tile(928, 9, 8)


def test_handout_tiles_are_clusters():
    with pytest.raises(ValueError, match="handed out to clusters"):
        Tile(512, 4, 1, handout=True)
    with pytest.raises(ValueError, match="prefetched by handed-out"):
        Tile(512, 4, 4, prefetch=True)
    assert Tile(512, 4, 4, True, True).kernel(F16, A).sass == ("ATOMG", "UBLKPF")
