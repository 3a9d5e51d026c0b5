"""layer_norm on 16-bit rows of odd length: the rule's configuration against the same tile with its weight
and bias handling flipped (``NormTile.phased``), rms_norm's default beside them, and a copy of the same bytes,
timed in one interleaved loop (L2 flushed, medians). About 2^27 elements a case.

``--fill``: also the tiles that hold the row at 1, 2 and 3 vectors a thread on the fewest threads (a power of
two up to a warp, else a multiple of 32 up to 512), phased as the rule's. The rule's tiles at 127-1025
elements fill 67-71% of their vector slots (rows of 1025 bf16: a window of 129 vectors on 64 threads x 3, 192
slots), and the statistics and the output loop run over every slot, filled or not.

    python benchmarks/norm_odd_rows.py [--lens 127,257,...] [--fill] [--out FILE.json]
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
from kernelkit.ops.reduction._rows import cdiv, per_vec, window_len
from kernelkit.ops.reduction.norm_configs import NormTile

LENS = (127, 257, 509, 1025, 2053, 4099, 10007)


def fill_tiles(dtype: torch.dtype, n: int, rule) -> list:
    """Tiles holding the row's window at 1-3 vectors a thread on the fewest threads, other than the rule's."""
    vectors = cdiv(window_len(n, dtype, 2), per_vec(dtype))
    tiles = []
    for vecs in (1, 2, 3):
        need = cdiv(vectors, vecs)
        threads = next((t for t in (1, 2, 4, 8, 16, 32) if t >= need), 32 * cdiv(need, 32))
        if threads > 512:
            continue
        tile = NormTile(threads, cdiv(vectors, threads), phased=getattr(rule, "phased", False))
        if tile != rule and tile not in tiles:
            tiles.append(tile)
    return tiles


def run(dtype: torch.dtype, n: int, fill: bool = False) -> dict:
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
    extra = []
    for tile in fill_tiles(dtype, n, cfg) if fill else []:
        try:
            got = kernelkit.layer_norm(x, (n,), w, b, config=tile)
        except (ValueError, RuntimeError) as exc:  # a tile the op refuses for this row (its message says why)
            print(f"{str(dtype)[6:]:9s} {n:6d}  {tile} not run: {exc}", flush=True)
            continue
        err = max(err, (got.float() - want).abs().max().item())
        extra.append(tile)
    fns = [lambda: kernelkit.layer_norm(x, (n,), w, b, config=cfg),
           lambda: kernelkit.layer_norm(x, (n,), w, b, config=alt),
           lambda: kernelkit.rms_norm(x, (n,), w), lambda: src.clone()]
    fns += [lambda tile=tile: kernelkit.layer_norm(x, (n,), w, b, config=tile) for tile in extra]
    t = time_interleaved(fns, warmup=3, reps=40, max_seconds=0.6 + 0.15 * len(extra), shuffle=True,
                         working_set_bytes=nb)
    copy = t[3].median_us
    row = dict(dtype=str(dtype)[6:], n=n, rule=str(cfg), rule_pct=round(100 * copy / t[0].median_us, 1),
               flipped_pct=round(100 * copy / t[1].median_us, 1), rms_pct=round(100 * copy / t[2].median_us, 1),
               err=err)
    if extra:
        row["fill"] = {str(tile): round(100 * copy / tt.median_us, 1) for tile, tt in zip(extra, t[4:])}
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lens", default=",".join(map(str, LENS)))
    ap.add_argument("--fill", action="store_true", help="also time the tiles of 1-3 vectors a thread")
    ap.add_argument("--out", default=None, help="write the environment and the records as JSON here")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    records = []
    for dtype in (torch.bfloat16, torch.float16):
        for n in map(int, a.lens.split(",")):
            r = run(dtype, n, a.fill)
            records.append(r)
            print(f"{r['dtype']:9s} {n:6d}  rule {r['rule_pct']:5.1f}%  flipped {r['flipped_pct']:5.1f}%  "
                  f"rms_norm {r['rms_pct']:5.1f}%  max err {r['err']:.3g}", flush=True)
            for tile, pct in r.get("fill", {}).items():
                print(f"{'':16s} {tile}: {pct:5.1f}%", flush=True)
    if a.out:
        from kernelkit.bench import write_json
        write_json(a.out, {"records": records})
    return 0


if __name__ == "__main__":
    sys.exit(main())
