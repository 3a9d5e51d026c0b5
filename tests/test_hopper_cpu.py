"""The Hopper matmul rungs (tma_wgmma, ws) without a GPU: tensor-map fields for each operand layout, the
driver's constraints checked before it is asked, the reasons a problem stays on the mma rung, the tile
rule, config= checks, tensor maps through the launch shim, and the sm_90a SASS (HGMMA with the operand
transposes each layout needs, TMA loads, mbarriers, setmaxnreg for ws, no spills)."""
import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import MatmulTile, WgmmaTile
from kernelkit.ops.gemm import _hopper as hop
from kernelkit.ops.gemm._problem import as3, side_a, side_b
from kernelkit.ops.gemm.matmul import check_rung
from kernelkit.runtime.tensor_map import TensorMapError, check_fields

BF16 = torch.bfloat16


def test_tensor_map_fields_follow_each_layout():
    a = side_a(as3(torch.empty(300, 520, dtype=BF16)))  # row-major A: k-major, rows 1040 bytes apart
    assert hop.tensor_map_fields(a, 300, 520, 1, 128) == ((520, 300, 1), (1040, 1040 * 300), (64, 128, 1))
    at = side_a(as3(torch.empty(520, 304, dtype=BF16).t()))  # A = a.t(): m-major, boxes of 64 x 64
    assert hop.tensor_map_fields(at, 304, 520, 1, 128) == ((304, 520, 1), (608, 608 * 520), (64, 64, 1))
    b = side_b(as3(torch.empty(257, 520, dtype=BF16).t()))  # B = w.t(): k-major, box of BN rows
    assert hop.tensor_map_fields(b, 257, 520, 1, 256) == ((520, 257, 1), (1040, 1040 * 257), (64, 256, 1))
    b3 = side_b(torch.empty(3, 72, 136, dtype=BF16))  # batched row-major B: n-major, batch as the third dim
    assert hop.tensor_map_fields(b3, 136, 72, 3, 128) == ((136, 72, 3), (272, 72 * 136 * 2), (64, 64, 1))


def test_driver_constraints_are_checked_first():
    ok = dict(dtype=BF16, address=4096, dims=(64, 64, 1), strides=(128, 8192), box=(64, 64, 1), swizzle=128)
    check_fields(**ok)
    for change, words in (({"address": 4104}, "8 bytes past"), ({"strides": (8186, 8192)}, "8186 bytes"),
                          ({"box": (128, 64, 1)}, "exceeds the 128-byte swizzle"),
                          ({"box": (64, 300, 1)}, "box"), ({"dims": (0, 64, 1)}, "extents")):
        with pytest.raises(TensorMapError, match=words):
            check_fields(**{**ok, **change})


@pytest.fixture
def hopper_device(monkeypatch):
    """The rules see an sm_90 device with the launch shim, whatever this machine has."""
    cc = {"v": 90}
    monkeypatch.setattr(hop, "compute_capability", lambda dev: cc["v"])
    monkeypatch.setattr(hop, "maps_supported", lambda: True)
    return cc


def test_reasons_name_the_constraint(hopper_device):
    a = torch.empty(64, 4096, dtype=BF16)
    b = torch.empty(4096, 64, dtype=BF16)
    cc = 90
    reason = lambda x, y, batch=1: hop.problem_reason(side_a(as3(x)), side_b(as3(y)), batch, cc)  # noqa: E731
    assert reason(a, b) is None
    assert reason(a.t(), b.t()) is None  # transposed views: m-major A, k-major B
    odd = torch.empty(64, 4093, dtype=BF16)  # K = 4093: rows 8186 bytes apart
    assert "8186 bytes" in reason(odd, torch.empty(4093, 64, dtype=BF16))
    assert "16-byte boundary" in reason(torch.empty(64 * 4096 + 1, dtype=BF16)[1:].view(64, 4096), b)
    b_odd_batch = torch.empty(3 * 4100, dtype=BF16).as_strided((3, 64, 64), (4100, 64, 1))
    assert "batch stride is 8200 bytes" in reason(torch.empty(3, 64, 64, dtype=BF16), b_odd_batch, 3)
    assert "float16 and bfloat16" in reason(a.float(), b.float())
    cc = 80
    assert "compute capability 9.0 only, not 8.0" in reason(a, b)


def test_rule_widest_tile_where_every_sm_gets_one():
    lim = hop.SM90_SHARED
    assert hop.tile_for(4096, 4096, 1, 132, lim) == WgmmaTile(256, 4)  # 512 tiles of 128 x 256
    assert hop.tile_for(1024, 4096, 1, 132, lim) == WgmmaTile(128, 7)  # 8 x 16 = 128 wide tiles < 132 SMs
    assert hop.tile_for(1024, 4096, 1, 128, lim) == WgmmaTile(256, 4)  # ... but enough for 128 SMs
    assert hop.tile_for(128, 128, 1, 132, lim) == WgmmaTile(128, 7)
    assert hop.tile_for(128, 256, 132, 132, lim).block_n == 256  # the batch counts tiles too
    # stages: what the block's shared memory holds (227 KB on sm_90), at most 8
    assert hop.stages_for(256, lim) == 4 and hop.stages_for(128, lim) == 7
    assert hop.stages_for(128, 100 * 1024) == 3
    for t in (WgmmaTile(256, 4), WgmmaTile(128, 7)):
        t.check("matmul")
        assert t.shmem + hop.STATIC_SHARED <= lim


def _split(m, n, k, batch=1, sms=132, a_rows=hop.BM):
    return hop.tile_for(m, n, batch, sms, hop.SM90_SHARED, k, a_rows).split


def test_split_rule_fills_idle_sms_only():
    # N = 4096: 32 tiles of 128 x 128 for 132 SMs. The blocks wanted: half the SMs scaled by the TMA's
    # rows a stage (A's box + 128 of B) over the rows carrying data. An m-major A (boxes of 128 rows):
    # M = 1: 66 x 256 / 129 = 130 -> 4 slices (128 blocks, one wave); M = 16: 117 -> 3; M = 64: 88 -> 2;
    # M = 128: 66 -> 2. A k-major A, whose box stops at M rounded up to 8: 66 x 136 / 129 = 69 -> 2 for
    # M = 1, 66 -> 2 for the rest (measured on an H100 at M = 1 and 16, K = 4096 and 14336: 82-98% of
    # cuBLAS with 2 slices, 78-94% with 3 or 4)
    for m, split in ((1, 4), (16, 3), (64, 2), (128, 2)):
        for k in (4096, 14336):
            assert hop.tile_for(m, 4096, 1, 132, hop.SM90_SHARED, k) == WgmmaTile(128, 7, split), (m, k)
            assert _split(m, 4096, k, a_rows=hop.a_box_rows(True, m)) == 2, (m, k)
    assert _split(1, 4096, 4096, sms=264) == 8 and _split(1, 4096, 4096, sms=100) == 3  # the SMs decide
    # full grids do not split: 112 tiles of N = 14336 (a second slice each would need two waves), the
    # 128 x 256 grids, batches that fill the SMs
    assert _split(128, 14336, 4096) == 1 and _split(1, 14336, 4096) == 1 and _split(1, 128256, 4096) == 1
    assert _split(4096, 4096, 4096) == 1 and _split(16384, 4096, 14336) == 1
    assert _split(1, 4096, 4096, batch=8) == 1 and _split(1, 4096, 4096, batch=2) == 2  # 64 tiles
    # the default k (one K tile) never splits: tile_for without K keeps the unsplit tile
    assert hop.tile_for(1, 4096, 1, 132, hop.SM90_SHARED) == WgmmaTile(128, 7)


def test_split_rule_keeps_slices_long_and_the_reduction_short():
    # each slice keeps >= 4 K tiles: K = 512 is 8 tiles -> 2 slices; K = 200 (4 tiles, odd tail) -> 1
    assert _split(1, 4096, 512) == 2 and _split(1, 4096, 200) == 1 and _split(1, 4096, 256) == 1
    assert _split(1, 4096, 1000) == 4  # 16 K tiles, the last one partial
    # one tile (128 x 128 x 4096: 64 K tiles): SMs would allow 132 slices, K tiles 16; the tail of S full
    # partials (16 K tiles' time each) against 64 / S K tiles is least at sqrt(64 / 16) = 2; with 16
    # rows a partial costs 1/8 of that: sqrt(32) -> 5; with one row the K tiles bound it: 16
    assert _split(128, 128, 4096) == 2 and _split(16, 128, 4096) == 5 and _split(1, 128, 4096) == 16
    assert _split(128, 4096, 512) == 1  # full partials and 8 K tiles: no split pays
    assert _split(1, 128, 65536) == hop.MAX_SPLIT
    # the slices of the kernels' partition (k_slice in splitk.cuh): first = ktiles * s // S
    for m, n, k in ((1, 4096, 4096), (16, 4096, 14336), (128, 4096, 1000), (128, 128, 4104), (1, 128, 8200)):
        kt, split = -(-k // 64), _split(m, n, k)
        sizes = [kt * (s + 1) // split - kt * s // split for s in range(split)]
        assert sum(sizes) == kt and min(sizes) >= hop.MIN_SLICE_KTILES and max(sizes) - min(sizes) <= 1


def test_wgmma_tile_check_names_the_problem():
    for tile, words in ((WgmmaTile(192, 3), "128 or 256"), (WgmmaTile(256, 5), "shared memory"),
                        (WgmmaTile(128, 1), "stages must be"), (WgmmaTile(256, 9), "stages must be"),
                        (WgmmaTile(128, 7, 0), "split must be"), (WgmmaTile(128, 7, 65), "split must be")):
        with pytest.raises(ValueError, match=words):
            tile.check("matmul")


def test_config_types_per_rung():
    check_rung("matmul", "ws", BF16, False, WgmmaTile(128, 4))
    check_rung("matmul", "mma", BF16, False, MatmulTile(128, 128, 64, 32))
    with pytest.raises(ValueError, match="WgmmaTile"):
        check_rung("matmul", "tma_wgmma", BF16, False, MatmulTile(128, 128, 64, 32))
    with pytest.raises(ValueError, match="WgmmaTile"):
        check_rung("matmul", "mma", BF16, False, WgmmaTile(128, 4))
    with pytest.raises(ValueError, match="WgmmaTile"):
        check_rung("matmul", None, BF16, False, WgmmaTile(128, 4))
    with pytest.raises(TypeError, match="supports float16, bfloat16"):
        check_rung("matmul", "ws", torch.float32, True, None)


def test_ladder_records():
    names = [v.name for v in kernelkit.ladder("matmul")]
    assert names[-9:] == ["mma", "dmma", "tma_wgmma", "ws", "persistent", "cluster", "tma_store", "cute", "best"]
    for rung in hop.RUNGS:
        v = kernelkit.get_op("matmul").variant(rung)
        assert v.dtypes == (torch.float16, BF16)
        ks = v.kernels(BF16)
        own = [k for k in ks if k.source == hop.SRC[rung]]
        assert len(own) == 8 and all(k.arch_suffix == "a" and k.min_sm == 90 and k.tensor_core == "HGMMA" for k in own)
        # the persistent kernel stages C past its ring (128 rows of 16-bit or 64 of fp32), so fewer stages
        tiles = ((WgmmaTile(256, 3), WgmmaTile(128, 5)) if rung in hop.PERSISTENT
                 else (WgmmaTile(256, 4), WgmmaTile(128, 7)))
        assert {k.dyn_shared for k in own} == {t.shmem_for(rung) for t in tiles}
        assert any("mm_mma" in k.name for k in ks)  # the shapes the TMA cannot take
    assert "16-byte" in kernelkit.get_op("matmul").variant("tma_wgmma").technique
    assert [k for k in kernelkit.get_op("linear").variant("ws").kernels(BF16) if k.source == hop.SRC["ws"]]


def test_launch_shim_packs_tensor_maps_at_64_bytes():
    import numpy as np

    fl = pytest.importorskip("kernelkit.runtime._fastlaunch")
    raw = bytes(range(128))
    data, offsets = fl.pack((raw, bytes(reversed(raw)), 7, np.int32(3)))
    assert offsets == (0, 128, 256, 264)
    assert data[:128] == raw and data[128:256] == bytes(reversed(raw))
    data, offsets = fl.pack((1, raw))
    assert offsets == (0, 64) and data[64:192] == raw
    with pytest.raises(TypeError, match="tensor map"):
        fl.pack((bytes(9),))
    # the cluster launches' path (cuLaunchKernelEx from Python) lays the parameters out the same way
    from kernelkit.runtime.launch import _pack_args
    args = (raw, bytes(reversed(raw)), 7, np.int32(3), -5, np.float32(1.5))
    assert _pack_args(args) == (fl.pack(args)[0], list(fl.pack(args)[1]))


def _sass_of(rung, a_k, b_k, tile=WgmmaTile(256, 4)):
    from kernelkit.analyze.sass import disassemble
    from kernelkit.runtime import compile_source

    k = hop.kernel(rung, BF16, tile, a_k, b_k)
    build = compile_source(k.source, (k.name,), "sm_90" + k.arch_suffix)
    return disassemble(build.cubin)[build.mangled(k.name)], build.log


@pytest.mark.parametrize("a_k,b_k", [(True, True), (True, False), (False, True), (False, False)])
def test_sass_transposes_the_m_and_n_major_operands(a_k, b_k):
    pytest.importorskip("cuda.core")
    sass, log = _sass_of("tma_wgmma", a_k, b_k)
    mma = [line for line in sass.splitlines() if "HGMMA.64x256x16.F32.BF16" in line]
    assert len(mma) == 4  # four K steps of 16 a stage
    assert all(("tnspA" in line) == (not a_k) and ("tnspB" in line) == (not b_k) for line in mma)
    assert "UTMALDG.3D" in sass and "SYNCS.PHASECHK" in sass and "LDL" not in sass and "STL" not in sass
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass  # one K tile of MMAs stays in flight


def test_ws_sass_moves_registers_and_has_no_block_barrier_in_its_loop():
    pytest.importorskip("cuda.core")
    sass, log = _sass_of("ws", True, True)
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x28" in sass  # the producer keeps 40
    assert "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass and ", 0xe8" in sass  # the consumers take 232
    assert "C7508" not in log and "LDL" not in sass
    assert sass.count("SYNCS.ARRIVE") >= 1  # consumers release stages on the empty barriers


@pytest.mark.parametrize("rung", ["tma_wgmma", "ws"])
def test_sass_of_the_split_k_meeting(rung):
    """Every kernel can split K: the partials leave and return through L2 in 8-byte pairs (st.cg /
    ld.cg: STRONG.GPU), one ticket a block (ATOMG.E.INC), a GPU-wide fence each side of it, no spills."""
    pytest.importorskip("cuda.core")
    for tile in (WgmmaTile(128, 7), WgmmaTile(256, 4)):
        sass, log = _sass_of(rung, True, False, tile)
        pairs = tile.block_n // 4
        assert sass.count("STG.E.64.STRONG.GPU") == pairs  # one store a pair, predicated on the pair's row
        assert sass.count("LDG.E.64.STRONG.GPU") == 2 * pairs  # slice 0, then the slice loop's body
        assert sass.count("ATOMG.E.INC.STRONG.GPU") == 1 and sass.count("MEMBAR.SC.GPU") == 2
        assert "LDL" not in sass and "STL" not in sass and "C7508" not in log


def test_persistent_sass_walks_tiles_without_a_meeting():
    """The persistent kernel: the consumers' HGMMA with setmaxnreg as in ws, no split-K meeting (no ticket
    atomics, no workspace stores), C out in 16-byte stores, no spills, for both widths and both epilogues
    (plain, fused GELU)."""
    pytest.importorskip("cuda.core")
    for tile in (WgmmaTile(256, 3), WgmmaTile(128, 5)):
        sass, log = _sass_of("persistent", True, True, tile)
        assert sass.count(f"HGMMA.64x{tile.block_n}x16.F32.BF16") == 4 and "USETMAXREG.DEALLOC.CTAPOOL 0x28" in sass
        assert "ATOMG" not in sass and "STG.E.64.STRONG.GPU" not in sass and "STG.E.128" in sass
        assert "LDL" not in sass and "STL" not in sass and "C7508" not in log
    from kernelkit.analyze.sass import disassemble
    from kernelkit.runtime import compile_source
    k = hop.kernel("persistent", BF16, WgmmaTile(256, 3), True, False, 3)  # linear's erf GELU
    build = compile_source(k.source, (k.name,), "sm_90a")
    sass = disassemble(build.cubin)[build.mangled(k.name)]
    assert "STG.E.128" in sass and "LDL" not in sass and "STL" not in sass and "C7508" not in build.log


def test_cluster_sass_multicasts_b():
    """The cluster kernel: each CTA loads A itself and half of B by multicast (one box of a k-major B, two
    64-column boxes of an n-major one at BN = 256), cluster barriers only at the start and the end (the one
    release at GPU scope each: none in the main loop), stages released by remote mbarrier arrivals, no
    spills; the persistent kernel has none of it."""
    pytest.importorskip("cuda.core")
    for b_k, boxes in ((True, 1), (False, 2)):
        sass, log = _sass_of("cluster", True, b_k, WgmmaTile(256, 3))
        assert sass.count("UTMALDG.3D.MULTICAST") == boxes
        assert sass.count("UCGABAR_ARV") == 2 and sass.count("UCGABAR_WAIT") == 2 and sass.count("MEMBAR.ALL.GPU") == 2
        assert "SYNCS.ARRIVE.TRANS64.RED" in sass and sass.count("HGMMA.64x256x16.F32.BF16") == 4
        assert "LDL" not in sass and "STL" not in sass and "C7508" not in log
    sass, _ = _sass_of("persistent", True, True, WgmmaTile(256, 3))
    assert "MULTICAST" not in sass and "UCGABAR" not in sass and "MEMBAR.ALL.GPU" not in sass


def test_tma_store_sass_and_c_map():
    """The tma_store kernel: C's boxes out by UTMASTG (BN / 64 of them a tile), the threads' 16-byte stores kept
    for a C off the 16-byte grid, no spills; the host gives no tensor map for such a C."""
    pytest.importorskip("cuda.core")
    for tile in (WgmmaTile(256, 3), WgmmaTile(128, 5)):
        sass, log = _sass_of("tma_store", True, False, tile)
        assert sass.count("UTMASTG.3D") == tile.block_n // 64 and "STG.E.128" in sass
        assert "LDL" not in sass and "STL" not in sass and "C7508" not in log
    assert "UTMASTG" not in _sass_of("persistent", True, False, WgmmaTile(256, 3))[0]
    base = torch.empty(64 * 136 + 1, dtype=BF16)
    assert hop.c_tensor_map(base[1:].view(1, 64, 136), 64, 136, 1, 136) is None  # 2 bytes off the grid
    assert hop.c_tensor_map(base[:64 * 131].view(1, 64, 131), 64, 131, 1, 131) is None  # rows 262 bytes apart


def test_cluster_grid_and_b_box():
    """Pairs of tiles: two CTAs a pair, no more clusters than fit at once (an odd resident count leaves one
    SM out), at least one pair; a k-major B's box is half the tile on the cluster rung."""
    assert hop.cluster_grid(256, 132) == 132 and hop.cluster_grid(256, 131) == 130
    assert hop.cluster_grid(5, 132) == 10 and hop.cluster_grid(1, 1) == 2
    assert hop.b_box_rows("cluster", 256) == 128 and hop.b_box_rows("persistent", 256) == 256


def test_persistent_tiles_and_grid(monkeypatch, hopper_device):
    """The persistent rung's rule (tile_for's width, the stages that fit, beside the staging buffer of a
    fused epilogue), one block an SM at most, the batch in flags bits 16-31, and its config checks."""
    from kernelkit.ops.gemm import matmul as mm

    assert hop.persistent_tile(4096, 4096, 1, 132, hop.SM90_SHARED) == WgmmaTile(256, 3)
    assert hop.persistent_tile(1024, 1024, 1, 132, hop.SM90_SHARED) == WgmmaTile(128, 5)
    for t in (WgmmaTile(256, 3), WgmmaTile(128, 5)):
        assert t.shmem_for("persistent") + hop.STATIC_SHARED <= hop.SM90_SHARED
    with pytest.raises(ValueError, match="bytes of shared memory"):
        WgmmaTile(256, 4).check("matmul", hop.SM90_SHARED, 2, "persistent")
    with pytest.raises(ValueError, match="no K split"):
        WgmmaTile(128, 4, 2).check("matmul", hop.SM90_SHARED, 2, "persistent")
    launched = []
    monkeypatch.setattr(hop, "sm_count", lambda dev: 132)
    monkeypatch.setattr(hop, "shared_limit", lambda dev: hop.SM90_SHARED)
    monkeypatch.setattr(hop, "get_kernel", lambda src, name, **kw: ("kernel", name, src))
    monkeypatch.setattr(hop, "allow_shared", lambda *a: None)
    monkeypatch.setattr(hop, "encode_tiled", lambda *a, **kw: bytes(128))
    monkeypatch.setattr(hop, "launch", lambda *a, **kw: launched.append((a, kw)))
    hop._plans.clear()
    a = torch.empty(5, 300, 520, dtype=BF16)
    b = torch.empty(5, 257, 520, dtype=BF16).transpose(1, 2)
    mm._matmul_into(a, b, None, torch.empty(5, 300, 257, dtype=BF16), False, "persistent", None)
    a2, b2 = torch.empty(4096, 512, dtype=BF16), torch.empty(512, 4096, dtype=BF16)
    mm._matmul_into(a2, b2, None, torch.empty(4096, 4096, dtype=BF16), False, "persistent", None)
    (args, kw), (args2, kw2) = launched
    assert args[0] == ("kernel", "kk::mm_persistent<__nv_bfloat16, 128, 5, true, true>", "gemm/wgmma_persistent.cu")
    assert args[1] == (3 * 3 * 5, 1, 1) and args[2] == 384  # 45 tiles: a block each
    assert args[12] == 3 | (5 - 1) << 16 and kw["shmem"] == WgmmaTile(128, 5).shmem_for("persistent")
    assert args2[0][1] == "kk::mm_persistent<__nv_bfloat16, 256, 3, true, false>"
    assert args2[1] == (132, 1, 1) and args2[12] == 0  # 512 tiles walked by 132 blocks


def test_maps_supported_reads_the_launch_module():
    """Not patched: True exactly when the launch shim is importable."""
    from kernelkit.runtime import tensor_map

    try:
        import kernelkit.runtime._fastlaunch  # noqa: F401
        built = True
    except ImportError:
        built = False
    assert tensor_map.maps_supported() is built


def test_dispatch_launches_the_rung_with_its_tensor_maps(monkeypatch, hopper_device):
    """matmul's body on CPU tensors with the device calls stubbed: the rung's kernel, grid, shared memory
    and arguments (two 128-byte maps, then C, bias, sizes, strides, batch flags); the mma rung for what
    the TMA cannot read."""
    from kernelkit.ops.gemm import matmul as mm

    launched, maps = [], []
    monkeypatch.setattr(hop, "sm_count", lambda dev: 132)
    monkeypatch.setattr(hop, "shared_limit", lambda dev: hop.SM90_SHARED)
    monkeypatch.setattr(hop, "get_kernel", lambda src, name, **kw: ("kernel", name, kw["arch_suffix"]))
    monkeypatch.setattr(hop, "allow_shared", lambda *a: None)
    monkeypatch.setattr(hop, "encode_tiled", lambda *a, **kw: maps.append((a, kw)) or bytes(128))
    monkeypatch.setattr(hop, "launch", lambda *a, **kw: launched.append((a, kw)))
    spaces = []
    monkeypatch.setattr(hop, "split_workspace", lambda dev, floats, tickets: spaces.append((floats, tickets))
                        or (1 << 40, 1 << 41))
    hop._plans.clear()
    a = torch.empty(3, 300, 520, dtype=BF16)
    b = torch.empty(3, 257, 520, dtype=BF16).transpose(1, 2)  # B = w.t(): k-major
    out = torch.empty(3, 300, 257, dtype=BF16)
    mm._matmul_into(a, b, None, out, False, "ws", None)
    (args, kw), = launched
    kern, grid, block, ta, tb, c, bias, m, n, k, ldc, bsc, flags, res, ldr, ws, tickets = args
    assert kern == ("kernel", "kk::mm_ws<__nv_bfloat16, 128, 7, true, true>", "a")  # 27 tiles: the narrow one
    # 9 K tiles of 128-row partials: no split pays, no workspace
    assert grid == (3 * 3, 1, 3) and block == 384 and kw["shmem"] == WgmmaTile(128, 7).shmem
    assert (ta, tb) == (bytes(128), bytes(128)) and c == out.data_ptr() and bias == 0 and (res, ldr) == (0, 0)
    assert (m, n, k, ldc, bsc, flags, ws, tickets) == (300, 257, 520, 257, 300 * 257, 3, 0, 0) and not spaces
    launched.clear()
    mm._matmul_into(a, b, None, out, False, "ws", [128, 7, 2])  # K's 9 tiles in 2 slices (grid y)
    (args, kw), = launched
    assert args[1] == (9, 2, 3) and args[-2:] == (1 << 40, 1 << 41)
    assert spaces == [(27 * 2 * 128 * 128, 27)]  # 27 tiles x 2 partials of 128 x 128 floats, 27 tickets
    with pytest.raises(ValueError, match="10 K slices of 9 K tiles"):
        mm._matmul_into(a, b, None, out, False, "ws", [128, 7, 10])
    launched.clear()
    small = torch.empty(3, 16, 257, dtype=BF16)
    mm._matmul_into(a[:, :16], b, None, small, False, "ws", None)  # 16 rows: the rule splits K in 2
    mm._matmul_into(a[:, :16, :64], b[:, :64], None, small, False, "ws", None)  # one K tile: its own plan
    assert [x[0][1] for x in launched] == [(3, 2, 3), (3, 1, 3)]
    assert maps[0][0][2:] == ((520, 300, 3), (1040, 300 * 520 * 2), (64, 128, 1))
    assert maps[1][0][2:] == ((520, 257, 3), (1040, 257 * 520 * 2), (64, 128, 1))
    launched.clear()
    mm._matmul_into(a[0], b[0], None, out[0], False, "tma_wgmma", [256, 4])
    (args, kw), = launched
    assert args[0][1] == "kk::mm_tma_wgmma<__nv_bfloat16, 256, 4, true, true>" and args[2] == 256
    assert args[1] == (3 * 2, 1, 1) and args[-3] == 0 and kw["shmem"] == WgmmaTile(256, 4).shmem  # no batch dims
    assert maps[-1][0][2:] == ((520, 257, 1), (1040, 1040 * 257), (64, 256, 1))
    calls = []
    monkeypatch.setattr(mm, "launch", lambda *a, **kw: calls.append(kw["name"]))
    monkeypatch.setattr(mm, "get_kernel", lambda *a, **kw: "mma kernel")
    monkeypatch.setattr(mm, "allow_shared", lambda *a: None)
    from kernelkit.ops.gemm import _ladder
    monkeypatch.setattr(_ladder, "sm_count", lambda dev: 132)
    launched.clear()
    odd = torch.empty(64, 4093, dtype=BF16)
    mm._matmul_into(odd, torch.empty(4093, 64, dtype=BF16), None, torch.empty(64, 64, dtype=BF16), False, "ws", None)
    assert not launched and calls and "mm_mma<" in calls[0]


def test_short_a_box_rows():
    """A k-major A of fewer than 128 rows is loaded in a box of M rounded up to the 8-row swizzle atom;
    an m-major A (boxes of 64 rows along M) and tall A keep the tile's 128 rows."""
    from kernelkit.ops.gemm._hopper import a_box_rows
    assert [a_box_rows(True, m) for m in (1, 8, 9, 64, 65, 120, 121, 127, 128, 5000)] == \
        [8, 8, 16, 64, 72, 120, 128, 128, 128, 128]
    assert a_box_rows(False, 1) == a_box_rows(False, 40) == 128
