"""The kernels' own CUDA source run on the CPU: transpose_window, transpose_skew, reduce_cols, reduce_fast and
reduce_warp_rows compiled by g++ against tests/host_emu/prelude.h (a thread per CUDA thread, barriers for
blocks and warps, loads checked against the inputs' bytes) and run on odd shapes at every alignment.

The numpy emulators of test_rearrange_window_cpu.py and test_reduce_cpu.py check the formulas; this checks the
C++ that carries them (types, widths, bounds), where no GPU is at hand. Skipped without g++ or the CUDA
headers (vector_types.h, cuda_fp16.h).
"""
from __future__ import annotations

import importlib.util
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelkit.ops.rearrangement._launch import SKEW_TILES, WINDOW_ALIGNED, WINDOW_TILES

HERE = Path(__file__).parent / "host_emu"
CSRC = Path(__file__).parents[1] / "src" / "kernelkit" / "csrc"
CARRIER = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int"}


def _cuda_include() -> Path | None:
    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) / "cu13" / "include" for p in (spec.submodule_search_locations or [])] if spec else []
    roots += [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include", Path("/usr/local/cuda/include")]
    return next((r for r in roots if (r / "vector_types.h").exists() and (r / "cuda_fp16.h").exists()), None)


def _strip_asm(src: str) -> str:
    """Every `asm(...)` / `asm volatile(...)` statement's expression replaced by `(void)0`."""
    out, i, pat = [], 0, re.compile(r"\basm\b(\s+volatile)?\s*\(")
    while m := pat.search(src, i):
        out.append(src[i:m.start()])
        j, depth, in_str = m.end(), 1, False
        while depth:
            c = src[j]
            if in_str:
                j += c == "\\"
                in_str = c != '"'
            elif c == '"':
                in_str = True
            else:
                depth += (c == "(") - (c == ")")
            j += 1
        out.append("(void)0")
        i = j
    return "".join(out + [src[i:]])


HOST_FORMS = {  # the PTX statements whose effect the kernels need
    'asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));':
        "r = (a != a || b != b) ? __int_as_float(0x7fffffff) : (a > b ? a : b);",
    'asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));':
        "r = (a != a || b != b) ? __int_as_float(0x7fffffff) : (a < b ? a : b);",
    'asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));':
        "store16_checked(p, &v);",
    'asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(c.x), "r"(c.y), "r"(c.z), "r"(c.w));':
        "store16_checked(p, &c);",
}


def _host_source(text: str) -> str:
    for ptx, host in HOST_FORMS.items():
        text = text.replace(ptx, host)
    return _strip_asm(text)


def _build_and_run(tmp: Path, kernel_file: str, cases: str, calls: list[tuple[str, str]]) -> str:
    gxx, cuda = shutil.which("g++"), _cuda_include()
    if gxx is None or cuda is None:
        pytest.skip("needs g++ and the CUDA headers")
    inc = tmp / "include"
    inc.mkdir(exist_ok=True)
    for f in (*(CSRC / "include").iterdir(), *(CSRC / kernel_file).parent.glob("*.cuh")):  # and its own headers
        (inc / f.name).write_text(_host_source(f.read_text()))
    (tmp / "kernels.h").write_text(_host_source((CSRC / kernel_file).read_text()))
    main = ['#include "prelude.h"', '#include "kernels.h"', f'#include "{cases}"', "int main() {", "  int ran = 0, fails = 0;"]
    for call, what in calls:
        main.append(f'  {{ const int r = {call}; if (r > 0) {{ printf("FAIL {what}\\n"); ++fails; }} else if (r == 0) ++ran; }}')
    main += ['  printf("%d cases, %d failures\\n", ran, fails);', "  return fails != 0;", "}"]
    (tmp / "main.cpp").write_text("\n".join(main))
    exe = tmp / "main"
    subprocess.run([gxx, "-std=c++20", "-O1", "-pthread", "-w", f"-I{HERE}", f"-I{inc}", f"-I{cuda}", "-o", str(exe),
                    str(tmp / "main.cpp")], check=True, capture_output=True, text=True, timeout=600)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def test_window_transpose_source_on_the_host(tmp_path):
    """transpose_window, each candidate tile and form, a 512-thread tile: odd sides, batches (also with a
    batch stride below a row's), both pointers at several places within 16 bytes."""
    rng = random.Random(7)
    calls = []
    for e, tiles in WINDOW_TILES.items():
        v = 16 // e
        wide = tiles[0].__class__(tiles[0].rows, tiles[0].cols, 512)
        for tile in (*tiles, *([wide] if wide.check_window(e) is None else [])):
            for ia, oa in WINDOW_ALIGNED if tile.threads == 256 else ((False, False),):
                shapes = [(1, 37, 53), (2, 67, 45), (1, 130, 9), (1, 9, 130), (1, 3 * v, 40), (2, 40, 4 * v),
                          (1, 4 * v, 45), (1, tile.rows + 3, tile.cols - 1)]
                for (b, r, c), (io, oo), inner in zip(shapes, [(0, 0), (1, 2), (v - 1, 0), (0, v // 2 + 1)] * 2,
                                                      [False, True] * 4):
                    t = f"{CARRIER[e]}, {tile.rows}, {tile.cols}, {tile.threads}, {str(ia).lower()}, {str(oa).lower()}"
                    calls.append((f"run_transpose<{t}>({b}, {r}, {c}, {io}, {oo}, {rng.randrange(1 << 30)}, "
                                  f"{str(inner and b > 1).lower()})", f"{t} {b}x{r}x{c} offsets {io},{oo}"))
    out = _build_and_run(tmp_path, "rearrangement/transpose_window.cu", "transpose_cases.h", calls)
    general = sum("false, false>" in c for c, _ in calls)  # the aligned forms run only where their promise holds
    assert int(out.split()[-4]) > general, out


def test_skew_transpose_source_on_the_host(tmp_path):
    """transpose_skew, each tile and form: odd sides around a tile's step, a single row and column, batches
    (also with a batch stride below a row's), both pointers at several places within 16 bytes."""
    rng = random.Random(11)
    calls = []
    for e, tiles in SKEW_TILES.items():
        v = 16 // e
        for tile in tiles:
            a = tile.skew_rows(e)
            shapes = [(1, 37, 53), (2, 67, 45), (1, 1, 9), (1, 9, 1), (1, a, tile.cols + 1), (3, a + 1, 2 * v + 1),
                      (1, 2 * a - v + 2, tile.cols - 1), (2, 3 * a + 5, 7)]
            for ia in (False, True):
                for (b, r, c), (io, oo), inner in zip(shapes, [(0, 1), (1, 2), (v - 1, 3), (0, v - 1)] * 2,
                                                      [False, True] * 4):
                    if ia:  # aligned input rows: whole vectors a row, read from a 16-byte boundary
                        c, io = -(-c // v) * v, 0
                    t = f"{CARRIER[e]}, {tile.rows}, {tile.cols}, {tile.threads}, {str(ia).lower()}"
                    calls.append((f"run_skew<{t}>({b}, {r}, {c}, {io}, {oo}, {rng.randrange(1 << 30)}, "
                                  f"{str(inner and b > 1).lower()})", f"skew {t} {b}x{r}x{c} offsets {io},{oo}"))
    out = _build_and_run(tmp_path, "rearrangement/transpose_window.cu", "transpose_cases.h", calls)
    assert int(out.split()[-4]) == len(calls), out  # every case meets its form's promise


def test_reduction_sources_on_the_host(tmp_path):
    """reduce_cols (both forms) at every phase with split rows, also over rows read in groups with
    reduce_cols_fold after it (remainder rows, outer slabs); reduce_fast at the rows rule's blocks with
    split rows, reduce_warp_rows; sum and NaN-propagating max; fp32, fp16, bf16."""
    rng = random.Random(8)
    calls = []
    for t, v in (("float", 4), ("__half", 8), ("__nv_bfloat16", 8)):
        for op in ("kk::SumOp", "kk::MaxOp"):
            for window in ("true", "false"):
                for (outer, r, inner), off, rs in (((1, 37, 300), 0, 1), ((2, 100, 31 * v + 1), 1, 3), ((3, 17, 5), v - 1, 2),
                                                   ((1, 64, 2 * 31 * v), 3, 1), ((2, 21, 3 * v), 0, 3), ((1, 50, 32 * v), v, 2)):
                    calls.append((f"run_cols<{t}, {op}, {window}>({outer}, {r}, {inner}, {off}, {rs}, {rng.randrange(1 << 30)})",
                                  f"cols {t} {op} {window} {outer}x{r}x{inner} off {off} split {rs}"))
                # rows read in groups (g = 16 / gcd(inner * size, 16)): prime and odd widths, remainder rows
                for (outer, r, inner), off, rs in (((1, 8 * 13 + 5, 127), 0, 3), ((1, 4 * 9 + 3, 37), 1, 2),
                                                   ((2, 16 * 5, 1021), v, 2), ((1, 8 * 7 + 7, 33), v - 1, 1)):
                    calls.append((f"run_grouped<{t}, {op}, {window}>({outer}, {r}, {inner}, {off}, {rs}, "
                                  f"{rng.randrange(1 << 30)})", f"grouped {t} {op} {window} {outer}x{r}x{inner} off {off}"))
            for block in (128, 256, 512, 0):
                for rows, len_, off, bpr in ((3, 2049, 0, 1), (2, 8197, 3, 1), (2, 20000, 1, 3), (5, 511, 3, 1), (9, 1000, 0, 1)):
                    if block == 0 and len_ > 2048:
                        continue
                    calls.append((f"run_rows<{t}, {op}, {block}>({rows}, {len_}, {off}, {bpr}, {rng.randrange(1 << 30)})",
                                  f"rows {t} {op} {block} {rows}x{len_} off {off} split {bpr}"))
    out = _build_and_run(tmp_path, "reduction/reduce.cu", "reduce_cases.h", calls)
    assert int(out.split()[-4]) > sum("true>" in c for c, _ in calls), out  # the aligned column form: where it may
