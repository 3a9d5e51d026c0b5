"""Roofline and bandwidth-bar plots against *measured* ceilings.

The roofs come from ``ceilings`` (a device copy and cuBLAS through torch), not from
datasheet peaks, so a point touching a roof means "as fast as this device really
goes".  Memory-bound ladders (elementwise, reductions, softmax) all share one
arithmetic intensity and pile up on a roofline, so ``plot_bandwidth_bars`` shows
achieved GB/s per rung against the copy line, which keeps the ladder readable.

matplotlib is optional (``kernelkit[plot]``) and imported lazily.  Figures are built
with the object API on an Agg canvas, never through pyplot, so plotting neither
needs a display nor changes the backend of a caller's notebook.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["RooflinePoint", "plot_roofline", "plot_bandwidth_bars"]


@dataclass(frozen=True)
class RooflinePoint:
    """One measured kernel: useful FLOPs and bytes of one call, and its time (median, s)."""

    label: str
    flops: float
    bytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte moved to/from device memory."""
        return self.flops / self.bytes if self.bytes > 0 else math.inf

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9

    @property
    def gbs(self) -> float:
        return self.bytes / self.seconds / 1e9


def _figure(ncols: int, width: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            "kernelkit plots need matplotlib: pip install matplotlib (or kernelkit[plot])"
        ) from exc
    fig = Figure(figsize=(width, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _save(fig, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    return path


def _check(points: Sequence[RooflinePoint], copy_gbs: float) -> None:
    if not copy_gbs > 0:
        raise ValueError("copy_gbs must be > 0")
    if not points:
        raise ValueError("no points to plot")
    for p in points:
        if not (p.seconds > 0 and p.bytes >= 0 and p.flops >= 0):
            raise ValueError(f"point {p.label!r} needs seconds > 0 and non-negative flops/bytes")


def _draw_roofline(ax, points, copy_gbs: float, peak_tflops: float | None) -> None:
    plotted = [p for p in points if p.flops > 0 and p.bytes > 0]
    omitted = len(points) - len(plotted)
    if not plotted:
        ax.text(0.5, 0.5, "no point has both FLOPs and bytes", ha="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    xs = [p.intensity for p in plotted]
    ys = [p.gflops for p in plotted]
    peak_gflops = peak_tflops * 1e3 if peak_tflops else None
    ridge = peak_gflops / copy_gbs if peak_gflops else None
    x_lo = min(xs) / 4
    x_hi = max(max(xs), ridge or 0.0) * 4
    n = 200
    grid = [x_lo * (x_hi / x_lo) ** (i / (n - 1)) for i in range(n)]
    mem = [copy_gbs * x for x in grid]
    if peak_gflops:
        ax.plot(grid, [min(m, peak_gflops) for m in mem], color="0.2", linewidth=1.5)
        ax.axhline(peak_gflops, color="tab:red", linestyle="--", linewidth=1,
                   label=f"compute roof {peak_tflops:.1f} TFLOP/s (measured)")
    ax.plot(grid, mem, color="tab:blue", linestyle="--", linewidth=1,
            label=f"memory roof {copy_gbs:.0f} GB/s copy (measured)")
    for i, (p, x, y) in enumerate(zip(plotted, xs, ys)):
        ax.plot([x], [y], marker="o", linestyle="none", markersize=6)
        ax.annotate(p.label, (x, y), textcoords="offset points", xytext=(5, 4 + 9 * (i % 3)),
                    fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    y_top = max(max(ys), peak_gflops or 0.0, copy_gbs * max(xs)) * 3
    ax.set_ylim(min(ys) / 4, y_top)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    if omitted:
        ax.set_title(f"roofline ({omitted} point(s) with 0 FLOP on the bar chart only)", fontsize=9)
    else:
        ax.set_title("roofline", fontsize=9)


def _draw_bars(ax, points, copy_gbs: float) -> None:
    labels = [p.label for p in points]
    vals = [p.gbs for p in points]
    pos = list(range(len(points)))
    bars = ax.bar(pos, vals, color="tab:blue", alpha=0.8)
    for b, v in zip(bars, vals):
        pct = 100.0 * v / copy_gbs if copy_gbs > 0 else float("nan")
        ax.annotate(f"{v:.0f}\n{pct:.0f}%", (b.get_x() + b.get_width() / 2, v),
                    ha="center", va="bottom", fontsize=7, textcoords="offset points", xytext=(0, 2))
    ax.axhline(copy_gbs, color="tab:red", linestyle="--", linewidth=1,
               label=f"copy {copy_gbs:.0f} GB/s (measured)")
    ax.set_xticks(pos)
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("achieved GB/s")
    ax.set_ylim(0, max(max(vals), copy_gbs) * 1.2)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("bandwidth per rung", fontsize=9)


def plot_roofline(
    points: list[RooflinePoint],
    *,
    copy_gbs: float,
    peak_tflops: float | None,
    title: str,
    path: str | os.PathLike,
    bandwidth_panel: bool = True,
) -> Path:
    """Log-log roofline (left) and, by default, achieved GB/s bars (right); writes a PNG.

    ``peak_tflops=None`` draws only the memory roof (e.g. when no matmul rate applies).
    """
    _check(points, copy_gbs)
    fig, axes = _figure(2 if bandwidth_panel else 1, 12.0 if bandwidth_panel else 6.5)
    _draw_roofline(axes[0], points, copy_gbs, peak_tflops)
    if bandwidth_panel:
        _draw_bars(axes[1], points, copy_gbs)
    fig.suptitle(title)
    return _save(fig, path)


def plot_bandwidth_bars(
    points: list[RooflinePoint],
    *,
    copy_gbs: float,
    title: str,
    path: str | os.PathLike,
) -> Path:
    """Achieved GB/s per rung as bars with the measured copy bandwidth as a line; writes a PNG."""
    _check(points, copy_gbs)
    fig, axes = _figure(1, max(5.0, 1.0 + 0.8 * len(points)))
    _draw_bars(axes[0], points, copy_gbs)
    fig.suptitle(title)
    return _save(fig, path)
