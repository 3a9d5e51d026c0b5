"""Record ladders on the GPU: JSON + roofline PNG per op, and a markdown summary for the README.

    python benchmarks/record.py [op ...] [--out benchmarks/results] [--no-compile]

Every rung of every op (default: every op) at the op's bench shapes and dtypes (Op.bench_shapes /
bench_dtypes), checked against the float64 reference before it is timed, with torch eager, a
same-bytes copy and (unless --no-compile) torch.compile beside it. Writes <op>.json, a roofline PNG
per case and summary-<ops>.md into --out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from rich.console import Console

from kernelkit import get_op, ops
from kernelkit.bench.ladder_run import COLUMNS
from kernelkit.bench.record import record_op
from kernelkit.bench.report import print_table


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1f}%"


def summary_lines(op_name: str, results: list[dict]) -> list[str]:
    """One markdown row per (dtype, shape): the best rung against the ceiling and torch."""
    lines = []
    for res in results:
        timed = [r for r in res["rows"] if r["median_us"] and not r["name"].startswith("torch")]
        torch_row = next((r for r in res["rows"] if r["name"] == "torch eager"), None)
        if not timed or torch_row is None:
            continue
        default = get_op(op_name).default_variant.name
        best = next((r for r in timed if r["name"] == default), max(timed, key=lambda r: r["gbs"]))
        shape = "x".join(map(str, res["shape"]))
        lines.append(
            f"| {op_name} | {res['dtype']} | {shape} | {best['name']} | {best['median_us']:.1f} | "
            f"{best['gbs']:.0f} | {best['pct_copy']:.1f}% | {best['pct_copy_same_bytes']:.1f}% | "
            f"{_pct(best.get('pct_copy_paired'))} | "
            f"{torch_row['gbs']:.0f} | {best['vs_torch']:.3f}x |"
        )
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("ops", nargs="*", help="default: every op")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--no-compile", action="store_true")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("record.py needs a CUDA GPU")
        return 1
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = ["| op | dtype | shape | rung | time (us) | GB/s | % copy | % same-bytes copy | % same-bytes copy "
               "in turn | torch GB/s | vs torch |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
    def show(tag, res):
        print_table(res["rows"], COLUMNS, title=f"{tag}: copy {res['copy_gbs_large']:.0f} GB/s", console=Console(width=200))

    for name in a.ops or ops():
        summary += summary_lines(name, record_op(name, out, with_compile=not a.no_compile, on_case=show))
    (out / f"summary-{'-'.join(a.ops) or 'all'}.md").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
