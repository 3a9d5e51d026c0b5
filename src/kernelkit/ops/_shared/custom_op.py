"""Defining an op's torch.library custom op, its fake, and the eager bypass, in one call.

Each op writes its result into a given ``out`` through one function (``into``). Under torch.compile
the call goes through the registered custom op (so graphs see an opaque op that mutates ``out``);
in eager mode ``into`` runs directly, skipping the dispatcher: the launch is the only work left.
"""
from __future__ import annotations

from typing import Callable

import torch


def out_op(name: str, into: Callable[..., None], mutates: tuple[str, ...] = ("out",)) -> Callable[..., None]:
    """Register ``into`` (fully type-annotated, returning None) as ``torch.ops.kernelkit.<name>`` with a
    fake that does nothing, and return the function that an op's public entry calls with the same
    arguments: ``into`` itself in eager mode, the custom op while torch.compile traces."""
    op = torch.library.custom_op(f"kernelkit::{name}", into, mutates_args=mutates)
    op.register_fake(_no_result)
    compiling = torch.compiler.is_compiling

    def run(*args) -> None:
        if compiling():
            op(*args)
        else:
            into(*args)

    run.__name__ = run.__qualname__ = f"{name}_dispatch"
    run.custom_op = op
    return run


def _no_result(*args, **kwargs) -> None:
    return None
