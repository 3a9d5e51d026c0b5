"""Recording ladders: every rung of an op at its benchmark shapes and dtypes, as JSON and roofline PNGs.

``record_op`` is what ``benchmarks/record.py`` and ``kernelkit report`` run on a GPU: each case is
checked against the float64 reference before it is timed, with torch eager, a same-bytes copy and
(optionally) torch.compile beside it; the op's JSON is ``{"op", "results": [one run_ladder result a
case], "environment"}`` and each case gets ``<op>-<dtype>-<shape>.png``.
"""
from __future__ import annotations

from pathlib import Path

from .ladder_run import run_ladder
from .report import write_json


def case_tag(op_name: str, dtype: str, shape) -> str:
    return f"{op_name}-{dtype}-{'x'.join(map(str, shape))}"


def record_op(name: str, out: Path, *, with_compile: bool = True, on_case=None) -> list[dict]:
    """Every benchmark case of op ``name`` into ``out`` (``<name>.json`` and a PNG a case); returns the
    results. ``on_case(tag, result)`` is called after each case (printing, progress)."""
    from ..ladder import get_op
    from .roofline import RooflinePoint, plot_roofline

    op = get_op(name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for dtype in op.bench_dtypes:
        for shape in op.bench_shapes:
            res = run_ladder(name, shape, dtype, with_compile=with_compile)
            results.append(res)
            tag = case_tag(name, res["dtype"], shape)
            pts = [RooflinePoint(r["name"], res["flops"], res["bytes"], r["median_us"] * 1e-6)
                   for r in res["rows"] if r["median_us"]]
            plot_roofline(pts, copy_gbs=res["copy_gbs_large"], peak_tflops=None, title=tag, path=out / f"{tag}.png")
            if on_case:
                on_case(tag, res)
    write_json(out / f"{name}.json", {"op": name, "results": results})
    return results
