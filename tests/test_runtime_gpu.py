"""Runtime behaviour that needs a GPU: launch errors name the kernel, faults surface with KERNELKIT_SYNC."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kernelkit.runtime import KernelLaunchError, get_kernel, launch

pytestmark = pytest.mark.gpu
NAME = "kk::unary_scalar<float, kk::GeluTanh>"


def test_bad_launch_config_names_the_kernel():
    k = get_kernel("elementwise/gelu.cu", NAME, device_index=torch.cuda.current_device())
    x = torch.randn(10, device="cuda")
    with pytest.raises(KernelLaunchError, match="unary_scalar"):
        launch(k, 1, 4096, x.data_ptr(), x.data_ptr(), 10, name=NAME, device_index=x.get_device())  # 4096 threads > 1024 per block


def test_kernel_fault_surfaces_with_sync_env():
    # a fault poisons the CUDA context, so it runs in a child process
    code = textwrap.dedent(f"""
        import torch
        from kernelkit.runtime import get_kernel, launch, KernelLaunchError
        k = get_kernel("elementwise/gelu.cu", "{NAME}", device_index=0)
        try:
            launch(k, 1, 32, 16, 16, 1 << 20, name="{NAME}", device_index=0)  # address 16: not device memory
        except KernelLaunchError as e:
            print("CAUGHT", e)
    """)
    env = dict(os.environ, KERNELKIT_SYNC="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "CAUGHT kernel kk::unary_scalar" in r.stdout, r.stdout + r.stderr


def test_hot_call_does_not_compile_or_load_again(monkeypatch):
    import importlib

    import kernelkit
    from kernelkit.runtime import compiler

    # the module, not the function of the same name that kernelkit.runtime re-exports
    launch_mod = importlib.import_module("kernelkit.runtime.launch")

    x = torch.randn(1000, device="cuda")
    kernelkit.gelu(x)

    def boom(*a, **k):
        raise AssertionError("compiled or loaded on a hot call")

    monkeypatch.setattr(compiler, "_nvrtc", boom)
    monkeypatch.setattr(launch_mod, "compile_source", boom)
    for _ in range(3):
        kernelkit.gelu(x)
    torch.cuda.synchronize()


def test_packed_arguments_reach_the_kernel(tmp_path):
    """The plain launch packs its arguments as the kernel's parameter struct: mixed widths and
    alignments arrive intact, on the current device and on another."""
    import numpy as np

    src = tmp_path / "echo_args.cu"
    src.write_text("__global__ void echo_args(long long* out, int a, float b, long long c, unsigned char d, double e,\n"
                   "                          unsigned int f) {\n"
                   "  out[0] = a; out[1] = (long long)(b * 4.0f); out[2] = c; out[3] = d; out[4] = (long long)(e * 8.0);\n"
                   "  out[5] = f;\n"
                   "}\n")
    for dev in range(torch.cuda.device_count()):
        k = get_kernel(str(src), "echo_args", device_index=dev)
        out = torch.zeros(6, dtype=torch.int64, device=f"cuda:{dev}")
        launch(k, 1, 1, out.data_ptr(), np.int32(-7), np.float32(2.25), -(1 << 40), np.uint8(200), 1.125,
               np.uint32(4000000000), name="echo_args", device_index=dev)
        assert out.tolist() == [-7, 9, -(1 << 40), 200, 9, 4000000000]


def test_fast_launch_is_in_use_where_built():
    """Where the C shim was built, plain launches take it (the host-cost figures assume it)."""
    import importlib

    launch_mod = importlib.import_module("kernelkit.runtime.launch")
    try:
        import kernelkit.runtime._fastlaunch  # noqa: F401
    except ImportError:
        pytest.skip("the C launch shim is not built here")
    assert launch_mod._fast_launch is not None


def test_plain_calls_give_the_same_bits_with_and_without_the_torch_bridge():
    """The lanes read tensors through the torch bridge when it is built (kernelkit warmup), else through
    Python calls: both must launch the same thing. The bridge is built here if it is not."""
    import kernelkit
    from kernelkit.runtime import lanes, torch_bridge

    if not lanes.AVAILABLE:
        pytest.skip("no C launch shim")
    if torch_bridge.compiler() is None:
        pytest.skip("no C++ compiler for the bridge")
    torch_bridge.build()
    shim = lanes._shim
    torch.manual_seed(5)
    x = torch.randn(4099, device="cuda", dtype=torch.float16)[1:]  # misaligned like a lane must handle
    y = torch.randn(4098, device="cuda", dtype=torch.float16)
    s = torch.randn(37, 1031, device="cuda")
    calls = {
        "gelu": lambda: kernelkit.gelu(x), "add": lambda: kernelkit.add(x, y), "softmax": lambda: kernelkit.softmax(s, dim=-1),
        "transpose": lambda: kernelkit.transpose(s, 0, 1), "sum": lambda: kernelkit.sum(s),
    }
    results = {}
    for mode in ("python", "bridge"):
        if mode == "bridge":
            assert lanes.use_bridge(), "built but not loaded"
        else:
            shim.use_bridge(None)
        for _ in range(3):  # the first call makes the lane, the later ones run it
            results[mode] = {k: f() for k, f in calls.items()}
    for k in calls:
        assert torch.equal(results["python"][k], results["bridge"][k]), k
    torch.testing.assert_close(results["bridge"]["gelu"].float(), torch.nn.functional.gelu(x.float(), approximate="tanh"),
                               rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(results["bridge"]["add"], x + y)
