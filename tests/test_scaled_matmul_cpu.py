"""scaled_matmul without a GPU: argument errors that need no device, the layout rule, the tile rule and
config checks, the ladder records, the launch's tensor maps and arguments (device calls stubbed), and
the sm_90a SASS of the fp8 kernels (QGMMA with each operand-type pair, a fresh partial sum a stage in
the promoted form, TMA loads, mbarriers, setmaxnreg in ws, no spills)."""
import re

import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import Fp8Tile
from kernelkit.ops.gemm import _fp8_hopper as f8
from kernelkit.ops.gemm import scaled_matmul as sm

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
LIM = f8.SM90_SHARED


def test_cpu_tensors_and_non_tensors_are_refused():
    a = torch.zeros(32, 64, dtype=E4M3)
    one = torch.ones(())
    with pytest.raises(ValueError, match="a must be a CUDA tensor"):
        kernelkit.scaled_matmul(a, a.t(), one, one)
    with pytest.raises(TypeError, match="a must be a torch.Tensor"):
        kernelkit.scaled_matmul([1], a.t(), one, one)


def test_layout_rule_names_the_operand():
    a = torch.zeros(32, 64, dtype=E4M3)
    b = torch.zeros(48, 64, dtype=E4M3).t()  # column-major (64 x 48)
    sm._check_layout(a, b)
    with pytest.raises(ValueError, match="a must be row-major"):
        sm._check_layout(torch.zeros(64, 32, dtype=E4M3).t(), b)
    with pytest.raises(ValueError, match="b must be column-major"):
        sm._check_layout(a, torch.zeros(64, 48, dtype=E4M3))
    sm._check_layout(torch.zeros(1, 64, dtype=E4M3), b)  # one row: any stride


def test_tile_rule():
    # promoted: 192 wide (two accumulator sets) unless 128 x 128 waves cost less
    assert f8.tile_for(8192, 8192, 132, LIM, promote=True) == Fp8Tile(192, 5)  # 21 waves x 256 < 32 x 192
    assert f8.tile_for(4096, 4096, 132, LIM, promote=True) == Fp8Tile(192, 5)  # 6 x 256 = 8 x 192: the wider
    assert f8.tile_for(2048, 2048, 132, LIM, promote=True) == Fp8Tile(128, 7)  # 2 x 256 > 2 x 192
    assert f8.wave_cost(2048, 2048, 192, 132) == 2 * 256 and f8.wave_cost(2048, 2048, 128, 132) == 2 * 192
    assert f8.tile_for(4096, 4096, 132, LIM, promote=False) == Fp8Tile(256, 4)  # 4 x 320 < 8 x 192
    assert f8.tile_for(128, 4096, 132, LIM, promote=False) == Fp8Tile(128, 7)  # one wave either way: 192 < 320

    assert f8.stages_for(256, LIM) == 4 and f8.stages_for(192, LIM) == 5 and f8.stages_for(128, LIM) == 7 and f8.stages_for(128, 100 * 1024) == 3
    for t in (Fp8Tile(256, 4), Fp8Tile(192, 5), Fp8Tile(128, 7)):
        t.check("scaled_matmul", torch.float32, promote=t.block_n < 256)
        assert t.shmem + f8.STATIC_SHARED <= LIM


def test_tile_check_names_the_problem():
    for tile, promote, out, words in ((Fp8Tile(160, 3), False, torch.bfloat16, "128, 192 or 256"),
                                      (Fp8Tile(256, 4), True, torch.bfloat16, "192 at most"),
                                      (Fp8Tile(256, 5), False, torch.bfloat16, "shared memory"),
                                      (Fp8Tile(128, 1), True, torch.bfloat16, "stages must be"),
                                      (Fp8Tile(128, 2), True, torch.float32, "more stages")):
        with pytest.raises(ValueError, match=words):
            tile.check("scaled_matmul", out, promote)
    Fp8Tile(128, 2).check("scaled_matmul", torch.bfloat16, True)  # a 16-bit C tile fits two stages


def test_ladder_records():
    op = kernelkit.get_op("scaled_matmul")
    assert [v.name for v in op.variants] == ["dequant", "tma_wgmma", "ws", "best"]
    assert op.default_variant.name == "best" and op.param_space == {"use_fast_accum": (False, True)}
    for rung in f8.RUNGS:
        v = op.variant(rung)
        assert v.dtypes == (E4M3, E5M2)
        own = [k for k in v.kernels(E4M3) if k.source == f8.SRC and "f8_" in k.name]
        assert len(own) == 2 * 3 * 2  # e4m3 x (e4m3, e5m2), three output dtypes, the promoted 128 and 192 tiles
        assert {k.dyn_shared for k in own} == {Fp8Tile(192, 5).shmem, Fp8Tile(128, 7).shmem}
        assert all(k.tensor_core == "QGMMA" and k.arch_suffix == "a" and k.min_sm == 90 for k in own)
        fast = [k for k in v.kernels(E4M3, use_fast_accum=True) if "f8_" in k.name]
        assert {k.dyn_shared for k in fast} == {Fp8Tile(256, 4).shmem, Fp8Tile(128, 7).shmem} and len(fast) == 12
        assert len([k for k in v.kernels(E5M2) if "f8_" in k.name]) == 3 * 2  # e5m2 x e4m3 only
        assert any("fp8_widen" in k.name for k in v.kernels(E4M3))  # what the TMA cannot read
    dq = op.variant("dequant").kernels(E4M3)
    assert {"kk::fp8_widen<0>", "kk::fp8_widen<1>", "kk::fp8_scale_out<float>"} <= {k.name for k in dq}
    assert any("mm_" in k.name for k in dq)  # the tf32 matmul


def test_dispatch_launches_the_rung_with_its_tensor_maps(monkeypatch):
    """The Hopper launch on CPU tensors with the device calls stubbed: kernel, grid, shared memory, the
    two byte tensor maps (K innermost, box 128 x rows) and the arguments."""
    launched, maps = [], []
    monkeypatch.setattr(f8, "compute_capability", lambda dev: 90)
    monkeypatch.setattr(f8, "maps_supported", lambda: True)
    monkeypatch.setattr(f8, "sm_count", lambda dev: 132)
    monkeypatch.setattr(f8, "shared_limit", lambda dev: LIM)
    monkeypatch.setattr(f8, "get_kernel", lambda src, name, **kw: ("kernel", name, kw["arch_suffix"]))
    monkeypatch.setattr(f8, "allow_shared", lambda *a: None)
    monkeypatch.setattr(f8, "encode_tiled", lambda *a, **kw: maps.append((a, kw)) or bytes(128))
    monkeypatch.setattr(f8, "launch", lambda *a, **kw: launched.append((a, kw)))
    f8._plans.clear()
    a = torch.zeros(300, 528, dtype=E4M3)
    b = torch.zeros(272, 528, dtype=E5M2).t()
    sa, sb = torch.ones(()), torch.ones(())
    out = torch.empty(300, 272, dtype=torch.bfloat16)
    assert f8.launch_fp8("ws", a, b, sa, sb, None, out, True, None) is None
    (args, kw), = launched
    kern, grid, block, ta, tb, c, bias, pa, pb, m, n, k, ldc = args
    assert kern == ("kernel", "kk::f8_ws<0, 1, __nv_bfloat16, 128, 7, true>", "a")
    assert grid == (3 * 3, 1, 1) and block == 384 and kw["shmem"] == Fp8Tile(128, 7).shmem
    assert (c, bias, pa, pb) == (out.data_ptr(), 0, sa.data_ptr(), sb.data_ptr())
    assert (m, n, k, ldc) == (300, 272, 528, 272)
    assert maps[0][0][0] == torch.uint8 and maps[0][0][2:] == ((528, 300, 1), (528, 528 * 300), (128, 128, 1))
    assert maps[1][0][2:] == ((528, 272, 1), (528, 528 * 272), (128, 128, 1))
    assert all(kw["swizzle"] == 128 for _, kw in maps)
    launched.clear()
    assert f8.launch_fp8("tma_wgmma", a, b, sa, sb, None, out, False, [256, 4]) is None
    assert launched[0][0][0][1] == "kk::f8_tma_wgmma<0, 1, __nv_bfloat16, 256, 4, false>"
    assert launched[0][0][2] == 256 and maps[-1][0][2:][2] == (128, 256, 1)
    odd = torch.zeros(300 * 528 + 8, dtype=torch.uint8)[8:].view(E4M3).view(300, 528)  # 8 bytes off the grid
    assert "16-byte boundary" in f8.launch_fp8("ws", odd, b, sa, sb, None, out, True, None)
    monkeypatch.setattr(f8, "compute_capability", lambda dev: 89)
    assert "compute capability 9.0 only" in f8.launch_fp8("ws", a, b, sa, sb, None, out, True, None)


def _sass(name):
    from kernelkit.analyze.sass import disassemble
    from kernelkit.runtime import compile_source

    build = compile_source(f8.SRC, (name,), "sm_90a")
    return disassemble(build.cubin)[build.mangled(name)], build.log


@pytest.mark.parametrize("rung", f8.RUNGS)
@pytest.mark.parametrize("pair", [(0, 0, "E4M3.E4M3"), (0, 1, "E4M3.E5M2"), (1, 0, "E5M2.E4M3")])
def test_sass_shows_the_fp8_wgmma(rung, pair):
    pytest.importorskip("cuda.core")
    fa, fb, form = pair
    sass, log = _sass(f"kk::f8_{rung}<{fa}, {fb}, __nv_bfloat16, 128, 7, true>")
    mma = [line for line in sass.splitlines() if "QGMMA" in line]
    assert len(mma) == 4 and all(f"QGMMA.64x128x32.F32.{form}" in line for line in mma)  # four K steps of 32
    assert sum("!UPT" in line for line in mma) == 1  # the stage's partial sum starts fresh
    assert "UTMALDG.3D" in sass and "SYNCS.PHASECHK" in sass and "LDL" not in sass and "STL" not in sass
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x0" in sass  # promoted: the partial sum is read once complete
    assert ("USETMAXREG" in sass) == (rung == "ws") and "C7508" not in log


def test_promoted_192_wide_tile_fits_the_consumer_registers():
    pytest.importorskip("cuda.core")
    sass, log = _sass("kk::f8_ws<0, 0, __nv_bfloat16, 192, 5, true>")
    assert sum("QGMMA.64x192x32.F32.E4M3.E4M3" in line for line in sass.splitlines()) == 4
    assert "LDL" not in sass and "STL" not in sass and "C7508" not in log


def test_fast_accumulation_keeps_one_stage_in_flight():
    pytest.importorskip("cuda.core")
    sass, log = _sass("kk::f8_ws<0, 0, float, 256, 4, false>")
    mma = [line for line in sass.splitlines() if "QGMMA" in line]
    assert len(mma) == 4 and all("QGMMA.64x256x32.F32.E4M3.E4M3" in line and "!UPT" not in line for line in mma)
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass and "LDL" not in sass
    assert "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass and ", 0xe8" in sass  # the consumers take 232
    regs = re.findall(r"Used (\d+) registers", log)
    assert regs and int(regs[-1]) <= 168  # the entry cap of 384 threads; setmaxnreg moves them
