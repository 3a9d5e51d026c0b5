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
        launch(k, 1, 4096, x.data_ptr(), x.data_ptr(), 10, name=NAME)  # 4096 threads > 1024 per block


def test_kernel_fault_surfaces_with_sync_env():
    # a fault poisons the CUDA context, so it runs in a child process
    code = textwrap.dedent(f"""
        import torch
        from kernelkit.runtime import get_kernel, launch, KernelLaunchError
        k = get_kernel("elementwise/gelu.cu", "{NAME}", device_index=0)
        try:
            launch(k, 1, 32, 16, 16, 1 << 20, name="{NAME}")  # address 16: not device memory
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
