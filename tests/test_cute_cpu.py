"""The CuTe rungs without a GPU: finding their header set, listing them as unavailable where it is missing,
and (where it is here: the `cute` extra) what their kernels compile to for sm_80 and sm_90."""
import dataclasses
import re
from pathlib import Path

import pytest
import torch

import kernelkit
from kernelkit.runtime import HeadersNotFoundError, cute_headers

CSRC = Path(kernelkit.__file__).parent / "csrc"
CUTE_RUNGS = (("gelu", "cute"), ("transpose", "cute"), ("matmul", "cute"), ("linear", "cute"))
MISSING = cute_headers.missing()
needs_headers = pytest.mark.skipif(MISSING is not None, reason=f"CuTe headers missing: {MISSING}")


# ------------------------------------------------------------------ finding the headers

def _cccl(d: Path, version: int) -> Path:
    (d / "cuda/std/__cccl").mkdir(parents=True)
    (d / "cuda/std/__cccl/version.h").write_text(f"#pragma once\n#define CCCL_VERSION {version}\n")
    return d


def _cutlass(d: Path) -> Path:
    (d / "cute").mkdir(parents=True)
    (d / "cute/tensor.hpp").write_text("")
    (d / "cutlass").mkdir()
    (d / "cutlass/version.h").write_text("#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n")
    return d


def test_header_set_takes_a_tested_cccl_and_puts_it_first(tmp_path):
    newer = _cccl(tmp_path / "toolkit/include/cccl", 3003000)  # a CCCL CuTe 4.2 does not compile with
    wheel = _cccl(tmp_path / "wheel/nvidia/cu13/include/cccl", 3000001)
    cut = _cutlass(tmp_path / "cutlass/include")
    found = cute_headers.find_header_set([str(tmp_path / "toolkit/include")], [("toolkit", newer), ("wheel", wheel)],
                                         [("cutlass wheel", cut)])
    assert isinstance(found, cute_headers.HeaderSet)
    assert found.cccl == wheel and found.cccl_version == (3, 0, 1) and found.cutlass_version == (4, 2, 0)
    # CCCL and its parent (CUTLASS includes <cccl/cuda/std/...>) before the CUDA folder, whose cccl/ is the newer
    assert found.include_path() == [str(wheel), str(wheel.parent), str(cut), str(tmp_path / "toolkit/include")]


def test_missing_pieces_give_one_reason_naming_the_extra(tmp_path):
    newer = _cccl(tmp_path / "toolkit/include/cccl", 3003000)
    why = cute_headers.find_header_set([str(tmp_path)], [("toolkit", newer), ("wheel", None)],
                                       [("the nvidia-cutlass wheel", None)])
    assert isinstance(why, str) and "\n" not in why
    assert 'kernelkit[cute]' in why and "no CUTLASS headers" in why and "nothing found" in why
    assert "CCCL 3.3.0 at" in why and "no CCCL 3.0" in why  # the untested release is named, not taken
    assert "CUDA headers" not in why
    assert "no CUDA headers" in cute_headers.find_header_set([], [], [])


def test_cute_sources_are_named_so():
    assert cute_headers.is_cute_source("elementwise/gelu_cute.cu")
    assert cute_headers.is_cute_source("/abs/path/mine_cute.cu")
    assert not cute_headers.is_cute_source("elementwise/gelu.cu")
    assert cute_headers.unavailable("elementwise/gelu.cu") is None


# ------------------------------------------------------------------ without the headers

@pytest.fixture
def no_headers(monkeypatch):
    """The CuTe header set missing, and every ladder record's cached answer dropped before and after."""
    def forget():
        for name in kernelkit.ops():
            for v in kernelkit.ladder(name):
                v.__dict__.pop("_unavailable", None)  # Variant.unavailable's cache
    forget()
    monkeypatch.setattr(cute_headers, "header_set", lambda: "the CuTe rungs need the test's headers")
    yield
    monkeypatch.undo()
    forget()


def test_rungs_are_listed_unavailable_with_the_reason(no_headers):
    for op, rung in CUTE_RUNGS:
        for v in kernelkit.ladder(op):
            assert (v.unavailable() == "the CuTe rungs need the test's headers") == (v.name == rung), (op, v.name)


def test_a_named_rung_raises_and_the_default_does_not(no_headers):
    from kernelkit.ops._shared.checks import pick_variant

    for op in ("gelu", "transpose"):
        with pytest.raises(HeadersNotFoundError, match=f"{op}: variant 'cute' cannot be built here: the CuTe"):
            pick_variant(kernelkit.get_op(op), "cute", torch.float16)
        assert pick_variant(kernelkit.get_op(op), None, torch.float16).name != "cute"
    with pytest.raises(HeadersNotFoundError, match="test's headers"):  # any path that compiles one says why
        kernelkit.runtime.compile_source("elementwise/gelu_cute.cu", ("kk::gelu_cute<float, kk::GeluTanh, true>",),
                                         "sm_90")


def test_inspect_and_warmup_leave_them_out(no_headers):
    pytest.importorskip("cuda.core")
    from kernelkit.analyze import tools
    from kernelkit.analyze.ladder_inspect import inspect_op
    from kernelkit.warmup import planned_builds

    assert not [b for b in planned_builds("sm_90", ["gelu", "transpose", "matmul"]) if "_cute" in b.source]
    try:
        tools.find_tool("cuobjdump")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no cuobjdump: {exc}")
    rows = inspect_op("gelu", "sm_90", dtypes=[torch.float16], variants=["fast", "cute"])
    cute = [r["claims"] for r in rows if r["used_by"] == "cute"]
    assert cute == ["unavailable: the CuTe rungs need the test's headers"]
    assert any(r["used_by"] == "fast" and r["claims"] == "ok" for r in rows)


# ------------------------------------------------------------------ what the kernels compile to

def _reports(op: str, arch: str, rungs):
    from kernelkit.analyze.ladder_inspect import analyze_op

    return analyze_op(op, arch, variants=rungs)


@needs_headers
@pytest.mark.parametrize("arch", ("sm_80", "sm_90"))
def test_gelu_cute_moves_what_the_fast_rung_moves(arch):
    """The CuTe rung's kernels show the fast rung's global accesses: 128-bit both ways where the input is
    aligned like the output, element loads where not; no local memory."""
    rows = _reports("gelu", arch, ["fast", "cute"])
    by_name = {r.kernel.name: r for r in rows}
    pairs = 0
    for r in rows:
        if r.variant != "cute":
            continue
        fast = by_name[r.kernel.name.replace("gelu_cute", "unary_fast")]
        assert r.load_widths == fast.load_widths and r.store_widths == fast.store_widths, r.kernel.name
        assert r.local_ops == 0 and r.spill_bytes == 0
        assert max(r.load_widths) == (128 if r.kernel.name.endswith("true>") else torch.finfo(r.dtype).bits)
        pairs += 1
    assert pairs == 12  # 3 dtypes x 2 forms x (aligned, not)


def _swizzles() -> dict[int, tuple[int, int, int]]:
    text = (CSRC / "rearrangement/transpose_cute.cu").read_text()
    found = re.findall(r"TileSwizzle<(\d)>\s*\{\s*using type = cute::Swizzle<(\d), (\d), (\d)>", text)
    return {int(e): (int(b), int(m), int(s)) for e, b, m, s in found}


def _swizzle(offset: int, b: int, m: int, s: int) -> int:
    """CuTe's Swizzle<B, M, S>: bits [M + S, M + S + B) XORed into bits [M, M + B)."""
    return offset ^ ((offset >> s) & (((1 << b) - 1) << m))


def _wavefronts(addresses: list[int], width: int) -> int:
    """Shared-memory wavefronts one warp access of ``width`` bytes a lane takes: per 128-byte phase of lanes,
    the most distinct 4-byte words any bank is asked for."""
    lanes_per_phase = max(1, 128 // max(width, 4))
    total = 0
    for p in range(0, 32, lanes_per_phase):
        banks: dict[int, set] = {}
        for a in addresses[p:p + lanes_per_phase]:
            for w in range(a // 4, (a + width - 1) // 4 + 1):
                banks.setdefault(w % 32, set()).add(w)
        total += max(len(ws) for ws in banks.values())
    return total


def test_transpose_tile_swizzle_is_conflict_free_both_ways():
    """The swizzles in transpose_cute.cu under the bank model: a warp's tile row (load side) and tile column
    (store side) each take the fewest wavefronts their bytes need, where the unswizzled column takes 32."""
    swz = _swizzles()
    assert sorted(swz) == [1, 2, 4, 8]
    for e, (b, m, s) in swz.items():
        need = max(1, 32 * e // 128)
        for fixed in range(32):
            row = [_swizzle(fixed * 32 + c, b, m, s) * e for c in range(32)]
            col = [_swizzle(r * 32 + fixed, b, m, s) * e for r in range(32)]
            assert sorted(a // e for a in row) == [fixed * 32 + c for c in range(32)]  # a permutation of the row
            assert _wavefronts(row, e) == need and _wavefronts(col, e) == need, (e, fixed)
        assert _wavefronts([r * 32 * e for r in range(32)], e) > need  # without it the column conflicts


@needs_headers
@pytest.mark.parametrize("arch", ("sm_80", "sm_90"))
def test_transpose_cute_tile_is_unpadded_shared_memory(arch):
    for r in _reports("transpose", arch, ["cute"]):
        if "transpose_cute" in r.kernel.name:
            e = r.dtype.itemsize if r.kernel.name.endswith(f"{_carrier(r.dtype.itemsize)}>") else None
            assert r.shared in (32 * 32 * 1, 32 * 32 * 2, 32 * 32 * 4, 32 * 32 * 8) and r.local_ops == 0
            assert any(op.startswith("LDS") for op in r.opcodes) and any(op.startswith("STS") for op in r.opcodes)
            if e:
                assert r.shared == 32 * 32 * e and max(r.load_widths) == max(r.store_widths) == 8 * e


def _carrier(e: int) -> str:
    return {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[e]


@needs_headers
@pytest.mark.parametrize("arch", ("sm_80", "sm_90"))
def test_matmul_cute_issues_the_mma_rungs_tensor_core_work(arch):
    """As many HMMA a K stage as mm_mma at the same tile, ldmatrix (the .trans form for m/n-major
    operands), cp.async, and no local memory."""
    rows = _reports("matmul", arch, ["mma", "cute"])
    mma = {(r.dtype, r.kernel.name.split(", ")[-2:] == ["true", "true>"]): r for r in rows
           if r.variant == "mma" and ", 128, 128," in r.kernel.name}
    cute = [r for r in rows if r.variant == "cute"]
    assert len(cute) == 8
    for r in cute:
        a_k, b_k = (x.startswith("true") for x in r.kernel.name[:-1].split(", ")[-2:])
        assert sum(r.tensor_core_ops.values()) == sum(mma[(r.dtype, True)].tensor_core_ops.values()) == 32
        ldsm = {op for op in r.opcodes if op.startswith("LDSM")}
        assert any(".MT88" in op for op in ldsm) == (not a_k or not b_k), (r.kernel.name, ldsm)
        assert any(".MT88" not in op for op in ldsm) == (a_k or b_k), (r.kernel.name, ldsm)
        assert any(op.startswith("LDGSTS") for op in r.opcodes) and r.local_ops == 0 and r.spill_bytes == 0


def test_the_records_claim_what_the_issue_asks():
    for dt in (torch.float16, torch.bfloat16):
        for k in kernelkit.get_op("matmul").variant("cute").kernels(dt):
            assert k.tensor_core == "HMMA" and {"LDSM", "LDGSTS"} <= set(k.sass) and k.source == "gemm/mma_cute.cu"
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        aligned, other = kernelkit.get_op("gelu").variant("cute").kernels(dt)
        assert aligned.load_bits == aligned.store_bits == other.store_bits == 128
        assert other.load_bits == torch.finfo(dt).bits
    assert [v.name for v in kernelkit.ladder("gelu")][-2:] == ["cute", "fast"]
    v = kernelkit.get_op("transpose").variant("cute")
    assert {k.source for k in v.kernels(torch.float32)} == {"rearrangement/transpose_cute.cu",
                                                            "rearrangement/transpose.cu"}  # gathers: the shared ones
    assert dataclasses.replace(v).unavailable() == v.unavailable()


def test_matmul_cute_launch_rule():
    """One tile (the mma rung's large one) for every problem, the layouts' own instantiation, no config=."""
    from kernelkit.ops.gemm import MatmulTile
    from kernelkit.ops.gemm import _ladder as rules

    got = rules.resolve("cute", torch.bfloat16, False, True, False, 300, 130, 70000, 0, None, "m")
    assert got.kernel.name == "kk::mm_cute<kk::CuteBF16, true, false>"
    assert got.grid == (3 * 2, 1, rules.GRID_Z) and got.threads == 256 and got.shmem == 64 * 1024
    with pytest.raises(ValueError, match="config= applies"):
        rules.resolve("cute", torch.float16, False, True, True, 64, 64, 1, 0, MatmulTile(64, 64, 32, 32), "m")
