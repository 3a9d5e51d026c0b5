"""Where benchmarks/sweep.py flags a row norm as disagreeing with torch, which side is wrong: kernelkit and torch
each against float64 of the same inputs (the sweep's inputs: x ~ 2 N(0, 1) + 0.5, a random weight and bias),
and what eps torch's rms_norm takes for 16-bit inputs when none is given.

    python scripts/row_agreement.py          (a GPU)
    python scripts/row_agreement.py --cpu    (no GPU: torch's rms_norm on the CPU, layer_norm's fp32 arithmetic
                                              emulated in numpy)

Prints, for rms_norm of 16-bit rows of 1-7 elements and layer_norm of fp32 rows of 3, the largest error of
each side relative to |float64| + max |float64| / 64 (the sweep's agreement measure), the float64 reference
taken with either eps convention for rms_norm, and torch's result for a one-element row of 1e-3. With --cpu:
torch's rms_norm eps for 16-bit inputs, and three fp32 layer_norm algorithms on the sweep's rows of 3 (torch's
one-thread Welford, deviations from an fp32 mean, deviations from the row's first element) against float64.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit import reference


def worst(got: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest |got - ref| / (|ref| + max |ref| / 64): the sweep's agreement measure."""
    ref = ref.double()
    return float(((got.double() - ref).abs() / (ref.abs() + ref.abs().max() / 64)).max())


def main() -> None:
    torch.manual_seed(0)
    f32_eps = torch.finfo(torch.float32).eps
    for dt in (torch.float16, torch.bfloat16):
        one = torch.full((1, 1), 1e-3, dtype=dt, device="cuda")
        guesses = {name: float(one.double() / (one.double() ** 2 + e).sqrt())
                   for name, e in (("finfo(x.dtype).eps", torch.finfo(dt).eps), ("finfo(float32).eps", f32_eps))}
        print(f"{dt}: torch rms_norm([1e-3]) = {float(F.rms_norm(one, (1,))):.6g}; x / sqrt(x^2 + eps) with "
              + ", ".join(f"{k}: {v:.6g}" for k, v in guesses.items())
              + f"; kernelkit {float(kernelkit.rms_norm(one, (1,))):.6g}")
        for n in (1, 2, 3, 7):
            x = (torch.randn(2**24 // n, n, device="cuda") * 2 + 0.5).to(dt)
            w = torch.randn(n, device="cuda").to(dt)
            ours, theirs = kernelkit.rms_norm(x, (n,), w), F.rms_norm(x, (n,), w)
            for name, e in (("finfo(x.dtype).eps", torch.finfo(dt).eps), ("finfo(float32).eps", f32_eps)):
                ref = reference.rms_norm(x, (n,), w, e)
                print(f"  rms_norm {str(dt)[6:]} rows of {n}, float64 with {name}: kernelkit {worst(ours, ref):.3g}, "
                      f"torch {worst(theirs, ref):.3g}")
    x = torch.randn(5592405, 3, device="cuda") * 2 + 0.5
    w, b = torch.randn(2, 3, device="cuda")
    ours, theirs = kernelkit.layer_norm(x, (3,), w, b), F.layer_norm(x, (3,), w, b)
    ref = reference.layer_norm(x, (3,), w, b)
    apart = ((ours.double() - theirs.double()).abs() > 1e-4 * (theirs.double().abs() + theirs.abs().max() / 64))
    rows = apart.any(-1).nonzero().flatten()[:3]
    print(f"layer_norm float32 rows of 3: kernelkit {worst(ours, ref):.3g}, torch {worst(theirs, ref):.3g} against "
          f"float64; {int(apart.sum())} elements apart by the sweep's 1e-4; such rows' spread (std / |mean|): "
          + ", ".join(f"{float(x[r].std() / x[r].mean().abs()):.2g}" for r in rows))
    for r in rows:
        print(f"    x {x[r].tolist()}  kernelkit {ours[r].tolist()}  torch {theirs[r].tolist()}  "
              f"float64 {ref[r].tolist()}")


def cpu() -> None:
    f32_eps = torch.finfo(torch.float32).eps
    for dt in (torch.float16, torch.bfloat16):
        one = torch.full((1, 1), 1e-3, dtype=dt)
        print(f"{dt} (CPU): torch rms_norm([1e-3]) = {float(F.rms_norm(one, (1,))):.6g}; with finfo(x.dtype).eps "
              f"{float(one.double() / (one.double() ** 2 + torch.finfo(dt).eps).sqrt()):.6g}, with "
              f"finfo(float32).eps {float(one.double() / (one.double() ** 2 + f32_eps).sqrt()):.6g}")
    f, rng, n = np.float32, np.random.default_rng(0), 3
    x = (rng.standard_normal((5592405, n)) * 2 + 0.5).astype(f)
    w, b = rng.standard_normal(n).astype(f), rng.standard_normal(n).astype(f)
    xd = x.astype(np.float64)
    mu = xd.mean(1, keepdims=True)
    ref = (xd - mu) / np.sqrt(((xd - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w + b

    def out(d, m2):
        return d * (f(1) / np.sqrt(m2 * f(1 / n) + f(1e-5))).astype(f)[:, None] * w + b

    m, m2 = np.zeros(len(x), f), np.zeros(len(x), f)  # torch: Welford, one thread a row
    for k in range(n):
        delta = x[:, k] - m
        m = m + delta / f(k + 1)
        m2 = m2 + delta * (x[:, k] - m)
    welford = out(x - m[:, None], m2)
    d = x - (x.sum(1, dtype=f) * f(1 / n))[:, None]  # deviations from the fp32 mean
    from_mean = out(d, (d * d).sum(1, dtype=f))
    e = x - x[:, :1]  # deviations from the first element, then from their mean
    e = e - (e.sum(1, dtype=f) * f(1 / n))[:, None]
    shifted = out(e, (e * e).sum(1, dtype=f))
    for name, y in (("torch's Welford", welford), ("from the fp32 mean", from_mean), ("from x[0]", shifted)):
        err = np.abs(y - ref) / (np.abs(ref) + np.abs(ref).max() / 64)
        print(f"layer_norm fp32 rows of 3, {name}: worst {err.max():.3g}, {(err > 1e-4).sum()} elements past 1e-4")


if __name__ == "__main__":
    cpu() if "--cpu" in sys.argv else main()
