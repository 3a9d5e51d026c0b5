"""conv2d: torch.nn.functional.conv2d, with the depthwise case (groups == channels, one filter per
channel) on kernelkit's kernels and every other case on torch: its ladder, torch.library op and public
function."""
from __future__ import annotations

import numbers
from typing import Optional

import torch
import torch.nn.functional as F

from ...ladder import Op, Variant, register
from .._shared.checks import check_same_device, check_tensor
from .._shared.custom_op import out_op
from .._shared.launch_rules import sm_count
from ._common import FLOATS, Planes, empty_output, out_size
from ._depthwise_kernels import (  # noqa: F401  (kernel names, public through this module for tools and tests)
    CONFIG_COLUMNS, CONFIG_PLANES, CONFIG_REGS, CONFIG_TILE, _direct, _planar, _registers_dw, _tiled, columns_name,
    float_weights, planes_name, regs_fit, regs_name, run_columns, run_direct, run_planes, run_regs, run_tiled,
    tile_name, tile_shape)
from ._depthwise_shapes import (  # noqa: F401  (the configurations and rules, public through this module)
    COLUMNS_ROUNDS, COLUMNS_RY, GROUP, PLANAR_TILE_WIDTH, PLANES_MAX_SMEM, PLANES_RY, PLANES_SMEM, PLANES_THREADS,
    REGS_BLOCKS_PER_SM, REGS_KS, REGS_THREADS, REGS_TILES, REGS_WAVES, TILE_KS, TILE_MIN_CHANNELS, TILE_RX, TILE_RY,
    TILE_SMEM, DwColumns, DwPlanes, DwRegs, DwTile, columns_rule, pix_floats, planes_pitch, planes_rule, regs_rule,
    tile_rule)
from .filter2d import _pipelined, _registers, _vector, filter_planes

__all__ = ["conv2d"]

VARIANTS = (
    Variant("direct", "one output per thread (channels_last: 16 bytes of channels per thread, 16-byte tap "
            "loads, tap-major weights), taps read from global memory; any stride, padding and dilation",
            FLOATS, lambda dtype, **_: _direct(dtype)),
    Variant("tiled", "32 channels x an output tile per block, the tile's inputs (halo and padding included) "
            "read once into shared memory as float32 (16-byte channel vectors for channels_last, row runs for "
            "NCHW), a lane a channel with its weights in registers and 2 x 7-8 outputs from register windows; "
            "compiled 3x3, 5x5, 7x7 at stride 1 and 3x3, 5x5 at stride 2 (others: the direct kernels)",
            FLOATS, lambda dtype, **_: (*_tiled(dtype), *_direct(dtype))),
    Variant("registers", "3x3 at strides 1 and 2 from global memory, no shared memory, the filter in registers: "
            "channels_last, 4 channels a thread with their 9 weights and a tile of 2 x 4 (stride 1) or 2 x 2 "
            "outputs, each input row read once a tile as 8- or 16-byte channel vectors (C a multiple of 4 on "
            "aligned vectors); NCHW, a column strip of 4 to 16 outputs a thread, element loads all issued before "
            "the first use (any width and alignment); others: the tiled kernels", FLOATS,
            lambda dtype, **_: (*_registers_dw(dtype), *_tiled(dtype), *_direct(dtype))),
    Variant("best", "3x3 on the register kernels (NCHW columns; channels_last tiles where C is a multiple of 4); "
            "other compiled windows: NCHW on planar bands (whole-width rows of one plane, several whole small "
            "planes, or segments of rows too wide for one strip, staged in shared memory by coalesced row loads; "
            "a thread a column strip of 4 or 8 outputs), channels_last on the tiled kernels (16 channels or "
            "more); a single output row on the direct kernels; planar inputs of fewer channels at stride 1 with "
            "the size-keeping padding on filter2d's pipelined tiles (a weight set per channel; its register "
            "and vector tiles where those do not apply); the direct kernels otherwise", FLOATS,
            lambda dtype, **_: (*_planar(dtype), *_registers_dw(dtype), *_tiled(dtype), *_pipelined(dtype),
                                *_registers(dtype), *_vector(dtype), *_direct(dtype)), default=True),
)

def _conv2d_into(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                 stride: list[int], padding: list[int], dilation: list[int], variant: Optional[str],
                 config: Optional[list[int]]) -> None:
    N, C, H, W = x.shape
    KH, KW = weight.shape[-2:]
    OH, OW = out.shape[-2:]
    dev = x.get_device()
    b = None if bias is None else bias.to(torch.float32).contiguous()
    cl = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    ks = tile_shape(KH, KW, stride, dilation)
    kind = None if config is None else config[0]
    best = variant in (None, "best")
    if cl and (best or variant == "registers") and kind in (None, CONFIG_REGS) and regs_fit(x, ks):
        t = DwRegs(*config[1:]) if kind == CONFIG_REGS else regs_rule(N, C, OH, OW, ks[1], sm_count(dev))
        if run_regs(x, float_weights(weight, True), b, out, ks, padding, t):
            return
    # NCHW: 3x3 on register columns, other compiled windows on planar bands; few channels with the
    # size-keeping padding go to filter2d's tiles below (large planes, where they are faster)
    many_planes = C >= TILE_MIN_CHANNELS or stride != [1, 1] or padding != [KH // 2, KW // 2]
    # one output row (H = 1, or H below the window at stride > 1) goes to the direct kernels, not the bands
    # or tiles: those would compute and stage rows of padding (3 of a strip's 4 output rows; 9 of 10 staged
    # rows at 1 x 4099, 7 x 7) where the direct kernels read only the taps inside the image (H200, 2 x 40 x 1
    # x 4099 fp32 7 x 7: 11.4 us against 19.3 for the bands and 25.6 for the tiles; torch 9.7;
    # docs/design/depthwise.md)
    one_row = OH == 1
    if not cl and ks is not None:
        columns = ks in REGS_KS and (variant == "registers" or best and many_planes)
        if kind == CONFIG_COLUMNS or kind is None and columns:
            t = DwColumns(*config[1:]) if kind == CONFIG_COLUMNS else columns_rule(N * C, OH, OW, *ks, sm_count(dev))
            if run_columns(x.contiguous(), float_weights(weight, False), b, out, ks, padding, t):
                return
        if kind == CONFIG_PLANES or (kind is None and best and many_planes and not one_row):
            t = DwPlanes(*config[1:]) if kind == CONFIG_PLANES else planes_rule(N * C, OH, OW, *ks, sm_count(dev))
            if t is not None:
                run_planes(x.contiguous(), float_weights(weight, False), b, out, ks, padding, t)
                return
    if best and kind is None and one_row:
        run_direct(x if cl else x.contiguous(), float_weights(weight, cl), b, out, (KH, KW), stride, padding,
                   dilation, cl)
        return
    if ks is not None and (variant in ("tiled", "registers") or (best and C >= TILE_MIN_CHANNELS)):
        t = DwTile(*config[1:]) if kind == CONFIG_TILE else tile_rule(OH, OW, ks[0], ks[1], cl)
        run_tiled(x if cl else x.contiguous(), float_weights(weight, True), b, out, ks, padding, cl, t)
        return
    same = (stride == [1, 1] and dilation == [1, 1] and KH % 2 == 1 and KW % 2 == 1
            and padding == [KH // 2, KW // 2])
    if best and same and not cl:
        xc = x.contiguous()
        p = Planes(xc, N * C, H, W, 1, H * W, W)
        filter_planes("best", p, out, float_weights(weight, False), b, C, KH, KW, 0)
        return
    run_direct(x if cl else x.contiguous(), float_weights(weight, cl), b, out, (KH, KW), stride, padding, dilation,
               cl)


_conv2d_out = out_op("conv2d_depthwise_out", _conv2d_into)


def _pair(v, name: str) -> list[int]:
    vals = [v] if isinstance(v, numbers.Integral) else list(v) if isinstance(v, (list, tuple)) else None
    if vals is None or len(vals) not in (1, 2) or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool)
                                                          for a in vals):
        raise TypeError(f"conv2d: {name} must be an int or a pair of ints, got {v!r}")
    return [int(vals[0])] * 2 if len(vals) == 1 else [int(vals[0]), int(vals[1])]


def conv2d(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None, stride=1, padding=0,
           dilation=1, groups: int = 1, *, variant: Optional[str] = None,
           config: "Optional[DwRegs | DwTile | DwPlanes]" = None) -> torch.Tensor:
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
    ``config``: for tuning and tests, a ``DwRegs`` (``kernelkit.ops.window.conv2d.DwRegs``: a thread's
    tile of outputs and the tiles it walks) for the register kernels of a channels_last input they run
    (variant None, "best" or "registers"), a ``DwTile`` (outputs a thread along W, warps across and
    down) for the tiled kernels (variant None, "best" or "tiled"), or, for an NCHW input, a ``DwColumns``
    (output rows a thread) for the planar register kernels (variant None, "best" or "registers") or a
    ``DwPlanes`` (output rows a thread, planes a block, strips a band, columns a segment) for the planar
    band kernels (variant None or "best"); without one ``regs_rule`` and ``tile_rule`` (channels_last),
    ``columns_rule`` and ``planes_rule`` (NCHW) pick from the problem's sizes, kernel, stride and SM count.

    Raises TypeError for a non-tensor input, a depthwise input of another dtype, sizes that are not
    ints or a config that is not one of those; ValueError for an unknown variant, a weight or bias on another
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
        cfg = _check_config(config, input, KH, KW, s, d, variant, OH, OW)
        variant = {DwPlanes: "best", DwRegs: "registers", DwColumns: "registers", DwTile: "tiled"}[type(config)]
    out = empty_output(input, (N, C, OH, OW))
    if out.numel():
        _conv2d_out(input, weight, bias, out, s, p, d, variant, cfg)
    return out


def _check_config(config, x: torch.Tensor, KH: int, KW: int, s: list[int], d: list[int], variant: Optional[str],
                  OH: int, OW: int) -> list[int]:
    if not isinstance(config, (DwRegs, DwColumns, DwTile, DwPlanes)):
        raise TypeError(f"conv2d: config must be a DwRegs, a DwColumns, a DwTile or a DwPlanes, got "
                        f"{type(config).__name__}")
    channels_last = not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    planar, regs = isinstance(config, DwPlanes), isinstance(config, DwRegs)
    rung = "registers" if isinstance(config, (DwRegs, DwColumns)) else None if planar else "tiled"
    if variant not in (None, "best", rung):
        raise ValueError(f"conv2d: {type(config).__name__} sets the register, tiled or planar kernels' block, "
                         f"not the {variant!r} rung's")
    ks = tile_shape(KH, KW, s, d)
    if regs:
        if not (channels_last and regs_fit(x, ks) and config.fits(ks[1])):
            raise ValueError(f"conv2d: {config} is not a tile the register kernels run on this input: "
                             f"channels_last, (K, S) in {REGS_KS}, C a multiple of 4 on aligned vectors, (rx, ry) "
                             f"in {REGS_TILES}")
        return [CONFIG_REGS, config.rx, config.ry, config.chunk]
    if isinstance(config, DwColumns):
        if channels_last or ks not in REGS_KS or not config.fits():
            raise ValueError(f"conv2d: {config} is not a strip the planar register kernels run: an NCHW input, "
                             f"(K, S) in {REGS_KS}, ry in {COLUMNS_RY}")
        return [CONFIG_COLUMNS, config.ry]
    if ks is None:
        raise ValueError(f"conv2d: no tiled kernel for a {KH}x{KW} window at stride {s}, dilation {d}; "
                         f"they are compiled for (K, S) in {TILE_KS}")
    if planar:
        if channels_last or not config.fits(OH, OW, *ks):
            raise ValueError(f"conv2d: {config} is not a band the planar kernels run: NCHW input, ry in "
                             f"{PLANES_RY}, several planes only whole (and whole rows), at most {PLANES_MAX_SMEM} "
                             f"bytes of shared memory")
        return [CONFIG_PLANES, config.ry, config.planes, config.strips, config.cols]
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
