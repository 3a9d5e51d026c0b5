"""Benchmarking workbench: event timing, measured device ceilings, rooflines, reports.

Everything here judges kernels against what the device measurably achieves (a copy,
cuBLAS) under a fixed, documented timing method, and records the environment next to
every number so results stay comparable.  Importing this package needs no GPU and
does not import matplotlib.
"""
from .ceilings import (
    MATMUL_KINDS,
    cache_dir,
    cache_path,
    copy_bandwidth,
    device_ceilings,
    matmul_rate,
    measure_all,
)
from .report import atomic_write_json, environment, print_table, render_table, write_json
from .roofline import RooflinePoint, plot_bandwidth_bars, plot_roofline
from .timing import Timing, l2_cache_bytes, should_flush_l2, summarize_times, time_cuda, time_interleaved

__all__ = [
    "Timing",
    "time_cuda",
    "time_interleaved",
    "summarize_times",
    "should_flush_l2",
    "l2_cache_bytes",
    "MATMUL_KINDS",
    "cache_dir",
    "cache_path",
    "copy_bandwidth",
    "matmul_rate",
    "device_ceilings",
    "measure_all",
    "RooflinePoint",
    "plot_roofline",
    "plot_bandwidth_bars",
    "environment",
    "write_json",
    "atomic_write_json",
    "render_table",
    "print_table",
]
