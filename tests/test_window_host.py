"""The pipelined window kernels (filter2d, Sobel, the separable filters) built for the host by g++ and run
on CPU inputs against the float64 references (tests/window_host.py says how): the tile walk over several
tiles a block with both buffers, the border rules, the aligned kernels and the per-row shift of the
unaligned ones, the register windows and their conversions, the packed stores, on odd sizes, 1-pixel
images, kernels larger than the image and HWC images. Without g++ or CUDA's host headers: skipped."""
import pytest
import torch

import window_host
from kernelkit import reference
from kernelkit.ops.window import _common, _separable
from kernelkit.ops.window import filter2d as f2d
from kernelkit.ops.window import sobel as sob
from kernelkit.ops.window.gaussian_blur import _kernel1d, _sigmas

pytestmark = pytest.mark.skipif(window_host.available() is not None, reason=str(window_host.available()))
MODES = _common.BORDERS
U8 = torch.uint8


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("window-host")


def _input(shape, dtype, offset):
    n = 1
    for s in shape:
        n *= s
    g = torch.Generator().manual_seed(n + offset)
    base = (torch.randint(0, 256, (n + offset,), dtype=U8, generator=g) if dtype == U8
            else (torch.randn(n + offset, generator=g) * 3).to(dtype))
    return base[offset:].view(shape)


def _check(out, ref, x, what, raw=None):
    """As the GPU tests: float outputs within the dtype's tolerance, no NaN (unwritten outputs hold NaN bits);
    uint8 exact but within 5e-3 of a rounding tie."""
    o, r = out.double(), ref.double()
    if x.dtype == U8:
        diff = (o - r).abs()
        ok = diff == 0
        if raw is not None:
            ok |= ((raw - raw.floor() - 0.5).abs() < 5e-3) & (diff <= 1)
        bad = (~ok).nonzero()
        assert bad.numel() == 0, f"{what}: {bad.shape[0]} wrong, first at {bad[:3].tolist()}"
        return
    rtol, atol = {torch.float32: (1e-5, 1e-4), torch.float16: (4e-3, 2e-2), torch.bfloat16: (2e-2, 1e-1)}[x.dtype]
    assert not torch.isnan(o).any(), f"{what}: NaN in the output"
    bad = ~((o - r).abs() <= atol * r.abs().max().clamp(min=1.0) + rtol * r.abs())
    assert int(bad.sum()) == 0, f"{what}: {int(bad.sum())} of {r.numel()} off, max err {float((o - r).abs().max())}"


def _tmpl(dtype, *ints, aligned):
    return ", ".join([window_host.CXX[dtype], *map(str, ints), "true" if aligned else "false"])


# (dtype, K, C, shape, offset, border): every K and C of some dtype, both alignments; 5 blocks for 12-40 tiles
F2D = [
    (torch.float32, 5, 1, (2, 37, 304), 0, "reflect"), (torch.float32, 3, 1, (2, 37, 307), 1, "zero"),
    (torch.float32, 7, 1, (2, 37, 307), 1, "replicate"), (torch.float16, 5, 1, (2, 37, 307), 1, "reflect"),
    (torch.bfloat16, 7, 1, (2, 37, 304), 0, "zero"), (U8, 5, 1, (2, 37, 1107), 1, "reflect"),
    (U8, 5, 3, (2, 23, 176, 3), 0, "replicate"), (U8, 7, 4, (2, 23, 177, 4), 1, "zero"),
    (U8, 3, 3, (1, 1, 3), 0, "reflect"), (torch.float32, 7, 1, (13, 1), 0, "reflect"),
    (torch.float16, 3, 1, (1, 13), 1, "replicate"),
]


@pytest.mark.parametrize("dtype,k,c,shape,offset,border", F2D, ids=lambda v: str(v).replace("torch.", ""))
def test_filter2d_pipelined_on_the_host(dtype, k, c, shape, offset, border, workdir):
    x = _input(shape, dtype, offset)
    w = (torch.randn(k, k, generator=torch.Generator().manual_seed(k)) / k).float()
    a = window_host.aligned(x, c > 1)
    ry = f2d.pipe_rows(dtype, k)
    tw, th, ld = _common.pipe_geometry(x.element_size(), k // 2, c, ry, a)
    out = window_host.run("f2d", _tmpl(dtype, k, c, ry, aligned=a), x, c > 1, w.flatten().tolist(), k, k,
                          MODES[border], 5, _common.pipe_tile_bytes(x.element_size(), th + k - 1, ld, a), workdir)
    raw = reference.filter2d(x.double(), w, border, channels_last=c > 1) if dtype == U8 else None
    _check(out, reference.filter2d(x, w, border, channels_last=c > 1), x, f"aligned={a}", raw)


def test_filter2d_weight_sets_follow_the_planes(workdir):
    """groups: plane p takes weight set p % groups (the depthwise convolution's use), reloaded as a block's
    tiles move between planes."""
    x = _input((6, 20, 40), torch.float32, 0)
    w = torch.randn(3, 5, 5, generator=torch.Generator().manual_seed(9)).float()
    out = window_host.run("f2d", _tmpl(torch.float32, 5, 1, 4, aligned=True), x, False, w.flatten().tolist(), 5, 5,
                          MODES["zero"], 4, _common.pipe_tile_bytes(4, 36, 136, True), workdir, groups=3)
    _check(out, torch.stack([reference.filter2d(x[p], w[p % 3], "zero") for p in range(6)]), x, "groups")


@pytest.mark.parametrize("dtype,c,shape,offset,border", [
    (torch.float32, 1, (2, 37, 307), 1, "reflect"), (torch.float16, 1, (2, 37, 304), 0, "replicate"),
    (U8, 1, (2, 37, 1104), 0, "zero"), (U8, 3, (2, 23, 177, 3), 1, "reflect"), (U8, 1, (5, 3), 1, "reflect"),
], ids=lambda v: str(v).replace("torch.", ""))
def test_sobel_pipelined_on_the_host(dtype, c, shape, offset, border, workdir):
    x = _input(shape, dtype, offset)
    a = window_host.aligned(x, c > 1)
    ry = sob.pipe_rows(dtype)
    tw, th, ld = _common.pipe_geometry(x.element_size(), 1, c, ry, a)
    out = window_host.run("sobel", _tmpl(dtype, c, ry, aligned=a), x, c > 1, [0.0], 3, 3, MODES[border], 5,
                          _common.pipe_tile_bytes(x.element_size(), th + 2, ld, a), workdir)
    raw = reference.sobel(x.double(), border, channels_last=c > 1) if dtype == U8 else None
    _check(out, reference.sobel(x, border, channels_last=c > 1), x, f"aligned={a}", raw)


@pytest.mark.parametrize("dtype,ks,c,shape,offset", [
    (torch.float32, 7, 1, (2, 45, 304), 0), (torch.float32, [31, 5], 1, (2, 45, 307), 1),
    (torch.bfloat16, [3, 9], 1, (2, 45, 307), 1), (U8, 5, 3, (2, 41, 176, 3), 0), (U8, 5, 3, (2, 41, 177, 3), 1),
    (U8, 15, 4, (2, 41, 177, 4), 1), (U8, 7, 1, (2, 45, 1104), 0), (torch.float16, 31, 1, (7, 33), 0),
], ids=lambda v: str(v).replace("torch.", ""))
def test_gaussian_pipelined_on_the_host(dtype, ks, c, shape, offset, workdir):
    x = _input(shape, dtype, offset)
    a = window_host.aligned(x, c > 1)
    kx, ky = (ks, ks) if isinstance(ks, int) else ks
    sx, sy = _sigmas(None, kx, ky)
    m = _separable.kmax_for(max(kx, ky))
    out = window_host.run("sep", _tmpl(dtype, m, c, _separable.pipe_rows(dtype, m), aligned=a), x, c > 1,
                          _kernel1d(kx, sx) + _kernel1d(ky, sy), ky, kx, MODES["reflect"], 5,
                          _separable.pipe_shmem(dtype, m, c, ky, a)[2], workdir, bounded=1)
    raw = reference.gaussian_blur(x.double(), ks, channels_last=c > 1) if dtype == U8 else None
    _check(out, reference.gaussian_blur(x, ks, channels_last=c > 1), x, f"aligned={a}", raw)


@pytest.mark.parametrize("normalize", [True, False])
def test_box_pipelined_on_the_host(normalize, workdir):
    """uint8 means skip the clamps (bounded), sums saturate."""
    x = _input((2, 37, 1107), U8, 1)
    kh, kw = 5, 3
    w = [1.0 / kw] * kw + [1.0 / kh] * kh if normalize else [1.0] * (kw + kh)
    out = window_host.run("sep", _tmpl(U8, 5, 1, _separable.pipe_rows(U8, 5), aligned=False), x, False, w, kh, kw,
                          MODES["replicate"], 5, _separable.pipe_shmem(U8, 5, 1, kh, False)[2], workdir,
                          bounded=int(normalize))
    _check(out, reference.box_filter(x, (kh, kw), "replicate", normalize), x, f"normalize={normalize}",
           reference.box_filter(x.double(), (kh, kw), "replicate", normalize))


@pytest.mark.parametrize("op,dtype,shape,offset,grid", [
    ("f2d", torch.float32, (2, 100, 400), 0, 5), ("f2d", torch.float32, (2, 100, 401), 1, 7),
    ("sep", U8, (1, 100, 400, 3), 0, 5), ("sep", U8, (1, 100, 401, 3), 1, 3),
    ("sobel", torch.float16, (3, 70, 700), 1, 4),
], ids=lambda v: str(v).replace("torch.", ""))
def test_inner_tiles_on_the_host(op, dtype, shape, offset, grid, workdir):
    """Planes of 3 x 3 tiles and more: the inner tiles take the copy without border tests (aligned and
    shifted rows), the edge tiles the border path, and grids that leave a remainder of tile columns and
    rows make the walk carry across tile rows and planes."""
    x = _input(shape, dtype, offset)
    c = shape[-1] if op == "sep" else 1
    a = window_host.aligned(x, c > 1)
    if op == "f2d":
        w = (torch.randn(5, 5, generator=torch.Generator().manual_seed(5)) / 5).float()
        tw, th, ld = _common.pipe_geometry(x.element_size(), 2, 1, 4, a)
        out = window_host.run("f2d", _tmpl(dtype, 5, 1, 4, aligned=a), x, False, w.flatten().tolist(), 5, 5,
                              MODES["reflect"], grid, _common.pipe_tile_bytes(x.element_size(), th + 4, ld, a), workdir)
        _check(out, reference.filter2d(x, w, "reflect"), x, f"aligned={a}")
    elif op == "sep":
        s = _sigmas(None, 5, 5)[0]
        ry = _separable.pipe_rows(dtype, 5)
        out = window_host.run("sep", _tmpl(dtype, 5, c, ry, aligned=a), x, True, _kernel1d(5, s) * 2, 5, 5,
                              MODES["reflect"], grid, _separable.pipe_shmem(dtype, 5, c, 5, a)[2], workdir, bounded=1)
        _check(out, reference.gaussian_blur(x, 5, channels_last=True), x, f"aligned={a}",
               reference.gaussian_blur(x.double(), 5, channels_last=True))
    else:
        ry = sob.pipe_rows(dtype)
        tw, th, ld = _common.pipe_geometry(x.element_size(), 1, 1, ry, a)
        out = window_host.run("sobel", _tmpl(dtype, 1, ry, aligned=a), x, False, [0.0], 3, 3, MODES["replicate"],
                              grid, _common.pipe_tile_bytes(x.element_size(), th + 2, ld, a), workdir)
        _check(out, reference.sobel(x, "replicate"), x, f"aligned={a}")
