"""The element-wise ops with two GPUs: each runs on its tensors' device whatever device is current (the
plain call's lane too), and tensors on two devices raise an error naming both."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from gpu_helpers import assert_close, random_input

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")]


def _on(dev: int, make):
    with torch.cuda.device(dev):
        return make()


@pytest.mark.parametrize("op", ["gelu", "relu"])
def test_unary_runs_on_the_inputs_device(op):
    for v in kernelkit.ladder(op):
        if v.unavailable():  # headers missing here
            continue
        for dtype in v.dtypes:
            for offset in (0, 1) if not v.align else (0,):
                x = _on(1, lambda: random_input(4097, dtype, offset))
                with torch.cuda.device(0):
                    out = getattr(kernelkit, op)(x, variant=v.name)
                assert out.device == x.device
                assert_close(out, getattr(reference, op)(x), dtype, f"{op} {v.name} {dtype} +{offset}")


def test_add_and_saxpy_run_on_the_inputs_device():
    for dtype in (torch.float32, torch.float16):
        for offsets in ((0, 0), (1, 1), (1, 2)):
            a = _on(1, lambda: random_input(4097, dtype, offsets[0]))
            b = _on(1, lambda: random_input(4097, dtype, offsets[1]))
            for v in kernelkit.ladder("add"):
                with torch.cuda.device(0):
                    out = kernelkit.add(a, b, variant=v.name)
                assert out.device == a.device
                assert_close(out, reference.add(a, b), dtype, f"add {v.name} {dtype} {offsets}")
            for variant in [v.name for v in kernelkit.ladder("saxpy")] + ["serial"]:
                y = b.clone()
                want = reference.saxpy(0.5, a, y)
                with torch.cuda.device(0):
                    kernelkit.saxpy(0.5, a, y, variant=variant)
                assert_close(y, want, dtype, f"saxpy {variant} {dtype} {offsets}")


def test_image_ops_run_on_the_inputs_device():
    img = _on(1, lambda: torch.randint(0, 256, (33, 65, 4), dtype=torch.uint8, device="cuda"))
    gray = _on(1, lambda: torch.randint(0, 256, (4097,), dtype=torch.uint8, device="cuda"))
    with torch.cuda.device(0):
        inverted = kernelkit.invert_colors(img)
        binary = kernelkit.binarize(gray, 100)
        normalized = kernelkit.normalize_image(img, 0.5, 0.25)
    assert inverted.device == binary.device == normalized.device == img.device
    assert torch.equal(inverted, reference.invert_colors(img).to(torch.uint8))
    assert torch.equal(binary, reference.binarize(gray, 100).to(torch.uint8))
    assert_close(normalized, reference.normalize_image(img, 0.5, 0.25), torch.float16, "normalize_image")


def test_lanes_run_on_the_inputs_device():
    """The plain call's lane is per device: made on each device by its first call there, it launches on
    the tensors' device whatever device is current, and never serves tensors on two devices."""
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    for dev, current in ((1, 0), (0, 1), (1, 1)):
        a = _on(dev, lambda: random_input(4097, torch.float32, 1))
        b = _on(dev, lambda: random_input(4097, torch.float32, 2))
        img = _on(dev, lambda: torch.randint(0, 256, (33, 65, 4), dtype=torch.uint8, device="cuda"))
        for _ in range(2):  # the checked path (first time on the device), then the lane
            with torch.cuda.device(current):
                added = kernelkit.add(a, b)
                y = b.clone()
                kernelkit.saxpy(0.5, a, y)
                relu = kernelkit.relu(a)
                inverted = kernelkit.invert_colors(img)
                binary = kernelkit.binarize(img, 100)
            assert added.device == relu.device == inverted.device == binary.device == a.device
            assert_close(added, reference.add(a, b), torch.float32, f"add on cuda:{dev} from cuda:{current}")
            assert_close(y, reference.saxpy(0.5, a, b), torch.float32, f"saxpy on cuda:{dev} from cuda:{current}")
            assert_close(relu, reference.relu(a), torch.float32, f"relu on cuda:{dev} from cuda:{current}")
            assert torch.equal(inverted, reference.invert_colors(img).to(torch.uint8))
            assert torch.equal(binary, reference.binarize(img, 100).to(torch.uint8))
    x0 = torch.randn(100, device="cuda:0")
    x1 = torch.randn(100, device="cuda:1")
    with pytest.raises(ValueError, match="b is on cuda:1 but a is on cuda:0"):
        kernelkit.add(x0, x1)
    with pytest.raises(ValueError, match="y is on cuda:0 but x is on cuda:1"):
        kernelkit.saxpy(2.0, x1, x0)


def test_tensors_on_two_devices_raise_naming_both():
    x0 = torch.randn(100, device="cuda:0")
    x1 = torch.randn(100, device="cuda:1")
    with pytest.raises(ValueError, match="b is on cuda:1 but a is on cuda:0"):
        kernelkit.add(x0, x1)
    with pytest.raises(ValueError, match="b is on cuda:0 but a is on cuda:1"):
        kernelkit.add(x1, x0)
    with pytest.raises(ValueError, match="y is on cuda:1 but x is on cuda:0"):
        kernelkit.saxpy(2.0, x0, x1)
    with pytest.raises(ValueError, match="out is on cuda:1, expected cuda:0"):
        kernelkit.add(x0, x0, out=x1)
    with pytest.raises(ValueError, match="out is on cuda:1, expected cuda:0"):
        kernelkit.gelu(x0, out=x1)
    with pytest.raises(ValueError, match="out is on cuda:0, expected cuda:1"):
        kernelkit.relu(x1, out=x0)
