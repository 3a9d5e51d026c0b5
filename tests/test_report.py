"""`kernelkit report --from`: recorded ladders and sweeps rendered to Markdown and HTML without a GPU."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kernelkit.bench.render import render

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"


def _recording(folder: Path) -> None:
    rows = [{"name": "scalar", "median_us": 50.0, "gbs": 2000.0, "pct_copy": 66.7, "vs_torch": 0.7, "error": None},
            {"name": "fast", "median_us": 34.0, "gbs": 2950.0, "pct_copy": 98.3, "vs_torch": 1.02, "error": None},
            {"name": "torch eager", "median_us": 35.0, "gbs": 2900.0, "pct_copy": 96.7, "vs_torch": None,
             "error": None}]
    (folder / "gelu.json").write_text(json.dumps({"op": "gelu", "environment": {"device": "Test GPU"}, "results": [
        {"shape": [1 << 24], "dtype": "float16", "params": {}, "copy_gbs_large": 3000.0, "rows": rows}]}))
    (folder / "gelu-float16-16777216.png").write_bytes(b"\x89PNG fake")
    (folder / "sweep-test.json").write_text(json.dumps({"environment": {"device": "Test GPU"}, "records": [
        {"op": "softmax", "dtype": "bfloat16", "shape": [2670, 50257], "kernelkit_gbs": 2900.0, "torch_gbs": 2000.0,
         "copy_gbs": 3000.0},
        {"op": "softmax", "dtype": "float32", "shape": [4096, 7], "kernelkit_gbs": 2400.0, "torch_gbs": 2500.0,
         "copy_gbs": 3000.0}]}))
    (folder / "sweep-test-softmax.png").write_bytes(b"\x89PNG fake")


def test_render_writes_tables_plots_and_the_sweep(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    _recording(src)
    md, page = render(src, out)
    text = md.read_text()
    assert "## elementwise" in text and "### gelu" in text and "| **fast** | 34.0 | 2950 | 98.3% | 1.020x |" in text
    assert "![gelu-float16-16777216.png]" in text and (out / "gelu-float16-16777216.png").is_file()
    assert "| softmax | 2 | 88.3% | 80.0% | 1.21x | 0.96x |" in text and (out / "sweep-test-softmax.png").is_file()
    assert "device: Test GPU" in text
    h = page.read_text()
    assert "<table>" in h and "<b>fast</b>" in h and '<img src="sweep-test-softmax.png"' in h


def test_the_command_renders_the_recorded_results(tmp_path):
    res = subprocess.run([sys.executable, "-m", "kernelkit", "report", "--from", str(RESULTS), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "report.md").read_text()
    assert "## reduction" in text and "## rearrangement" in text and "### softmax" in text
    res = subprocess.run([sys.executable, "-m", "kernelkit", "report", "--from", str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.count("\n") == 1


def test_the_report_loads_the_sweep_beside_the_install():
    """`kernelkit report` runs benchmarks/sweep.py loaded by path; its dataclasses need the module registered."""
    from kernelkit.cli import _sweep_module

    sweep = _sweep_module()
    assert sweep is not None and callable(sweep.main)
