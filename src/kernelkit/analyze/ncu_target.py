"""The process ncu profiles: `python -m kernelkit.analyze.ncu_target op variant shape dtype [k=v ...]`.

The first call compiles and loads the rung (ncu skips it); the second is the one measured.
"""
import sys

import torch

from kernelkit.bench.ladder_run import parse_shape
from kernelkit.ladder import get_op


def main(argv: list[str]) -> None:
    op_name, variant, shape, dtype = argv[:4]
    params = dict(a.split("=", 1) for a in argv[4:])
    op = get_op(op_name)
    args, kwargs = op.example(parse_shape(shape), getattr(torch, dtype))
    for _ in range(2):
        op.call(*args, variant=variant, **kwargs, **params)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1:])
