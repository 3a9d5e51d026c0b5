"""The sliding-window family without a GPU: the border rules against torch's own padding, the float64
references against direct definitions, pooling's output lengths against torch, the launch rules, the
argument errors, and the SASS claims of the tiled kernels (shared-memory tiles, 128-bit loads)."""
import pytest
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference
from kernelkit.ops.window import _common, _separable, filter2d, pool, sobel
from kernelkit.ops.window._separable import KMAX, kmax_for
from kernelkit.ops.window.filter2d import reg_shape
from kernelkit.reference.window import pad2d

MODES = {"zero": "constant", "replicate": "replicate", "reflect": "reflect"}


@pytest.mark.parametrize("border", sorted(MODES))
@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_border_index_matches_torch_padding(border, n):
    """Every position a kernel of up to 31 taps reads, against F.pad of an arange (reflect only where torch
    allows it: pads below n)."""
    row = torch.arange(n, dtype=torch.float64).reshape(1, 1, n) + 1  # +1: zero means "zero border"
    limit = n - 1 if border == "reflect" else 15
    for pad in range(0, limit + 1):
        if border == "reflect" and n == 1:
            break
        padded = F.pad(row, (pad, pad), mode=MODES[border]).flatten().tolist()
        got = []
        for i in range(-pad, n + pad):
            j = _common.border_index(i, n, border)
            got.append(0.0 if j < 0 else float(j + 1))
        assert got == padded, (border, n, pad)


def test_reflect_far_from_the_image_is_periodic():
    """Past one image width reflect keeps mirroring (period 2(n-1)); a single pixel reads itself."""
    n = 4
    seq = [_common.border_index(i, n, "reflect") for i in range(-8, 12)]
    assert seq == [2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1]
    assert all(_common.border_index(i, 1, "reflect") == 0 for i in range(-20, 20))
    assert _common.border_index(-5, 3, "replicate") == 0 and _common.border_index(9, 3, "replicate") == 2
    assert _common.border_index(-1, 3, "zero") == -1 and _common.border_index(3, 3, "zero") == -1


@pytest.mark.parametrize("border", sorted(MODES))
def test_reference_padding_follows_the_border_rule(border):
    """pad2d (the references' padding, F.pad repeated from mirror points) against the index rule, with pads
    larger than the image."""
    for H, W in ((1, 1), (1, 5), (3, 2), (4, 7)):
        x = torch.arange(1, H * W + 1, dtype=torch.float64).reshape(1, 1, H, W)
        for ph, pw in ((0, 0), (2, 3), (9, 15)):
            got = pad2d(x, ph, pw, border)[0, 0]
            for i in range(-ph, H + ph):
                for j in range(-pw, W + pw):
                    a, b = _common.border_index(i, H, border), _common.border_index(j, W, border)
                    want = 0.0 if a < 0 or b < 0 else float(x[0, 0, a, b])
                    assert float(got[i + ph, j + pw]) == want, (border, H, W, ph, pw, i, j)


def test_filter2d_reference_against_a_direct_sum():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    k = torch.randn(3, 5, dtype=torch.float64)
    for border in MODES:
        ref = reference.filter2d(x, k, border)
        for p in range(2):
            for y in range(5):
                for xx in range(6):
                    s = 0.0
                    for i in range(3):
                        for j in range(5):
                            a = _common.border_index(y + i - 1, 5, border)
                            b = _common.border_index(xx + j - 2, 6, border)
                            if a >= 0 and b >= 0:
                                s += float(k[i, j]) * float(x[p, a, b])
                    assert abs(float(ref[p, y, xx]) - s) < 1e-12


def test_filter2d_reference_channels_last_and_uint8():
    x = torch.randint(0, 256, (4, 5, 3), dtype=torch.uint8)
    k = torch.full((3, 3), 2.0 / 9)
    ref = reference.filter2d(x, k, "replicate", channels_last=True)
    for c in range(3):
        plane = reference.filter2d(x[..., c].double(), k, "replicate")
        assert torch.equal(ref[..., c], plane.round().clamp(0, 255))
    big = reference.filter2d(torch.full((3, 3), 200, dtype=torch.uint8), torch.ones(3, 3), "replicate")
    assert float(big.max()) == 255.0  # saturated


def test_gaussian_reference_matches_torchvision_formula():
    k = reference.gaussian_kernel1d(5, 0.3 * ((5 - 1) * 0.5 - 1) + 0.8)
    assert abs(float(k.sum()) - 1) < 1e-12 and torch.allclose(k, k.flip(0))
    from kernelkit.ops.window.gaussian_blur import _kernel1d, _sigmas, _sizes
    assert _sizes(5) == (5, 5) and _sizes([3, 7]) == (3, 7)
    sx, sy = _sigmas(None, 3, 7)
    assert abs(sx - (3 * 0.15 + 0.35)) < 1e-12 and abs(sy - (7 * 0.15 + 0.35)) < 1e-12
    assert max(abs(a - b) for a, b in zip(_kernel1d(5, 1.1), reference.gaussian_kernel1d(5, 1.1).tolist())) < 1e-15


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pool_output_size_matches_torch(ceil_mode):
    for n in (1, 2, 5, 7, 8, 13):
        for k in (1, 2, 3, 5):
            for s in (1, 2, 3):
                for p in range(0, k // 2 + 1):
                    for d in (1, 2):
                        if n + 2 * p < d * (k - 1) + 1 or p > ((k - 1) * d + 1) // 2:
                            continue
                        want = F.max_pool2d(torch.zeros(1, 1, n, 1), (k, 1), (s, 1), (p, 0), (d, 1),
                                            ceil_mode=ceil_mode).shape[2]
                        assert pool.out_size(n, k, s, p, d, ceil_mode) == want, (n, k, s, p, d)


def test_launch_rules():
    assert reg_shape(torch.float32) == (4, 4) and reg_shape(torch.float16) == (8, 2)
    assert reg_shape(torch.uint8) == (16, 1)
    # pipelined tiles: rows a thread from the element size and kernel size (registers), a 16-byte vector a row
    assert [filter2d.pipe_rows(d, 5) for d in (torch.float32, torch.bfloat16, torch.uint8)] == [4, 4, 2]
    assert filter2d.pipe_rows(torch.uint8, 7) == 1 and filter2d.pipe_rows(torch.uint8, 3) == 2
    assert [_separable.pipe_rows(torch.uint8, k) for k in KMAX] == [2, 4, 4, 2, 2]
    assert all(_separable.pipe_rows(d, k) == 4 for d in (torch.float32, torch.float16) for k in KMAX)
    assert sobel.pipe_rows(torch.float32) == 4 and sobel.pipe_rows(torch.uint8) == 2
    # halo: whole 16-byte vectors covering the reach; one vector more for the unaligned kernels' row shift
    assert _common.pipe_geometry(4, 2, 1, 4, True) == (128, 32, 136)
    assert _common.pipe_geometry(4, 2, 1, 4, False) == (128, 32, 140)
    assert _common.pipe_geometry(1, 2, 3, 4, True) == (512, 32, 544)  # reach 6 elements: one vector a side
    assert _common.pipe_geometry(1, 15, 4, 2, True) == (512, 16, 640)  # 60 elements: four vectors a side
    assert _common.pipe_geometry(2, 3, 1, 4, False) == (256, 32, 280)
    assert _common.pipe_tile_bytes(4, 36, 136, True) == 2 * 36 * 136 * 4
    assert _common.pipe_tile_bytes(1, 20, 560, False) == 2 * 20 * 560 + 2 * 20 * 4
    # the fused separable tiles of the largest case fit an H100's 227 KB block limit (else: two passes)
    tw, th, shmem = _separable.pipe_shmem(torch.uint8, 31, 4, 31, False)
    assert (tw, th) == (512, 16) and shmem == 46 * 512 * 4 + 2 * 46 * 656 + 2 * 46 * 4 < 227 * 1024
    assert _common.rows_rule(1, (1, 4)) == 1 and _common.rows_rule(31, (1, 4)) == 1
    assert _common.rows_rule(32, (1, 4)) == 4 and _common.rows_rule(8192, (1, 4)) == 4
    assert [kmax_for(k) for k in (1, 3, 5, 7, 9, 15, 17, 31)] == [3, 3, 5, 7, 15, 15, 31, 31]
    assert KMAX[-1] == 31


def test_rows_aligned_needs_every_row_on_16_bytes():
    """The aligned pipelined kernels are chosen only when the base, the row stride and the plane stride keep
    every row start on a 16-byte boundary."""
    base = torch.zeros(4 * 64 * 64 + 16)
    p = _common.planes_of(base[:4 * 64 * 64].view(4, 64, 64), False, "t")
    assert _common.rows_aligned(p)
    assert not _common.rows_aligned(_common.planes_of(base[1:1 + 4 * 64 * 64].view(4, 64, 64), False, "t"))
    assert not _common.rows_aligned(_common.planes_of(base[:4 * 64 * 63].view(4, 64, 63), False, "t"))  # rows 252 B
    assert _common.rows_aligned(_common.planes_of(base[:63 * 64].view(1, 63, 64), False, "t"))
    u8 = torch.zeros(2 * 5 * 33 * 3, dtype=torch.uint8)
    assert _common.rows_aligned(_common.planes_of(u8[:2 * 5 * 32 * 3].view(2, 5, 32, 3), True, "t"))  # 96 B rows
    assert not _common.rows_aligned(_common.planes_of(u8[:5 * 33 * 3].view(5, 33, 3), True, "t"))  # 99 B rows
    one_row = _common.planes_of(base[:7].view(1, 7), False, "t")  # a single row: its stride does not matter
    assert _common.rows_aligned(one_row)


def test_mergeable_leading_dims():
    assert _common._mergeable((2, 3), (30, 10)) == 10
    assert _common._mergeable((2, 3), (40, 10)) is None
    assert _common._mergeable((1, 3), (999, 10)) == 10
    assert _common._mergeable((), ()) == 0


def test_config_is_checked():
    with pytest.raises(TypeError):
        _common.check_config((4,), (1, 4), "filter2d")
    with pytest.raises(ValueError):
        _common.check_config(_common.WindowConfig(3), (1, 4), "filter2d")
    assert _common.check_config(_common.WindowConfig(4), (1, 4), "filter2d") == 4


def test_errors_name_the_argument():
    x = torch.zeros(4, 4)
    with pytest.raises(ValueError, match="CUDA"):
        kernelkit.filter2d(x, torch.ones(3, 3))
    with pytest.raises(TypeError, match="x must be"):
        kernelkit.filter2d([1, 2], torch.ones(3, 3))
    with pytest.raises(ValueError, match="CUDA"):
        kernelkit.max_pool2d(x[None], 2)
    with pytest.raises(ValueError, match="CUDA"):
        kernelkit.gaussian_blur(x, 3)
    # every case but the CUDA depthwise one is torch's own conv2d
    w = torch.randn(2, 1, 3, 3)
    xs = torch.randn(1, 2, 5, 5)
    assert torch.equal(kernelkit.conv2d(xs, w, padding=1, groups=2), F.conv2d(xs, w, padding=1, groups=2))


@pytest.fixture(scope="module")
def sm90():
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.ladder_inspect import analyze_op
    return {op: analyze_op(op, "sm_90") for op in ("filter2d", "gaussian_blur")}


def test_tiles_use_shared_memory_and_vector_loads(sm90):
    """The tiled rungs stage their tile in shared memory (LDS/STS in the SASS) and load it by 128 bits; the
    register rung reads its windows by 128-bit shared loads (LDS.128)."""
    rows = sm90["filter2d"]
    for r in rows:
        if r.variant in ("shared", "vector", "registers"):
            assert any(op.startswith("STS") for op in r.opcodes) and any(op.startswith("LDS") for op in r.opcodes)
        if r.variant in ("vector", "registers"):
            assert max(r.load_widths) == 128, r.kernel.name
        if r.variant == "naive":
            assert not any(op.startswith("LDS") for op in r.opcodes)
        if r.variant == "registers":
            assert any(op.startswith("LDS.128") for op in r.opcodes), r.kernel.name
    fused = [r for r in sm90["gaussian_blur"] if r.variant == "fused"]
    assert fused and all(any(op.startswith("LDS.128") for op in r.opcodes) and max(r.store_widths) == 128
                         for r in fused)


def _conversions(r) -> set:
    """I2F/F2I opcodes other than those of integer division (I2F.RP, F2I.FTZ.U32.TRUNC: the reciprocal)."""
    return {op for op in r.opcodes if op.startswith(("I2F", "F2I")) and op not in ("I2F.RP", "F2I.FTZ.U32.TRUNC.NTZ")}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_pipelined_rungs_copy_asynchronously(arch):
    """The pipelined kernels fill their tiles by 16-byte cp.async (LDGSTS.E.BYPASS.128), read register
    windows by 128-bit shared loads, store 16-byte vectors, keep everything in registers, and convert uint8
    without I2F or F2I (a byte permute and an add each way); Sobel's root is one MUFU.SQRT."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.ladder_inspect import analyze_op
    rows = []
    for op in ("filter2d", "gaussian_blur", "sobel"):
        rows += [r for r in analyze_op(op, arch, variants=["pipelined"])]
    assert len(rows) == (3 * 6 + 5 * 6 + 6) * 2  # (K or KMAX) x (dtype, C): 6 pairs, x 2 alignments
    for r in rows:
        assert any(op.startswith("LDGSTS.E.BYPASS.128") for op in r.opcodes), r.kernel.name
        assert any(op.startswith("LDS.128") for op in r.opcodes), r.kernel.name
        assert max(r.store_widths) == 128 and r.local_ops == 0 and r.spill_bytes == 0, r.kernel.name
        if r.dtype == torch.uint8:
            assert not _conversions(r), (r.kernel.name, _conversions(r))
        if "sobel" in r.kernel.name:
            assert "MUFU.SQRT" in r.opcodes
    old = [r for r in analyze_op("sobel", arch, variants=["fused"], dtypes=[torch.uint8])]
    assert old and all(_conversions(r) for r in old)  # the check can fail: the float tile's loads use I2F


def test_tensor_cache_keeps_a_value_per_live_tensor_and_key():
    """Looked up again by the same tensor (twice: a WeakKeyDictionary raised on the second lookup, when it
    compared two tensors with ==), missed for another key or another tensor of equal values, dropped with
    the tensor."""
    import gc

    import torch

    from kernelkit.ops.window._common import TensorCache, device_weights

    cache = TensorCache()
    w, twin = torch.ones(3, 3), torch.ones(3, 3)
    cache.put(w, 0, "v0")
    assert cache.get(w, 0) == "v0" and cache.get(w, 0) == "v0"
    assert cache.get(w, 1) is None and cache.get(twin, 0) is None
    cache.put(w, 1, "v1")
    assert cache.get(w, 1) == "v1" and cache.get(w, 0) is None and len(cache) == 1
    del w
    gc.collect()
    assert len(cache) == 0
    k = torch.randn(5, 5)  # host weights: one copy per version, a new one after an in-place update
    first = device_weights(k, torch.device("cpu"), "filter2d")
    assert device_weights(k, torch.device("cpu"), "filter2d") is first
    k.mul_(2)
    second = device_weights(k, torch.device("cpu"), "filter2d")
    assert second is not first and torch.equal(second, k)


def test_pool_span_rule():
    """The span kernels take square compiled windows at their stride without dilation; the rest the vector
    kernels."""
    assert pool.span_shape([2, 2], [2, 2], [1, 1]) == (2, 2)
    assert pool.span_shape([3, 3], [2, 2], [1, 1]) == (3, 2)
    assert pool.span_shape([3, 3], [1, 1], [1, 1]) == (3, 1)
    assert pool.span_shape([3, 3], [2, 2], [2, 2]) is None
    assert pool.span_shape([3, 2], [2, 2], [1, 1]) is None
    assert pool.span_shape([3, 3], [2, 1], [1, 1]) is None
    assert pool.span_shape([5, 5], [2, 2], [1, 1]) is None
    assert pool.span_name(torch.float16, True, 3, 2) == "kk::pool_span<__half, true, 3, 2, 1>"
    assert [pool.span_rows(k, s) for k, s in pool.SPAN] == [2, 1, 2]


def test_pool_span_block_rule():
    """The span kernels' block: a warp along the row, row groups across; large problems keep full blocks,
    1xN rows widen the block along the row, small ones shrink it until the blocks cover the SMs."""
    assert pool.span_block(64, 32768, 132) == (32, 8)  # many blocks: 256 threads, unchanged
    assert pool.span_block(8, 2048, 132) == (8, 8)  # 64 blocks of 256 would leave half the SMs idle
    assert pool.span_block(16, 2048, 132) == (16, 8)
    assert pool.span_block(4096, 1, 132) == (64, 1)  # one row group: the block along the row, 64 blocks
    assert pool.span_block(2, 96, 132) == (2, 48)
    assert pool.span_block(1, 1, 132) == (1, 1)
    for cols, groups in ((1, 1), (3, 5), (8, 2048), (4096, 1), (7, 100000), (300, 3)):
        for sms in (1, 16, 132):
            bx, by = pool.span_block(cols, groups, sms)
            assert 1 <= bx <= 256 and 1 <= by and bx * by <= pool.SPAN_BLOCK and bx <= max(cols, 1)
            assert by <= groups
            blocks = -(-cols // bx) * -(-groups // by)
            assert blocks >= sms or bx * by < 2 * pool.SPAN_MIN_BLOCK, (cols, groups, sms)


def test_depthwise_tile_rule():
    """The tile: rx wastes the fewest columns (ties: the wider), at most 8 warps, none wholly outside the
    output, within the shared-memory bound; the network layers are covered with little or no waste."""
    from kernelkit.ops.window import conv2d as dw

    for ow, want in ((56, 8), (28, 7), (14, 7), (7, 7), (64, 8), (16, 8), (13, 7), (1, 7)):
        assert dw.tile_rule(ow, ow, 3, 1, True).rx == want, ow
    assert dw.tile_rule(56, 56, 3, 2, True).rx == 8
    for oh in (1, 2, 3, 7, 13, 14, 28, 56, 112, 1000):
        for ow in (1, 5, 7, 14, 28, 56, 112, 999):
            for k, s in dw.TILE_KS:
                for cl in (True, False):
                    t = dw.tile_rule(oh, ow, k, s, cl)
                    assert t.rx in dw.TILE_RX[s] and 1 <= t.warps_x * t.warps_y <= 8
                    assert (t.warps_x - 1) * t.rx < ow and (t.warps_y - 1) * dw.TILE_RY < oh
                    assert t.fits(k, s, cl) and t.smem(k, s, cl) <= dw.TILE_SMEM
                    assert cl or t.inputs(k, s)[1] <= 32
    for h, k, s in ((56, 7, 1), (28, 7, 1), (14, 7, 1), (56, 3, 1), (28, 3, 1), (56, 3, 2)):
        t = dw.tile_rule(h, h, k, s, True)
        assert h % t.tw == 0 and h % t.th == 0, (h, k, s, t)  # these layers tile exactly
    t = dw.DwTile(8, 2, 4)
    assert (t.th, t.tw, t.inputs(7, 1), t.inputs(3, 2)) == (8, 16, (14, 22), (17, 33))
    assert t.smem(7, 1, False) == (49 * 32 + 14 * 22 * 33) * 4 and t.smem(7, 1, True) == (49 * 32 + 14 * 22 * 36) * 4
    assert t.fits(3, 1, True) and not t.fits(7, 1, True) and not t.fits(3, 2, False)  # 48 KB; 33 inputs a row
    assert not dw.DwTile(8, 3, 3).fits(3, 1, True)
    assert dw.tile_shape(7, 7, [1, 1], [1, 1]) == (7, 1) and dw.tile_shape(3, 3, [2, 2], [1, 1]) == (3, 2)
    assert dw.tile_shape(7, 7, [2, 2], [1, 1]) is None and dw.tile_shape(3, 5, [1, 1], [1, 1]) is None
    assert dw.tile_shape(3, 3, [1, 1], [2, 2]) is None and dw.tile_shape(3, 3, [1, 2], [1, 1]) is None


def test_depthwise_regs_rule():
    """The register tiles: the stride's first tile; one tile a thread until the grid would fill more than
    REGS_WAVES rounds of resident threads, then as many a thread as keep about that many, never more than
    the image's tile rows."""
    from kernelkit.ops.window import conv2d as dw

    assert dw.regs_rule(64, 96, 56, 56, 1, 132) == dw.DwRegs(*dw.REGS_TILES[1][0], 1)
    assert dw.regs_rule(64, 96, 56, 56, 2, 132).rx == dw.REGS_TILES[2][0][0]
    resident = 132 * dw.REGS_BLOCKS_PER_SM * dw.REGS_THREADS
    for n, c, oh, ow, s in ((64, 96, 56, 56, 1), (256, 96, 112, 112, 1), (512, 960, 7, 7, 1), (1, 4, 4097, 3, 2),
                            (128, 384, 200, 200, 2)):
        t = dw.regs_rule(n, c, oh, ow, s, 132)
        assert t.fits(s) and 1 <= t.chunk <= -(-oh // t.ry)
        per_round = n * -(-ow // t.rx) * (c // 4)
        rounds = per_round * -(-(-(-oh // t.ry)) // t.chunk) / resident
        if t.chunk > 1:  # enough rounds left; not many more unless a thread already walks the whole image
            assert dw.REGS_WAVES <= rounds, (n, c, oh, ow, t, rounds)
            assert rounds < 2 * dw.REGS_WAVES + 1 or t.chunk == -(-oh // t.ry), (n, c, oh, ow, t, rounds)
    assert dw.regs_rule(256, 96, 112, 112, 1, 132).chunk > 1 and dw.regs_rule(64, 960, 7, 7, 1, 132).chunk == 1


def test_depthwise_columns_rule():
    """The planar register strip: the least staged rows (with a strip's fixed cost) among strips whose
    threads fill COLUMNS_ROUNDS rounds of resident threads; the shortest strip where none does. The
    network layers get the strips measured best on an H100 (docs/design/window.md)."""
    from kernelkit.ops.window import conv2d as dw

    for (c, h, s), want in (((96, 112, 2), 8), ((144, 56, 1), 16), ((384, 14, 1), 16), ((960, 7, 1), 8),
                            ((384, 14, 2), 4), ((32, 111, 1), 16)):
        oh = (h + 2 - 3) // s + 1
        assert dw.columns_rule(64 * c, oh, oh, 3, s, 132).ry == want, (c, h, s)
    resident = 132 * dw.REGS_BLOCKS_PER_SM * dw.REGS_THREADS
    for planes, oh, ow in ((1, 5, 5), (3, 1000, 1), (64 * 384, 7, 7), (6144, 56, 56)):
        t = dw.columns_rule(planes, oh, ow, 3, 1, 132)
        assert t.fits()
        if planes * -(-oh // 4) * ow < dw.COLUMNS_ROUNDS * resident:
            assert t.ry == min(dw.COLUMNS_RY)
        else:
            assert planes * -(-oh // t.ry) * ow >= dw.COLUMNS_ROUNDS * resident


def test_depthwise_planes_rule():
    """The planar band: ry of the fewest staged rows a column, whole small planes grouped up to the strip
    target (never fewer than two blocks an SM), large planes cut into even bands within the bound, None
    when one strip of the row does not fit."""
    from kernelkit.ops.window import conv2d as dw

    assert dw.planes_pitch(55, 3, 1) == 57 and dw.planes_pitch(28, 3, 2) == 58 and dw.planes_pitch(27, 3, 2) == 56
    assert dw.planes_rule(2304, 55, 55, 3, 1, 132) == dw.DwPlanes(8, 2, 7)  # 57 x 57 floats a plane
    assert dw.planes_rule(2304, 28, 28, 3, 2, 132).ry == 4  # 7 strips of 4: 63 staged rows against 68 for 8
    assert dw.planes_rule(49152, 7, 7, 7, 1, 132) == dw.DwPlanes(8, 36, 1)  # 252 strips: one round of 256 threads
    assert dw.planes_rule(256, 17, 31, 3, 1, 132).planes == 1  # 256 planes: one a block, two blocks an SM
    t = dw.planes_rule(256, 127, 129, 3, 1, 132)
    assert t.planes == 1 and t.strips == 6 and t.rows(3, 1) == 50 and t.smem(129, 3, 1) <= dw.PLANES_SMEM
    assert dw.planes_rule(80, 1, 4099, 7, 1, 132) is None  # 14 rows of 4105 floats: past the bound
    for planes in (1, 7, 300, 70000):
        for oh in (1, 2, 7, 13, 28, 56, 127, 300):
            for ow in (1, 7, 28, 55, 129, 999):
                for k, s in dw.TILE_KS:
                    t = dw.planes_rule(planes, oh, ow, k, s, 132)
                    if t is None:
                        assert ((8 - 1) * s + k) * dw.planes_pitch(ow, k, s) * 4 > dw.PLANES_SMEM
                        continue
                    assert t.fits(oh, ow, k, s) and t.smem(ow, k, s) <= dw.PLANES_SMEM
                    assert t.planes == 1 or t.strips == -(-oh // t.ry)
                    bands = -(-(-(-oh // t.ry)) // t.strips)
                    assert (bands - 1) * t.strips * t.ry < oh  # no band wholly outside the plane
    p = dw.DwPlanes(4, 3, 2)
    assert p.rows(3, 1) == 10 and p.rows(5, 2) == 19 and p.smem(10, 3, 1) == 3 * 10 * 12 * 4
    assert not p.fits(9, 10, 3, 1) and p.fits(8, 10, 3, 1) and not dw.DwPlanes(6, 1, 1).fits(9, 9, 3, 1)


@pytest.fixture(scope="module")
def sm90_pool_conv():
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.ladder_inspect import analyze_op
    return {op: analyze_op(op, "sm_90") for op in ("max_pool2d", "conv2d")}


def test_span_and_tile_kernels_in_the_sass(sm90_pool_conv):
    """The span kernels load and store by 128 bits; the depthwise tiles stage their inputs and weights in
    shared memory (STS, LDS), channels_last ones by 128-bit loads, none spill; the register kernels use no
    shared memory and load a 4-channel vector at a time."""
    span = [r for r in sm90_pool_conv["max_pool2d"] if "pool_span" in r.kernel.name]
    assert len(span) == 3 * len(pool.SPAN)
    for r in span:
        assert max(r.load_widths) == 128 and max(r.store_widths) == 128 and r.local_ops == 0
    tiles = [r for r in sm90_pool_conv["conv2d"] if "dw_tile" in r.kernel.name]
    assert len({r.kernel.name for r in tiles}) == 3 * 2 * 8
    for r in tiles:
        assert any(op.startswith("STS") for op in r.opcodes) and any(op.startswith("LDS") for op in r.opcodes)
        assert r.local_ops == 0 and r.spill_bytes == 0
        if ", true>" in r.kernel.name:
            assert max(r.load_widths) == 128, r.kernel.name
    from kernelkit.ops.window import conv2d as dw

    regs = [r for r in sm90_pool_conv["conv2d"] if "dw_registers" in r.kernel.name]
    assert len({r.kernel.name for r in regs}) == 3 * sum(len(dw.REGS_TILES[s]) for _, s in dw.REGS_KS)
    for r in regs:  # no shared memory; a 4-channel vector a load: 8 bytes in 16 bits, 16 in fp32
        assert not any(op.startswith(("STS", "LDS")) for op in r.opcodes) and r.local_ops == 0, r.kernel.name
        assert max(r.load_widths) == 128 and r.spill_bytes == 0, r.kernel.name
        assert (64 if r.dtype != torch.float32 else 128) in r.load_widths, r.kernel.name
    columns = [r for r in sm90_pool_conv["conv2d"] if "dw_columns" in r.kernel.name]
    assert len({r.kernel.name for r in columns}) == 3 * len(dw.REGS_KS) * len(dw.COLUMNS_RY)
    for r in columns:  # straight from global memory, element by element, nothing spilled
        assert not any(op.startswith(("STS", "LDS")) for op in r.opcodes), r.kernel.name
        assert r.local_ops == 0 and r.spill_bytes == 0, r.kernel.name
    planar = [r for r in sm90_pool_conv["conv2d"] if "dw_planes" in r.kernel.name]
    assert len({r.kernel.name for r in planar}) == 3 * len(dw.TILE_KS) * len(dw.PLANES_RY)
    for r in planar:
        assert any(op.startswith("STS") for op in r.opcodes) and any(op.startswith("LDS") for op in r.opcodes)
        assert r.local_ops == 0 and r.spill_bytes == 0
