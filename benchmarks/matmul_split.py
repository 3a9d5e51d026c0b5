"""Split K on the Hopper rungs: each model shape's share of cuBLAS without a split and with the rule's,
timed in turn in one process.

    python benchmarks/matmul_split.py [--shapes MxNxK,...] [--dtypes bfloat16,float16] [--rungs tma_wgmma,ws]
        [--splits 2,8] [--seconds 0.4] [--out DIR]

Shapes default to the 20 linear layers of matmul_table.py (M in {1, 16, 128, 4096, 16384} x the four
(N, K) of current models); A and B row-major as there. Where the rule splits K, each rung runs twice:
``split=1`` (the rung's tile without the split, what it ran before) and the rule's ``split=S``;
``--splits`` adds other slice counts on those shapes, ``--tiles 256x2,...`` other (block_n, split) pairs at
M <= 128 (labelled rung/block_n; not in the geomeans). Every candidate is first checked against torch.
Printed per case: TFLOP/s, the share of cuBLAS's rate in the same loop, and for M <= 16 the rate at
which B was read (those shapes read B once; the copy rate is the bound). The geometric means over the
shapes, before and after, close the table; ``--out DIR`` writes DIR/matmul-split-<device>.json.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import torch

import kernelkit
from kernelkit.bench.report import environment, write_json
from kernelkit.bench.timing import time_interleaved
from kernelkit.ops.gemm import _hopper as hop

sys.path.insert(0, str(Path(__file__).parent))
from matmul_table import MODEL_NK, TOL, disagreement, operands, parse_shapes  # noqa: E402

MODEL = tuple((m, n, k) for m in (1, 16, 128, 4096, 16384) for n, k in MODEL_NK)


def rule_tile(m: int, n: int, k: int, batch: int) -> hop.WgmmaTile:
    """matmul's own tile for these operands (A row-major: k-major, its box cut at M below 128 rows)."""
    dev = torch.cuda.current_device()
    return hop.tile_for(m, n, batch, torch.cuda.get_device_properties(dev).multi_processor_count,
                        hop.shared_limit(dev), k, hop.a_box_rows(True, m))


def run_case(shape, dname, rungs, extra, tiles, seconds, log):
    dtype = getattr(torch, dname)
    *batch, m, n, k = shape
    nb = math.prod(batch)
    flop = 2 * nb * m * n * k
    a, b = operands(shape, dtype, False)
    tile = rule_tile(m, n, k, nb)
    cands = []  # (label, rung, split, config)
    for r in rungs:
        if tile.split > 1:
            cands.append((r, 1, replace(tile, split=1)))
            cands += [(r, s, replace(tile, split=s)) for s in extra if s != tile.split and s <= -(-k // 64)]
            cands.append((r, tile.split, tile))
        else:
            cands.append((r, 1, None))
        if m <= hop.BM:  # other tiles where the tile count is small: (block_n, split) pairs
            cands += [(f"{r}/{bn}", sp, replace(tile, block_n=bn, stages=hop.stages_for(bn, hop.SM90_SHARED), split=sp))
                      for bn, sp in tiles if (bn, sp) != (tile.block_n, tile.split) and sp <= -(-k // 64)]
    ref = torch.matmul(a, b)
    for r, s, cfg in cands:
        if s == 1 and nb * m * n > 1 << 26:
            continue  # the unsplit kernels on the large outputs: tests/test_hopper_gpu.py checks them
        bad = disagreement(kernelkit.matmul(a, b, variant=r.split("/")[0], config=cfg), ref, dname)
        if bad > TOL[dname]:
            raise AssertionError(f"{dname} {shape} {r} split={s}: differs from torch by {bad:.3g}")
    del ref
    fns = [lambda r=r, c=c: kernelkit.matmul(a, b, variant=r.split("/")[0], config=c) for r, _, c in cands]
    fns.append(lambda: torch.matmul(a, b))
    nbytes = a.numel() * a.element_size() + b.numel() * b.element_size() + nb * m * n * 2
    times = time_interleaved(fns, warmup=2, reps=100, max_seconds=seconds, working_set_bytes=nbytes, shuffle=True)
    t_ref = times[-1].median_us
    recs = []
    cells = [f"cuBLAS {flop / t_ref / 1e6:6.1f} ({t_ref:7.1f} us)"]
    for (r, s, _), t in zip(cands, times):
        share = t_ref / t.median_us
        cell = f"{r} S={s} {flop / t.median_us / 1e6:6.1f} ({100 * share:5.1f}%)"
        if m <= 16:
            cell += f" B {b.numel() * b.element_size() / t.median_us / 1e3:5.0f} GB/s"
        cells.append(cell)
        recs.append({"dtype": dname, "shape": list(shape), "rung": r, "split": s, "rule_split": tile.split,
                     "median_us": t.median_us, "torch_median_us": t_ref, "share": share})
    log(f"{dname:8s} {'x'.join(map(str, shape)):>18s} " + " | ".join(cells))
    return recs


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(records, log):
    for dname in dict.fromkeys(r["dtype"] for r in records):
        for rung in dict.fromkeys(r["rung"] for r in records if "/" not in r["rung"]):
            rs = [r for r in records if r["dtype"] == dname and r["rung"] == rung]
            before = [r["share"] for r in rs if r["split"] == 1]
            after = [r["share"] for r in rs if r["split"] == r["rule_split"]]
            log(f"geomean {dname:8s} {rung:10s}: before (split 1) {100 * geomean(before):5.1f}%, after (rule) "
                f"{100 * geomean(after):5.1f}% of cuBLAS over {len(after)} shapes")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default=None, help="MxNxK or BxMxNxK, comma-separated (default: the 20 model shapes)")
    p.add_argument("--dtypes", default="bfloat16,float16")
    p.add_argument("--rungs", default="tma_wgmma,ws")
    p.add_argument("--splits", default="", help="more slice counts to time where the rule splits")
    p.add_argument("--tiles", default="", help="BNxS pairs (block_n, split) also timed at M <= 128, as rung/BN")
    p.add_argument("--seconds", type=float, default=0.4, help="timing budget of one case")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    shapes = parse_shapes(args.shapes) if args.shapes else list(MODEL)
    extra = [int(s) for s in args.splits.split(",") if s]
    tiles = [tuple(int(x) for x in t.split("x")) for t in args.tiles.split(",") if t]
    records = []
    env = environment() if args.out else None

    def save():  # after every case: a run cut short keeps what it measured
        device = (env.get("device") or "gpu").lower().replace("nvidia", "").strip().split()[0]
        return write_json(Path(args.out) / f"matmul-split-{device}.json",
                          {"what": "Hopper split K against cuBLAS, interleaved medians", "records": records,
                           "command": "python benchmarks/matmul_split.py " + " ".join(sys.argv[1:]),
                           "environment": env})

    for dname in args.dtypes.split(","):
        for shape in shapes:
            records += run_case(shape, dname, args.rungs.split(","), extra, tiles, args.seconds, print)
            torch.cuda.empty_cache()
            if args.out:
                save()
    summary(records, print)
    if args.out:
        print("wrote", save())


if __name__ == "__main__":
    main()
