"""linear's fused epilogues without a GPU: the activation and residual arguments, the kernels' EPI in
each launch, and the fused kernels' SASS (every activation compiles on sm_80 and sm_90 / sm_90a, no
local memory in the best rungs, the residual read as 16-byte chunks)."""
import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import WgmmaTile
from kernelkit.ops.gemm import _hopper as hop
from kernelkit.ops.gemm import _ladder
from matmul_helpers import stub_sm90
from kernelkit.ops.gemm.linear import ACTIVATIONS, IDENTITY, epilogue_code, residual_rows

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
EPIS = (IDENTITY, *ACTIVATIONS.values())


def test_epilogue_codes():
    assert epilogue_code(None, None) == 0  # matmul's epilogue: the default kernels
    assert epilogue_code(None, torch.empty(1)) == IDENTITY
    assert [epilogue_code(a, None) for a in ("relu", "gelu", "gelu_tanh")] == [2, 3, 4]
    assert epilogue_code("gelu", torch.empty(1)) == 3  # the residual is a runtime pointer: same kernel
    for bad in ("tanh", "GELU", "", 3):
        with pytest.raises(ValueError, match="activation must be None or one of 'relu', 'gelu', 'gelu_tanh'"):
            epilogue_code(bad, None)


def test_residual_rows_keep_row_strides_and_copy_the_rest():
    base = torch.randn(7, 40)
    r = base[1:6, 3:34]  # offset view, row stride 40 > N = 31: read in place
    r2 = residual_rows(r, 31)
    assert r2.data_ptr() == r.data_ptr() and r2.stride() == (40, 1)
    lead = torch.randn(2, 3, 50)[:, :, :31]  # leading dims that flatten: (6, 31) rows 50 apart
    assert residual_rows(lead, 31).data_ptr() == lead.data_ptr()
    t = torch.randn(31, 5).t()  # column stride 5: copied
    c = residual_rows(t, 31)
    assert c.is_contiguous() and torch.equal(c, t)
    odd = torch.randn(3, 2, 31).transpose(0, 1)  # leading dims that do not flatten: copied
    assert residual_rows(odd, 31).is_contiguous() and torch.equal(residual_rows(odd, 31).view(2, 3, 31), odd)


@pytest.fixture
def stubbed(monkeypatch):
    """matmul's body on CPU tensors with the device calls stubbed; returns the launches (name, args)."""
    from kernelkit.ops.gemm import matmul as mm
    return mm, stub_sm90(monkeypatch)


def test_the_epilogue_and_residual_reach_every_launch(stubbed):
    mm, launched = stubbed
    x, w = torch.empty(300, 520, dtype=BF16), torch.empty(257, 520, dtype=BF16)
    res = torch.empty(300, 264, dtype=BF16)[:, 2:259]  # row stride 264
    out = torch.empty(300, 257, dtype=BF16)
    mm._matmul_into(x, w.t(), None, out, False, "ws", None, res, 3)
    name, args = launched[-1]
    # the Hopper kernels end with (res, ldr, ws, tickets); 300 rows fill the SMs: no split, no workspace
    assert name == "kk::mm_ws<__nv_bfloat16, 128, 7, true, true, 3>" and args[-4:] == (res.data_ptr(), 264, 0, 0)
    mm._matmul_into(x, w.t(), None, out, False, "tma_wgmma", None, None, 2)
    name, args = launched[-1]
    assert name == "kk::mm_tma_wgmma<__nv_bfloat16, 128, 7, true, true, 2>" and args[-4:] == (0, 0, 0, 0)
    mm._matmul_into(x, w.t(), None, out, False, None, None, None, 0)  # best on sm_90 (no K split), no epilogue
    assert launched[-1][0] == "kk::mm_persistent<__nv_bfloat16, 128, 5, true, true>"
    mm._matmul_into(x, w.t(), None, out, False, "persistent", None, res, 3)
    name, args = launched[-1]
    assert name == "kk::mm_persistent<__nv_bfloat16, 128, 5, true, true, 3>" and args[-4:] == (res.data_ptr(), 264, 0, 0)
    mm._matmul_into(x, w.t(), None, out, False, "mma", None, res, IDENTITY)
    name, args = launched[-1]
    assert name.startswith("kk::mm_mma_pipe<kk::MmaBF16,") and name.endswith(", true, true, 1>")
    assert args[-2:] == (res.data_ptr(), 264)
    xf, wf = torch.empty(300, 520), torch.empty(257, 520)
    mm._matmul_into(xf, wf.t(), None, torch.empty(300, 257), False, "naive", None, None, 4)
    assert launched[-1][0] == "kk::mm_naive<float, 4>"
    odd = torch.empty(64, 4093, dtype=BF16)  # the TMA cannot read it: mma, the epilogue kept
    mm._matmul_into(odd, torch.empty(4093, 64, dtype=BF16), None, torch.empty(64, 64, dtype=BF16), False, "ws",
                    None, None, 3)
    assert "mm_mma<" in launched[-1][0] and launched[-1][0].endswith(", 3>")


def test_fused_hopper_tile_needs_room_for_fp32():
    WgmmaTile(256, 3).check("linear")  # a 16-bit C tile fits in 3 stages of 48 KB
    with pytest.raises(ValueError, match="C tile in fp32 in the ring"):
        WgmmaTile(256, 2).check("linear", staged_bytes=4)
    for bn in hop.WIDTHS:  # the rule's stages hold the fp32 tile
        WgmmaTile(bn, hop.stages_for(bn, hop.SM90_SHARED)).check("linear", staged_bytes=4)


def _builds(kernels, arch):
    """{name: (opcodes, local bytes)} of kernels (source, name) compiled for arch, one build a source."""
    from kernelkit.analyze.resources import resource_usage
    from kernelkit.analyze.sass import kernel_census
    from kernelkit.runtime import compile_source
    by = {}
    for src, name in kernels:
        by.setdefault(src, []).append(name)
    out = {}
    for src, names in by.items():
        b = compile_source(src, names, arch)
        cen, res = kernel_census(b.cubin), resource_usage(b.cubin)
        for n in names:
            out[n] = (cen[b.mangled(n)].opcodes, res[b.mangled(n)].local)
    return out


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_best_rungs_fused_no_spills_and_16_byte_residual_reads(arch):
    """mma_pipe fp16 / bf16 / tf32 (every tile, linear's layout and an n-major B) and, on sm_90a, the Hopper
    rungs (both widths), for every fused epilogue: no local memory; the residual's 16-byte loads
    (LDG.E.128) appear only in the fused forms."""
    pytest.importorskip("cuda.core")
    ks = []
    for dt in (F16, BF16, F32):
        for t in _ladder.PIPE_TILES:
            for a_k, b_k in ((True, True), (True, False)):
                ks.append(_ladder.pipe_kernel(dt, t, a_k, b_k))
    plain = _builds([(k.source, k.name) for k in ks], arch)
    fused = _builds([(k.source, _ladder.with_epilogue(k.name, e)) for k in ks for e in EPIS], arch)
    if arch == "sm_90":
        hk = [k for r in hop.RUNGS for dt in (F16, BF16) for k in hop.hopper_kernels(r, dt)
              if k.name.endswith("true, true>")]
        plain.update(_builds([(k.source, k.name) for k in hk], "sm_90a"))
        fused.update(_builds([(k.source, _ladder.with_epilogue(k.name, e)) for k in hk for e in EPIS], "sm_90a"))
        for k in hk:  # GELU's erf form without a residual: the fitted erfc's reciprocal a value (gelu_fast.cuh)
            gelu, base = fused[_ladder.with_epilogue(k.name, 3)][0], plain[k.name][0]
            assert gelu.get("MUFU.RCP", 0) >= base.get("MUFU.RCP", 0) + 32, k.name
    for name, (ops, local) in fused.items():
        assert local == 0 and not any(o.startswith(("LDL", "STL")) for o in ops), name
        base = plain[name.rsplit(",", 1)[0] + ">"][0]
        assert ops.get("LDG.E.128", 0) > base.get("LDG.E.128", 0), name


def test_every_rung_compiles_every_fused_form():
    """Each kernel of each linear rung (float32, tf32, float16, bfloat16, float64) with the erf GELU (sm_90)
    and the tanh GELU (sm_80) epilogues (sm_90a for the Hopper rungs): the template argument threads through."""
    pytest.importorskip("cuda.core")
    op = kernelkit.get_op("linear")
    by_arch = {}
    for v in op.variants:
        if v.unavailable():
            continue
        for dt in v.dtypes:
            for k in v.kernels(dt, allow_tf32=True):
                for arch in ("sm_80", "sm_90"):
                    if not (k.min_sm and int(arch[3:]) < k.min_sm):
                        by_arch.setdefault(arch + k.arch_suffix, set()).add((k.source, k.name))
    for arch, ks in by_arch.items():
        for e in (3,) if arch != "sm_80" else (4,):
            built = _builds(sorted((s, _ladder.with_epilogue(n, e)) for s, n in ks), arch)
            assert len(built) == len(ks)
