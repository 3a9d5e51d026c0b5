"""conv2d: torch.nn.functional.conv2d, with the depthwise case (groups == channels, one filter per
channel) on kernelkit's kernels and every other case on torch: its ladder, torch.library op and public
function."""
from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from ...ladder import Kernel, Op, Variant, register
from ...runtime import allow_shared, get_kernel, launch
from .._shared.checks import check_same_device, check_tensor
from .._shared.custom_op import out_op
from .._shared.launch_rules import cdiv, sm_count
from .._shared.plans import plan_cache, remember
from ._common import CXX, FLOATS, GRID_YZ, Planes, TensorCache, empty_output, out_size
from .filter2d import _registers, _vector, filter_planes

__all__ = ["conv2d"]

SRC = "window/conv2d.cu"


def _direct_name(dtype: torch.dtype, ve: int, cl: bool) -> str:
    return f"kk::dw_direct<{CXX[dtype]}, {ve}, {'true' if cl else 'false'}>"


def _direct(dtype):
    return (Kernel(SRC, _direct_name(dtype, 1, False), block=256), Kernel(SRC, _direct_name(dtype, 1, True), block=256),
            Kernel(SRC, _direct_name(dtype, 16 // dtype.itemsize, True), load_bits=128, store_bits=128, block=256))


# The channel-group tiles (dw_tile): compiled square kernels K at stride S, outputs a thread along W.
TILE_KS = ((3, 1), (5, 1), (7, 1), (3, 2), (5, 2))
TILE_RX = {1: (7, 8), 2: (8,)}  # by stride: 7 and 8 tile widths that are multiples of 7 or of 8 exactly
TILE_RY = 2  # output rows a thread: each input row's register window feeds both
GROUP = 32  # channels a block: a warp's lanes
PLANAR_TILE_WIDTH = 32  # planar tiles read at most this many inputs a row: a warp loads whole rows at once


def pix_floats(channels_last: bool) -> int:
    """Shared-memory floats a tile pixel (csrc dw_pix): 36 for channels_last (16-byte stores), 33 planar."""
    return 36 if channels_last else 33
TILE_SMEM = 48 * 1024  # the most shared memory a tile asks for: no opt-in, two blocks an SM or more
TILE_MIN_CHANNELS = 16  # below, most of a warp's lanes would idle: "best" takes the planar or direct kernels


@dataclass(frozen=True)
class DwTile:
    """The tiled rung's block: ``rx`` outputs a thread along W (one of TILE_RX[stride]), and
    ``warps_x`` x ``warps_y`` warps (at most 8), each computing TILE_RY x rx outputs of 32 channels. The
    block's output tile is (warps_y TILE_RY) x (warps_x rx) pixels."""

    rx: int
    warps_x: int
    warps_y: int

    @property
    def th(self) -> int:
        return self.warps_y * TILE_RY

    @property
    def tw(self) -> int:
        return self.warps_x * self.rx

    def inputs(self, k: int, s: int) -> tuple[int, int]:
        """Rows and columns of inputs the tile reads (its halo included)."""
        return (self.th - 1) * s + k, (self.tw - 1) * s + k

    def smem(self, k: int, s: int, channels_last: bool) -> int:
        """Bytes of shared memory: the weights (K*K x 32 floats) and the staged inputs."""
        ih, iw = self.inputs(k, s)
        return (k * k * GROUP + ih * iw * pix_floats(channels_last)) * 4

    def fits(self, k: int, s: int, channels_last: bool) -> bool:
        """Whether the kernels run this tile: 1 to 8 warps, TILE_SMEM, planar rows of at most 32 inputs."""
        return (1 <= self.warps_x and 1 <= self.warps_y and self.warps_x * self.warps_y <= 8
                and self.smem(k, s, channels_last) <= TILE_SMEM
                and (channels_last or self.inputs(k, s)[1] <= PLANAR_TILE_WIDTH))


def _pow2_up(n: int) -> int:
    return 1 << (n - 1).bit_length()


@functools.lru_cache(maxsize=4096)
def tile_rule(OH: int, OW: int, k: int, s: int, channels_last: bool) -> DwTile:
    """The tile for an OH x OW output: ``rx`` wasting the fewest columns (ties: the wider), then the warp
    grid (none wholly outside the image, a tile the kernels run: ``DwTile.fits``) of least cost per
    channel: every tile's staged inputs (planar rows in lanes of a power-of-two row length) plus its
    outputs' K*K FMAs at four per staged value, plus its weights."""
    rx = min(TILE_RX[s], key=lambda r: (cdiv(OW, r) * r - OW, -r))
    best, best_key = DwTile(rx, 1, 1), None
    for wx in range(1, 9):
        for wy in range(1, 8 // wx + 1):
            if (wx - 1) * rx >= OW or (wy - 1) * TILE_RY >= OH:
                continue
            t = DwTile(rx, wx, wy)
            if not t.fits(k, s, channels_last):
                continue
            ih, iw = t.inputs(k, s)
            tiles = cdiv(OH, t.th) * cdiv(OW, t.tw)
            staged = ih * iw if channels_last else cdiv(ih, 32 // _pow2_up(iw)) * 32
            key = (tiles * (staged + t.th * t.tw * k * k / 4 + k * k), -wx * wy)
            if best_key is None or key < best_key:
                best, best_key = t, key
    return best


PLANES_RY = (4, 8)  # output rows a thread of the planar band kernels (a column strip)
PLANES_SMEM = 32 * 1024  # the band the rule stages: several blocks an SM without an opt-in
PLANES_MAX_SMEM = 48 * 1024  # the most a configured band may ask for
PLANES_THREADS = 256
PLANES_ITEMS = 2 * PLANES_THREADS  # strips a block aims at when planes are small: two a thread


@dataclass(frozen=True)
class DwPlanes:
    """The planar band kernels' block (NCHW): ``planes`` whole planes, or one plane's band of ``strips``
    strips of ``ry`` output rows (``ry`` in PLANES_RY), staged in shared memory at full width; a thread
    computes one column of a strip."""

    ry: int
    planes: int
    strips: int

    def rows(self, k: int, s: int) -> int:
        """Input rows a plane's band stages (its halo and padding included)."""
        return (self.strips * self.ry - 1) * s + k

    def smem(self, ow: int, k: int, s: int) -> int:
        return self.planes * self.rows(k, s) * planes_pitch(ow, k, s) * 4

    def fits(self, oh: int, ow: int, k: int, s: int) -> bool:
        """Whether the kernels run this band: a compiled ry, several planes only as whole planes, and
        PLANES_MAX_SMEM."""
        return (self.ry in PLANES_RY and self.planes >= 1 and self.strips >= 1
                and (self.planes == 1 or self.strips >= cdiv(oh, self.ry))
                and self.smem(ow, k, s) <= PLANES_MAX_SMEM)


def planes_pitch(ow: int, k: int, s: int) -> int:
    """Floats a staged row takes: the (OW - 1) S + K inputs, at stride 2 as two halves of equal length."""
    iw = (ow - 1) * s + k
    return iw if s == 1 else 2 * cdiv(iw, 2)


@functools.lru_cache(maxsize=4096)
def planes_rule(planes: int, oh: int, ow: int, k: int, s: int, sms: int) -> Optional[DwPlanes]:
    """The band for ``planes`` NCHW planes of OH x OW outputs, or None when one strip of the row does not
    fit PLANES_SMEM. ``ry``: the fewest staged rows read per column, (OH / ry rounded up) ((ry - 1) S + K)
    (ties: 8); the whole plane when it fits, with the planes a block (up to PLANES_ITEMS strips, no fewer
    than two blocks an SM) whose strips fill the threads' rounds best; else the most strips that fit,
    split evenly over the bands."""
    ry = min(PLANES_RY, key=lambda r: (cdiv(oh, r) * ((r - 1) * s + k), -r))
    budget = PLANES_SMEM // 4
    pitch = planes_pitch(ow, k, s)
    every = cdiv(oh, ry)
    whole = DwPlanes(ry, 1, every)
    per_plane = whole.rows(k, s) * pitch
    if per_plane <= budget:
        most = max(1, min(budget // per_plane, cdiv(PLANES_ITEMS, every * ow), planes // (2 * sms)))
        # the group whose strips fill the block's rounds of PLANES_THREADS best (ties: the larger)
        p = max(range(1, most + 1), key=lambda q: (q * every * ow / (cdiv(q * every * ow, PLANES_THREADS)
                                                                     * PLANES_THREADS), q))
        return DwPlanes(ry, p, every)
    ns = ((budget // pitch - k) // s + 1) // ry
    if ns < 1:
        return None
    return DwPlanes(ry, 1, cdiv(every, cdiv(every, ns)))


def planes_name(dtype: torch.dtype, k: int, s: int, ry: int) -> str:
    return f"kk::dw_planes<{CXX[dtype]}, {k}, {s}, {ry}>"


def _planar(dtype):
    return tuple(Kernel(SRC, planes_name(dtype, k, s, ry), block=PLANES_THREADS, dyn_shared=PLANES_SMEM)
                 for k, s in TILE_KS for ry in PLANES_RY)


def tile_shape(kh: int, kw: int, stride: list[int], dilation: list[int]) -> Optional[tuple[int, int]]:
    """(K, S) where the tiled kernels are compiled for this window, else None."""
    if kh == kw and stride[0] == stride[1] and dilation == [1, 1] and (kh, stride[0]) in TILE_KS:
        return kh, stride[0]
    return None


def tile_name(dtype: torch.dtype, k: int, s: int, rx: int, cl: bool) -> str:
    return f"kk::dw_tile<{CXX[dtype]}, {k}, {s}, {rx}, {TILE_RY}, {'true' if cl else 'false'}>"


def _tiled(dtype):
    out = []
    for k, s in TILE_KS:
        for rx in TILE_RX[s]:
            out.append(Kernel(SRC, tile_name(dtype, k, s, rx, True), load_bits=128, block=256, dyn_shared=TILE_SMEM))
            out.append(Kernel(SRC, tile_name(dtype, k, s, rx, False), block=256, dyn_shared=TILE_SMEM))
    return tuple(out)


VARIANTS = (
    Variant("direct", "one output per thread (channels_last: 16 bytes of channels per thread, 16-byte tap "
            "loads, tap-major weights), taps read from global memory; any stride, padding and dilation",
            FLOATS, lambda dtype, **_: _direct(dtype)),
    Variant("tiled", "32 channels x an output tile per block, the tile's inputs (halo and padding included) "
            "read once into shared memory as float32 (16-byte channel vectors for channels_last, row runs for "
            "NCHW), a lane a channel with its weights in registers and 2 x 7-8 outputs from register windows; "
            "compiled 3x3, 5x5, 7x7 at stride 1 and 3x3, 5x5 at stride 2 (others: the direct kernels)",
            FLOATS, lambda dtype, **_: (*_tiled(dtype), *_direct(dtype))),
    Variant("best", "compiled windows: NCHW on planar bands (whole-width rows of one plane, or several whole "
            "small planes, staged in shared memory by coalesced row loads; a thread a column strip of 4 or 8 "
            "outputs), channels_last on the tiled kernels (16 channels or more); planar inputs of fewer "
            "channels at stride 1 with the size-keeping padding on filter2d's tiles (a weight set per channel); "
            "the direct kernels otherwise", FLOATS,
            lambda dtype, **_: (*_planar(dtype), *_tiled(dtype), *_registers(dtype), *_vector(dtype),
                                *_direct(dtype)), default=True),
)

_plans = plan_cache()
CONFIG_TILE, CONFIG_PLANES = 0, 1  # the first of the ints a config reaches the custom op as
_weights = {False: TensorCache(), True: TensorCache()}  # by tap_major: both forms kept for a weight


def _float_weights(weight: torch.Tensor, tap_major: bool) -> torch.Tensor:
    """The weights as float32 (C, KH*KW), or tap-major (KH*KW, C), made once per weight version."""
    key = (weight._version, weight.data_ptr())
    got = _weights[tap_major].get(weight, key)
    if got is not None:
        return got
    w = weight.detach().reshape(weight.shape[0], -1).to(torch.float32)
    w = (w.t() if tap_major else w).contiguous()
    _weights[tap_major].put(weight, key, w)
    return w


def _run_tiled(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
               padding: list[int], cl: bool, t: DwTile) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    key = ("tile", dtype, dev, k, s, t.rx, cl)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, tile_name(dtype, k, s, t.rx, cl), device_index=dev))
    shmem = t.smem(k, s, cl)
    if shmem > 48 * 1024:
        allow_shared(kern, shmem, dev)
    sn, sc, sh, sw = x.stride()
    ve = 16 // x.element_size()
    vec = cl and sc == 1 and C % ve == 0 and sw % ve == 0 and sh % ve == 0 and sn % ve == 0 and x.data_ptr() % 16 == 0
    tiles_x = cdiv(OW, t.tw)
    grid = (cdiv(OH, t.th) * tiles_x, cdiv(C, GROUP), min(N, GRID_YZ))
    i32 = np.int32
    launch(kern, grid, (32, t.warps_x * t.warps_y), x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sc, sh, sw,
           i32(padding[0]), i32(padding[1]), i32(t.warps_x), i32(tiles_x), i32(vec), shmem=shmem, name="dw_tile",
           device_index=dev)


def _run_planes(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], out: torch.Tensor, ks: tuple[int, int],
                padding: list[int], t: DwPlanes) -> None:
    N, C, H, W = x.shape
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    k, s = ks
    key = ("planes", dtype, dev, k, s, t.ry)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, planes_name(dtype, k, s, t.ry), device_index=dev))
    shmem = t.smem(OW, k, s)
    bands = cdiv(cdiv(OH, t.ry), t.strips)
    NC = N * C
    i32 = np.int32
    launch(kern, cdiv(NC, t.planes) * bands, PLANES_THREADS, x.data_ptr(), out.data_ptr(), w.data_ptr(),
           0 if b is None else b.data_ptr(), i32(NC), i32(C), i32(H), i32(W), i32(OH), i32(OW), i32(padding[0]),
           i32(padding[1]), i32(t.planes), i32(t.strips), i32(bands), i32(t.rows(k, s)), i32((OW - 1) * s + k),
           i32(planes_pitch(OW, k, s)), shmem=shmem, name="dw_planes", device_index=dev)


def _conv2d_into(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                 stride: list[int], padding: list[int], dilation: list[int], variant: Optional[str],
                 config: Optional[list[int]]) -> None:
    N, C, H, W = x.shape
    KH, KW = weight.shape[-2:]
    OH, OW = out.shape[-2:]
    dev, dtype = x.get_device(), x.dtype
    b = None if bias is None else bias.to(torch.float32).contiguous()
    cl = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    ks = tile_shape(KH, KW, stride, dilation)
    if ks is not None and not cl and variant in (None, "best"):
        t = None
        if config is not None and config[0] == CONFIG_PLANES:
            t = DwPlanes(*config[1:])
        elif config is None and (C >= TILE_MIN_CHANNELS or stride != [1, 1] or padding != [KH // 2, KW // 2]):
            t = planes_rule(N * C, OH, OW, ks[0], ks[1], sm_count(dev))
        if t is not None:
            _run_planes(x.contiguous(), _float_weights(weight, False), b, out, ks, padding, t)
            return
    if ks is not None and (variant == "tiled" or (variant in (None, "best") and C >= TILE_MIN_CHANNELS)):
        t = DwTile(*config[1:]) if config is not None else tile_rule(OH, OW, ks[0], ks[1], cl)
        _run_tiled(x if cl else x.contiguous(), _float_weights(weight, True), b, out, ks, padding, cl, t)
        return
    same = (stride == [1, 1] and dilation == [1, 1] and KH % 2 == 1 and KW % 2 == 1
            and padding == [KH // 2, KW // 2])
    if variant in (None, "best") and same and not cl:
        xc = x.contiguous()
        p = Planes(xc, N * C, H, W, 1, H * W, W)
        filter_planes("best", p, out, _float_weights(weight, False), b, C, KH, KW, 0)
        return
    if not cl:
        x = x.contiguous()
    ve = 16 // x.element_size() if cl and C % (16 // x.element_size()) == 0 and x.data_ptr() % 16 == 0 else 1
    key = (dtype, dev, ve, cl)
    kern = _plans.get(key) or remember(_plans, key, get_kernel(SRC, _direct_name(dtype, ve, cl), device_index=dev))
    w = _float_weights(weight, cl)
    wc, wt = (1, C) if cl else (KH * KW, 1)
    sn, sc, sh, sw = x.stride()
    total = N * OH * OW * (C // ve)
    grid = max(1, min(cdiv(total, 256), sm_count(dev) * 16))
    i32 = np.int32
    launch(kern, grid, 256, x.data_ptr(), out.data_ptr(), w.data_ptr(), 0 if b is None else b.data_ptr(),
           i32(N), i32(C), i32(H), i32(W), i32(OH), i32(OW), sn, sc, sh, sw, i32(wc), i32(wt), i32(KH), i32(KW),
           i32(stride[0]), i32(stride[1]), i32(padding[0]), i32(padding[1]), i32(dilation[0]), i32(dilation[1]),
           name="dw_direct", device_index=dev)


_conv2d_out = out_op("conv2d_depthwise_out", _conv2d_into)


def _pair(v, name: str) -> list[int]:
    vals = [v] if isinstance(v, numbers.Integral) else list(v) if isinstance(v, (list, tuple)) else None
    if vals is None or len(vals) not in (1, 2) or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
                                                          for a in vals):
        raise TypeError(f"conv2d: {name} must be an int or a pair of ints, got {v!r}")
    return [int(vals[0])] * 2 if len(vals) == 1 else [int(vals[0]), int(vals[1])]


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, stride=1, padding=0,
           dilation=1, groups: int = 1, *, variant: Optional[str] = None,
           config: "Optional[DwTile | DwPlanes]" = None) -> torch.Tensor:
    """2-D convolution with torch.nn.functional.conv2d's arguments and semantics (a correlation).

    The depthwise case runs on kernelkit's kernels: a float32, float16 or bfloat16 CUDA ``input`` of
    shape (N, C, H, W) (planar or channels_last; the result keeps the layout, as torch's), ``groups`` ==
    C and ``weight`` of shape (C, 1, KH, KW) (a channel multiplier of 1), accumulated in float32. Every
    other case (other groups, a channel multiplier, 3-D inputs, CPU tensors, other dtypes) calls
    torch.nn.functional.conv2d itself, unchanged.
    ``weight``: (C_out, C_in / groups, KH, KW), the input's dtype and device. ``bias``: None or (C_out,).
    ``stride``, ``padding`` (an int, a pair, "valid" or "same"), ``dilation``: as torch's.
    ``groups``: as torch's; the depthwise case is groups == C == C_out.
    No ``out``: the result is always a new tensor.
    ``variant``: a rung of ``kernelkit.ladder("conv2d")`` for the depthwise case; None picks the best.
    ``config``: for tuning and tests, a ``DwTile`` (``kernelkit.ops.window.conv2d.DwTile``: outputs a
    thread along W, warps across and down) for the tiled kernels, which then run (with variant None,
    "best" or "tiled"), or, for an NCHW input, a ``DwPlanes`` (output rows a thread, planes a block,
    strips a band) for the planar band kernels (variant None or "best"); without one ``planes_rule``
    (NCHW) and ``tile_rule`` (channels_last) pick from the output size, kernel, stride and SM count.

    Raises TypeError for a non-tensor input, a depthwise input of another dtype, sizes that are not
    ints or a config that is not a DwTile or DwPlanes; ValueError for an unknown variant, a weight or bias on another
    device, a padding string other than "valid"/"same", an output that would be empty, or a config for
    a window the tiled kernels are not compiled for, another rung, or a tile or band they cannot run.
    """
    depthwise = (isinstance(input, torch.Tensor) and isinstance(weight, torch.Tensor) and input.dim() == 4
                 and input.is_cuda and weight.dim() == 4 and groups == input.shape[1] == weight.shape[0]
                 and weight.shape[1] == 1 and input.dtype in FLOATS and weight.dtype == input.dtype)
    if not depthwise:
        return F.conv2d(input, weight, bias, stride, padding, dilation, groups)
    check_tensor(input, "input", FLOATS, "conv2d")
    check_same_device("conv2d", ("input", input), ("weight", weight), ("bias", bias))
    if variant is not None:
        OP.variant(variant)
    s, d = _pair(stride, "stride"), _pair(dilation, "dilation")
    KH, KW = weight.shape[-2:]
    if isinstance(padding, str):
        if padding == "valid":
            p = [0, 0]
        elif padding == "same":
            if s != [1, 1]:
                raise ValueError("conv2d: padding='same' needs stride 1, as torch's")
            if (d[0] * (KH - 1)) % 2 or (d[1] * (KW - 1)) % 2:  # torch pads asymmetrically: let it
                return F.conv2d(input, weight, bias, stride, padding, dilation, groups)
            p = [d[0] * (KH - 1) // 2, d[1] * (KW - 1) // 2]
        else:
            raise ValueError(f"conv2d: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    else:
        p = _pair(padding, "padding")
    if min(s) <= 0 or min(d) <= 0 or min(p) < 0:
        raise ValueError("conv2d: stride and dilation must be positive and padding non-negative")
    N, C, H, W = input.shape
    OH, OW = out_size(H, KH, s[0], p[0], d[0], False), out_size(W, KW, s[1], p[1], d[1], False)
    if OH <= 0 or OW <= 0:
        raise ValueError(f"conv2d: the output would be {OH}x{OW} for an input of {H}x{W}")
    cfg = None
    if config is not None:
        cfg = _check_config(config, KH, KW, s, d, variant,
                            not input.is_contiguous() and input.is_contiguous(memory_format=torch.channels_last),
                            OH, OW)
        variant = "best" if isinstance(config, DwPlanes) else "tiled"
    out = empty_output(input, (N, C, OH, OW))
    if out.numel():
        _conv2d_out(input, weight, bias, out, s, p, d, variant, cfg)
    return out


def _check_config(config, KH: int, KW: int, s: list[int], d: list[int], variant: Optional[str],
                  channels_last: bool, OH: int, OW: int) -> list[int]:
    if not isinstance(config, (DwTile, DwPlanes)):
        raise TypeError(f"conv2d: config must be a DwTile or a DwPlanes, got {type(config).__name__}")
    planar = isinstance(config, DwPlanes)
    if variant not in ((None, "best") if planar else (None, "best", "tiled")):
        raise ValueError(f"conv2d: {type(config).__name__} sets the tiled or planar kernels' block, not the "
                         f"{variant!r} rung's")
    ks = tile_shape(KH, KW, s, d)
    if ks is None:
        raise ValueError(f"conv2d: no tiled kernel for a {KH}x{KW} window at stride {s}, dilation {d}; "
                         f"they are compiled for (K, S) in {TILE_KS}")
    if planar:
        if channels_last or not config.fits(OH, OW, *ks):
            raise ValueError(f"conv2d: {config} is not a band the planar kernels run: NCHW input, ry in "
                             f"{PLANES_RY}, several planes only whole, at most {PLANES_MAX_SMEM} bytes of shared "
                             f"memory")
        return [CONFIG_PLANES, config.ry, config.planes, config.strips]
    if config.rx not in TILE_RX[ks[1]] or not config.fits(*ks, channels_last):
        raise ValueError(f"conv2d: {config} is not a tile the kernels run: rx in {TILE_RX[ks[1]]}, 1 to 8 warps, "
                         f"at most {TILE_SMEM} bytes of shared memory, planar rows of at most "
                         f"{PLANAR_TILE_WIDTH} inputs")
    return [CONFIG_TILE, config.rx, config.warps_x, config.warps_y]


def _bytes(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, **_):
    """Input read once, output written once (the weights are small)."""
    H, W = x.shape[-2:]
    KH, KW = w.shape[-2:]
    s = [stride] * 2 if isinstance(stride, int) else list(stride)
    d = [dilation] * 2 if isinstance(dilation, int) else list(dilation)
    if padding == "same":
        return 2 * x.numel() * x.element_size()
    p = [0, 0] if padding == "valid" else [padding] * 2 if isinstance(padding, int) else list(padding)
    OH, OW = out_size(H, KH, s[0], p[0], d[0], False), out_size(W, KW, s[1], p[1], d[1], False)
    return (x.numel() + x.numel() // (H * W) * OH * OW) * x.element_size()


def _example(shape, dtype):
    x = torch.randn(shape, dtype=dtype, device="cuda").to(memory_format=torch.channels_last)
    w = torch.randn(shape[1], 1, 7, 7, dtype=dtype, device="cuda") / 7
    return (x, w, None, 1, 3, 1, shape[1]), {}


OP = register(Op(
    name="conv2d", family="window", variants=VARIANTS,
    bytes_moved=_bytes,
    flops=lambda x, w, *a, **k: 2 * x.numel() * w.shape[-1] * w.shape[-2],
    call=conv2d, torch_fn=F.conv2d, example=_example,
    doc="2-D convolution: the depthwise case on kernelkit's kernels, the rest on torch",
    bench_shapes=((64, 96, 56, 56), (64, 768, 7, 7)), bench_dtypes=(torch.float16, torch.bfloat16),
))
