"""Shared pieces of the norm GPU tests (test_norm_gpu.py, test_norm_cluster_gpu.py): the dtypes, the call
and its float64 reference, the device's compute capability and default configuration, the weight/bias check."""
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops._shared.launch_rules import compute_capability
from kernelkit.ops.reduction import norm
from kernelkit.ops.reduction._rows import ALIGNED
from gpu_helpers import assert_close, poisoned_like, random_input

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def call(op, x, n, w, b, out, variant, eps=1e-5):
    if op == "layer_norm":
        return kernelkit.layer_norm(x, (n,), w, b, eps, out=out, variant=variant)
    return kernelkit.rms_norm(x, (n,), w, eps, out=out, variant=variant)


def ref(op, x, n, w, b, eps=1e-5):
    return reference.layer_norm(x, (n,), w, b, eps) if op == "layer_norm" else reference.rms_norm(x, (n,), w, eps)


def _sm() -> int:
    return compute_capability(torch.cuda.current_device())


def _check_weight_bias_combinations(x, len_: int, dtype, label: str, config=None) -> None:
    """layer_norm of x's rows with every weight/bias combination and rms_norm with a weight, each into a
    poisoned output, against float64 (config: forced, else the default dispatch). The weight's spread is 1: with
    rows whose mean is 20x their spread, the float32 mean alone is off by up to half an ulp of it (4.8e-7 at
    10), so x-hat by up to 1e-6 in any float32 kernel; a weight of spread 3 (up to ~15) carries that past
    float32's 1e-5 absolute tolerance on outputs near 0."""
    w, b = random_input(len_, dtype, scale=1.0), random_input(len_, dtype)
    for wb in ((w, b), (w, None), (None, b), (None, None)):
        got = kernelkit.layer_norm(x, (len_,), *wb, out=poisoned_like(x), config=config)
        assert_close(got, reference.layer_norm(x, (len_,), *wb), dtype,
                     f"{label} weight={wb[0] is not None} bias={wb[1] is not None}")
    got = kernelkit.rms_norm(x, (len_,), w, out=poisoned_like(x), config=config)
    assert_close(got, reference.rms_norm(x, (len_,), w), dtype, f"{label} rms_norm")


def _chosen(dtype, len_, form=ALIGNED):
    """What the default dispatch launches on this device."""
    return norm.config_for("auto", dtype, len_, form=form, sm=_sm())
