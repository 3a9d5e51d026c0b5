"""The torch bridge (runtime/torch_bridge.cpp): built against the installed torch, it reads what the lanes
read of a tensor and allocates their outputs exactly as torch's Python methods would."""
import pytest
import torch

from kernelkit.runtime import torch_bridge


@pytest.fixture(scope="module")
def bridge(tmp_path_factory):
    import os
    import sysconfig

    if torch_bridge.compiler() is None:
        pytest.skip("no C++ compiler: the lanes keep their Python calls")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        pytest.skip("no Python headers (python3-dev): the lanes keep their Python calls")

    with pytest.MonkeyPatch.context() as mp:  # the cache the tests' own autouse fixture points at
        if "KERNELKIT_CACHE_DIR" not in os.environ:
            mp.setenv("KERNELKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kk-cache"))
        torch_bridge.build()
        module = torch_bridge.load()
    assert module is not None, f"built but does not load: {torch_bridge.path()}"
    return module


def _cases():
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    return {
        "contiguous": base, "transposed": base.t(), "offset view": base.view(-1)[3:], "column": base[:, 2],
        "0-d": torch.tensor(2.5), "empty": torch.empty(0, 7), "int8": torch.ones(5, 3, dtype=torch.int8),
        "bf16 slice": torch.ones(8, 9, dtype=torch.bfloat16)[1:, :8], "expanded": torch.ones(1, 4).expand(3, 4),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_facts_are_what_the_tensor_methods_say(bridge, name):
    x = _cases()[name]
    got = bridge.facts(x)
    assert got == {"device": x.get_device(), "contiguous": x.is_contiguous(), "numel": x.numel(),
                   "data_ptr": x.data_ptr()}, name


def test_a_tensor_without_data_is_no_lanes_input(bridge):
    seen = []

    def probe(t):
        seen.append(bridge.facts(t))
        return t * 2

    torch.func.vmap(probe)(torch.ones(3, 4))
    assert seen and seen[0]["contiguous"] is False and seen[0]["data_ptr"] == 0


@pytest.mark.parametrize("name", list(_cases()))
def test_new_outputs_are_contiguous_with_the_inputs_dtype(bridge, name):
    x = _cases()[name]
    y = bridge.empty_like(x)
    assert (y.shape, y.dtype, y.device, y.is_contiguous(), y.requires_grad) == (x.shape, x.dtype, x.device, True, False)
    assert y.data_ptr() != x.data_ptr() or x.numel() == 0
    z = bridge.new_empty(x, (2, 3))
    assert (z.shape, z.dtype, z.device, z.is_contiguous()) == ((2, 3), x.dtype, x.device, True)
    with pytest.raises(TypeError):
        bridge.new_empty(x, [2, 3])
    with pytest.raises(TypeError):
        bridge.facts("x")


def test_the_shim_takes_only_a_bridge_capsule(bridge):
    shim = pytest.importorskip("kernelkit.runtime._fastlaunch", reason="no C launch shim")
    from kernelkit.runtime import lanes

    other = shim.make_fixed(0x1000, (1, 1, 1), (32, 1, 1), 0, 0, (0, 1 << 33), 0, 1, None, "k")  # a lane capsule
    try:
        assert shim.use_bridge(bridge.BRIDGE) is None
        with pytest.raises(ValueError):
            shim.use_bridge(other)
        with pytest.raises(ValueError):
            shim.use_bridge(object())
        assert shim.use_bridge(None) is None
    finally:
        shim.use_bridge(None)
        lanes.use_bridge()  # as the runtime set it at import


def test_a_build_is_kept_per_torch_and_source(bridge):
    where, seconds = torch_bridge.build()
    assert seconds == 0.0 and where == torch_bridge.path() and where.exists()
    assert torch.__version__.replace("+", "_") in where.parent.name


def test_without_a_compiler_the_build_says_so(monkeypatch):
    monkeypatch.setattr(torch_bridge.shutil, "which", lambda name: None)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(torch_bridge, "path", lambda: torch_bridge.Path("/nonexistent/kk/_torch_bridge.so"))
    with pytest.raises(torch_bridge.BridgeBuildError, match="no C\\+\\+ compiler"):
        torch_bridge.build()
