"""The command line on a CPU-only machine: one-line errors with hints, filters, tables, progress, cache, version.

Compiling tests stay on small ops (relu with one dtype, binarize) and skip without cuda.core.
"""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import kernelkit
from kernelkit import _term, cli
from kernelkit.analyze import tools


def run(capsys, *argv):
    """(exit status, stdout, stderr) of `kernelkit argv...` run in this process."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, prog: str) -> str:
    """The single stderr line of a failed command, checked to be `<prog>: error: ...` and no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prog}: error: ") and "Traceback" not in err
    return lines[0]


# --- version and entry points ----------------------------------------------------------------------

def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith(f"kernelkit {kernelkit.__version__} (Python ")
    assert "torch" in out and "NVRTC" in out


def test_python_dash_m_kernelkit():
    src = str(Path(kernelkit.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "kernelkit", "--version"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.startswith(f"kernelkit {kernelkit.__version__}")


def test_no_command_and_unknown_command(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "--help" in one_line_error(err, "kernelkit")
    code, _, err = run(capsys, "inspct", "relu")
    assert code == 2 and "did you mean 'inspect'?" in one_line_error(err, "kernelkit")


# --- unknown op, rung, dtype ---------------------------------------------------------------------

@pytest.mark.parametrize("command", ["ops", "ladder", "inspect", "ncu", "profile", "warmup"])
def test_unknown_op_suggests_the_closest(capsys, command):
    code, _, err = run(capsys, command, "gelo")
    line = one_line_error(err, f"kernelkit {command}")
    assert code == 2 and "unknown op 'gelo'" in line and "did you mean 'gelu'?" in line


def test_unknown_op_without_a_close_one_lists_the_ops(capsys):
    code, _, err = run(capsys, "inspect", "convolution")
    line = one_line_error(err, "kernelkit inspect")
    assert code == 2 and all(op in line for op in kernelkit.ops())


@pytest.mark.parametrize("text,hint", [("flaot16", "did you mean 'float16'?"),
                                       ("banana", "kernelkit's dtypes: float32")])
def test_unknown_dtype_name(capsys, text, hint):
    code, _, err = run(capsys, "inspect", "relu", "--dtype", text)
    line = one_line_error(err, "kernelkit inspect")
    assert code == 2 and f"unknown dtype {text!r}" in line and hint in line


@pytest.mark.parametrize("command", ["inspect", "ladder"])
def test_dtype_the_op_does_not_take(capsys, command):
    code, out, err = run(capsys, command, "relu", "--dtype", "int32")
    line = one_line_error(err, f"kernelkit {command}")
    assert code == 2 and not out
    assert "relu has no rung for int32" in line and "its dtypes: float32, float16, bfloat16" in line


def test_unknown_rung(capsys):
    code, _, err = run(capsys, "inspect", "relu", "--rung", "fastt")
    line = one_line_error(err, "kernelkit inspect")
    assert code == 2 and "did you mean 'fast'?" in line and "scalar" in line
    code, _, err = run(capsys, "ncu", "relu", "--variant", "nope")
    assert code == 2 and "relu has no rung 'nope'" in one_line_error(err, "kernelkit ncu")


def test_rung_and_dtype_that_match_nothing_together(capsys):
    pytest.importorskip("cuda.core")
    code, out, err = run(capsys, "inspect", "relu", "--rung", "float4", "--dtype", "float16")
    line = one_line_error(err, "kernelkit inspect")
    assert code == 2 and not out and "float4 takes float32" in line


def test_param_must_be_a_keyword_of_the_op(capsys):
    op = kernelkit.get_op("gelu")
    assert cli._params(op, ["approximate=none"]) == {"approximate": "none"}
    with pytest.raises(cli.CliError, match="write KEY=VALUE"):
        cli._params(op, ["approximate"])
    with pytest.raises(cli.CliError, match="gelu takes no keyword 'aproximate'; did you mean 'approximate'"):
        cli._params(op, ["aproximate=none"])


# --- archs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch,hint", [
    ("90", "did you mean sm_90?"),
    ("sm_90a", "did you mean sm_90?"),
    ("sm_75", "kernelkit supports sm_80 (Ampere) and later"),
    ("sm_100", "sm_100 is not supported here"),
    ("hopper", "is not an arch"),
])
def test_bad_arch(capsys, arch, hint):
    pytest.importorskip("cuda.bindings")
    code, out, err = run(capsys, "inspect", "relu", "--arch", arch)
    line = one_line_error(err, "kernelkit inspect")
    assert code == 2 and not out and hint in line and "choose from sm_80" in line


def test_arch_choices_come_from_nvrtc(monkeypatch, capsys):
    from kernelkit.runtime import headers

    monkeypatch.setattr(headers, "nvrtc_archs", lambda: (75, 80, 86, 89))
    assert cli.build_archs() == ["sm_80", "sm_86", "sm_89"]
    assert cli.analysis_archs() == ["sm_80", "sm_86", "sm_89"]  # and known to the occupancy tables
    code, _, err = run(capsys, "warmup", "relu", "--arch", "sm_90")
    line = one_line_error(err, "kernelkit warmup")
    assert code == 2 and "cannot compile for it" in line and "choose from sm_80, sm_86, sm_89" in line


def test_arch_choices_without_nvrtc(monkeypatch):
    from kernelkit.runtime import headers

    def missing():
        raise RuntimeError("libnvrtc.so not found")

    monkeypatch.setattr(headers, "nvrtc_archs", missing)
    assert cli.analysis_archs() == ["sm_80", "sm_86", "sm_89", "sm_90"]  # the compile step reports NVRTC


def test_warmup_needs_an_arch_without_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("checks the no-GPU behaviour")
    code, _, err = run(capsys, "warmup", "relu")
    assert code == 2 and "--arch" in one_line_error(err, "kernelkit warmup")


# --- missing tools and GPU -------------------------------------------------------------------------

def test_inspect_without_cuobjdump(monkeypatch, capsys):
    """Nothing found anywhere: one line naming the tool and the wheel, before any compile."""
    monkeypatch.setattr(tools, "find_tool", tools.find_tool.__wrapped__)  # the search itself, uncached
    monkeypatch.setattr(tools, "_from_pathfinder", lambda name: None)
    monkeypatch.setattr(tools, "_executable", lambda path: None)
    monkeypatch.setattr(tools.shutil, "which", lambda name: None)
    code, out, err = run(capsys, "inspect", "relu", "--dtype", "float32")
    line = one_line_error(err, "kernelkit inspect")
    assert code == 1 and not out
    assert "cuobjdump not found" in line and "pip install nvidia-cuda-cuobjdump" in line


def test_ncu_not_found(monkeypatch, tmp_path, capsys):
    from kernelkit.analyze import ncu

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(ncu.glob, "glob", lambda pattern: [])
    code, _, err = run(capsys, "ncu", "relu")
    line = one_line_error(err, "kernelkit ncu")
    assert code == 1 and "ncu not found" in line and "Nsight Compute" in line


@pytest.mark.parametrize("command", ["ncu", "profile"])
def test_profilers_without_ncu(monkeypatch, tmp_path, capsys, command):
    from kernelkit.analyze import ncu

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(ncu.glob, "glob", lambda pattern: [])
    code, _, err = run(capsys, command, "relu")
    line = one_line_error(err, f"kernelkit {command}")
    assert code == 1 and "ncu not found" in line and "Nsight Compute" in line


def test_ncu_without_permission_is_one_line_with_the_fix(monkeypatch):
    import subprocess

    from kernelkit.analyze import ncu

    monkeypatch.setattr(ncu, "find_ncu", lambda: "/bin/ncu")
    monkeypatch.setattr(ncu.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters", ""))
    with pytest.raises(ncu.ProfilerError, match="permission") as e:
        ncu.profile("relu", "fast", (1024,), torch.float32)
    assert "NVreg_RestrictProfilingToAdminUsers" in e.value.hint


def test_ceilings_without_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("checks the no-GPU behaviour")
    code, _, err = run(capsys, "ceilings")
    assert code == 1 and "GPU" in one_line_error(err, "kernelkit ceilings")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
@pytest.mark.parametrize("flags,named", [(["--size", "2^20"], "--size needs a GPU"),
                                         (["--out", "x", "--no-compile"], "--out, --no-compile need a GPU"),
                                         (["--param", "approximate=none"], "--param needs a GPU")])
def test_ladder_gpu_options_without_a_gpu(capsys, flags, named):
    code, out, err = run(capsys, "ladder", "gelu", *flags)
    line = one_line_error(err, "kernelkit ladder")
    assert code == 2 and not out and named in line and "kernelkit inspect gelu" in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
def test_ladder_without_gpu_falls_back_to_static_analysis(capsys):
    pytest.importorskip("cuda.core")
    code, out, err = run(capsys, "ladder", "relu", "--dtype", "float16")
    assert code == 0 and "No CUDA GPU" in err
    assert "half2_x4" in out and "128b" in out


# --- inspect: each kernel once, fewer columns, sized to the terminal ------------------------------------

def test_inspect_relu_one_dtype(capsys):
    pytest.importorskip("cuda.core")
    code, out, _ = run(capsys, "inspect", "relu", "--arch", "sm_80", "--dtype", "float32")
    assert code == 0
    for rung in ("scalar", "float2", "float4", "fast"):
        assert rung in out
    assert "half2" not in out and "5 distinct kernels" in out  # scalar, float2, float4, fast x2
    assert max(map(len, out.splitlines())) <= _term.PIPED_WIDTH  # piped: 120 columns
    assert "limited by" not in out and "stack" not in out  # --wide columns


def test_inspect_wide_shows_every_column(capsys):
    pytest.importorskip("cuda.core")
    code, out, _ = run(capsys, "inspect", "relu", "--dtype", "float32", "--wide")
    assert code == 0 and "limited by" in out and "block" in out and "threads" in out
    assert all(len(line) < 400 for line in out.splitlines())  # piped --wide: as wide as the table, unwrapped


def test_inspect_lists_each_distinct_kernel_once(capsys):
    """binarize's byte kernel serves two rungs: one row naming both."""
    pytest.importorskip("cuda.core")
    code, out, _ = run(capsys, "inspect", "binarize", "--wide")
    assert code == 0 and "4 distinct kernels" in out
    rows = [line for line in out.splitlines() if "bytes_map<Binarize>" in line]
    assert len(rows) == 1 and "byte, uchar4" in rows[0]


def test_used_by_cells():
    from kernelkit.analyze.ladder_inspect import _dtype_set, _used_by

    relu = kernelkit.get_op("relu")
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    assert _used_by(relu, {"scalar": [f32, f16, bf16]}, ()) == "scalar"
    assert _used_by(relu, {"scalar": [f16], "fast": [f16]}, ()) == "scalar, fast (f16)"
    assert _used_by(relu, {"scalar": [f16]}, (f16,)) == "scalar"  # all the dtypes shown
    # by element size where that is every dtype of those sizes
    rung = [torch.uint8, torch.int8, torch.int16, torch.float16, torch.float32]
    assert _dtype_set([torch.uint8, torch.int8, torch.int16, torch.float16], rung) == "1/2-byte"
    assert _dtype_set([torch.uint8, torch.float16], rung) == "u8 f16"


def test_console_width(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert _term.console_for().width == 120  # not a terminal under pytest
    monkeypatch.setenv("COLUMNS", "100")
    assert _term.console_for().width == 100


def test_fit_widths():
    assert _term.fit_widths([10, 5, 5], [10, 3, 3], 40) is None  # fits as it is
    w = _term.fit_widths([40, 30, 10], [40, 8, 4], 70)
    assert sum(w) <= 70 and w[0] == 40 and w[1] >= 8 and w[2] >= 4  # the others give way first
    w = _term.fit_widths([60, 10, 10], [60, 10, 10], 50)
    assert w == [_term.NAME_MIN + 14, 10, 10]  # then the name folds
    assert _term.fit_widths([60, 30], [60, 30], 20)[0] == _term.NAME_MIN  # never below NAME_MIN


def test_ladder_table_columns():
    from kernelkit.bench.ladder_run import COLUMNS, WIDE_ONLY

    rows = [{"name": "fast", "median_us": 10.0, "gbs": 3000.0, "pct_copy": 90.0, "pct_copy_same_bytes": 95.0,
             "pct_copy_paired": 96.0, "vs_prev": 1.2, "vs_torch": 1.1, "error": None}]
    narrow = [k for k, _h, _f in _term.choose_columns(rows, COLUMNS, WIDE_ONLY, wide=False)]
    assert narrow == ["name", "median_us", "gbs", "pct_copy_paired", "vs_prev", "vs_torch"]  # no note to show
    assert len(_term.choose_columns(rows, COLUMNS, WIDE_ONLY, wide=True)) == len(COLUMNS)


# --- progress ------------------------------------------------------------------------------------------

def test_build_progress_lines_when_piped():
    import time

    stream = io.StringIO()
    with _term.BuildProgress("compiling relu", quiet_s=0.01, stream=stream) as progress:
        progress(0, 10)
        time.sleep(0.2)
        progress(10, 10)
    text = stream.getvalue()
    assert "compiling relu: 10 kernels ..." in text and "compiling relu: 10 kernels in" in text


def test_build_progress_silent_when_quick():
    stream = io.StringIO()
    with _term.BuildProgress("compiling relu", quiet_s=10, stream=stream) as progress:
        progress(0, 3)
        progress(3, 3)
    assert stream.getvalue() == ""


def test_run_parallel_reports_progress():
    from kernelkit.warmup import run_parallel

    seen = []
    assert run_parallel(abs, [-1, -2, -3], jobs=2, progress=lambda d, t: seen.append((d, t)),
                        weights=[1, 2, 3]) == [1, 2, 3]
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and len(seen) == 4


# --- ops and cache ---------------------------------------------------------------------------------------

def test_ops_and_one_ladder(capsys):
    code, out, _ = run(capsys, "ops")
    assert code == 0 and "gelu" in out
    code, out, _ = run(capsys, "ops", "gelu")
    assert code == 0 and "fast *" in out and "float4" in out and "what it adds" in out


def test_cache_info_in_human_units(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    entry = tmp_path / "kernels" / "ab" / "abcd.kkc"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"x" * 2_500_000)
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and str(tmp_path) in out and "1 compiled kernels" in out and "2.5 MB" in out
    code, out, _ = run(capsys, "cache", "info", "--json")
    assert json.loads(out) == {"path": str(tmp_path), "entries": 1, "bytes": 2_500_000}
    code, out, _ = run(capsys, "cache", "clear")
    assert code == 0 and "removed 1 cached kernels (2.5 MB)" in out and not entry.exists()


def test_human_bytes():
    assert [_term.human_bytes(n) for n in (0, 999, 1000, 36_508_590, 2_000_000_000)] == [
        "0 B", "999 B", "1.0 kB", "36.5 MB", "2.0 GB"]
