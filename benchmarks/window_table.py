"""The sliding-window family's benchmark list, timed against torch and a same-bytes copy in one process.

    python benchmarks/window_table.py [--groups filters,pool,depthwise] [--rungs] [--quick] [--out DIR]

Cases (``cases()``): filter2d 5x5, 15x15 and 31x31, gaussian_blur 7 and sobel on one 8192x8192 float32
plane; gaussian_blur 5 on a 2160x3840 RGB uint8 image (channels_last); max_pool2d and avg_pool2d 2x2
and 3x3/s2 (padding 1) in float32, float16 and bfloat16 on 1x1x8192x8192 and 64x96x112x112, NCHW and
channels_last; depthwise conv2d on the layers of ConvNeXt-T (7x7, padding 3) and MobileNetV2 (3x3 at
stride 1 and 2) at batch 64, float16 and bfloat16, NCHW and channels_last. Each case times kernelkit's
default, torch's call and a copy of the case's bytes (input read once + output written once) in turn
(``kernelkit.bench.timing.time_interleaved``: shuffled rounds, medians, L2 flushed between calls), after
checking kernelkit's result against torch's (computed with TF32 off; timed with torch's defaults). ``--rungs`` also times the rung each op had before its
current default (pooling's vector rung, depthwise conv2d's direct kernels, and for NCHW depthwise the
channel-group tile that preceded the planar bands, by ``config=``) in the same rounds.

Writes ``window-<device>.json`` into --out (default benchmarks/results): the environment (device, date,
versions), the records, and a summary (depthwise geometric mean of kernelkit over torch per dtype and
layout and overall; pooling's least share of the copy); and ``window-<device>.png``: % of the copy per
case, kernelkit and torch.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import device_tag  # noqa: E402

GROUPS = ("filters", "pool", "depthwise")
PLANE = (8192, 8192)
RGB_4K = (2160, 3840, 3)
POOL_SHAPES = ((1, 1, 8192, 8192), (64, 96, 112, 112))
POOL_WINDOWS = ((2, 2, 0), (3, 2, 1))  # kernel, stride, padding
CONVNEXT_T = ((96, 56), (192, 28), (384, 14), (768, 7))  # (channels, size): 7x7, padding 3
MOBILENET_V2 = (((96, 112), 2), ((144, 56), 1), ((192, 28), 1), ((384, 14), 1), ((576, 14), 1), ((960, 7), 1))
BATCH = 64
# the rung each op had as its default before the current one: timed beside it with --rungs
PREVIOUS = {"max_pool2d": "vector", "avg_pool2d": "vector", "conv2d": "direct"}
# agreement with torch: |kernelkit - torch| <= tol * (|torch| + the largest |torch| / 64); uint8 within 1
RTOL = {"float32": 1e-4, "float16": 4e-3, "bfloat16": 3.2e-2}


@dataclass(frozen=True)
class Case:
    """One timed problem: ``op`` with ``params`` on an input of ``shape`` / ``dtype`` in ``layout``."""

    group: str
    op: str
    dtype: str
    shape: tuple[int, ...]
    layout: str = "nchw"  # "nchw" (planar), "channels_last" (NHWC strides), "hwc" (an interleaved image)
    params: tuple = field(default=())

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    def esize(self) -> int:
        return {"float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1}[self.dtype]

    def out_numel(self) -> int:
        kw = self.kwargs
        if self.group == "filters":
            return math.prod(self.shape)
        n, c, h, w = self.shape
        k, s, p = kw["kernel"], kw["stride"], kw["padding"]
        return n * c * ((h + 2 * p - k) // s + 1) * ((w + 2 * p - k) // s + 1)

    def nbytes(self) -> int:
        """Input read once and output written once."""
        return (math.prod(self.shape) + self.out_numel()) * self.esize()

    @property
    def label(self) -> str:
        kw = self.kwargs
        if self.op in ("max_pool2d", "avg_pool2d", "conv2d"):
            win = f"{kw['kernel']}x{kw['kernel']}" + (f"/s{kw['stride']}" if kw["stride"] > 1 else "")
        else:
            win = f"{kw['size']}" if "size" in kw else ""
        return f"{self.op} {win} {self.dtype} {'x'.join(map(str, self.shape))} {self.layout}".replace("  ", " ")


def cases(groups=GROUPS, quick: bool = False) -> list[Case]:
    """The benchmark list for ``groups`` (``quick``: one case of each kind)."""
    out: list[Case] = []
    for g in groups:
        if g == "filters":
            for size in (5, 15, 31):
                out.append(Case(g, "filter2d", "float32", PLANE, params=(("size", size),)))
            out.append(Case(g, "gaussian_blur", "float32", PLANE, params=(("size", 7),)))
            out.append(Case(g, "sobel", "float32", PLANE))
            out.append(Case(g, "gaussian_blur", "uint8", RGB_4K, "hwc", (("size", 5),)))
        elif g == "pool":
            for op in ("max_pool2d", "avg_pool2d"):
                for k, s, p in POOL_WINDOWS:
                    for shape in POOL_SHAPES:
                        for dt in ("float32", "float16", "bfloat16"):
                            for layout in ("nchw", "channels_last"):
                                if layout == "channels_last" and shape[1] == 1:
                                    continue  # one channel: channels_last is the same memory as NCHW
                                out.append(Case(g, op, dt, shape, layout,
                                                (("kernel", k), ("stride", s), ("padding", p))))
        elif g == "depthwise":
            layers = [((c, h), 7, 1, 3) for c, h in CONVNEXT_T] + [((c, h), 3, s, 1) for (c, h), s in MOBILENET_V2]
            for (c, h), k, s, p in layers:
                for dt in ("float16", "bfloat16"):
                    for layout in ("channels_last", "nchw"):
                        out.append(Case(g, "conv2d", dt, (BATCH, c, h, h), layout,
                                        (("kernel", k), ("stride", s), ("padding", p))))
        else:
            raise ValueError(f"window_table: unknown group {g!r} (expected some of {', '.join(GROUPS)})")
    if quick:
        seen, few = set(), []
        for c in out:
            kind = (c.op, c.dtype, c.layout, c.kwargs.get("kernel"), c.kwargs.get("stride"))
            if kind not in seen and c.dtype != "bfloat16":
                seen.add(kind)
                few.append(c)
        out = few
    return out


def record(case: Case, kk_us: float, torch_us: float, copy_us: float, agrees: bool,
           rungs: dict[str, float] | None = None) -> dict[str, Any]:
    """The JSON record of a timed case (rates in GB/s of the case's bytes, 1e9 bytes)."""
    nbytes = case.nbytes()

    def gbs(us: float) -> float:
        return round(nbytes / us / 1e3, 1)

    rec = {"group": case.group, "op": case.op, "dtype": case.dtype, "shape": list(case.shape),
           "layout": case.layout, "params": dict(case.params), "label": case.label, "bytes": nbytes,
           "kernelkit_us": round(kk_us, 2), "torch_us": round(torch_us, 2), "copy_us": round(copy_us, 2),
           "kernelkit_gbs": gbs(kk_us), "torch_gbs": gbs(torch_us), "copy_gbs": gbs(copy_us),
           "pct_copy": round(100 * copy_us / kk_us, 1), "torch_pct_copy": round(100 * copy_us / torch_us, 1),
           "vs_torch": round(torch_us / kk_us, 3), "agrees": bool(agrees)}
    if rungs:
        rec["rungs"] = {name: {"us": round(us, 2), "gbs": gbs(us), "pct_copy": round(100 * copy_us / us, 1)}
                        for name, us in rungs.items()}
    return rec


def geomean(values) -> float:
    vals = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else float("nan")


def summary(records: list[dict]) -> dict[str, Any]:
    """Depthwise: the geometric mean of kernelkit over torch per (dtype, layout), per layout and overall,
    and the slowest case; pooling and filters: the least share of the copy and the least speed-up."""
    out: dict[str, Any] = {}
    dw = [r for r in records if r["group"] == "depthwise"]
    if dw:
        per = {}
        for r in dw:
            per.setdefault(f"{r['dtype']} {r['layout']}", []).append(r["vs_torch"])
            per.setdefault(r["layout"], []).append(r["vs_torch"])
        out["depthwise_geomean_vs_torch"] = {k: round(geomean(v), 3) for k, v in sorted(per.items())}
        out["depthwise_geomean_vs_torch"]["all"] = round(geomean(r["vs_torch"] for r in dw), 3)
        worst = min(dw, key=lambda r: r["vs_torch"])
        out["depthwise_least_vs_torch"] = {"label": worst["label"], "vs_torch": worst["vs_torch"]}
    for g in ("pool", "filters"):
        rs = [r for r in records if r["group"] == g]
        if rs:
            low = min(rs, key=lambda r: r["pct_copy"])
            slow = min(rs, key=lambda r: r["vs_torch"])
            out[f"{g}_least_pct_copy"] = {"label": low["label"], "pct_copy": low["pct_copy"]}
            out[f"{g}_least_vs_torch"] = {"label": slow["label"], "vs_torch": slow["vs_torch"]}
    out["disagreeing"] = [r["label"] for r in records if not r["agrees"]]
    return out


# ---------------------------------------------------------------- GPU side

def _calls(case: Case, rungs: bool):
    """(kernelkit's call, torch's call, {rung: call} of the earlier defaults) as functions of no argument."""
    import torch
    import torch.nn.functional as F

    import kernelkit
    from kernelkit import get_op

    dtype = getattr(torch, case.dtype)
    kw = case.kwargs
    if case.dtype == "uint8":
        x = torch.randint(0, 256, case.shape, dtype=dtype, device="cuda")
    else:
        x = torch.randn(case.shape, device="cuda", dtype=dtype)
    if case.layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    extra = {}
    if case.op == "filter2d":
        k = torch.randn(kw["size"], kw["size"], device="cuda") / kw["size"]
        tfn = get_op("filter2d").torch_fn
        mine, theirs = (lambda: kernelkit.filter2d(x, k)), (lambda: tfn(x, k))
    elif case.op == "gaussian_blur":
        hwc = case.layout == "hwc"
        tfn = get_op("gaussian_blur").torch_fn
        mine = lambda: kernelkit.gaussian_blur(x, kw["size"], channels_last=hwc)  # noqa: E731
        if hwc:  # torch (torchvision's method) runs on CHW planes: the permute is part of what users pay
            theirs = lambda: tfn(x.permute(2, 0, 1), kw["size"]).permute(1, 2, 0)  # noqa: E731
        else:
            theirs = lambda: tfn(x, kw["size"])  # noqa: E731
    elif case.op == "sobel":
        tfn = get_op("sobel").torch_fn
        mine, theirs = (lambda: kernelkit.sobel(x)), (lambda: tfn(x))
    elif case.op in ("max_pool2d", "avg_pool2d"):
        k, s, p = kw["kernel"], kw["stride"], kw["padding"]
        kfn, tfn = getattr(kernelkit, case.op), getattr(F, case.op)
        mine, theirs = (lambda: kfn(x, k, s, p)), (lambda: tfn(x, k, s, p))
        if rungs:
            extra[PREVIOUS[case.op]] = lambda: kfn(x, k, s, p, variant=PREVIOUS[case.op])
    else:
        k, s, p = kw["kernel"], kw["stride"], kw["padding"]
        c = case.shape[1]
        w = (torch.randn(c, 1, k, k, device="cuda") / k).to(dtype)
        mine = lambda: kernelkit.conv2d(x, w, None, s, p, 1, c)  # noqa: E731
        theirs = lambda: F.conv2d(x, w, None, s, p, 1, c)  # noqa: E731
        if rungs:
            extra[PREVIOUS["conv2d"]] = lambda: kernelkit.conv2d(x, w, None, s, p, 1, c, variant=PREVIOUS["conv2d"])
            if case.layout != "channels_last":  # NCHW's default before the planar bands: the channel-group tile
                from kernelkit.ops.window.conv2d import tile_rule

                oh, ow = (case.shape[2] + 2 * p - k) // s + 1, (case.shape[3] + 2 * p - k) // s + 1
                tile = tile_rule(oh, ow, k, s, False)
                extra["tile"] = lambda: kernelkit.conv2d(x, w, None, s, p, 1, c, config=tile)
    return mine, theirs, extra


def _agrees(case: Case, a, b) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.double(), b.double()
    if case.dtype == "uint8":
        return bool(((a - b).abs() <= 1).all())
    if a.isnan().ne(b.isnan()).any():
        return False
    a, b = a.nan_to_num(), b.nan_to_num()
    scale = b.abs().max().item() if b.numel() else 0.0
    return bool(((a - b).abs() <= RTOL[case.dtype] * (b.abs() + scale / 64)).all())


def _exact(fn):
    """fn() with TF32 off: torch's float32 convolutions run in TF32 by default (cuDNN), 1e-3 off."""
    import torch

    prev = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        return fn()
    finally:
        torch.backends.cudnn.allow_tf32 = prev


def run_case(case: Case, rungs: bool, max_seconds: float) -> dict[str, Any]:
    import torch

    from kernelkit.bench.timing import time_interleaved

    mine, theirs, extra = _calls(case, rungs)
    agrees = _agrees(case, mine(), _exact(theirs))
    src = torch.empty(case.nbytes() // 2, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)
    fns = [mine, theirs, lambda: src.clone(), *extra.values()]
    t = time_interleaved(fns, warmup=3, reps=30, working_set_bytes=case.nbytes(), max_seconds=max_seconds,
                         shuffle=True)
    rec = record(case, t[0].median_us, t[1].median_us, t[2].median_us, agrees,
                 {name: tm.median_us for name, tm in zip(extra, t[3:])})
    del mine, theirs, extra, src, fns
    torch.cuda.synchronize()
    return rec


def plot(records: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(10, 0.22 * len(records)), 5.5))
    xs = range(len(records))
    ax.bar([x - 0.2 for x in xs], [r["pct_copy"] for r in records], width=0.4, label="kernelkit")
    ax.bar([x + 0.2 for x in xs], [r["torch_pct_copy"] for r in records], width=0.4, label="torch", alpha=0.7)
    ax.axhline(90, color="gray", lw=0.8, ls=":")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["label"] for r in records], rotation=90, fontsize=6)
    ax.set_ylabel("% of a same-bytes copy")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", default=",".join(GROUPS))
    p.add_argument("--rungs", action="store_true", help="also time each op's earlier default rung")
    p.add_argument("--quick", action="store_true", help="one case of each kind")
    p.add_argument("--max-seconds", type=float, default=0.25, help="time bound of one case's timed rounds")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    a = p.parse_args(argv)

    import torch

    from kernelkit.bench import environment, write_json

    if not torch.cuda.is_available():
        print("window_table.py needs a CUDA GPU")
        return 1
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = device_tag(torch.cuda.get_device_name(0))
    todo = cases(a.groups.split(","), a.quick)
    records, t0, env = [], time.perf_counter(), environment()

    def save() -> dict:
        doc = {"environment": env, "quick": a.quick, "seconds": round(time.perf_counter() - t0, 1),
               "summary": summary(records), "records": records}
        write_json(out / f"window-{tag}.json", doc)
        return doc

    for i, c in enumerate(todo):
        try:
            r = run_case(c, a.rungs, a.max_seconds)
        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the table
            print(f"{c.label}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            continue
        records.append(r)
        more = "".join(f"  {n} {v['pct_copy']:5.1f}%" for n, v in r.get("rungs", {}).items())
        print(f"[{i + 1}/{len(todo)} {time.perf_counter() - t0:4.0f}s] {c.label:58s} kk {r['kernelkit_gbs']:6.0f} "
              f"torch {r['torch_gbs']:6.0f} copy {r['copy_gbs']:6.0f} GB/s {r['pct_copy']:5.1f}% of copy "
              f"{r['vs_torch']:6.2f}x torch{more}{'' if r['agrees'] else '  DISAGREES WITH TORCH'}", flush=True)
        if i % 10 == 9:
            save()
    doc = save()
    for k, v in doc["summary"].items():
        print(f"{k}: {v}")
    if records:
        try:
            plot(records, out / f"window-{tag}.png", f"sliding-window ops on {torch.cuda.get_device_name(0)}")
        except ImportError:
            print("matplotlib missing: no plot")
    print(f"{len(records)} of {len(todo)} cases in {doc['seconds']} s -> {out / f'window-{tag}.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
