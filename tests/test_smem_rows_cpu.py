"""The shared-memory-resident row configurations (norm_smem, softmax_smem), without a GPU: each fits an
SM's shared memory, holds a whole slice plus a chunk of the next, copies whole 16-byte vectors, and the
tables pick what they claim; the kernels show their bulk copies and 16-byte stores in the sm_90 SASS."""
import importlib

import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction._rows import SMEM_ROWS_MAX_SHARED, smem_rows_capacity, smem_rows_shared  # noqa: E402

norm = importlib.import_module("kernelkit.ops.reduction.norm")
softmax = importlib.import_module("kernelkit.ops.reduction.softmax")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@pytest.mark.parametrize("mod", [norm, softmax], ids=["norm", "softmax"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_configuration_fits_and_holds_a_64k_row(mod, dtype):
    for cfg in mod.smem_configs(dtype):
        block, per, chunks, stages, cluster = cfg
        assert stages > chunks, cfg  # a whole slice resident and at least one chunk of the next in flight
        assert smem_rows_shared(cfg) == stages * block * per * 16
        assert smem_rows_shared(cfg) <= SMEM_ROWS_MAX_SHARED, cfg
        assert block % 32 == 0 and block <= 1024 and cluster in (1, 2, 4, 8)
        assert smem_rows_capacity(dtype, cfg) >= 32768, cfg


def test_norm_tables_pick_by_op_and_length():
    for dtype, n in ((torch.float32, 4), (torch.float16, 8), (torch.bfloat16, 8)):
        for op, rms in (("rms_norm", True), ("layer_norm", False)):
            table = norm.SMEM[op][n]
            want = table.get(65536)
            assert norm._smem_for(dtype, 65536, rms) == want
            assert norm._smem_for(dtype, 40000, rms) == want  # the smallest configuration holding it
            assert norm._smem_for(dtype, norm.SMEM_FROM, rms) is None  # not longer than SMEM_FROM
            assert norm._smem_for(dtype, 65537, rms) is None  # longer than any: bulk or welford
            if want is not None:
                assert smem_rows_capacity(dtype, want) == 65536
    assert softmax._smem_for(torch.float16, 65536) is None  # measured slower than softmax_rows


@pytest.mark.parametrize("op", ["rms_norm", "softmax"])
def test_smem_kernels_claim_bulk_copies_and_wide_stores(op):
    """Every norm_smem / softmax_smem kernel on sm_90: UBLKCP in its SASS, 128-bit stores, no spills;
    a report without the bulk copy fails its claim."""
    pytest.importorskip("cuda.core")
    import dataclasses

    from kernelkit.analyze.ladder_inspect import analyze_op

    from kernelkit.ops.reduction._rows import smem_rows_name

    mod, kernel = (norm, "norm_smem") if op == "rms_norm" else (softmax, "softmax_smem")
    smem = [r for r in analyze_op(op, "sm_90") if r.variant == "fast" and "_smem<" in r.kernel.name]
    assert {r.kernel.name for r in smem} == {smem_rows_name(kernel, d, c) for d in DTYPES for c in mod.smem_configs(d)}
    for r in smem:
        assert not r.claim_failures(), (r.kernel.name, r.claim_failures())
        assert any(o.startswith("UBLKCP") for o in r.opcodes) and max(r.store_widths) == 128 and r.local_ops == 0
    assert dataclasses.replace(smem[0], opcodes=frozenset({"FADD"})).claim_failures()
