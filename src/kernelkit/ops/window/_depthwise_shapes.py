"""The depthwise conv2d's launch shapes and their rules: the register tiles (``DwRegs``, ``regs_rule``) and
the channel-group tile (``DwTile``, ``tile_rule``) of channels_last inputs, and the planar bands
(``DwPlanes``, ``planes_rule``) of NCHW inputs, each a function of the problem's sizes, the window, the
stride and the device's SM count. conv2d.py launches them; ``config=`` takes any of the dataclasses."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

from .._shared.launch_rules import cdiv


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
    strips of ``ry`` output rows (``ry`` in PLANES_RY), staged in shared memory at full width, or, with
    ``cols`` > 0, in segments of ``cols`` output columns (rows too wide for one strip at full width); a
    thread computes one column of a strip."""

    ry: int
    planes: int
    strips: int
    cols: int = 0  # output columns a segment; 0: the whole width

    def rows(self, k: int, s: int) -> int:
        """Input rows a plane's band stages (its halo and padding included)."""
        return (self.strips * self.ry - 1) * s + k

    def width(self, ow: int) -> int:
        """Output columns a block stages: a segment's, or the whole row's."""
        return min(self.cols, ow) if self.cols else ow

    def smem(self, ow: int, k: int, s: int) -> int:
        return self.planes * self.rows(k, s) * planes_pitch(self.width(ow), k, s) * 4

    def fits(self, oh: int, ow: int, k: int, s: int) -> bool:
        """Whether the kernels run this band: a compiled ry, several planes only as whole planes (and whole
        rows), and PLANES_MAX_SMEM."""
        return (self.ry in PLANES_RY and self.planes >= 1 and self.strips >= 1 and self.cols >= 0
                and (self.planes == 1 or self.strips >= cdiv(oh, self.ry) and self.width(ow) == ow)
                and self.smem(ow, k, s) <= PLANES_MAX_SMEM)


def planes_pitch(ow: int, k: int, s: int) -> int:
    """Floats a staged row takes: the (OW - 1) S + K inputs, at stride 2 as two halves of equal length."""
    iw = (ow - 1) * s + k
    return iw if s == 1 else 2 * cdiv(iw, 2)


PLANES_SEGMENT_ALIGN = 32  # a segment's output columns: whole warps of a strip row


@functools.lru_cache(maxsize=4096)
def planes_rule(planes: int, oh: int, ow: int, k: int, s: int, sms: int) -> Optional[DwPlanes]:
    """The band for ``planes`` NCHW planes of OH x OW outputs, or None when not even one strip of
    PLANES_SEGMENT_ALIGN columns fits PLANES_SMEM. ``ry``: the fewest staged rows read per column, (OH / ry
    rounded up) ((ry - 1) S + K) (ties: 8); the whole plane when it fits, with the planes a block (up to
    PLANES_ITEMS strips, no fewer than two blocks an SM) whose strips fill the threads' rounds best; else
    the most strips that fit, split evenly over the bands; where one strip of the whole row does not fit
    (wide rows: 1 x 4099 at 7 x 7 is 10 rows of 4105 floats), segments of the row, as wide as one strip
    allows in multiples of PLANES_SEGMENT_ALIGN columns, evened out over the row, with the strips that fit
    that width."""
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
    if ns >= 1:
        return DwPlanes(ry, 1, cdiv(every, cdiv(every, ns)))
    one = (ry - 1) * s + k  # the rows of one strip
    widest = ((budget // one - k) // s + 1) // PLANES_SEGMENT_ALIGN * PLANES_SEGMENT_ALIGN
    while widest >= PLANES_SEGMENT_ALIGN and one * planes_pitch(widest, k, s) > budget:
        widest -= PLANES_SEGMENT_ALIGN  # stride 2 rounds a row's pitch up to even
    if widest < PLANES_SEGMENT_ALIGN:
        return None
    cols = min(widest, cdiv(cdiv(ow, cdiv(ow, widest)), PLANES_SEGMENT_ALIGN) * PLANES_SEGMENT_ALIGN)
    ns = max(1, ((budget // planes_pitch(cols, k, s) - k) // s + 1) // ry)
    return DwPlanes(ry, 1, cdiv(every, cdiv(every, ns)), cols)


# The register rung (dw_registers): channels_last, 4 channels a thread with their K*K weights in registers,
# a tile of ry x rx outputs, no shared memory. Compiled for 3x3 at strides 1 and 2 (5x5's 100 weights do not
# fit beside the sums).
REGS_KS = ((3, 1), (3, 2))
REGS_TILES = {1: ((4, 2), (2, 2)), 2: ((2, 2), (4, 1))}  # (rx, ry) by stride; the first is the rule's
REGS_THREADS = 128
REGS_BLOCKS_PER_SM = 4  # the kernels' launch bounds: at most 128 registers a thread
REGS_WAVES = 8  # a thread walks several tiles only while the grid still fills this many rounds of the GPU


@dataclass(frozen=True)
class DwRegs:
    """The register rung's tile: ``ry`` x ``rx`` outputs of 4 channels a thread (a pair of REGS_TILES),
    ``chunk`` such tiles a thread walks down the image (its weights read once for all)."""

    rx: int
    ry: int
    chunk: int

    def fits(self, s: int) -> bool:
        return (self.rx, self.ry) in REGS_TILES[s] and self.chunk >= 1


@functools.lru_cache(maxsize=4096)
def regs_rule(n: int, c: int, oh: int, ow: int, s: int, sms: int) -> DwRegs:
    """The stride's first tile; ``chunk`` > 1 only where the threads of one tile a thread would fill more
    than REGS_WAVES rounds of the GPU's resident threads (then as many tiles a thread as keep that many)."""
    rx, ry = REGS_TILES[s][0]
    threads = n * cdiv(ow, rx) * (c // 4)  # a thread's column of tiles
    rows = cdiv(oh, ry)
    resident = sms * REGS_BLOCKS_PER_SM * REGS_THREADS
    return DwRegs(rx, ry, max(1, min(rows, rows * threads // (REGS_WAVES * resident))))


COLUMNS_RY = (4, 8, 16)  # output rows a thread of the planar register kernels (dw_columns), 3x3 at strides 1, 2
COLUMNS_STRIP_COST = 2  # a strip's fixed work (its weights, indices, stores) in input rows' worth
COLUMNS_ROUNDS = 4  # fewer threads than this many rounds of resident ones leave the loads' latency bare


@dataclass(frozen=True)
class DwColumns:
    """The planar register kernels' strip (NCHW): ``ry`` output rows of one column a thread (in COLUMNS_RY)."""

    ry: int

    def fits(self) -> bool:
        return self.ry in COLUMNS_RY


@functools.lru_cache(maxsize=4096)
def columns_rule(planes: int, oh: int, ow: int, k: int, s: int, sms: int) -> DwColumns:
    """The strip of least cost, cdiv(OH, ry) strips of (ry - 1) S + K input rows and COLUMNS_STRIP_COST,
    among those whose threads fill at least COLUMNS_ROUNDS rounds of the GPU's resident threads; where none
    does, the shortest strip (the most threads)."""
    resident = sms * REGS_BLOCKS_PER_SM * REGS_THREADS
    full = [ry for ry in COLUMNS_RY if planes * cdiv(oh, ry) * ow >= COLUMNS_ROUNDS * resident]
    if not full:
        return DwColumns(min(COLUMNS_RY))
    return DwColumns(min(full, key=lambda ry: (cdiv(oh, ry) * ((ry - 1) * s + k + COLUMNS_STRIP_COST), -ry)))
