"""normalize_image on the GPU: every rung x out dtype x layout x channels x shape against float64."""
import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.elementwise import ElementwiseLaunch
from gpu_helpers import assert_close

pytestmark = pytest.mark.gpu

RUNGS = [v.name for v in kernelkit.ladder("normalize_image")]
DTYPES = (torch.float16, torch.float32, torch.bfloat16)
MEAN, STD = [0.485, 0.456, 0.406, 0.5], [0.229, 0.224, 0.225, 0.3]
# (N, H, W) with H*W % 16 == 0 (the vector path) and not (the per-pixel path); None: no batch dim
GEOMS = [(None, 4, 8), (2, 16, 16), (3, 7, 9), (None, 5, 3), (2, 224, 224), (1, 1, 1)]


def _image(shape, byte_offset=0):
    n = 1
    for s in shape:
        n *= s
    base = torch.randint(0, 256, (n + byte_offset,), dtype=torch.uint8, device="cuda")
    return base[byte_offset:].view(shape)


def _check(variant, dtype, layout, c, geom, offset=0):
    n, h, w = geom
    shape = (h, w, c) if n is None else (n, h, w, c)
    img = _image(shape, offset)
    out = kernelkit.normalize_image(img, MEAN[:c], STD[:c], dtype=dtype, layout=layout, variant=variant)
    want = reference.normalize_image(img, MEAN[:c], STD[:c], layout=layout)
    assert out.dtype == dtype and out.shape == want.shape and out.is_contiguous()
    assert_close(out, want, dtype, f"{variant} {dtype} {layout} C={c} {shape} +{offset}")


@pytest.mark.parametrize("geom", GEOMS, ids=[str(g) for g in GEOMS])
@pytest.mark.parametrize("c", [1, 2, 3, 4])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "f32", "bf16"])
@pytest.mark.parametrize("variant", RUNGS)
def test_every_rung_matches_float64(variant, dtype, layout, c, geom):
    _check(variant, dtype, layout, c, geom)
    _check(variant, dtype, layout, c, geom, offset=1)  # misaligned input: the fallback path


@pytest.mark.parametrize("variant", RUNGS)
def test_small_every_rung(variant):
    for dtype in DTYPES:
        for layout in ("CHW", "HWC"):
            for c in (1, 3, 4):
                _check(variant, dtype, layout, c, (2, 4, 8))
                _check(variant, dtype, layout, c, (None, 3, 5), offset=3)


@pytest.mark.parametrize("config", [ElementwiseLaunch(32), ElementwiseLaunch(1024), ElementwiseLaunch(64, 16)],
                         ids=str)
def test_config_launches_match_float64(config):
    """Launch shapes other than the rule's (config=) for the vector kernels, every layout and C."""
    for dtype in DTYPES:
        for layout in ("CHW", "HWC"):
            for c in (1, 2, 3, 4):
                for shape in ((2, 16, 24, c), (3, 40, 56, c), (1, 7, 9, c)):
                    img = _image(shape)
                    out = kernelkit.normalize_image(img, MEAN[:c], STD[:c], dtype=dtype, layout=layout, config=config)
                    want = reference.normalize_image(img, MEAN[:c], STD[:c], layout=layout)
                    assert_close(out, want, dtype, f"{config} {dtype} {layout} {shape}")
    with pytest.raises(ValueError, match="'fast' rung"):
        kernelkit.normalize_image(img, 0.5, 0.25, variant="pixel", config=config)


def test_matches_the_torch_expression():
    img = _image((64, 48, 3))
    mean = torch.tensor(MEAN[:3], device="cuda").view(3, 1, 1)
    std = torch.tensor(STD[:3], device="cuda").view(3, 1, 1)
    want = ((img.permute(2, 0, 1).float() / 255) - mean) / std
    got = kernelkit.normalize_image(img, MEAN[:3], STD[:3], dtype=torch.float32)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_mean_std_forms_and_noncontiguous():
    img = _image((2, 16, 16, 3))
    ref = reference.normalize_image(img, [0.5] * 3, [0.25] * 3)
    assert_close(kernelkit.normalize_image(img, 0.5, 0.25), ref, torch.float16, "scalars")
    assert_close(kernelkit.normalize_image(img, torch.tensor([0.5] * 3), (0.25,)), ref, torch.float16, "tensor")
    assert_close(kernelkit.normalize_image(img, 0.5, 0.25, dtype="float16", layout="chw"), ref, torch.float16, "str")
    crop = img[:, 2:10, 3:11]  # non-contiguous
    assert_close(kernelkit.normalize_image(crop, 0.5, 0.25),
                 reference.normalize_image(crop, 0.5, 0.25), torch.float16, "crop")
    assert kernelkit.normalize_image(torch.empty(0, 4, 4, 3, dtype=torch.uint8, device="cuda"), 0, 1).shape == (0, 3, 4, 4)


def test_bad_arguments_raise_clearly():
    img = _image((4, 4, 3))
    with pytest.raises(TypeError, match="image must have dtype uint8"):
        kernelkit.normalize_image(img.float(), 0, 1)
    with pytest.raises(ValueError, match="1 <= C <= 4"):
        kernelkit.normalize_image(_image((4, 4, 5)), 0, 1)
    with pytest.raises(ValueError, match="1 <= C <= 4"):
        kernelkit.normalize_image(_image((4, 4)), 0, 1)
    with pytest.raises(ValueError, match="mean has 2 values"):
        kernelkit.normalize_image(img, [0.1, 0.2], 1)
    with pytest.raises(ValueError, match="std must be non-zero"):
        kernelkit.normalize_image(img, 0, [1, 0, 1])
    with pytest.raises(TypeError, match="CPU tensor"):
        kernelkit.normalize_image(img, torch.zeros(3, device="cuda"), 1)
    with pytest.raises(TypeError, match="dtype must be"):
        kernelkit.normalize_image(img, 0, 1, dtype=torch.int32)
    with pytest.raises(ValueError, match="layout must be"):
        kernelkit.normalize_image(img, 0, 1, layout="NCHW")


def test_torch_compile():
    img = _image((2, 16, 16, 3))
    f = torch.compile(lambda t: kernelkit.normalize_image(t, MEAN[:3], STD[:3]) * 1, fullgraph=True)
    assert_close(f(img), reference.normalize_image(img, MEAN[:3], STD[:3]), torch.float16, "compiled")


@pytest.mark.slow
def test_more_than_2_31_elements():
    img = torch.randint(0, 256, (3, 16384, 16384, 3), dtype=torch.uint8, device="cuda")  # 2.4e9 elements
    out = kernelkit.normalize_image(img, MEAN[:3], STD[:3], dtype=torch.float16)
    for i, r in ((0, 0), (2, 16383)):
        assert_close(out[i, :, r], reference.normalize_image(img[i, r:r + 1], MEAN[:3], STD[:3])[:, 0],
                     torch.float16, f"image {i} row {r}")
    del img, out
    torch.cuda.empty_cache()
