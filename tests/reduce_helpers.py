"""Shared pieces of the reduction GPU tests (test_reduce_gpu.py, test_reduce_options_gpu.py): the ops,
dtypes and rungs, the op's call into a NaN-poisoned out= and the check against the float64 reference."""
import torch

import kernelkit
from kernelkit import reference
from kernelkit.reference.reduction import accumulation_magnitude, reduction_mismatches

OPS = ("sum", "mean", "amax", "amin")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
RUNGS = [v.name for v in kernelkit.ladder("sum")]


def check(op, x, got, dim=None, keepdim=False, what="", dtype=None):
    """got against the float64 reference, with the tolerance of its dtype (x's, or ``dtype``)."""
    ref = getattr(reference, op)(x, dim, keepdim)
    want = x.dtype if dtype is None else dtype
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    assert got.dtype == want, f"{what}: dtype {got.dtype}, expected {want}"
    bad = reduction_mismatches(got, ref, accumulation_magnitude(op, x, dim, keepdim), want)
    if bad.numel():
        i = bad[:6].tolist()
        raise AssertionError(f"{what}: {bad.numel()} of {ref.numel()} off; at {i}: "
                             f"got {[float(got.flatten()[j]) for j in i]} ref {[float(ref.flatten()[j]) for j in i]}")


def run(op, x, dim=None, keepdim=False, variant=None, poison=True, config=None, dtype=None):
    """The op with a NaN-poisoned out= (an unwritten result fails the check); ``dtype``: sum's and mean's."""
    shape = torch.empty(x.shape, device="meta").sum(dim, keepdim).shape if dim is not None else \
        ((1,) * x.dim() if keepdim else ())
    kw = {} if dtype is None else {"dtype": dtype}
    if not poison:
        return getattr(kernelkit, op)(x, dim, keepdim, variant=variant, config=config, **kw)
    out = torch.full(shape, float("nan"), dtype=x.dtype if dtype is None else dtype, device=x.device)
    got = getattr(kernelkit, op)(x, dim, keepdim, out=out, variant=variant, config=config, **kw)
    assert got is out
    return got
