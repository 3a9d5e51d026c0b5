"""Depthwise conv2d on planes of few, wide rows (NCHW): the default rung (segments of the planar band, or the
direct kernels for a single output row) against the channel-group tile that ran these before, the direct
kernels, torch, and the planar band at fixed segment widths (``config=DwPlanes(ry, 1, 1, cols)``), timed in
turn in one process (kernelkit.bench.timing.time_interleaved: shuffled rounds, medians).

    python benchmarks/depthwise_wide.py [--out FILE]   (default benchmarks/results/depthwise-wide-<device>.json)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import device_tag  # noqa: E402

CASES = (((2, 40, 3, 8191), 5), ((2, 40, 5, 4099), 7), ((2, 40, 1, 4099), 7), ((2, 40, 1, 4099), 5),
         ((8, 64, 1, 2053), 7))
SEGMENTS = ((4, 128), (4, 512), (8, 128), (8, 512))  # (ry, cols) timed beside the rule's choice


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out")
    a = p.parse_args(argv)
    import torch
    import torch.nn.functional as F

    import kernelkit as kk
    from kernelkit.bench import environment
    from kernelkit.bench.timing import time_interleaved
    from kernelkit.ops.window.conv2d import DwPlanes
    from kernelkit.ops.window._depthwise_shapes import planes_rule, tile_rule

    records = []
    for dt in (torch.float32, torch.float16):
        for shape, k in CASES:
            n, c, h, w = shape
            x = torch.randn(shape, device="cuda", dtype=dt)
            wt = torch.randn(c, 1, k, k, device="cuda", dtype=dt) / k
            oh, ow = h, w  # stride 1, padding k // 2
            conv = lambda **kw: kk.conv2d(x, wt, None, 1, k // 2, 1, c, **kw)  # noqa: E731
            want = F.conv2d(x.double(), wt.double(), None, 1, k // 2, 1, c)
            err = ((conv().double() - want).abs().max() / want.abs().max()).item()
            fns = {"best": lambda: conv(), "tile": lambda: conv(config=tile_rule(oh, ow, k, 1, False)),
                   "direct": lambda: conv(variant="direct"), "torch": lambda: F.conv2d(x, wt, None, 1, k // 2, 1, c)}
            for ry, cols in SEGMENTS:
                cfg = DwPlanes(ry, 1, 1, cols)
                if cfg.fits(oh, ow, k, 1):
                    fns[f"band ry={ry} cols={cols}"] = lambda cfg=cfg: conv(config=cfg)
            t = time_interleaved(list(fns.values()), max_seconds=0.5, shuffle=True)
            r = {"dtype": str(dt)[6:], "shape": list(shape), "k": k, "rule": str(planes_rule(n * c, oh, ow, k, 1,
                 torch.cuda.get_device_properties(0).multi_processor_count)), "max_rel_err": err,
                 "us": {name: round(tt.median_us, 2) for name, tt in zip(fns, t)}}
            records.append(r)
            print(json.dumps(r), flush=True)
    tag = device_tag(torch.cuda.get_device_name(0))
    out = Path(a.out or Path(__file__).parent / "results" / f"depthwise-wide-{tag}.json")
    out.write_text(json.dumps({"environment": environment(), "records": records}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
