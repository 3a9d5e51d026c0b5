"""The separable filters' register strips on the CPU: their launch rules one by one (which inputs they
take, lane width, halo lanes, strip width and height, the weights parameter), and their SASS on sm_80 and
sm_90: vector loads and stores of a lane's bytes, the halo by shuffles, no shared memory, nothing spilled,
uint8 converted without I2F."""
import numpy as np
import pytest
import torch

from kernelkit.ops.window import _strips
from kernelkit.ops.window._common import planes_of


def test_kernel_sizes_lanes_and_widths():
    assert [_strips.strip_k(kh, kw) for kh, kw in ((1, 1), (3, 1), (1, 5), (5, 3), (7, 7), (9, 3))] == \
        [3, 3, 5, 5, 7, None]
    assert [_strips.lane_bytes(k) for k in (3, 5, 7)] == [16, 16, 8]
    # one halo lane a side while the reach (K // 2 elements) fits a lane: 30 lanes of outputs
    assert [_strips.halo_lanes(k, 1) for k in (3, 5, 7)] == [1, 1, 1]
    assert [_strips.strip_width(k, 1) for k in (3, 5, 7)] == [480, 480, 240]
    assert _strips.halo_lanes(7, 3) == 2 and _strips.strip_width(7, 3) == 224  # 9 elements: two 8-byte lanes


def test_strip_height_rule():
    """Two strips a resident warp where the image allows, never fewer than 2 (K - 1) rows (the extra input
    rows at most half a strip's own), never more than the image."""
    warps = 132 * 16
    assert _strips.strip_height(18, 8192, 3, warps) == 35  # 18 x 8192 rows of strips over 4224
    assert _strips.strip_height(18, 8192, 7, warps) == 35
    assert _strips.strip_height(4, 1080, 5, warps) == 8  # few strips: the floor of 2 (K - 1)
    assert _strips.strip_height(4, 5, 7, warps) == 5  # the image is shorter than the floor
    assert _strips.strip_height(1, 1, 3, warps) == 1
    for cols, H, k in ((1, 100000, 3), (35, 4321, 5), (2, 9, 7)):
        sh = _strips.strip_height(cols, H, k, warps)
        assert 1 <= sh <= H and (sh >= 2 * (k - 1) or sh == H)


def test_taps_parameter_layout():
    """128 bytes: 16 horizontal weights, the given ones centred in the first K, then 16 vertical; shorter
    1-D kernels are centred with zeros (an uint8 input is finite, so a zero tap adds nothing)."""
    raw = np.frombuffer(_strips.taps_param(5, (0.25, 0.5, 0.25), (0.1, 0.2, 0.4, 0.2, 0.1)), dtype=np.float32)
    assert raw.shape == (32,)
    assert raw[:5].tolist() == pytest.approx([0, 0.25, 0.5, 0.25, 0]) and not raw[5:16].any()
    assert raw[16:21].tolist() == pytest.approx([0.1, 0.2, 0.4, 0.2, 0.1]) and not raw[21:].any()


def test_inputs_the_strips_take(monkeypatch):
    """uint8, one channel, kernels up to 7, rows 16-byte aligned (base, row and plane pitch), W * C a
    multiple of 16, and a launch path that carries the 128-byte parameter; anything else runs the tiles."""
    monkeypatch.setattr(_strips, "maps_supported", lambda: True)

    def takes(x, cl=False, k=5):
        return _strips.strips_take(planes_of(x, cl, "t"), k, k)

    base = torch.zeros(16 * 64 * 64 + 64, dtype=torch.uint8)
    assert takes(base[:64 * 64].view(64, 64)) and takes(base[:2 * 64 * 64].view(2, 64, 64))
    assert takes(base[:64 * 64].view(64, 64, 1), cl=True)
    assert not takes(base[:64 * 64].view(64, 64), k=9)
    assert not takes(base[1:1 + 64 * 64].view(64, 64))  # misaligned base
    assert not takes(base[:64 * 72].view(64, 72)[:, :64])  # W a multiple of 16 but rows 72 apart
    assert not takes(base[:64 * 40].view(64, 40))  # W * C not a multiple of 16
    assert not takes(base[:64 * 48].view(64, 16, 3), cl=True)  # three channels
    assert not takes(torch.zeros(64, 64))  # float32
    monkeypatch.setattr(_strips, "maps_supported", lambda: False)
    assert not takes(base[:64 * 64].view(64, 64))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_strips_sass(arch):
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.ladder_inspect import analyze_op
    rows = analyze_op("gaussian_blur", arch, variants=["strips"], dtypes=[torch.uint8])
    assert len(rows) == len(_strips.STRIP_K) * len(_strips.STRIP_C) * 2
    for r in rows:
        lane_bits = 8 * _strips.lane_bytes(int(r.kernel.name.split("<")[1].split(",")[0]))
        assert lane_bits in r.load_widths and lane_bits in r.store_widths, r.kernel.name
        assert any(op.startswith("SHFL.UP") for op in r.opcodes) and any(op.startswith("SHFL.DOWN") for op in r.opcodes)
        assert not any(op.startswith(("LDS", "STS", "LDGSTS")) for op in r.opcodes), r.kernel.name
        assert r.local_ops == 0 and r.spill_bytes == 0, r.kernel.name
        assert not {op for op in r.opcodes if op.startswith(("I2F", "F2I"))} - {"I2F.RP", "F2I.FTZ.U32.TRUNC.NTZ"}
