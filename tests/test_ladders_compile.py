"""Every rung of every ladder compiles for sm_80 and sm_90 and its SASS shows what it claims."""
import pytest

pytest.importorskip("cuda.core")

import kernelkit  # noqa: E402
from kernelkit.analyze.ladder_inspect import analyze_op  # noqa: E402

ARCHS = ("sm_80", "sm_90")


@pytest.fixture(scope="module")
def reports():
    cache = {}

    def get(op, arch):
        if (op, arch) not in cache:
            cache[(op, arch)] = analyze_op(op, arch)
        return cache[(op, arch)]

    return get


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", kernelkit.ops())
def test_every_rung_compiles_and_matches_its_claims(op, arch, reports):
    rows = reports(op, arch)
    ladder = kernelkit.ladder(op)
    covered = {r.variant for r in rows} | {v.name for v in ladder if v.unavailable()}  # headers missing here
    assert covered == {v.name for v in ladder}, f"rungs without kernels: {set(v.name for v in ladder) - covered}"
    failures = [f"{r.variant}/{r.dtype}/{r.kernel.name}: {'; '.join(r.claim_failures())}"
                for r in rows if r.claim_failures()]
    assert not failures, "\n".join(failures)


def test_gelu_claims_are_specific():
    """The claims themselves: scalar fp32 rung 32-bit, float4 and fast 128-bit, pair rungs by width."""
    rows = {(r.variant, str(r.dtype), r.kernel.name): r for r in analyze_op("gelu", "sm_90")}
    by_variant = {}
    for (v, d, _n), r in rows.items():
        by_variant.setdefault((v, d), []).append(r)
    assert max(by_variant[("scalar", "torch.float32")][0].load_widths) == 32
    assert max(by_variant[("scalar", "torch.float16")][0].load_widths) == 16
    assert max(by_variant[("float2", "torch.float32")][0].load_widths) == 64
    assert max(by_variant[("float4", "torch.float32")][0].load_widths) == 128
    assert max(by_variant[("half2_x4", "torch.float16")][0].load_widths) == 128
    assert max(by_variant[("bf16x2_x2", "torch.bfloat16")][0].load_widths) == 64
    for r in by_variant[("fast", "torch.bfloat16")]:
        assert max(r.store_widths) == 128 and r.local_ops == 0


def test_a_wrong_claim_is_caught():
    """The check itself can fail: a float4 rung claimed as scalar must be reported."""
    import dataclasses

    r = next(r for r in analyze_op("gelu", "sm_90") if r.variant == "float4")
    lying = dataclasses.replace(r, kernel=dataclasses.replace(r.kernel, load_bits=32))
    assert lying.claim_failures()
    spilled = dataclasses.replace(r, local_ops=3)
    assert spilled.claim_failures()


def test_bulk_copy_rung_claims_its_instructions(reports):
    """norm_bulk's kernels show the bulk copy (UBLKCP) on sm_90, a report without it fails the claim,
    and sm_90-only kernels are not held to claims on sm_80 (they are never launched there)."""
    import dataclasses

    bulk = [r for r in reports("layer_norm", "sm_90") if "norm_bulk" in r.kernel.name]
    assert bulk and all(r.kernel.min_sm == 90 and "UBLKCP" in r.kernel.sass for r in bulk)
    assert all(any(op.startswith("UBLKCP") for op in r.opcodes) for r in bulk)
    assert dataclasses.replace(bulk[0], opcodes=frozenset({"FADD"})).claim_failures()
    assert not [r for r in reports("layer_norm", "sm_80") if r.kernel.min_sm > 80]
    # the handed-out rings (norm_bulk_dyn) also claim, and show, the atomic that hands their rows out
    dyn = [r for r in bulk if "norm_bulk_dyn" in r.kernel.name]
    assert dyn and all("ATOMG" in r.kernel.sass and any(op.startswith("ATOMG") for op in r.opcodes) for r in dyn)
    assert not any(op.startswith("ATOMG") for r in bulk if r not in dyn for op in r.opcodes)

