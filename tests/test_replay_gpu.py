"""Plain eager linear and matmul calls replayed without their checks (ops/gemm/_replay.py), on an sm_90
GPU: a call of a signature seen before replays the first call's Hopper launch for other data at other
addresses, with and without a bias, activations, split K and leading dims, and is right against float64;
what the signature does not fix (the operands' alignment) sends a call back to its checked path, as do
recorded launches and operands the kernels read through a copy."""
from importlib import import_module

import pytest
import torch

import kernelkit
from kernelkit.ops.gemm import _replay
from kernelkit.ops._shared.plans import clear_plans
from kernelkit.runtime.launch import recording
from matmul_helpers import check_matmul, operand
from test_linear_epilogue_gpu import _check

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="the replays are of the sm_90a Hopper launches")]

LIN = import_module("kernelkit.ops.gemm.linear")
MM = import_module("kernelkit.ops.gemm.matmul")
BF16 = torch.bfloat16


@pytest.fixture
def replayed(monkeypatch):
    """The number of calls a replay served (returned a result), counted."""
    count = {"n": 0}
    call = _replay.TmaReplay.__call__

    def counting(self, *args):
        got = call(self, *args)
        count["n"] += got is not None
        return got
    monkeypatch.setattr(_replay.TmaReplay, "__call__", counting)
    return count


@pytest.mark.skipif(not _replay.replays_possible(), reason="no launch shim, or KERNELKIT_SYNC")
@pytest.mark.parametrize("dtype", (torch.float16, BF16))
def test_linear_replays_are_right(replayed, dtype):
    cases = [((1, 512), 4096, None, True), ((16, 264), 300, "gelu", True), ((130, 520), 257, None, False),
             ((2, 3, 1032), 72, "relu", True), ((1, 4096), 4096, "gelu_tanh", True)]  # the last splits K
    for xshape, n, act, with_bias in cases:
        k = xshape[-1]
        w = operand((n, k), dtype)
        bias = operand((n,), dtype) if with_bias else None
        served = replayed["n"]
        for call in range(3):  # the first call is checked and captured, the next two replayed
            x = operand(xshape, dtype, offset=8 * call)  # other data at other (16-byte aligned) addresses
            out = kernelkit.linear(x, w, bias, activation=act)
            what = f"{dtype} {xshape} n={n} {act} bias={with_bias} call {call}"
            _check(out, x, w, torch.zeros(n, dtype=dtype, device="cuda") if bias is None else bias, act, None,
                   False, what)
        assert replayed["n"] == served + 2, xshape


@pytest.mark.skipif(not _replay.replays_possible(), reason="no launch shim, or KERNELKIT_SYNC")
def test_matmul_replays_are_right_and_split_k_keeps_its_bits(replayed):
    for m, n, k, tb in ((1, 4096, 4096, True), (67, 136, 72, False), (300, 264, 520, True)):
        b = operand((k, n), BF16, tb)
        a = operand((m, k), BF16)
        first = kernelkit.matmul(a, b)  # checked and captured
        check_matmul(first, a, b, False, f"{m}x{n}x{k} tb={tb}")
        again = kernelkit.matmul(a.clone(), b)  # the same data elsewhere, replayed: the same bits
        assert torch.equal(again, first), (m, n, k)
        a2 = operand((m, k), BF16, offset=8)
        check_matmul(kernelkit.matmul(a2, b), a2, b, False, f"{m}x{n}x{k} tb={tb} replayed")
    assert replayed["n"] == 6


@pytest.mark.skipif(not _replay.replays_possible(), reason="no launch shim, or KERNELKIT_SYNC")
def test_what_the_signature_does_not_fix_takes_the_checked_path(replayed):
    zero_bias = torch.zeros(264, dtype=BF16, device="cuda")
    w = operand((264, 520), BF16)
    kernelkit.linear(operand((40, 520), BF16), w)
    served = replayed["n"]
    x = operand((40, 520), BF16, offset=1)  # the same shape and strides, 2 bytes off: the TMA cannot read it
    _check(kernelkit.linear(x, w), x, w, zero_bias, None, None, False, "offset")
    with recording() as rec:  # recorded launches go through the checked path
        kernelkit.linear(operand((40, 520), BF16), w)
    assert len(rec) == 1 and replayed["n"] == served
    # a weight neither layout reads is copied by the checked path: nothing is kept for its signature
    strided = operand((264, 1040), BF16)[:, ::2]
    before = len(LIN._replays)
    for _ in range(2):
        x = operand((40, 520), BF16)
        _check(kernelkit.linear(x, strided), x, strided, zero_bias, None, None, False, "strided weight")
    assert len(LIN._replays) == before and replayed["n"] == served
    # a strided bias is read through a contiguous copy: no replay may pass the caller's pointer for it
    w2 = operand((264, 520), BF16)
    bias = operand((264 * 2,), BF16)[::2]
    before = len(LIN._replays)
    for _ in range(2):
        x = operand((40, 520), BF16)
        _check(kernelkit.linear(x, w2, bias), x, w2, bias, None, None, False, "strided bias")
    assert len(LIN._replays) == before and replayed["n"] == served
    clear_plans()
    assert not LIN._replays and not MM._replays
