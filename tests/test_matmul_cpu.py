"""The matmul family without a GPU: operand layouts, result shapes, the launch rules one by one, the
tile checks, and the SASS each rung's kernels show (LDS.128, LDSM with ldmatrix.trans, LDGSTS)."""
import pytest
import torch

from kernelkit.ops.gemm import _ladder as rules
from kernelkit.ops.gemm._problem import as3, flags, side_a, side_b
from kernelkit.ops.gemm.matmul import result_shape
from kernelkit.ops.gemm import MatmulTile


H100_SMEM, A100_SMEM = (233472, 232448), (167936, 166912)


@pytest.fixture
def sms(monkeypatch):
    """A device of `n` SMs (and an H100's shared memory unless set) for the rules, set through the
    returned function."""
    state = {"n": 132, "smem": H100_SMEM, "cc": 90}
    monkeypatch.setattr(rules, "sm_count", lambda dev: state["n"])
    monkeypatch.setattr(rules, "smem_limits", lambda dev: state["smem"])
    monkeypatch.setattr(rules, "compute_capability", lambda dev: state["cc"])

    def set_device(n, smem=H100_SMEM, cc=90):
        state.update(n=n, smem=smem, cc=cc)
    return set_device


def test_operand_layouts():
    a = torch.randn(5, 7)
    sa = side_a(as3(a))
    assert (sa.kmaj, sa.ld, sa.bstride) == (True, 7, 0)
    sa = side_a(as3(torch.randn(7, 5).t()))  # a.t(): m-major, no copy
    assert (sa.kmaj, sa.ld) == (False, 5) and sa.t.data_ptr() != 0
    sb = side_b(as3(torch.randn(9, 7).t()))  # w.t(): k-major B
    assert (sb.kmaj, sb.ld) == (True, 7)
    sb = side_b(as3(torch.randn(7, 9)))  # row-major B: n-major
    assert (sb.kmaj, sb.ld) == (False, 9)
    assert flags(side_a(as3(a)), side_b(as3(torch.randn(7, 9)))) & 3 == 1
    strided = torch.randn(5, 14)[:, ::2]  # both strides > 1: copied to a k-major tensor
    s = side_a(as3(strided))
    assert s.kmaj and s.t.is_contiguous()
    b3 = torch.randn(3, 8, 16)
    assert side_b(b3).bstride == 128


def test_operands_the_kernels_read_are_not_copied():
    """A transposed view (w.t(), a.t()) is read as it lies: no aten op but views runs while its layout
    is worked out (a .contiguous() evaluated and dropped was a whole GPU transpose a call, 40% of a
    4096^3 bf16 matmul with B = w.t()); a view neither layout reads is copied once."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    w, a, wb = torch.randn(9, 7), torch.randn(7, 5), torch.randn(3, 9, 7)
    for make, side in ((lambda: as3(w.t()), side_b), (lambda: as3(a.t()), side_a), (lambda: as3(w), side_a),
                       (lambda: as3(a), side_b), (lambda: wb.transpose(1, 2), side_b)):
        with Ops() as ops:
            side(make())
        assert not [f for f in ops.seen if "clone" in f or "copy" in f], ops.seen
    with Ops() as ops:
        s = side_a(as3(torch.randn(5, 14)[:, ::2]))
    assert s.t.is_contiguous() and any("clone" in f or "copy" in f for f in ops.seen)


def test_vector_loads_need_alignment_and_whole_vector_strides():
    base = torch.randn(64 * 64 + 1)
    assert side_a(as3(base[:4096].view(64, 64))).vec
    assert not side_a(as3(base[1:].view(64, 64))).vec  # 4 bytes past a 16-byte boundary
    assert not side_a(as3(torch.randn(64, 66)[:, :63])).vec  # ld 66: rows start off the vector grid


def test_result_shapes_follow_torch_matmul():
    e = torch.empty
    assert result_shape("matmul", e(3, 4, 5), e(5, 6)) == (3, 4, 6)
    assert result_shape("matmul", e(1, 4, 5), e(3, 5, 6)) == (3, 4, 6)
    assert result_shape("matmul", e(5), e(5, 6)) == (6,)
    assert result_shape("matmul", e(4, 5), e(5)) == (4,)
    assert result_shape("matmul", e(5), e(5)) == ()
    with pytest.raises(ValueError, match="last dim"):
        result_shape("matmul", e(4, 5), e(4, 5))
    with pytest.raises(ValueError, match="broadcast"):
        result_shape("matmul", e(2, 4, 5), e(3, 5, 6))
    with pytest.raises(ValueError, match="1 to 3 dims"):
        result_shape("matmul", e(2, 2, 4, 5), e(5, 6))


def test_rule_large_tile_only_where_every_sm_gets_one(sms):
    sms(132)
    big = rules.resolve("mma", torch.float16, False, True, True, 4096, 4096, 1, 0, None, "matmul")
    assert "128, 128" in big.kernel.name and big.grid == (32 * 32, 1, 1) and big.shmem == 4 * 256 * 64
    small = rules.resolve("mma", torch.float16, False, True, True, 16, 4096, 1, 0, None, "matmul")
    assert "64, 64" in small.kernel.name and small.grid == (1 * 64, 1, 1)
    sms(16)  # a small GPU: 32 large tiles already cover it
    assert "128, 128" in rules.resolve("mma", torch.float16, False, True, True, 128, 4096, 1, 0, None, "m").kernel.name
    sms(132)
    batched = rules.resolve("simt_best", torch.float32, False, True, True, 512, 512, 16, 0, None, "m")
    assert "128, 128" in batched.kernel.name and batched.grid == (4, 4, 16)  # 256 tiles with the batch
    assert rules.resolve("naive", torch.float32, False, True, True, 70000, 5, 70000, 0, None, "m").grid[2] == 65535


def test_simt_best_takes_the_cp_async_kernel_where_its_tiles_cover_every_sm(sms):
    sms(132)
    res = lambda rung, m, n, a_k=True, b_k=False, batch=1: rules.resolve(  # noqa: E731
        rung, torch.float32, False, a_k, b_k, m, n, batch, 0, None, "m")
    big = res("simt_best", 4096, 4096)
    assert big.kernel.name.startswith("kk::mm_async<128, 256") and big.grid == (32, 16, 1) and big.threads == 256
    assert big.shmem == 4 * 4 * (16 * 132 + 16 * 256)  # 4 stages: A staged as [k][m] rows of 132, B as [k][n]
    assert res("simt_best", 4096, 4096, False, True).kernel.name.endswith("false, true, 1, false>")  # m-major A: copied
    assert res("simt_best", 4096, 4096, True, True).kernel.name.startswith("kk::mm_warp")  # both k-major
    assert res("simt_best", 2048, 2048).kernel.name.startswith("kk::mm_warp")  # 128 tiles < 132 SMs
    assert res("simt_best", 512, 512, batch=16).kernel.name.startswith("kk::mm_warp")
    # the simt_async rung copies a k-major A as it lies ([m][k] rows of BK + 4) at every shape
    assert res("simt_async", 64, 64).kernel.name == "kk::mm_async<128, 256, 16, 64, 64, 4, true, false, 1, false>"
    assert res("simt_async", 64, 64).shmem == 4 * 4 * (128 * 20 + 16 * 256)


def test_rule_best_by_dtype(sms):
    r = lambda dt, tf32=False: rules.resolve("best", dt, tf32, True, False, 4096, 4096, 1, 0, None, "m").kernel.name  # noqa: E731
    assert r(torch.float32) == "kk::mm_async<128, 256, 16, 64, 64, 4, true, false, 1, true>"  # A k-major: staged
    assert r(torch.float32, True).startswith("kk::mm_mma<kk::MmaTF32")
    assert r(torch.float16).startswith("kk::mm_mma<kk::MmaF16") and r(torch.float16).endswith("true, false>")
    assert r(torch.int8).endswith("true, true>")  # int8 and tf32 stage k-major whatever the layout
    assert r(torch.float64).startswith("kk::mm_wmma_smem<kk::WmmaF64")  # cp=False: wmma_smem's element loads


def test_config_is_checked_and_only_on_tiled_rungs(sms):
    with pytest.raises(ValueError, match="config"):
        rules.resolve("naive", torch.float32, False, True, True, 64, 64, 1, 0, MatmulTile(64, 64, 32, 32), "m")
    with pytest.raises(ValueError, match="multiples of the warp"):
        MatmulTile(100, 64, 32, 32).check(True, "m")
    with pytest.raises(ValueError, match="threads"):
        MatmulTile(512, 512, 32, 32).check(False, "m")
    with pytest.raises(ValueError, match="multiples of 16"):
        MatmulTile(96, 96, 48, 24).check(True, "m")
    MatmulTile(64, 128, 32, 64).check(True, "m")
    MatmulTile(64, 128, 32, 64).check(False, "m")
    got = rules.resolve("mma", torch.bfloat16, False, False, True, 64, 64, 1, 0, MatmulTile(64, 128, 32, 64), "m")
    assert got.kernel.name == "kk::mm_mma<kk::MmaBF16, 64, 128, 32, 64, 4, false, true>" and got.threads == 128


def test_float32_tensor_core_rungs_need_tf32():
    from kernelkit import ladder
    for v in ladder("matmul"):
        if v.name in ("wmma_global", "wmma_smem", "mma"):
            for tf32 in (False, True):  # the rung's float32 kernels are tf32 ones; allow_tf32 gates the call
                assert v.kernels(torch.float32, allow_tf32=tf32)
                assert all("TF32" in k.name for k in v.kernels(torch.float32, allow_tf32=tf32))
    best = next(v for v in ladder("matmul") if v.name == "best")
    assert all(k.name.startswith(("kk::mm_warp", "kk::mm_async"))
               for k in best.kernels(torch.float32, allow_tf32=False))
    assert all("TF32" in k.name for k in best.kernels(torch.float32, allow_tf32=True))


def test_mma_sass_shows_ldmatrix_trans_for_n_major_16_bit():
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.ladder_inspect import analyze_op
    rows = analyze_op("matmul", "sm_90", (torch.float16,), variants=("mma",))
    for r in rows:
        trans = any(op.startswith("LDSM.16.MT88") for op in r.opcodes)
        b_k_major = r.kernel.name.endswith("true>")
        a_k_major = ", true, " in r.kernel.name[-13:]
        assert trans == (not (a_k_major and b_k_major)), r.kernel.name
        assert r.spill_bytes == 0 and r.local_ops == 0


def test_copy_only_rule_tiles_stages_and_layouts(sms):
    """Aligned operands (cp=True) take the copy-only kernel: the largest tile that still covers every SM,
    as many 128-byte stages as shared memory holds for 8 warps an SM (4 on an H100 at 128x256, 3 on an
    A100), tf32 with an n-major B, int8 only k-major; the rest the general kernel."""
    r = lambda dt, m, n, a_k=True, b_k=False, cp=True, batch=1: rules.resolve(  # noqa: E731
        "mma", dt, dt == torch.float32, a_k, b_k, m, n, batch, 0, None, "m", cp)
    big = r(torch.float16, 4096, 4096)
    assert big.kernel.name == "kk::mm_mma_pipe<kk::MmaF16, 128, 256, 64, 64, 4, true, false>"
    assert big.grid == (32 * 16, 1, 1) and big.threads == 256 and big.shmem == 4 * 384 * 128
    assert "128, 128, 64, 64, 3" in r(torch.bfloat16, 2048, 2048).kernel.name  # 128 tiles of 128x256 < 132
    assert r(torch.bfloat16, 2048, 2048).shmem == 3 * 256 * 128  # two blocks of 4 warps share the SM
    assert "64, 64, 32, 32" in r(torch.float16, 16, 4096).kernel.name
    assert "MmaTF32, 128, 256" in r(torch.float32, 4096, 4096).kernel.name  # tf32, B n-major: copy-only
    assert r(torch.int8, 4096, 4096, True, True).kernel.name.startswith("kk::mm_mma_pipe<kk::MmaS8")
    assert r(torch.int8, 4096, 4096, True, False).kernel.name.startswith("kk::mm_mma<")  # int8 n-major B
    assert r(torch.float16, 4096, 4096, cp=False).kernel.name.startswith("kk::mm_mma<")  # misaligned
    sms(108, A100_SMEM)
    assert "128, 256, 64, 64, 3" in r(torch.float16, 4096, 4096).kernel.name
    with pytest.raises(ValueError, match="copy-only"):  # an n-major B 512 wide at 128 threads: 2 rows a chunk column
        rules.resolve("mma", torch.float16, False, True, False, 4096, 4096, 1, 0, MatmulTile(64, 512, 32, 256), "m", True)


def test_copy_only_listed_kernels_fit_the_h100():
    """Every copy-only kernel the mma rung lists passes its own check and fits an H100's shared memory."""
    for dt in (torch.float16, torch.bfloat16, torch.float32, torch.int8):
        for t in rules.PIPE_TILES:
            for a_k, b_k in rules.pipe_layouts(dt):
                rules.pipe_check(t, dt, a_k, b_k, "m")
                assert rules.pipe_kernel(dt, t, a_k, b_k).dyn_shared <= H100_SMEM[1]


def test_dmma_rule_needs_sm90_and_copyable_operands(sms):
    """fp64's best is dmma: the copy-only DMMA.16x8x16 kernel on sm_90 with aligned operands (two blocks of
    4 warps an SM, 4 stages), wmma_smem's kernel before sm_90 or for operands no copy can read."""
    r = lambda cp=True, a_k=True, b_k=False: rules.resolve(  # noqa: E731
        "best", torch.float64, False, a_k, b_k, 4096, 4096, 1, 0, None, "m", cp)
    got = r()
    assert got.kernel.name == "kk::mm_dmma_pipe<64, 64, 32, 32, 4, true, false>" and got.threads == 128
    assert got.grid == (64 * 64, 1, 1) and got.shmem == 4 * 128 * 128 and got.kernel.min_sm == 90
    assert r(a_k=False, b_k=True).kernel.name.endswith("false, true>")
    assert r(cp=False).kernel.name.startswith("kk::mm_wmma_smem<kk::WmmaF64")
    sms(108, A100_SMEM, cc=80)
    assert r().kernel.name.startswith("kk::mm_wmma_smem<kk::WmmaF64")


def test_bank_model_counts_conflicts_and_finds_the_kernels_free_of_them():
    """The static model replays the kernels' addresses: an unswizzled tile is 8-way conflicted on ldmatrix,
    the 16-bit swizzle on tf32's [k][n] B 2-way (1.5 with A's reads), 8-row XOR on the fp64 fragments 2-way;
    the swizzles the kernels use are conflict-free for every listed kernel."""
    from kernelkit.ops.gemm import _banks as banks
    plain = banks.Tile(8, lambda r: 0)
    assert banks._mma_reads(2, plain, plain, True, True, 64, 64, 4, False) == (1024, 128)
    tf32_a = banks._pipe_tile(4, 128, 128, True)
    assert banks._mma_reads(4, tf32_a, banks.Tile(64, lambda r: r & 7), True, False, 64, 64, 4, True) == (192, 128)
    by_row = banks.Tile(8, lambda r: r & 7)
    assert banks._dmma_reads(by_row, by_row, True, True, 32, 32) == (128, 64)
    seen = 0
    for rung, dtypes in (("mma", (torch.float16, torch.float32, torch.int8)), ("dmma", (torch.float64,))):
        for dt in dtypes:
            for k in rules.kernels_for(rung, dt, True):
                report = banks.bank_report(k.name)
                if report is not None:
                    seen += 1
                    assert report == "reads 1.00, cp.async 1.00", (k.name, report)
    assert seen == 37  # f16: 12 copy-only + 8 general; tf32: 6 + 2; int8: 3 + 2; fp64: 4
    assert banks.bank_report("kk::mm_warp<128, 128, 16, 64, 32, 256, 2>") is None


def test_inspect_rows_of_a_compute_bound_op_carry_census_and_banks():
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.ladder_inspect import inspect_op
    rows = inspect_op("matmul", "sm_90", (torch.float64,), variants=("dmma",))
    dm = [r for r in rows if r["kernel"].startswith("mm_dmma_pipe")]
    assert len(dm) == 4 and all(r["banks"] == "reads 1.00, cp.async 1.00" for r in dm)
    assert all("DMMA:" in r["census"] and "LDGSTS:" in r["census"] and r["claims"] == "ok" and r["spills"] == 0
               for r in dm)


def test_sub_byte_shapes_native_on_sm80_emulated_s4_on_sm90():
    """What the ladder's text says of the sub-byte types: NVRTC takes s4 and b1 mma on both archs; sm_80
    runs s4 as IMMA.16864.S4, sm_90 unpacks it to 8-bit IMMAs (about a hundred instructions a step); b1
    is BMMA on both."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.sass import kernel_census
    from kernelkit.runtime import compile_source
    for arch in ("sm_80", "sm_90"):
        b = compile_source("gemm/probes.cu", ["sub_s4", "sub_b1"], arch)
        cen = kernel_census(b.cubin)
        s4, b1 = cen[b.mangled("sub_s4")].opcodes, cen[b.mangled("sub_b1")].opcodes
        assert any(op.startswith("BMMA.88128") for op in b1), arch
        native = any(op.startswith("IMMA") and ".S4" in op for op in s4)
        assert native == (arch == "sm_80"), (arch, dict(s4))
        if arch == "sm_90":
            assert any(op.startswith("IMMA.16832.S8") for op in s4) and sum(s4.values()) > 60


def test_replay_capture_takes_only_launches_of_the_calls_own_operands():
    """A replay is kept only when the checked path's Hopper launch read the call's own tensors (not
    copies); the signature tells apart what the checks depend on (shape, strides, dtype, presence)."""
    from kernelkit.ops.gemm import _replay
    from kernelkit.runtime.launch import recording

    a, b = torch.empty(8, 16, dtype=torch.bfloat16), torch.empty(32, 16, dtype=torch.bfloat16)
    fake = _replay.TmaReplay(1, (1, 1, 1), 256, 0, 0, torch.bfloat16, (), (), (), None, "k",
                             (a.data_ptr(), b.data_ptr()))
    _replay.begin()
    assert _replay.capture(a, b, (8, 32)) is None  # nothing launched
    _replay.offer(fake)
    assert _replay.capture(a, b, (8, 32)) is fake and fake.out_shape == (8, 32)
    _replay.offer(fake)
    assert _replay.capture(a.clone(), b, (8, 32)) is None  # the launch read a copy of a
    assert _replay.capture(a, b, (8, 32)) is None  # taken once
    sig = _replay.signature
    assert sig(a, b.t(), None, params=(None,)) != sig(a, b.t().contiguous(), None, params=(None,))
    assert sig(a, b, None, params=(None,)) != sig(a.float(), b, None, params=(None,))
    assert sig(a, b, None, params=(None,)) != sig(a, b, torch.empty(32), params=(None,))
    assert sig(a, b, None, params=(None,)) == sig(a.clone(), b.clone(), None, params=(None,))
    with recording():
        assert not _replay.replays_possible()


def test_wrong_arguments_are_named_before_any_replay_lookup():
    """The replay lookup of plain calls runs before the checks, on well-typed arguments only: wrong ones
    still get the checks' own errors."""
    import kernelkit

    w = torch.empty(4, 8)
    with pytest.raises(TypeError, match="x"):
        kernelkit.linear([[1.0] * 8], w)
    with pytest.raises(ValueError, match="CUDA tensor|activation"):  # not "unhashable type: 'list'"
        kernelkit.linear(torch.empty(2, 8), w, activation=["gelu"])
    with pytest.raises(TypeError, match="a must be a torch.Tensor"):
        kernelkit.matmul("a", torch.empty(8, 2))
