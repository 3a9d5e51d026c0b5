"""Several GPUs: every op runs on the device of its tensors, whatever device is current.

Needs two CUDA devices (skipped otherwise): every op on the device that is not current, the two
devices alternately (each with its own loaded kernels and plans), inputs on two devices refused with
both named, and ops inside a two-process torch.distributed (NCCL) step.
"""
from __future__ import annotations

import os

import pytest
import torch

import kernelkit

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                                                  reason="needs two CUDA devices")]

# Odd sizes, one per op; every other argument comes from the op's benchmark example.
SHAPES = {
    "gelu": (4097,), "relu": (4097,), "add": (33, 129), "saxpy": (4099,), "softmax": (37, 1031),
    "layer_norm": (29, 4100), "rms_norm": (29, 4100), "transpose": (257, 131), "permute": (3, 5, 33, 17),
    "sum": (1001, 77), "mean": (1001, 77), "amax": (1001, 77), "amin": (1001, 77),
    "invert_colors": (31, 33, 4), "binarize": (61, 67), "normalize_image": (31, 33, 3),
    "matmul": (33, 65, 17), "linear": (33, 65, 17),
    "filter2d": (37, 41), "gaussian_blur": (37, 41), "box_filter": (37, 41), "sobel": (37, 41),
    "median_blur": (37, 41), "max_pool2d": (2, 3, 37, 41), "avg_pool2d": (2, 3, 37, 41), "conv2d": (2, 8, 13, 11),
}


def _inputs(name: str, device: int):
    op = kernelkit.get_op(name)
    with torch.cuda.device(device):
        torch.manual_seed(1234 + device)
        args, kwargs = op.example(SHAPES[name], op.bench_dtypes[0])
    return op, args, kwargs


def _clone(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _check(op, args, kwargs, device: int):
    expected = op.torch_fn(*_clone(args), **kwargs)
    got = op.call(*_clone(args), **kwargs)
    assert got.device == torch.device("cuda", device), f"{op.name}: result on {got.device}, expected cuda:{device}"
    torch.cuda.synchronize(device)
    # 16-bit results of torch and of kernelkit may round the same float32 value one unit apart
    tol = 2e-3 if got.element_size() >= 4 or got.dtype == torch.uint8 else 1e-2
    atol = 1.0 if got.dtype == torch.uint8 else tol
    torch.testing.assert_close(got.double(), expected.double(), rtol=tol, atol=atol, msg=lambda m: f"{op.name}: {m}")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_op_on_the_device_that_is_not_current(name):
    assert set(SHAPES) == set(kernelkit.ops()), "every op needs a shape here"
    torch.cuda.set_device(0)
    op, args, kwargs = _inputs(name, 1)
    _check(op, args, kwargs, 1)
    assert torch.cuda.current_device() == 0, f"{name} left the current device changed"
    # the current device still works for torch and for us afterwards
    x = torch.randn(1000, device="cuda:0")
    torch.testing.assert_close(kernelkit.relu(x), torch.relu(x))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_two_devices_alternately(name):
    for current in (0, 1):
        torch.cuda.set_device(current)
        for _ in range(2):
            for device in (0, 1):
                op, args, kwargs = _inputs(name, device)
                _check(op, args, kwargs, device)
    torch.cuda.set_device(0)


def test_inputs_on_two_devices_are_refused_naming_both():
    a = torch.randn(100, device="cuda:0")
    b = torch.randn(100, device="cuda:1")
    with pytest.raises(ValueError, match=r"cuda:1.*cuda:0|cuda:0.*cuda:1"):
        kernelkit.add(a, b)
    x = torch.randn(4, 64, device="cuda:1")
    w = torch.randn(64, device="cuda:0")
    with pytest.raises(ValueError, match=r"cuda:1.*cuda:0|cuda:0.*cuda:1"):
        kernelkit.layer_norm(x, (64,), w)
    with pytest.raises(ValueError, match=r"cuda:1.*cuda:0|cuda:0.*cuda:1"):
        kernelkit.gelu(x, out=torch.empty(4, 64, device="cuda:0"))


def _distributed_step(rank: int, world: int, init_file: str, errors) -> None:
    import torch.distributed as dist

    try:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world)
        torch.manual_seed(rank)
        x = torch.randn(64, 4099, device="cuda")
        w = torch.randn(4099, device="cuda")
        ours = kernelkit.layer_norm(kernelkit.gelu(x), (4099,), w)
        ref = torch.nn.functional.layer_norm(torch.nn.functional.gelu(x, approximate="tanh"), (4099,), w)
        dist.all_reduce(ours)
        dist.all_reduce(ref)
        s = kernelkit.softmax(ours, dim=-1)
        torch.testing.assert_close(s, torch.softmax(ref, dim=-1), rtol=1e-3, atol=1e-4)
        dist.barrier()
        dist.destroy_process_group()
    except Exception as exc:  # reported to the parent: a child's assertion would only show as an exit code
        errors.put(f"rank {rank}: {exc!r}")
        raise


def test_ops_inside_a_two_process_nccl_step(tmp_path):
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if not dist.is_nccl_available():
        pytest.skip("torch built without NCCL")
    ctx = mp.get_context("spawn")
    errors = ctx.SimpleQueue()
    init_file = str(tmp_path / "store")
    procs = [ctx.Process(target=_distributed_step, args=(r, 2, init_file, errors)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    msgs = []
    while not errors.empty():
        msgs.append(errors.get())
    assert not msgs, "\n".join(msgs)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]


if __name__ == "__main__":  # pragma: no cover
    os.sys.exit(pytest.main([__file__, "-q"]))
