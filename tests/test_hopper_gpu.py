"""The Hopper matmul rungs (tma_wgmma, ws, persistent, cluster, tma_store) on an sm_90 GPU against float64: odd M and N (K a multiple of 8,
so that rows are whole 16-byte steps), the four operand layouts, 16-byte offset views, poisoned and
misaligned outputs, both tile widths with rings that wrap many times, batches with a broadcast operand,
linear's bias, and the shapes the TMA cannot read (run on mma, with the reason). Split K: the rule's and
configured slice counts on M = 1, 17, 129 with N off the tile and long odd K, the four layouts, batches,
the bias, and the same bits on every run. Each call checks which kernel it launched (and its K slices),
so a silent fallback cannot pass for the rung. The persistent rung (no K split) also on many tiles a
block, every ring depth, K shorter than the ring and batches whose tiles a block walks across; the cluster
rung the same, with odd rows of tiles (a pair's second tile past M); tma_store with C written by the TMA and,
off the 16-byte grid, by the threads."""
import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import WgmmaTile, tma_fallback_reason
from kernelkit.runtime.launch import recording
from matmul_helpers import check_matmul, operand, poisoned

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="sm_90a kernels: compute capability 9.0")]

RUNGS = ("tma_wgmma", "ws")  # the one-tile-a-block rungs (K split, both tile widths)
PERSISTENT = ("persistent", "cluster", "tma_store")  # blocks walking tiles (no K split)
ALL_RUNGS = RUNGS + PERSISTENT
DTYPES = (torch.float16, torch.bfloat16)
CASES = [(r, d) for r in RUNGS for d in DTYPES]
IDS = [f"{r}-{str(d)[6:]}" for r, d in CASES]
ALL_CASES = [(r, d) for r in ALL_RUNGS for d in DTYPES]
ALL_IDS = [f"{r}-{str(d)[6:]}" for r, d in ALL_CASES]
TILES = (WgmmaTile(128, 7), WgmmaTile(256, 4))


def _launched(fn, grids=None):
    with recording() as rec:
        got = fn()
    if grids is not None:
        grids.extend(r[1] for r in rec)
    return got, [r[7] for r in rec]


def _run(rung, dtype, m, n, k, ta=False, tb=True, oa=0, ob=0, oc=0, batch=(), config=None):
    """The call checked against float64; returns (out, the K slices it launched)."""
    a = operand((*batch, m, k), dtype, ta, oa)
    b = operand((*batch, k, n), dtype, tb, ob)
    out = poisoned((*batch, m, n), dtype, oc)
    what = f"{rung} {dtype} {batch}{m}x{n}x{k} t={ta},{tb} off={oa},{ob},{oc} {config}"
    assert tma_fallback_reason(a, b) is None, what
    grids = []
    got, names = _launched(lambda: kernelkit.matmul(a, b, out=out, variant=rung, config=config), grids)
    assert got is out
    assert len(names) == 1 and f"mm_{rung}<" in names[0], (what, names)
    if config is not None:
        assert f", {config.block_n}, {config.stages}, " in names[0], (what, names)
        assert grids[0][1] == config.split, (what, grids)
    check_matmul(out, a, b, False, what)
    return out, grids[0][1]


@pytest.mark.parametrize("rung,dtype", ALL_CASES, ids=ALL_IDS)
def test_odd_sizes(rung, dtype):
    """A row-major, B = w.t() (linear's layout): M and N free, K a multiple of 8."""
    for m, n, k in ((1, 1, 8), (67, 131, 72), (131, 257, 520), (257, 509, 1032), (1000, 17, 64), (5, 300, 8),
                    (129, 1, 16)):
        _run(rung, dtype, m, n, k)


@pytest.mark.parametrize("rung,dtype", ALL_CASES, ids=ALL_IDS)
def test_layouts_and_offsets(rung, dtype):
    """The four layouts (m- and n-major operands need M, N multiples of 8), 16- and 32-byte offsets of
    the operands, an output one or three elements off the 16-byte grid (its element path)."""
    for m, n, k in ((136, 264, 200), (8, 8, 8), (200, 72, 136)):
        for ta in (False, True):
            for tb in (False, True):
                _run(rung, dtype, m, n, k, ta, tb)
        _run(rung, dtype, m, n, k, True, False, oa=8, ob=16, oc=1)
        _run(rung, dtype, m, n, k, False, True, oa=16, ob=8, oc=3)


@pytest.mark.parametrize("rung,dtype", CASES, ids=IDS)
def test_tile_widths_and_long_rings(rung, dtype):
    for config in TILES:
        _run(rung, dtype, 300, 520, 1032, config=config)
        _run(rung, dtype, 136, 264, 4104, True, False, config=config)  # 65 K tiles through 4 or 7 stages
        _run(rung, dtype, 257, 263, 2048, False, True, config=config)


@pytest.mark.parametrize("rung,dtype", ALL_CASES, ids=ALL_IDS)
def test_batched_and_broadcast(rung, dtype):
    _run(rung, dtype, 61, 67, 72, batch=(3,))
    _run(rung, dtype, 64, 72, 80, True, False, batch=(2,))
    a = operand((4, 33, 40), dtype)
    b = operand((40, 35), dtype, True)  # one B for the whole batch (a transposed view)
    out, names = _launched(lambda: kernelkit.matmul(a, b, variant=rung))
    assert f"mm_{rung}<" in names[0]
    check_matmul(out, a, b.expand(4, 40, 35), False, f"{rung} broadcast B")
    a1 = operand((1, 17, 40), dtype)
    b3 = operand((3, 40, 24), dtype)
    out, names = _launched(lambda: kernelkit.matmul(a1, b3, variant=rung))
    assert f"mm_{rung}<" in names[0]
    check_matmul(out, a1.expand(3, 17, 40), b3, False, f"{rung} broadcast A")


@pytest.mark.parametrize("rung,dtype", ALL_CASES, ids=ALL_IDS)
def test_linear_bias_in_the_epilogue(rung, dtype):
    x = operand((2, 3, 96), dtype)
    w = operand((131, 96), dtype)
    bias = operand((131,), dtype)
    out, names = _launched(lambda: kernelkit.linear(x, w, bias, variant=rung))
    assert out.shape == (2, 3, 131) and f"mm_{rung}<" in names[0]
    check_matmul(out.view(6, 131), x.reshape(6, 96), w.t(), False, f"linear {rung}", bias=bias)


@pytest.mark.parametrize("rung", ALL_RUNGS)
def test_what_the_tma_cannot_read_runs_on_mma(rung):
    dtype = torch.bfloat16
    a, b = operand((64, 4093), dtype), operand((4093, 72), dtype)
    assert "8186 bytes" in tma_fallback_reason(a, b)
    out, names = _launched(lambda: kernelkit.matmul(a, b, variant=rung))
    assert "mm_mma<" in names[0]
    check_matmul(out, a, b, False, f"{rung} K = 4093")
    a = operand((64, 128), dtype, offset=1)  # 2 bytes off the 16-byte grid
    assert "16-byte boundary" in tma_fallback_reason(a, operand((128, 64), dtype))
    out, names = _launched(lambda: kernelkit.matmul(a, operand((128, 64), dtype), variant=rung))
    assert "mm_mma<" in names[0]


PERSISTENT_CASES = [(r, d) for r in PERSISTENT for d in DTYPES]


@pytest.mark.parametrize("rung,dtype", PERSISTENT_CASES, ids=[f"{r}-{str(d)[6:]}" for r, d in PERSISTENT_CASES])
def test_persistent_walks_many_tiles(rung, dtype):
    """More tiles than SMs (each block walks several, its consumers taking turns), every ring depth, K of
    one K tile (the ring wraps within a tile's turn), and batches whose tiles a block walks across. The
    cluster rung pairs tiles along M: 16, 9 (odd: the last pair's second tile is past M) and 33 rows of
    tiles, every operand layout (its B multicast in halves: one box of a k-major B, 64-column boxes of an
    n-major one)."""
    for cfg in (WgmmaTile(128, 2), WgmmaTile(128, 5), WgmmaTile(256, 2), WgmmaTile(256, 3)):
        _run(rung, dtype, 2000, 1900, 136, config=cfg)  # 16 x 15 tiles
        _run(rung, dtype, 1504, 2104, 8, True, False, config=cfg)  # K = 8: one K tile a tile
        _run(rung, dtype, 1100, 776, 200, False, False, config=cfg)  # 9 rows of tiles
        _run(rung, dtype, 1032, 1288, 136, True, True, config=cfg)
    _run(rung, dtype, 300, 700, 520, batch=(37,))  # 37 x 18 tiles
    _run(rung, dtype, 4100, 4000, 72, False, False)  # the rule's ring, 33 x 32 tiles
    _run(rung, dtype, 1032, 2051, 1032, True, True, oa=8, ob=16, oc=3)
    _run(rung, dtype, 777, 1001, 264, oc=1)  # an output off the 16-byte grid: element stores


def test_cluster_grid_fits_at_once():
    """The cluster rung launches an even grid in clusters of two, no more CTAs than fit at once."""
    from kernelkit.runtime.launch import resident_blocks
    a, b = operand((4096, 4096), torch.bfloat16), operand((4096, 4096), torch.bfloat16, True)
    with recording() as rec:
        kernelkit.matmul(a, b, variant="cluster")
    kern, grid, block, shmem, cluster = rec[0][:5]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert cluster == 2 and grid[0] % 2 == 0 and grid[0] <= resident_blocks(kern, block, 2, 0, shmem) <= sms


def test_large_rule_tile():
    """The rule's 256-wide tile at a size where its tiles cover the SMs, against float64."""
    for rung in RUNGS:
        a, b = operand((4096, 1024), torch.bfloat16), operand((1024, 2048), torch.bfloat16)
        out, names = _launched(lambda: kernelkit.matmul(a, b, variant=rung))
        assert ", 256, 4, " in names[0]
        check_matmul(out, a, b, False, f"{rung} 4096x2048x1024")


# ---- split K ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("rung,dtype", CASES, ids=IDS)
def test_split_k_rule_and_configs(rung, dtype):
    """Few tiles, long K: the rule splits; M = 1, 17 and 129 (a second M tile of one row), N off the tile,
    K odd multiples of 8 (a partial last K tile in the last slice), configured splits of both widths."""
    for m, n, k in ((1, 1000, 4104), (17, 1000, 4104), (129, 520, 8200), (1, 8, 1032)):
        _, split = _run(rung, dtype, m, n, k)
        assert split > 1, (m, n, k)
    for config in (WgmmaTile(128, 7, 3), WgmmaTile(256, 4, 2), WgmmaTile(128, 7, 16)):
        _run(rung, dtype, 129, 263, 1032, config=config)
        _run(rung, dtype, 17, 300, 1000, config=config)


@pytest.mark.parametrize("rung,dtype", CASES, ids=IDS)
def test_split_k_layouts_batches_offsets(rung, dtype):
    for ta in (False, True):
        for tb in (False, True):
            _run(rung, dtype, 136, 264, 2056, ta, tb, config=WgmmaTile(128, 7, 5))
    _run(rung, dtype, 136, 264, 2056, True, False, oa=8, ob=16, oc=1, config=WgmmaTile(128, 7, 4))
    _run(rung, dtype, 61, 67, 1032, batch=(3,), config=WgmmaTile(128, 7, 4))
    _, split = _run(rung, dtype, 24, 200, 1032, True, True, batch=(2,))  # m-major A: M a multiple of 8
    assert split > 1
    a = operand((4, 33, 1032), dtype)
    b = operand((1032, 35), dtype, True)  # one B for the whole batch; (4, 33, 40) @ (40, 35) ran before:
    grids = []  # the plan of that shape with another K must not serve this one
    out, names = _launched(lambda: kernelkit.matmul(a, b, variant=rung), grids)
    assert f"mm_{rung}<" in names[0] and grids[0][1] > 1 and grids[0][2] == 4
    check_matmul(out, a, b.expand(4, 1032, 35), False, f"{rung} split, broadcast B")


@pytest.mark.parametrize("rung,dtype", CASES, ids=IDS)
def test_split_k_bias_after_the_sum(rung, dtype):
    """linear's bias is added once, by the block that sums the slices."""
    x = operand((2, 9, 2056), dtype)
    w = operand((131, 2056), dtype)
    bias = operand((131,), dtype)
    grids = []
    out, names = _launched(lambda: kernelkit.linear(x, w, bias, variant=rung), grids)
    assert f"mm_{rung}<" in names[0] and grids[0][1] > 1
    check_matmul(out.view(18, 131), x.reshape(18, 2056), w.t(), False, f"linear split {rung}", bias=bias)


@pytest.mark.parametrize("rung,dtype", CASES, ids=IDS)
def test_split_k_same_bits_every_run(rung, dtype):
    """The slices are summed in slice order whichever block arrives last: five runs, one result; the
    tickets are back at 0 after each launch (else a later run's last block would be the wrong one)."""
    a, b = operand((17, 4104), dtype), operand((4104, 1000), dtype, True)
    first = kernelkit.matmul(a, b, variant=rung)
    check_matmul(first, a, b, False, f"{rung} determinism")
    for _ in range(4):
        again = kernelkit.matmul(a, b, out=poisoned((17, 1000), dtype), variant=rung)
        assert torch.equal(again, first)
    for split in (2, 7):
        cfg = WgmmaTile(128, 7, split)
        one = kernelkit.matmul(a, b, variant=rung, config=cfg)
        assert torch.equal(kernelkit.matmul(a, b, variant=rung, config=cfg), one)


def test_split_k_small():
    """The case compute-sanitizer runs (memcheck, racecheck): both rungs, 3 slices, a partial last K tile."""
    for rung in RUNGS:
        _run(rung, torch.bfloat16, 129, 136, 456, config=WgmmaTile(128, 7, 3))
        _run(rung, torch.bfloat16, 5, 72, 264, False, False, config=WgmmaTile(256, 4, 2))


@pytest.mark.parametrize("rung,dtype", CASES, ids=IDS)
def test_short_a_boxes(rung, dtype):
    """A k-major A of fewer than 128 rows comes in a box of M rounded up to 8 rows (flags bits 8-15), the
    tile's other rows left as the ring held them: after a launch that fills the ring with other data
    (NaN included), every M from 1 to 127 around the box sizes is right, split and not, and an m-major
    A keeps the full box."""
    big = operand((256, 512), dtype)
    big[3, 7] = float("nan")
    for m, ta in [(m, False) for m in (1, 7, 8, 9, 40, 63, 64, 65, 100, 120, 127)] + [(40, True)]:
        for config in (None, WgmmaTile(128, 7, 2)):
            kernelkit.matmul(big, operand((512, 264), dtype), variant=rung)  # the ring holds other rows now
            a, b = operand((m, 1032), dtype, ta), operand((1032, 264), dtype, True)
            out = poisoned((m, 264), dtype)
            with recording() as rec:
                kernelkit.matmul(a, b, out=out, variant=rung, config=config)
            assert len(rec) == 1 and f"mm_{rung}<" in rec[0][7]
            rows8 = (-(-m // 8) if m <= 120 else 0) if not ta else 0
            assert (rec[0][6][9] >> 8) & 0xFF == rows8, (m, ta, rec[0][6][9])
            check_matmul(out, a, b, False, f"{rung} {dtype} M={m} ta={ta} {config}")


def test_tma_store_takes_the_tma_where_c_allows():
    """tma_store writes C by TMA stores (flags bit 2) where C's base and row stride are on the 16-byte grid,
    else by the threads (bit clear); both checked against float64, with rows and columns past the box edges."""
    dt = torch.bfloat16
    for m, n, oc, tma in ((1000, 1032, 0, True), (1000, 1032, 1, False), (77, 136, 0, True), (300, 264, 3, False)):
        a, b = operand((m, 264), dt), operand((264, n), dt, True)
        out = poisoned((m, n), dt, oc)
        with recording() as rec:
            kernelkit.matmul(a, b, out=out, variant="tma_store")
        assert "mm_tma_store<" in rec[0][7] and bool(rec[0][6][10] & 4) == tma, (m, n, oc)
        check_matmul(out, a, b, False, f"tma_store {m}x{n} off={oc}")
