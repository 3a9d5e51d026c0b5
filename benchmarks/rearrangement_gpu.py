"""The rearrangement family on one GPU: the transpose / permute ladders timed, the wide-tile sweep, and small cases for
compute-sanitizer and Nsight Compute.

    python benchmarks/rearrangement_gpu.py bench OUT.json   # rungs + torch + copy ceiling + tile sweep
    python benchmarks/rearrangement_gpu.py skew-tiles OUT.json   # each skew tile on odd shapes (misaligned output)
    python benchmarks/rearrangement_gpu.py small            # every rung x element size, small shapes
                                                            # (run under compute-sanitizer)
    python benchmarks/rearrangement_gpu.py ncu              # one call of each shared-memory rung (under ncu)
    python benchmarks/rearrangement_gpu.py ncu-summary NCU.csv   # bank conflicts per kernel from `ncu --csv`

Every rung is checked bit for bit against torch before it is timed. Timing: kernelkit.bench.time_cuda
(CUDA events, warm-up, median, cold L2 where the working set would fit in it). The sweep launches each
candidate tile through transpose's ``config=``.
"""
from __future__ import annotations

import datetime
import json
import sys

import torch

import kernelkit
from kernelkit.bench import copy_bandwidth, environment, time_cuda
from kernelkit.ops.rearrangement.transpose import TileConfig

# (rows, cols, threads) candidates per element size: 4 to 64 KB of tile, 2 to 16 vectors a thread.
SWEEP = {
    4: [(64, 64, 256), (32, 32, 128), (32, 64, 256), (64, 128, 256), (128, 64, 256), (64, 64, 128), (64, 64, 512),
        (32, 128, 256), (64, 128, 512)],
    2: [(128, 64, 256), (64, 64, 256), (64, 128, 256), (128, 128, 256), (128, 64, 512), (128, 64, 128),
        (128, 128, 512), (64, 128, 128)],
    1: [(128, 128, 256), (128, 256, 512), (128, 256, 256), (256, 128, 256), (128, 128, 128), (256, 128, 512)],
    8: [(32, 64, 256), (16, 64, 128), (64, 32, 256), (32, 32, 128), (64, 64, 256), (32, 64, 128), (16, 128, 256)],
}


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def _random(shape, dtype):
    n = 1
    for s in shape:
        n *= s
    return torch.randint(0, 256, (n * dtype.itemsize,), device="cuda", dtype=torch.uint8).view(dtype).view(shape)


def time_rungs(op: str, x: torch.Tensor, args: tuple, torch_fn, reps: int = 50) -> dict:
    nbytes = 2 * x.numel() * x.element_size()
    rows = {}
    t = time_cuda(lambda: torch_fn(x), working_set_bytes=nbytes, reps=reps)
    rows["torch"] = nbytes / t.seconds / 1e9
    ref = torch_fn(x)
    fn = getattr(kernelkit, op)
    for v in kernelkit.ladder(op):
        try:
            out = fn(x, *args, variant=v.name)
        except ValueError:  # the wide rung refuses shapes its vectors do not fit
            rows[v.name] = "n/a"
            continue
        if not _same(out, ref):
            rows[v.name] = "WRONG"
            continue
        del out
        t = time_cuda(lambda v=v: fn(x, *args, variant=v.name), working_set_bytes=nbytes, reps=reps, max_seconds=0.6)
        rows[v.name] = nbytes / t.seconds / 1e9
    return rows


def sweep(x: torch.Tensor) -> dict:
    """GB/s of transpose_wide at every candidate tile of x's element size, x (B, R, C) or (R, C)."""
    e = x.element_size()
    out = torch.empty(*x.shape[:-2], x.shape[-1], x.shape[-2], dtype=x.dtype, device="cuda")
    ref = x.transpose(-2, -1)
    res = {}
    for tr, tc, th in SWEEP[e]:
        cfg = TileConfig(tr, tc, th)
        out.zero_()
        kernelkit.transpose(x, out=out, config=cfg)
        ok = _same(out, ref)
        t = time_cuda(lambda: kernelkit.transpose(x, out=out, config=cfg), working_set_bytes=2 * x.numel() * e,
                      reps=40, max_seconds=0.6)
        res[f"{tr}x{tc}x{th}"] = round(2 * x.numel() * e / t.seconds / 1e9, 1) if ok else "WRONG"
    return res


def bench(path: str) -> None:
    props = torch.cuda.get_device_properties(0)
    doc = {"device": props.name, "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "method": "kernelkit.bench.time_cuda: CUDA events, 10 warm-ups, median of up to 50 reps; GB/s = "
                     "(bytes read + written) / median",
           "copy_gbs_large": round(copy_bandwidth(None), 1), "transpose": {}, "permute": {}, "sweep": {}}
    print("copy ceiling", doc["copy_gbs_large"], flush=True)
    cases = [((16384, 16384), torch.float32), ((16384, 16384), torch.float16), ((8192, 8192), torch.uint8),
             ((8192, 8192), torch.float64), ((4, 2048, 3000), torch.float16), ((4099, 4111), torch.float32)]
    for shape, dt in cases:
        x = _random(shape, dt)
        key = f"{'x'.join(map(str, shape))} {str(dt)[6:]}"
        doc["transpose"][key] = time_rungs("transpose", x, (), lambda t: t.transpose(-2, -1).contiguous())
        doc["transpose"][key]["copy_same_bytes"] = round(copy_bandwidth(2 * x.numel() * x.element_size()), 1)
        print("transpose", key, doc["transpose"][key], flush=True)
        if shape[-2] % 64 == 0 and shape[-1] % 64 == 0:
            doc["sweep"][key] = sweep(x)
            print("  sweep", doc["sweep"][key], flush=True)
        del x
    for shape in ((64, 64, 224 * 224), (64, 224 * 224, 64)):  # NCHW <-> NHWC as (B, R, C) transposes
        key = f"{'x'.join(map(str, shape))} float16"
        doc["sweep"][key] = sweep(_random(shape, torch.float16))
        print("  sweep", key, doc["sweep"][key], flush=True)
    pcases = [((64, 64, 224, 224), (0, 2, 3, 1), torch.float16), ((64, 224, 224, 64), (0, 3, 1, 2), torch.float16),
              ((64, 3, 224, 224), (0, 2, 3, 1), torch.float16), ((64, 224, 224, 3), (0, 3, 1, 2), torch.float16),
              ((64, 3, 224, 224), (0, 2, 3, 1), torch.uint8), ((64, 512, 1024), (1, 0, 2), torch.float16),
              ((32, 48, 40, 56), (3, 1, 0, 2), torch.float32)]
    for shape, dims, dt in pcases:
        x = _random(shape, dt)
        key = f"{'x'.join(map(str, shape))} {dims} {str(dt)[6:]}"
        doc["permute"][key] = time_rungs("permute", x, (dims,), lambda t, d=dims: t.permute(d).contiguous())
        print("permute", key, doc["permute"][key], flush=True)
        del x
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\n{'case':44s} {'torch':>7s} " + " ".join(f"{v.name:>7s}" for v in kernelkit.ladder("transpose")))
    for sec in ("transpose", "permute"):
        for key, r in doc[sec].items():
            vals = " ".join(f"{r[k]:7.0f}" if isinstance(r.get(k), float) else f"{str(r.get(k, '')):>7s}"
                            for k in ["torch"] + [v.name for v in kernelkit.ladder(sec)])
            print(f"{sec[:4]} {key:39s} {vals}")
    print(f"copy ceiling {doc['copy_gbs_large']} GB/s")


# candidates beyond SKEW_TILES, measured beside them: a taller, narrower tile (input runs of 32-64 bytes) and
# 32 KB tiles
SKEW_EXTRA = {2: [(512, 16, 128), (256, 64, 256)], 4: [(256, 16, 256), (256, 32, 512), (128, 64, 512)]}
SKEW_SHAPES = ((12345, 6789), (4097, 4095), (50257, 768), (8191, 8193), (64, 197, 768), (16, 2053, 2053))


def skew_tiles(path: str) -> None:
    """Each skew tile (SKEW_TILES, then SKEW_EXTRA) through config= on odd shapes whose output rows are off
    16-byte boundaries, bf16 and fp32, as % of a same-bytes copy timed in the same loop (min of two copies)."""
    from kernelkit.ops.rearrangement._launch import SKEW_TILES

    doc = {"environment": environment(), "cases": []}
    for dt in (torch.bfloat16, torch.float32):
        e = dt.itemsize
        tiles = [*SKEW_TILES[e], *(TileConfig(*t) for t in SKEW_EXTRA[e])]
        for shape in SKEW_SHAPES:
            x = _random(shape, dt)
            out = torch.empty(*shape[:-2], shape[-1], shape[-2], device="cuda", dtype=dt)
            nbytes = 2 * x.numel() * x.element_size()
            flat = x.reshape(-1)
            dup = torch.empty_like(flat)

            def ms(fn) -> float:
                return time_cuda(fn, working_set_bytes=nbytes, max_seconds=0.2).median_ms

            copy = ms(lambda: dup.copy_(flat))
            got = {"default": ms(lambda: kernelkit.transpose(x, -2, -1, out=out))}
            for t in tiles:
                kernelkit.transpose(x, -2, -1, out=out, config=t)
                assert _same(out, x.transpose(-2, -1)), t
                got[f"{t.rows}x{t.cols}x{t.threads}"] = ms(lambda t=t: kernelkit.transpose(x, -2, -1, out=out, config=t))
            copy = min(copy, ms(lambda: dup.copy_(flat)))
            case = {"dtype": str(dt), "shape": list(shape), "copy_ms": copy,
                    "pct_copy": {k: round(100 * copy / v, 1) for k, v in got.items()}}
            doc["cases"].append(case)
            print(str(dt)[6:], "x".join(map(str, shape)), case["pct_copy"], flush=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def small() -> None:
    """Every rung x element size on small odd and aligned shapes (for the sanitizers and ncu)."""
    bad = 0
    for dt in (torch.uint8, torch.float16, torch.float32, torch.float64):
        for shape in ((37, 53), (64, 128), (2, 96, 64)):
            x = _random(shape, dt)
            for v in kernelkit.ladder("transpose"):
                try:
                    bad += not _same(kernelkit.transpose(x, variant=v.name), x.transpose(-2, -1))
                except ValueError:
                    pass
        for shape in ((2, 16, 7, 9), (2, 3, 16, 16), (3, 4, 8, 32)):  # odd, then RGB / RGBA (skinny)
            x = _random(shape, dt)
            for v in kernelkit.ladder("permute"):
                for dims in ((0, 2, 3, 1), (3, 1, 0, 2), (1, 0, 2, 3)):
                    bad += not _same(kernelkit.permute(x, dims, variant=v.name), x.permute(dims))
            y = x.permute(0, 2, 3, 1).contiguous()
            bad += not _same(kernelkit.permute(y, (0, 3, 1, 2)), y.permute(0, 3, 1, 2))
    torch.cuda.synchronize()
    print("small cases wrong:", bad)


def ncu_cases() -> None:
    """One call of each shared-memory rung per element size (1024 x 1024), for ncu's bank counters."""
    for dt in (torch.uint8, torch.float16, torch.float32, torch.float64):
        x = _random((1024, 1024), dt)
        for v in ("shared", "padded", "wide", "best"):
            kernelkit.transpose(x, variant=v)
    torch.cuda.synchronize()


def ncu_summary(path: str) -> None:
    """Bank conflicts and shared instructions per kernel from `ncu --csv` output."""
    import csv

    rows = [r for r in csv.reader(line for line in open(path) if line.startswith('"')) if len(r) > 5]
    head, rows = rows[0], rows[1:]
    k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
    table: dict = {}
    for r in rows:
        table.setdefault((r[0], r[k]), {})[r[m].split("__")[1].replace("data_bank_conflicts_pipe_lsu_mem_", "conf_")] = r[v]
    for (_, name), ms in table.items():
        print(f"{name[:60]:60s} " + " ".join(f"{a}={b}" for a, b in sorted(ms.items())))


if __name__ == "__main__":
    cmd = sys.argv[1]
    {"bench": lambda: bench(sys.argv[2]), "skew-tiles": lambda: skew_tiles(sys.argv[2]), "small": small, "ncu": ncu_cases,
     "ncu-summary": lambda: ncu_summary(sys.argv[2])}[cmd]()
