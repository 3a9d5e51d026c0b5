"""The byte-map rungs, launcher and lane shared by invert_colors and binarize (uint8 in, uint8 out, one
byte to one): the templates of csrc/elementwise/byte_map.cuh instantiated with each op's functor. The
launcher also runs invert_colors' own rungs (thread coarsening), whose fallback is the byte kernel."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch

from ...ladder import Kernel, Op, Variant
from ...runtime import launch, plain_launcher
from .._shared.checks import pick_variant
from .._shared.launch_rules import cdiv
from .._shared.plans import load, plan_cache, remember
from ._launch import SMALL_I32, ElementwiseLaunch, launch_shape

U8 = (torch.uint8,)
U32 = tuple(np.uint32(v) for v in range(256))  # the kernels' uint32 parameter for the values a byte map takes
BLOCK = 256
# fast rungs: one 16-byte vector a thread over a grid covering the image; the block size barely
# matters (within 0.5% from 128 to 1024 threads, docs/design/elementwise.md)
FAST = ElementwiseLaunch(block=512)


@dataclass(frozen=True)
class ByteMap:
    """One byte-map op: its name, source and C++ functor, the cache of its launch plans and its lanes
    (one a device, made by ``make_lane``)."""

    name: str
    source: str
    functor: str
    plans: dict = field(default_factory=plan_cache, compare=False, repr=False)
    lanes: dict = field(default_factory=plan_cache, compare=False, repr=False)

    def kernels(self, kind: str) -> tuple[Kernel, ...]:
        """The instantiations of the shared rung ``kind`` (byte, uchar4 or fast), in launch order."""
        src, f = self.source, self.functor
        byte = Kernel(src, f"kk::bytes_map<{f}>", 8, 8)
        if kind == "byte":
            return (byte,)
        if kind == "uchar4":  # 4-byte aligned: words; otherwise the byte kernel
            return (Kernel(src, f"kk::words_map<{f}>", 32, 32), byte)
        return (  # fast: input aligned like the output (16-byte loads), or not (byte loads)
            Kernel(src, f"kk::bytes_fast<{f}, true>", 128, 128, block=FAST.block),
            Kernel(src, f"kk::bytes_fast<{f}, false>", 8, 128, block=FAST.block),
        )

    def rung(self, kind: str, technique: str, default: bool = False) -> Variant:
        """The rung of a shared kind (byte, uchar4 or fast), named after it."""
        return Variant(name=kind, technique=technique, dtypes=U8, default=default,
                       kernels=lambda dtype, **_: self.kernels(kind), params={"kind": kind})


@dataclass(frozen=True, slots=True)
class _Plan:
    kind: str
    kernels: tuple  # loaded kernels, in the order of the rung's Kernel records
    block: int  # the fast rung's launch
    shmem: int
    params: dict  # the rung's params (the coarsening factor)


def _plan(spec: ByteMap, op: Op, key: tuple) -> _Plan:
    variant, dev, config = key
    v = pick_variant(op, variant, torch.uint8)
    block, shmem = (FAST.block, 0) if config is None else launch_shape(spec.name, config, dev)
    plan = _Plan(v.params["kind"], load(v.kernels(torch.uint8), dev), block, shmem, v.params)
    return remember(spec.plans, key, plan)


def _launch(spec: ByteMap, op: Op, variant: Optional[str], src: torch.Tensor, out: torch.Tensor, param: int,
            config: Optional[ElementwiseLaunch]) -> None:
    """out = f(src) for contiguous uint8 tensors of n > 0 bytes."""
    n, dev = src.numel(), src.get_device()
    key = (variant, dev, config)
    p = spec.plans.get(key)
    if p is None:
        p = _plan(spec, op, key)
    ip, op_, prm = src.data_ptr(), out.data_ptr(), U32[param] if 0 <= param < 256 else np.uint32(param)
    kind, ks = p.kind, p.kernels
    if kind == "fast":
        head = min(n, (-op_) & 15)  # bytes before out's first 16-byte boundary
        blocks = ((n - head) // 16 + p.block - 1) // p.block or 1
        launch(ks[0] if (ip - op_) & 15 == 0 else ks[1], blocks, p.block, op_, ip, n, SMALL_I32[head], prm,
               shmem=p.shmem, name=f"{spec.name}_fast", device_index=dev)
        return
    aligned4 = ip % 4 == 0 and op_ % 4 == 0
    if kind == "uchar4" and aligned4:
        launch(ks[0], max(1, cdiv(n // 4, BLOCK)), BLOCK, op_, ip, n, prm, name=f"{spec.name}_words",
               device_index=dev)
    elif kind == "coarsened" and aligned4:
        width = src.shape[-2]
        rows = n // (4 * width)
        bk = p.params["coarsen"]
        grid = (cdiv(width, 32 * bk), min(cdiv(rows, 8), 65535))
        launch(ks[0], grid, (32, 8), op_, ip, rows, width, name=f"invert_coarsened<{bk}>", device_index=dev)
    else:  # the byte rung, and the aligned rungs' fallback
        launch(ks[-1], cdiv(n, BLOCK), BLOCK, op_, ip, n, prm, name=f"{spec.name}_bytes", device_index=dev)


def map_into(spec: ByteMap, op: Op, src: torch.Tensor, out: torch.Tensor, param: int, variant: Optional[str],
             config: Optional[ElementwiseLaunch] = None) -> None:
    """out <- f(src) for any layouts (non-contiguous ones go through contiguous copies); out may be
    src itself, not a partial overlap of it."""
    if src.numel() == 0:
        return
    sc = src.contiguous()
    target = out if out.is_contiguous() else torch.empty_like(sc)
    if target.data_ptr() != sc.data_ptr():
        a0, a1 = sc.data_ptr(), sc.data_ptr() + sc.numel()
        if a0 < target.data_ptr() + target.numel() and target.data_ptr() < a1:
            raise ValueError(f"{spec.name}: the output partially overlaps the image")
    _launch(spec, op, variant, sc, target, param, config)
    if target is not out:
        out.copy_(target)


def make_lane(spec: ByteMap, op: Op, dev: int) -> None:
    """The fast rung's lane of a byte map on device ``dev``: ``lane(src, out, param)`` runs
    out = f(src) for contiguous uint8 tensors of one size on ``dev``, ``out`` either ``src`` itself or
    a fresh tensor (no partial overlap), and ``0 <= param < 256``, as ``_launch`` does. Called once
    the checked path has accepted an image on ``dev``."""
    key = (torch.uint8, dev)
    if key in spec.lanes:
        return
    pkey = (None, dev, None)
    p = spec.plans.get(pkey) or _plan(spec, op, pkey)
    name = f"{spec.name}_fast"
    aligned, unaligned = plain_launcher(p.kernels[0], dev, name), plain_launcher(p.kernels[1], dev, name)
    block, shmem, small, u32 = p.block, p.shmem, SMALL_I32, U32

    def lane(src: torch.Tensor, out: torch.Tensor, param: int) -> None:
        n = src.numel()
        if n == 0:
            return
        ip, op_ = src.data_ptr(), out.data_ptr()
        head = min(n, (-op_) & 15)
        (aligned if (ip - op_) & 15 == 0 else unaligned)(((n - head) // 16 + block - 1) // block or 1, block, shmem,
                                                         (op_, ip, n, small[head], u32[param]))

    remember(spec.lanes, key, lane)
