"""Does a row op's shortfall against a same-bytes copy depend on where its output lies?

The copy ceiling is the best of two placements (benchmarks/NOTES.md, "The same-bytes copy ceiling"),
while a ladder times an op with whatever block the caching allocator hands its output. This script
puts x at the start of one buffer and the output `gap` bytes past x's end, for several gaps (and
separate allocations), and times in turn, for every placement: kernelkit's op writing that output,
torch's op, and a copy of x into that output (the same bytes, the same addresses).

    python scripts/placement_rows.py --shapes 1024x65536 --dtypes float16,float32 --ops softmax,layer_norm
"""
import argparse
import datetime

import torch

import kernelkit
from kernelkit.bench import time_interleaved

GAPS = {"adjacent": 0, "+4K": 4096, "+1M12K": (1 << 20) + 3 * 4096, "+2M": 2 << 20, "+33M4K": (33 << 20) + 4096}


def placements(rows, cols, dtype):
    """(name, x, out) for each gap and for two separate allocations."""
    n = rows * cols
    esz = torch.empty((), dtype=dtype).element_size()
    for name, gap in GAPS.items():
        pad = (gap + esz - 1) // esz
        buf = torch.randn(2 * n + pad, device="cuda", dtype=dtype)
        yield name, buf[:n].view(rows, cols), buf[n + pad:].view(rows, cols)
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    yield "separate", x, torch.empty_like(x)


def calls(op, x, out, w, b):
    if op == "softmax":
        return (lambda: kernelkit.softmax(x, out=out), lambda: torch.softmax(x, -1))
    if op == "layer_norm":
        shp = (x.shape[-1],)
        return (lambda: kernelkit.layer_norm(x, shp, w, b, out=out),
                lambda: torch.nn.functional.layer_norm(x, shp, w, b))
    shp = (x.shape[-1],)
    return (lambda: kernelkit.rms_norm(x, shp, w, out=out), lambda: torch.nn.functional.rms_norm(x, shp, w))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1024x65536")
    ap.add_argument("--dtypes", default="float16,float32")
    ap.add_argument("--ops", default="softmax,layer_norm,rms_norm")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {torch.cuda.get_device_name()}")
    for shape in a.shapes.split(","):
        rows, cols = map(int, shape.split("x"))
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            places = list(placements(rows, cols, dtype))
            w = torch.randn(cols, device="cuda", dtype=dtype)
            b = torch.randn(cols, device="cuda", dtype=dtype)
            nbytes = 2 * rows * cols * places[0][1].element_size()
            for op in a.ops.split(","):
                fns, names = [], []
                for name, x, out in places:
                    mine, theirs = calls(op, x, out, w, b)
                    fns += [mine, theirs, lambda x=x, out=out: out.copy_(x)]
                    names += [(name, "kernelkit"), (name, "torch"), (name, "copy")]
                for f in fns:
                    f()
                times = time_interleaved(fns, working_set_bytes=nbytes, reps=a.reps, max_seconds=20.0)
                gbs = {nm: nbytes / t.seconds / 1e9 for nm, t in zip(names, times)}
                print(f"{op} {dt} {shape} ({times[0].reps} rounds), GB/s:")
                print(f"  {'placement':10s} {'kernelkit':>9s} {'torch':>7s} {'copy':>7s} {'kk/copy':>8s}")
                for name, _, _ in places:
                    k, t, c = gbs[(name, "kernelkit")], gbs[(name, "torch")], gbs[(name, "copy")]
                    print(f"  {name:10s} {k:9.0f} {t:7.0f} {c:7.0f} {100 * k / c:7.1f}%")
                best_k = max(v for (p, who), v in gbs.items() if who == "kernelkit")
                best_c = max(v for (p, who), v in gbs.items() if who == "copy")
                print(f"  best of placements: kernelkit {best_k:.0f}, copy {best_c:.0f} ({100 * best_k / best_c:.1f}%)")
            del places


if __name__ == "__main__":
    main()
