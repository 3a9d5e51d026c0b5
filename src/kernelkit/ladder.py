"""Ladders as data: every op's variants, from the naive kernel to the fastest, as records.

Dispatch (``variant=``), the CLI (`kernelkit ladder`, `kernelkit inspect`), the tests and the
benchmarks all read these records, so the list of rungs exists in one place only.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Kernel:
    """One compiled instantiation of a variant, with what its SASS must show.

    ``load_bits`` / ``store_bits``: the width of the main loop's global accesses (LDG/STG), or None
    where the variant claims nothing. ``tensor_core``: the SASS mnemonic prefix the variant relies
    on (e.g. "HMMA", "HGMMA"), or None. ``spills``: whether local-memory traffic is allowed.
    ``min_sm`` / ``sass``: an arch-specific kernel (claims checked from that SM version on) and the
    opcodes its technique shows in the SASS.
    """

    source: str
    name: str
    load_bits: int | None = None
    store_bits: int | None = None
    tensor_core: str | None = None
    spills: bool = False
    block: int = 256
    arch_suffix: str = ""
    min_sm: int = 0  # compiled for every arch, launched (and its claims held) from this SM version on
    sass: tuple[str, ...] = ()  # SASS opcode prefixes the kernel relies on (e.g. "UBLKCP": bulk copies)
    dyn_shared: int = 0  # bytes of dynamic shared memory at launch (the most it asks for): occupancy


@dataclass(frozen=True)
class Variant:
    """One rung of a ladder.

    ``kernels(dtype, **params)`` lists the instantiations this rung launches for an input dtype (all of
    them, e.g. an aligned and a misaligned form). ``bytes_moved(*args, **kwargs)`` and
    ``flops(*args, **kwargs)`` are its cost model for the op's arguments; a rung that leaves them
    None gets the op's (the least any implementation must move / compute) when registered, and a
    rung that knowingly moves more (a multi-pass softmax, say) states its own.
    """

    name: str
    technique: str
    dtypes: tuple[torch.dtype, ...]
    kernels: Callable[..., tuple[Kernel, ...]]
    align: int = 0  # byte alignment the variant needs of every data pointer (0: none)
    default: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    bytes_moved: Callable[..., int] | None = None
    flops: Callable[..., int] | None = None

    def supports(self, dtype: torch.dtype) -> bool:
        return dtype in self.dtypes

    def unavailable(self) -> str | None:
        """Why this rung cannot be built on this machine (its kernels need headers that are missing here:
        the CuTe rungs without the ``cute`` extra), or None. Such a rung stays in the ladder, listed with
        the reason by `kernelkit ladder` and `kernelkit inspect`; running it raises HeadersNotFoundError."""
        return self._unavailable

    @functools.cached_property
    def _unavailable(self) -> str | None:  # once a record: a named rung's every call asks
        from .runtime.cute_headers import unavailable

        return next(filter(None, (unavailable(k.source) for k in self.kernels(self.dtypes[0]))), None)


def kind_variants(rungs: Sequence[tuple[str, str]], kernels: Callable[[str, torch.dtype], tuple[Kernel, ...]],
                  *, default: str = "fast", dtypes: tuple[torch.dtype, ...] = FLOAT_DTYPES) -> tuple[Variant, ...]:
    """The ladder of an op whose rungs are kernel kinds, in order: a Variant per (name, technique) with
    params {"kind": name} (what the op's launch code dispatches on) and ``kernels(name, dtype)`` as its
    instantiations; ``default`` names the default rung."""
    return tuple(Variant(name=n, technique=t, dtypes=dtypes, kernels=lambda dtype, _k=n, **_p: kernels(_k, dtype),
                         default=n == default, params={"kind": n}) for n, t in rungs)


@dataclass(frozen=True, eq=False)  # eq=False keeps a __dict__-backed identity: cached_property works
class Op:
    """An operator: its public function, ladder, cost model and how to benchmark it.

    ``bytes_moved(*args, **kwargs)`` / ``flops(*args, **kwargs)`` take the arguments of ``call`` and give
    the least bytes (read + written) and operations any implementation needs. ``example(shape,
    dtype)`` builds benchmark arguments ``(args, kwargs)`` on the current CUDA device; ``torch_fn``
    is the torch expression users write today (the baseline). ``param_space`` lists the values of
    every keyword that changes which kernels a rung instantiates (e.g. {"approximate": ("tanh",
    "none")}), so tests can compile all of them.
    """

    name: str
    family: str
    variants: tuple[Variant, ...]
    bytes_moved: Callable[..., int]
    flops: Callable[..., int]
    call: Callable[..., Any]
    torch_fn: Callable[..., Any]
    example: Callable[..., tuple]
    doc: str = ""
    param_space: dict[str, tuple] = field(default_factory=dict)
    bench_shapes: tuple[tuple[int, ...], ...] = ((1 << 24,), (1 << 28,))
    bench_dtypes: tuple[torch.dtype, ...] = FLOAT_DTYPES
    compute_bound: bool = False  # judged by FLOP/s against torch (cuBLAS for matmul), not by bytes against a copy
    # kernel name -> its shared-memory bank conflicts by a static model of its addresses (swizzled rungs),
    # None where the model does not cover the kernel; `kernelkit inspect` shows it
    bank_model: Callable[[str], str | None] | None = None

    def param_combinations(self) -> list[dict[str, Any]]:
        """Every combination of ``param_space`` (one empty dict when the op has none)."""
        combos: list[dict[str, Any]] = [{}]
        for key, values in self.param_space.items():
            combos = [{**c, key: v} for c in combos for v in values]
        return combos

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise ValueError(
            f"{self.name}: unknown variant {name!r}; the ladder is {[v.name for v in self.variants]}"
        )

    @functools.cached_property
    def default_variant(self) -> Variant:
        return next(v for v in self.variants if v.default)

    def variants_for(self, dtype: torch.dtype) -> tuple[Variant, ...]:
        return tuple(v for v in self.variants if v.supports(dtype))


_REGISTRY: dict[str, Op] = {}


def register(op: Op) -> Op:
    if op.name in _REGISTRY:
        raise ValueError(f"op {op.name!r} registered twice")
    if sum(v.default for v in op.variants) != 1:
        raise ValueError(f"op {op.name!r} needs exactly one default variant")
    if len({v.name for v in op.variants}) != len(op.variants):
        raise ValueError(f"op {op.name!r} has two rungs of one name")
    variants = tuple(
        replace(v, bytes_moved=v.bytes_moved or op.bytes_moved, flops=v.flops or op.flops) for v in op.variants
    )
    op = replace(op, variants=variants)
    _REGISTRY[op.name] = op
    return op


def _load_ops() -> None:
    from . import ops  # noqa: F401  (importing the families registers their ladders)


def ops() -> list[str]:
    """Names of every op with a ladder, in registration order."""
    _load_ops()
    return list(_REGISTRY)


def get_op(name: str) -> Op:
    _load_ops()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown op {name!r}; kernelkit has {list(_REGISTRY)}") from None


def ladder(name: str) -> tuple[Variant, ...]:
    """The variants of op ``name`` in ladder order (naive first, the default last)."""
    return get_op(name).variants
