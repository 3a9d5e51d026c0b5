"""The pooling and depthwise conv2d launch rules without a GPU: pooling's output lengths against torch, the
pooling span kernels' window and block rules, and the depthwise conv2d's tile, register-tile, column and
planar-band rules."""
import pytest
import torch
import torch.nn.functional as F

from kernelkit.ops.window import pool


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
    network layers get the strips measured best on an H100 (docs/design/depthwise.md)."""
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
    # one strip of a whole row does not fit (10 rows of 4105 floats): segments of 704 columns, 6 to the row
    # (the widest multiple of 32 that fits is 800, evened out over the 4099 columns)
    assert dw.planes_rule(80, 1, 4099, 7, 1, 132) == dw.DwPlanes(4, 1, 1, 704)
    assert dw.planes_rule(80, 3, 8191, 5, 1, 132) == dw.DwPlanes(4, 1, 1, 928)
    for planes in (1, 7, 300, 70000):
        for oh in (1, 2, 7, 13, 28, 56, 127, 300):
            for ow in (1, 7, 28, 55, 129, 999, 4099, 30011):
                for k, s in dw.TILE_KS:
                    t = dw.planes_rule(planes, oh, ow, k, s, 132)
                    assert t is not None and t.fits(oh, ow, k, s) and t.smem(ow, k, s) <= dw.PLANES_SMEM
                    assert t.planes == 1 or t.strips == -(-oh // t.ry)
                    bands = -(-(-(-oh // t.ry)) // t.strips)
                    assert (bands - 1) * t.strips * t.ry < oh  # no band wholly outside the plane
                    one = ((t.ry - 1) * s + k) * dw.planes_pitch(ow, k, s) * 4  # one strip of the whole row
                    assert (t.cols == 0) == (one <= dw.PLANES_SMEM), (planes, oh, ow, k, s, t)
                    if t.cols:  # segments of whole warps, evened out: less than 32 columns of waste a segment
                        segs = -(-ow // t.cols)
                        assert t.cols % 32 == 0 and t.cols * segs - ow < 32 * segs
    p = dw.DwPlanes(4, 3, 2)
    assert p.rows(3, 1) == 10 and p.rows(5, 2) == 19 and p.smem(10, 3, 1) == 3 * 10 * 12 * 4
    assert not p.fits(9, 10, 3, 1) and p.fits(8, 10, 3, 1) and not dw.DwPlanes(6, 1, 1).fits(9, 9, 3, 1)
    seg = dw.DwPlanes(4, 1, 2, 64)  # segments of 64 columns: 66 inputs a staged row at 3 x 3
    assert seg.width(1000) == 64 and seg.width(50) == 50 and seg.smem(1000, 3, 1) == 10 * 66 * 4
    assert seg.fits(9, 1000, 3, 1) and not dw.DwPlanes(4, 2, 3, 64).fits(9, 1000, 3, 1)  # planes only whole rows


def test_register_tiles_count_their_own_threads():
    """The register kernels index threads in int32: the launch counts its real threads (a 4 x 1 tile on a
    one-column output has one tile a row, where an estimate from 2 x 2 tiles counted half) and declines
    past 2^31, launching nothing (meta tensors: no device is touched)."""
    from kernelkit.ops.window._depthwise_kernels import run_regs
    from kernelkit.ops.window._depthwise_shapes import DwRegs

    C, OH = 4 << 16, 1 << 15  # 2^16 channel vectors x 2^15 tile rows x 1 tile column = 2^31 threads
    x = torch.empty(1, C, 2 * OH, 1, device="meta").contiguous(memory_format=torch.channels_last)
    out = torch.empty(1, C, OH, 1, device="meta").contiguous(memory_format=torch.channels_last)
    assert not run_regs(x, None, None, out, (3, 2), [1, 1], DwRegs(4, 1, 1))
