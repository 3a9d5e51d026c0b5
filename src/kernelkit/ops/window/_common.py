"""Pieces shared by the sliding-window ops: border rules, the plane geometry of an input, the device copy
of the weights, the tile configuration and the launch of a tiled window kernel."""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ...runtime import allow_shared, launch, resident_blocks
from .._shared.cxx import CXX_TYPE
from .._shared.launch_rules import cdiv, sm_count

SRC_FILTER = "window/filter2d.cu"
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
DTYPES = (*FLOATS, torch.uint8)
CXX = {**CXX_TYPE, torch.uint8: "unsigned char"}
BORDERS = {"zero": 0, "replicate": 1, "reflect": 2}  # the C++ side's kBorder* numbers
BLOCK = (32, 8)  # every tiled window kernel: 32 threads along a row, 8 rows of threads
GRID_YZ = 65535  # the kernels loop over row tiles and planes past the grid's y and z limits


def border_index(i: int, n: int, mode: str) -> int:
    """The index in [0, n) that position ``i`` reads under a border mode, or -1 for a zero read: the
    rule of csrc/window/window.cuh's border_index. "reflect" mirrors about the edge without repeating
    it (torch's reflect padding, OpenCV's BORDER_REFLECT_101), periodically past one image width."""
    if 0 <= i < n:
        return i
    if mode == "zero":
        return -1
    if mode == "replicate" or n == 1:
        return 0 if i < 0 else n - 1
    period = 2 * (n - 1)
    m = i % period  # Python's % is already non-negative
    return m if m < n else period - m


def check_border(border, op: str) -> int:
    if border not in BORDERS:
        raise ValueError(f"{op}: border must be one of {sorted(BORDERS)}, got {border!r}")
    return BORDERS[border]


@dataclass(frozen=True)
class Planes:
    """An input as `planes` planes of H rows x WC elements (C channels interleaved per pixel), planes
    ``plane`` elements apart and rows ``row`` apart; ``x`` is the tensor the kernel reads (the input
    itself where its layout allows, else a contiguous copy)."""

    x: torch.Tensor
    planes: int
    H: int
    W: int
    C: int
    plane: int
    row: int

    @property
    def WC(self) -> int:
        return self.W * self.C


def _mergeable(shape, strides) -> Optional[int]:
    """The one stride of the merged leading dims (elements between planes), or None if they do not merge."""
    step = None
    expect = None
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if step is None:
            step = stride
        elif stride != expect:
            return None
        expect = stride * size
    return step if step is not None else 0


def planes_of(x: torch.Tensor, channels_last: bool, op: str, min_dims: int = 2) -> Planes:
    """The plane geometry of ``x`` (..., H, W), or (..., H, W, C) with ``channels_last``; a view whose
    rows are not runs of elements, or whose leading dims do not merge into one stride, is copied."""
    tail = 3 if channels_last else 2
    if x.dim() < tail:
        raise ValueError(f"{op}: x must have at least {tail} dims ({'(..., H, W, C)' if channels_last else '(..., H, W)'}), "
                         f"got shape {tuple(x.shape)}")
    C = x.shape[-1] if channels_last else 1
    if channels_last and not 1 <= C <= 4:
        raise ValueError(f"{op}: channels_last images have 1 to 4 channels, got {C}")
    H, W = (x.shape[-3], x.shape[-2]) if channels_last else (x.shape[-2], x.shape[-1])
    lead = x.shape[:-tail]
    planes = 1
    for s in lead:
        planes *= s
    st = x.stride()
    inner_ok = (x.shape[-1] == 1 or st[-1] == 1) and (not channels_last or W == 1 or st[-2] == C)
    step = _mergeable(lead, st[:-tail]) if inner_ok else None
    if step is None:
        x = x.contiguous()
        st = x.stride()
        step = H * W * C
    row = st[-3] if channels_last else st[-2]
    if H == 1:
        row = W * C
    return Planes(x, planes, H, W, C, step if planes > 1 else H * W * C, row)


# The device copy of host weights, made once per (weights object, version): a CUDA float32 tensor is used
# as it is; a CPU tensor or a nested list is copied to the device at its first use only.
class TensorCache:
    """A value kept per live tensor object and per key (its version, say), dropped with the tensor.

    By identity: a WeakKeyDictionary compares its keys with ``==`` when it finds one, and ``==`` of two
    tensors is an elementwise tensor whose truth value raises, so a second lookup of a tensor fails."""

    def __init__(self):
        self._entries: dict[int, tuple] = {}

    def get(self, t: torch.Tensor, key):
        got = self._entries.get(id(t))
        return got[2] if got is not None and got[0]() is t and got[1] == key else None

    def put(self, t: torch.Tensor, key, value) -> None:
        got = self._entries.get(id(t))
        if got is None or got[0]() is not t:
            weakref.finalize(t, self._entries.pop, id(t), None)
        self._entries[id(t)] = (weakref.ref(t), key, value)

    def __len__(self) -> int:
        return len(self._entries)


_host_weights = TensorCache()
_list_weights: dict = {}


def device_weights(w, device: torch.device, op: str, name: str = "kernel") -> torch.Tensor:
    """``w`` (a tensor on any device, or nested lists of numbers) as a contiguous float32 tensor on ``device``."""
    if isinstance(w, torch.Tensor):
        if w.is_cuda:
            if w.device != device:
                raise ValueError(f"{op}: {name} is on {w.device} but x is on {device}; move them to one device first")
            if w.dtype == torch.float32 and w.is_contiguous():
                return w
            if not (w.is_floating_point() or w.dtype in (torch.int32, torch.int64, torch.int16, torch.uint8)):
                raise TypeError(f"{op}: {name} must hold real numbers, got dtype {w.dtype}")
            return w.to(torch.float32).contiguous()
        if w.is_complex() or w.dtype == torch.bool:
            raise TypeError(f"{op}: {name} must hold real numbers, got dtype {w.dtype}")
        key = (device, w._version, tuple(w.shape))
        got = _host_weights.get(w, key)
        if got is not None:
            return got
        dev_w = w.detach().to(torch.float32).contiguous().to(device)
        _host_weights.put(w, key, dev_w)
        return dev_w
    try:
        arr = np.asarray(w, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a tensor or nested lists of numbers, got {type(w).__name__}") from None
    key = (device, arr.shape, arr.tobytes())
    got = _list_weights.get(key)
    if got is None:
        if len(_list_weights) > 256:
            _list_weights.clear()
        got = _list_weights[key] = torch.tensor(arr, dtype=torch.float32, device=device)
    return got


@dataclass(frozen=True)
class WindowConfig:
    """The tile of a tiled window rung: ``rows_per_thread`` output rows each thread computes (the tile is
    32 threads x V outputs wide and 8 x rows_per_thread rows high). Each rung instantiates a few values
    (``ROWS`` of its module); the rule picks one from the image height."""

    rows_per_thread: int


def rows_rule(H: int, choices: tuple[int, ...]) -> int:
    """Rows per thread: the most that an image of H rows still fills (a tile of 8 x rows no taller than
    the image), so short images do not compute empty rows."""
    fit = [r for r in choices if 8 * r <= max(H, 8)]
    return max(fit) if fit else min(choices)


def check_config(config, choices: tuple[int, ...], op: str) -> int:
    if not isinstance(config, WindowConfig):
        raise TypeError(f"{op}: config must be a WindowConfig, got {type(config).__name__}")
    if config.rows_per_thread not in choices:
        raise ValueError(f"{op}: this rung runs rows_per_thread in {choices}, got {config.rows_per_thread}")
    return config.rows_per_thread


def run_tiled(kernel, name: str, p: Planes, out_ptr: int, w_ptr: int, bias_ptr: int, groups: int,
              KH: int, KW: int, mode: int, tile_w: int, tile_h: int, shmem: int, dev: int) -> None:
    """Launch a window kernel of the common argument list on 32 x 8 blocks, a block per tile of
    tile_w elements x tile_h rows, planes over the grid's z (each loop past the grid's limits)."""
    grid = (cdiv(p.WC, tile_w), min(cdiv(p.H, tile_h), GRID_YZ), min(p.planes, GRID_YZ))
    if shmem > 48 * 1024:
        allow_shared(kernel, shmem, dev)
    i32 = np.int32
    launch(kernel, grid, BLOCK, p.x.data_ptr(), out_ptr, w_ptr, bias_ptr, i32(p.planes), i32(groups), i32(p.H),
           i32(p.WC), i32(p.C), p.plane, p.row, i32(KH), i32(KW), i32(mode), shmem=shmem, name=name,
           device_index=dev)


def rows_aligned(p: Planes) -> bool:
    """Whether every row of p starts on a 16-byte boundary: the pipelined kernels compiled "aligned" skip
    the per-row shift of their register windows (csrc/window/pipeline.cuh)."""
    es = p.x.element_size()
    return (p.x.data_ptr() % 16 == 0 and (p.H == 1 or p.row * es % 16 == 0)
            and (p.planes == 1 or p.plane * es % 16 == 0))


def pipe_geometry(itemsize: int, reach: int, c: int, ry: int, aligned: bool, bx: int = 32) -> tuple[int, int, int]:
    """(tile_w, tile_h, ld) of a pipelined tile: bx threads x one 16-byte vector of outputs, 256 / bx x ry
    rows, and the elements of a tile row: the outputs, a halo of whole vectors covering ``reach`` pixels of
    ``c`` channels on each side, and one vector more for the row shift of unaligned kernels."""
    v = 16 // itemsize
    hp = cdiv(reach * c, v) * v
    return bx * v, 256 // bx * ry, bx * v + 2 * hp + (0 if aligned else v)


def pipe_tile_bytes(itemsize: int, rows: int, ld: int, aligned: bool) -> int:
    """Shared memory of the two tile buffers (raw elements) and, unaligned, the rows' shifts."""
    return 2 * rows * ld * itemsize + (0 if aligned else 2 * rows * 4)


PIPE_MAX_TILES = 2 ** 31 - 2 ** 24  # the kernels number tiles (plus the grid) in 32 bits


def pipe_tiles(p: Planes, tile_w: int, tile_h: int) -> int:
    return p.planes * cdiv(p.WC, tile_w) * cdiv(p.H, tile_h)


def run_pipelined(kernel, name: str, p: Planes, out_ptr: int, w_ptr: int, bias_ptr: int, groups: int,
                  KH: int, KW: int, mode: int, tile_w: int, tile_h: int, shmem: int, dev: int, *extra,
                  block: tuple[int, int] = BLOCK, per_sm: Optional[int] = None) -> None:
    """Launch a pipelined (persistent) window kernel: the common argument list (then ``extra`` 32-bit ints),
    one block of ``block`` threads (256) per resident slot (the occupancy calculator's count for this
    shared-memory size, or ``per_sm`` blocks an SM where fewer), never more blocks than tiles."""
    if shmem > 48 * 1024:
        allow_shared(kernel, shmem, dev)
    slots = resident_blocks(kernel, 256, 1, dev, shmem)
    if per_sm is not None:
        slots = min(slots, per_sm * sm_count(dev))
    grid = min(pipe_tiles(p, tile_w, tile_h), slots)
    i32 = np.int32
    launch(kernel, grid, block, p.x.data_ptr(), out_ptr, w_ptr, bias_ptr, i32(p.planes), i32(groups), i32(p.H),
           i32(p.WC), i32(p.C), p.plane, p.row, i32(KH), i32(KW), i32(mode), *(i32(e) for e in extra), shmem=shmem,
           name=name, device_index=dev)


def round4(n: int) -> int:
    return (n + 3) // 4 * 4


def random_image(shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """A benchmark input of the window ops: bytes over 0..255 for uint8, normal values otherwise."""
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda")
    return torch.randn(shape, dtype=dtype, device="cuda")


def out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output length: floor (or ceil) of (n + 2p - d(k-1) - 1) / s, plus 1; with ceil_mode
    the last window must start inside the input or its left padding."""
    span = n + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def empty_output(x: torch.Tensor, shape: tuple) -> torch.Tensor:
    """A new (N, C, OH, OW) output in x's layout: channels_last where x is (and not plain contiguous), NCHW
    otherwise, as torch's convolutions and pools give it."""
    nhwc = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    return torch.empty(shape, dtype=x.dtype, device=x.device,
                       memory_format=torch.channels_last if nhwc else torch.contiguous_format)
