"""Where benchmarks/sweep.py flags a row norm as disagreeing with torch, which side is wrong: kernelkit and torch
each against float64 of the same inputs (the sweep's inputs: x ~ 2 N(0, 1) + 0.5, a random weight and bias),
and what eps torch's rms_norm takes for 16-bit inputs when none is given.

    python scripts/row_agreement.py

Prints, for rms_norm of 16-bit rows of 1-7 elements and layer_norm of fp32 rows of 3, the largest error of
each side relative to |float64| + max |float64| / 64 (the sweep's agreement measure), the float64 reference
taken with either eps convention for rms_norm, and torch's result for a one-element row of 1e-3.
"""
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


if __name__ == "__main__":
    main()
