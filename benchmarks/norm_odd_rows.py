"""layer_norm on 16-bit rows of odd length: the rule's configuration against the same tile with its weight
and bias handling flipped (``NormTile.phased``), rms_norm's default beside them, and a copy of the same bytes,
timed in one interleaved loop (L2 flushed, medians). About 2^27 elements a case.

    python benchmarks/norm_odd_rows.py [--lens 127,257,...] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench.timing import time_interleaved
from kernelkit.ops._shared.launch_rules import compute_capability
from kernelkit.ops.reduction import norm

LENS = (127, 257, 509, 1025, 2053, 4099, 10007)


def run(dtype: torch.dtype, n: int) -> dict:
    rows = max(1, (1 << 27) // n)
    x = torch.randn(rows, n, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    b = torch.randn(n, device="cuda", dtype=dtype)
    cfg = norm.config_for("auto", dtype, n, form=2, sm=compute_capability(x.get_device()))
    alt = dataclasses.replace(cfg, phased=not cfg.phased) if hasattr(cfg, "phased") else cfg
    nb = 2 * x.numel() * x.element_size()
    src = torch.empty(nb // 2, dtype=torch.uint8, device="cuda")
    want = F.layer_norm(x.float(), (n,), w.float(), b.float())
    err = max((kernelkit.layer_norm(x, (n,), w, b, config=c).float() - want).abs().max().item() for c in (cfg, alt))
    fns = [lambda: kernelkit.layer_norm(x, (n,), w, b, config=cfg),
           lambda: kernelkit.layer_norm(x, (n,), w, b, config=alt),
           lambda: kernelkit.rms_norm(x, (n,), w), lambda: src.clone()]
    t = time_interleaved(fns, warmup=3, reps=40, max_seconds=0.6, shuffle=True, working_set_bytes=nb)
    copy = t[3].median_us
    return dict(dtype=str(dtype)[6:], n=n, rule=str(cfg), rule_pct=round(100 * copy / t[0].median_us, 1),
                flipped_pct=round(100 * copy / t[1].median_us, 1), rms_pct=round(100 * copy / t[2].median_us, 1),
                err=err)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lens", default=",".join(map(str, LENS)))
    ap.add_argument("--out", default=None, help="write the environment and the records as JSON here")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    records = []
    for dtype in (torch.bfloat16, torch.float16):
        for n in map(int, a.lens.split(",")):
            r = run(dtype, n)
            records.append(r)
            print(f"{r['dtype']:9s} {n:6d}  rule {r['rule_pct']:5.1f}%  flipped {r['flipped_pct']:5.1f}%  "
                  f"rms_norm {r['rms_pct']:5.1f}%  max err {r['err']:.3g}", flush=True)
    if a.out:
        from kernelkit.bench import write_json
        write_json(a.out, {"records": records})
    return 0


if __name__ == "__main__":
    sys.exit(main())
