"""The sliding-window family without a GPU: the border rules against torch's own padding, the float64
references against direct definitions, the launch rules, the argument errors, and the SASS claims of the
tiled kernels (shared-memory tiles, 128-bit loads) and of the pooling and depthwise kernels. Pooling's and
the depthwise conv2d's launch rules are tested in test_pool_depthwise_cpu.py."""
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
    """I2F/F2I opcodes other than those of integer division (I2F.RP or I2F.U32.RP and F2I.FTZ.U32.TRUNC: the
    reciprocal)."""
    division = ("I2F.RP", "I2F.U32.RP", "F2I.FTZ.U32.TRUNC.NTZ")
    return {op for op in r.opcodes if op.startswith(("I2F", "F2I")) and op not in division}


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
    # (K or KMAX) x (dtype, C): 6 pairs, x 2 alignments; and filter2d's wide fp32 tiles, 3x3 and 5x5
    assert len(rows) == (3 * 6 + 5 * 6 + 6) * 2 + 2 * 2
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


def test_wide_tiles_rule():
    """filter2d's wide tiles (64 x 4 threads, one block an SM) only for one-channel fp32 3x3 and 5x5 planes
    that give every SM at least WIDE_TILES_PER_SM tiles of 256 x 32; otherwise the 32 x 8 tiles."""
    from kernelkit.ops.window import filter2d as f2
    from kernelkit.ops.window._common import planes_of

    def wide(shape, dtype=torch.float32, k=5, cl=False, sms=132):
        return f2.wide_tiles(dtype, planes_of(torch.empty(shape, dtype=dtype, device="meta"), cl, "t"), k, sms)

    assert wide((8192, 8192)) and wide((4096, 16384)) and wide((8192, 8192), k=3)
    assert not wide((8192, 8192), k=7) and not wide((8192, 8192), dtype=torch.float16)
    assert not wide((8192, 8192, 3), cl=True)
    assert not wide((3, 1080, 1920)) and not wide((2048, 2048))  # 6 and 4 tiles a block: the narrow tiles
    assert wide((3, 1080, 1920), sms=16)  # the same image on a device of 16 SMs: 51 tiles each
    # 32 tiles an SM at the threshold: 132 x 32 tiles of 256 x 32
    assert wide((32 * 32, 132 * 256)) and not wide((32 * 32 - 32, 132 * 256))
