"""The judge without a GPU: problems and their references, templates, building planted solutions with
nvcc (the compile verdicts), the comparison that names the first wrong element, the command line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelkit.judge import PROBLEMS, compile_solution, get_problem, template
from kernelkit.judge.problems import Buffer, make_inputs
from kernelkit.judge.runner import Failed, _compare

PLANTED = Path(__file__).parent / "judge_solutions"


def _nvcc_or_skip():
    from kernelkit.analyze.tools import ToolNotFoundError, find_tool

    try:
        find_tool("nvcc")
    except ToolNotFoundError:
        pytest.skip("no nvcc (pip install -e '.[judge]')")


def test_the_problems_the_issue_names_exist():
    assert {"vector_add", "matrix_add", "relu", "gelu", "color_inversion", "matrix_transpose", "reduction",
            "softmax", "layer_norm", "matrix_multiplication", "conv2d"} <= set(PROBLEMS)
    with pytest.raises(KeyError, match="did you mean 'softmax'"):
        get_problem("sofmax")


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_each_reference_gives_every_output_its_shape(name):
    """On CPU, in float64: the reference of each checked case returns exactly the problem's outputs, of
    their declared shapes, from inputs of their declared shapes and dtypes."""
    p = PROBLEMS[name]
    gen = torch.Generator(device="cpu").manual_seed(0)
    outs = {b.name: b for b in p.buffers if b.role in ("out", "inout")}
    for sizes in p.cases[:4]:
        inputs = make_inputs(p, sizes, gen)
        for b in p.buffers:
            if b.role != "out":
                assert inputs[b.name].shape == b.shape(sizes) and inputs[b.name].dtype == b.dtype
        got = p.reference(sizes, **{k: (v if v.dtype == torch.uint8 else v.double()) for k, v in inputs.items()})
        assert set(got) == set(outs)
        for k, v in got.items():
            assert tuple(v.shape) == outs[k].shape(sizes), (name, sizes, k)


def test_references_agree_with_torch():
    gen = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(5, 7, generator=gen, dtype=torch.float64)
    assert torch.allclose(PROBLEMS["gelu"].reference({}, input=x)["output"],
                          torch.nn.functional.gelu(x, approximate="tanh"))
    g, b = torch.randn(7, dtype=torch.float64), torch.randn(7, dtype=torch.float64)
    assert torch.allclose(PROBLEMS["layer_norm"].reference({}, input=x, gamma=g, beta=b)["output"],
                          torch.nn.functional.layer_norm(x, (7,), g, b))
    img = torch.randint(0, 256, (2, 3, 4), dtype=torch.uint8)
    inv = PROBLEMS["color_inversion"].reference({}, image=img)["image"]
    assert torch.equal(inv[..., 3], img[..., 3]) and torch.equal(inv[..., :3], 255 - img[..., :3])


def test_compare_names_the_first_wrong_element_and_unwritten_ones():
    p, sizes = PROBLEMS["vector_add"], {"N": 5}
    want = {"C": torch.arange(5, dtype=torch.float64)}
    _compare(p, sizes, {"C": want["C"].float()}, want, "case")  # right: no error
    got = want["C"].float().clone()
    got[3] = 7.0
    with pytest.raises(Failed, match=r"C\[3\] is 7.0, expected 3.0") as e:
        _compare(p, sizes, {"C": got}, want, "case")
    assert e.value.status == "Wrong Answer" and e.value.details["mismatches"] == 1
    got[3:] = float("nan")
    with pytest.raises(Failed, match="never written"):
        _compare(p, sizes, {"C": got}, want, "case")


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_template_builds_and_exports_solve(name, tmp_path):
    _nvcc_or_skip()
    src = tmp_path / f"{name}.cu"
    src.write_text(template(PROBLEMS[name]))
    verdict, lib = compile_solution(name, src, "sm_80")
    assert verdict.status == "Compiled" and lib is not None and lib.is_file(), verdict.log


def test_compile_verdicts_of_planted_solutions():
    _nvcc_or_skip()
    v, lib = compile_solution("vector_add", PLANTED / "does_not_compile.cu", "sm_90")
    assert v.status == "Compile Error" and lib is None and "error" in v.log
    v, lib = compile_solution("vector_add", PLANTED / "cpp_name.cu", "sm_90")
    assert v.status == "Compile Error" and 'extern "C"' in v.log
    for f in sorted(PLANTED.glob("*.cu")):
        if f.stem not in ("does_not_compile", "cpp_name"):
            v, lib = compile_solution("vector_add", f, "sm_90")
            assert v.status == "Compiled", (f.name, v.log)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "kernelkit", "judge", *args], capture_output=True, text=True,
                          timeout=600)


def test_the_command_line():
    res = _cli("--list")
    assert res.returncode == 0 and all(n in res.stdout for n in PROBLEMS) and 'extern "C" void solve' in res.stdout
    res = _cli("--template", "softmax")
    assert res.returncode == 0 and "void solve(const float* input, float* output, int rows, int cols)" in res.stdout
    for args, text in ((("nope", "x.cu"), "no judge problem 'nope'"), (("softmax", "missing.cu"), "no file"),
                       (("softmax",), "name a problem and a solution file"),
                       (("--template", "sofmax"), "did you mean 'softmax'")):
        res = _cli(*args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and text in res.stderr, (args, res.stderr)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the build-only verdict of a machine without a GPU")
def test_without_a_gpu_the_judge_builds_and_says_it_did_not_run():
    _nvcc_or_skip()
    res = _cli("vector_add", str(PLANTED / "correct.cu"))
    assert res.returncode == 0 and "Compiled" in res.stdout and "not run" in res.stdout, res.stdout + res.stderr
    res = _cli("vector_add", str(PLANTED / "does_not_compile.cu"))
    assert res.returncode == 1 and "Compile Error" in res.stdout


def test_buffers_declare_c_types():
    b = Buffer("x", torch.uint8, lambda s: (1,), "inout")
    assert b.ctype == "unsigned char*" and Buffer("y", torch.float32, lambda s: (1,)).ctype == "const float*"
