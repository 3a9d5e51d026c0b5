"""Shared pieces of the sliding-window GPU tests (test_window_gpu.py, test_pool_gpu.py,
test_depthwise_gpu.py): the float dtypes, the allocator poisoning, offset inputs and the float64 check."""
import torch

FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def poison_allocator():
    """Fill the caching allocator's free blocks with NaN bytes, so that fresh outputs start poisoned."""
    junk = torch.full((64 << 20,), float("nan"), device="cuda")
    del junk


def _input(shape, dtype, offset=0):
    n = 1
    for s in shape:
        n *= s
    if dtype == torch.uint8:
        base = torch.randint(0, 256, (n + offset,), dtype=torch.uint8, device="cuda")
    else:
        base = (torch.randn(n + offset, device="cuda") * 3).to(dtype)
    return base[offset:].view(shape)


def _check(out, ref, x, what, raw=None):
    """Float outputs within the dtype's tolerance (scaled by the sum of |weights| for wide kernels);
    uint8 exact except within 5e-3 of a rounding tie, where float32 accumulation may round the other way."""
    assert out.shape == ref.shape and out.dtype == x.dtype, what
    o, r = out.double(), ref.double()
    if x.dtype == torch.uint8:
        diff = (o - r).abs()
        if raw is not None:
            frac = (raw - raw.floor() - 0.5).abs()
            near_tie = (frac < 5e-3) & (raw > -0.5) & (raw < 255.5)  # float32 sums of up to 961 taps
            ok = (diff == 0) | (near_tie & (diff <= 1))
        else:
            ok = diff == 0
        bad = (~ok).nonzero()
        assert bad.numel() == 0, f"{what}: {bad.shape[0]} wrong, first at {bad[:3].tolist()}"
        return
    rtol, atol = {torch.float32: (1e-5, 1e-4), torch.float16: (4e-3, 2e-2), torch.bfloat16: (2e-2, 1e-1)}[x.dtype]
    scale = r.abs().max().clamp(min=1.0)
    bad = ~((o - r).abs() <= atol * scale + rtol * r.abs())
    assert not torch.isnan(o).any(), f"{what}: NaN in the output (an element not written?)"
    assert int(bad.sum()) == 0, f"{what}: {int(bad.sum())} of {r.numel()} off; max err {float((o - r).abs().max())}"
