"""TFLOP/s (TOP/s for int8) of every matmul rung against torch.matmul (cuBLAS) in one process, in turn.

    python benchmarks/matmul_table.py [--quick] [--shapes 4096x4096x4096,...] [--rungs best,mma]
        [--dtypes float32,tf32,float16,bfloat16,int8,float64] [--seconds 1.0] [--out DIR] [--ceilings]

Shapes are MxNxK (BxMxNxK batched); the default is the full list: 4096^3, 8192^3, the linear layers of
current models (M in {1, 16, 128, 4096, 16384} x (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336),
(128256, 4096)}), 4097x4095x4093 and a batch of 16 at 4096^3. ``--quick``: 4096^3, 8192^3 and M = 16 at
4096x4096. A dtype runs the rungs that take it: float32 the SIMT rungs (exact fp32), tf32 the
tensor-core rungs with allow_tf32=True (torch with allow_tf32 too), int8 once with B column-major
(torch._int_mm's fast layout) and once row-major (the layout of ``x @ w``), both against torch._int_mm.

Each case first checks every rung's result against torch's (a rung that disagrees is reported, not
timed), then times the rungs and torch interleaved (kernelkit.bench.timing.time_interleaved, medians,
cold L2) and prints the rate and the share of cuBLAS's rate measured in the same loop; the geometric
mean of each rung's share over the shapes it ran is printed per dtype. Slow rungs are capped by a FLOP
budget (FLOP_BUDGET: a rung runs a case of at most that many FLOPs); what a budget skipped is listed.
``--out DIR`` writes DIR/matmul-<device>.json (the device, date and versions with every record), after
every case. ``--ceilings`` first measures each math instruction's rate from registers (probes.cu).
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

import kernelkit
from kernelkit.bench.report import environment, write_json
from kernelkit.bench.timing import time_interleaved

MODEL_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096))
FULL = ((4096, 4096, 4096), (8192, 8192, 8192),
        *((m, n, k) for m in (1, 16, 128, 4096, 16384) for n, k in MODEL_NK),
        (4097, 4095, 4093), (16, 4096, 4096, 4096))
QUICK = ((4096, 4096, 4096), (8192, 8192, 8192), (16, 4096, 4096))
DTYPES = "float32,tf32,float16,bfloat16,int8,float64"
TENSOR_CORE_ONLY = ("wmma_global", "wmma_smem", "mma")

# The most FLOPs a rung is run on. The teaching rungs below the register tile take seconds a call past
# 4096^3 (naive fp32 ~1-3 TFLOP/s), and the next ones past 8192^3; the rungs this table is about run
# every case.
FLOP_BUDGET = {"naive": 2**37, "smem_tiles": 2**37, "column": 2**37,
               "reg_8x8": 2**40, "lds128": 2**40, "double_buffer": 2**40, "warp_tile": 2**40, "wmma_global": 2**40}

# A rung disagrees with torch when max|out - torch| > TOL * max|torch| (int8: any difference). Loose enough
# for two fp32 summation orders at K = 16384 or two tf32/16-bit roundings, tight enough for a wrong tile.
TOL = {"float32": 1e-4, "tf32": 2e-2, "float16": 2e-2, "bfloat16": 5e-2, "float64": 1e-10}


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in s.split("x")) for s in text.split(",") if s]


def operands(shape, dtype, b_col):
    """A row-major; B row-major, or column-major (the transpose view of a row-major N x K) with b_col."""
    *batch, m, n, k = shape
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (*batch, m, k), device="cuda", dtype=dtype)
        b = torch.randint(-128, 128, (*batch, n, k) if b_col else (*batch, k, n), device="cuda", dtype=dtype)
    else:
        a = torch.randn(*batch, m, k, device="cuda").to(dtype)
        b = torch.randn(*batch, n, k, device="cuda").to(dtype) if b_col else torch.randn(*batch, k, n, device="cuda").to(dtype)
    return a, (b.transpose(-1, -2) if b_col else b)


def torch_call(a, b, tf32):
    """torch's call for the case: torch._int_mm for int8 (2-D; per batch entry otherwise; M <= 16 padded
    with zero rows to 32, since torch._int_mm refuses M <= 16), matmul else."""
    if a.dtype == torch.int8:
        if a.dim() == 2:
            if a.shape[0] <= 16:
                a = torch.cat([a, a.new_zeros(32 - a.shape[0], a.shape[1])])
            return lambda: torch._int_mm(a, b)
        return lambda: torch.stack([torch._int_mm(x, y) for x, y in zip(a, b)])
    if a.dtype == torch.float32:
        def run():
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                return torch.matmul(a, b)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = prev
        return run
    return lambda: torch.matmul(a, b)


def torch_supports(a, b) -> bool:
    """torch._int_mm needs K and N multiples of 8 (its cuBLASLt call refuses the rest)."""
    if a.dtype != torch.int8:
        return True
    return a.shape[-1] % 8 == 0 and b.shape[-1] % 8 == 0


def rungs_for(dname: str, wanted: list[str] | None) -> list[str]:
    op = kernelkit.get_op("matmul")
    dtype = torch.float32 if dname == "tf32" else getattr(torch, dname)
    names = [v.name for v in op.variants if v.supports(dtype) and not v.unavailable()]  # main() says why
    if dname == "float32":
        names = [r for r in names if r not in TENSOR_CORE_ONLY]
    elif dname == "tf32":
        names = [r for r in names if r in (*TENSOR_CORE_ONLY, "best")]
    return [r for r in names if not wanted or r in wanted]


def disagreement(out, ref, dname) -> float:
    """max|out - ref| / max|ref|, row blocks at a time (the largest outputs are GBs)."""
    o, r = out.reshape(-1, out.shape[-1]), ref.reshape(-1, ref.shape[-1])
    err, mag = 0.0, 0.0
    step = max(1, (1 << 26) // max(1, o.shape[1]))
    for i in range(0, o.shape[0], step):
        x, y = o[i:i + step].double(), r[i:i + step].double()
        err = max(err, float((x - y).abs().max()))
        mag = max(mag, float(y.abs().max()))
    return err / mag if mag else err


def run_case(shape, dname, b_col, wanted, seconds, log):
    tf32 = dname == "tf32"
    dtype = torch.float32 if tf32 else getattr(torch, dname)
    *batch, m, n, k = shape
    flop = 2 * math.prod(batch) * m * n * k
    a, b = operands(shape, dtype, b_col)
    layout = "" if dtype != torch.int8 else ("B col-major" if b_col else "B row-major")
    torch_fn = torch_call(a, b, tf32) if torch_supports(a, b) else None
    rungs, records, notes = [], [], []
    ref = torch_fn() if torch_fn else None
    if ref is not None and ref.shape[-2] != m:  # int8 at M <= 16: torch ran on zero-padded rows
        ref = ref[:m]
        layout += " (torch: M padded to 32)"
    for r in rungs_for(dname, wanted):
        if flop > FLOP_BUDGET.get(r, math.inf):
            notes.append(f"{r} skipped: {flop:.3g} FLOP over its budget 2^{int(math.log2(FLOP_BUDGET[r]))}")
            continue
        out = kernelkit.matmul(a, b, allow_tf32=tf32, variant=r)
        if ref is not None:
            bad = disagreement(out, ref, dname) if dtype != torch.int8 else float(not torch.equal(out, ref))
            if bad > TOL.get(dname, 0.0):
                notes.append(f"{r} NOT TIMED: differs from torch by {bad:.3g} (relative to max|torch|)")
                continue
        del out
        rungs.append(r)
    del ref
    fns = [lambda r=r: kernelkit.matmul(a, b, allow_tf32=tf32, variant=r) for r in rungs]
    if torch_fn:
        fns.append(torch_fn)
    if not fns:
        return records, notes
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for f in fns:
        f()
    torch.cuda.synchronize()
    round_s = time.perf_counter() - t0
    reps = 100 if round_s * 10 <= seconds else max(3, min(10, int(seconds / round_s)))
    nbytes = a.numel() * a.element_size() + b.numel() * b.element_size() + math.prod(batch) * m * n * 4
    times = time_interleaved(fns, warmup=2 if reps == 100 else 1, reps=reps, max_seconds=seconds,
                             working_set_bytes=nbytes, shuffle=True)
    torch_rate = flop / times[-1].median_us / 1e6 if torch_fn else None
    unit = "TOP/s" if dtype == torch.int8 else "TFLOP/s"
    head = f"{dname:8s} {'x'.join(map(str, shape)):>20s} {layout:11s}"
    cells = [f"torch {torch_rate:6.1f}" if torch_rate else "torch  -  "]
    for r, t in zip(rungs, times):
        rate = flop / t.median_us / 1e6
        share = rate / torch_rate if torch_rate else None
        cells.append(f"{r} {rate:6.1f}" + (f" ({100 * share:5.1f}%)" if share else ""))
        records.append({"dtype": dname, "shape": list(shape), "layout": layout, "rung": r, "rate": rate,
                        "unit": unit, "torch_rate": torch_rate, "share": share, "median_us": t.median_us,
                        "torch_median_us": times[-1].median_us if torch_fn else None, "reps": t.reps})
    log(f"{head} {unit}: " + " | ".join(cells))
    for note in notes:
        log(f"{'':41s} {note}")
    return records, notes


def geomeans(records) -> list[dict]:
    groups: dict[tuple, list[float]] = {}
    for rec in records:
        if rec["share"]:
            groups.setdefault((rec["dtype"], rec["layout"], rec["rung"]), []).append(rec["share"])
    return [{"dtype": d, "layout": lay, "rung": r, "cases": len(s),
             "geomean_share": math.exp(sum(map(math.log, s)) / len(s))} for (d, lay, r), s in groups.items()]


CEILINGS = (("r_hmma", "fp16 mma m16n8k16", 4096, 8), ("r_tf32", "tf32 mma m16n8k8", 2048, 8),
            ("r_imma", "int8 mma m16n8k32 (TOP/s)", 8192, 8), ("r_dmma884", "fp64 mma m8n8k4", 512, 8),
            ("r_dmma16816", "fp64 mma m16n8k16 (sm_90)", 4096, 4), ("r_ffma", "fp32 FFMA", 64, 16))


def ceilings(log) -> dict:
    """Each math instruction's peak rate from registers (csrc/gemm/probes.cu): 4 blocks of 8 warps an SM,
    each warp rounds of independent instructions."""
    from kernelkit.runtime import get_kernel, launch
    dev = torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    cc = torch.cuda.get_device_capability(dev)
    buf = torch.empty(sms * 4 * 256, device="cuda")
    out = {}
    for name, what, flop, per_round in CEILINGS:
        if name == "r_dmma16816" and cc < (9, 0):
            continue
        k = get_kernel("gemm/probes.cu", name, device_index=dev)
        iters = 2000 if "dmma" in name else 4000
        t = time_interleaved([lambda: launch(k, sms * 4, 256, buf.data_ptr(), iters, device_index=dev)],
                             warmup=3, reps=10)[0].median_us
        out[name] = sms * 4 * 8 * iters * per_round * flop / t / 1e6
        log(f"ceiling {what:28s} {out[name]:8.1f} T/s")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default=None, help="MxNxK or BxMxNxK, comma-separated (default: the full list)")
    p.add_argument("--quick", action="store_true", help="4096^3, 8192^3 and 16x4096x4096 only")
    p.add_argument("--rungs", default=None, help="rung names, comma-separated (default: every rung of the dtype)")
    p.add_argument("--dtypes", default=DTYPES)
    p.add_argument("--seconds", type=float, default=1.0, help="timing budget of one case (all its rungs)")
    p.add_argument("--out", default=None, help="folder for matmul-<device>.json")
    p.add_argument("--ceilings", action="store_true", help="first the math instructions' peak rates from registers")
    args = p.parse_args()
    shapes = parse_shapes(args.shapes) if args.shapes else list(QUICK if args.quick else FULL)
    wanted = args.rungs.split(",") if args.rungs else None
    lines: list[str] = []

    def log(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    log("FLOP budgets (a rung runs the cases of at most this many FLOPs): "
        + ", ".join(f"{r} 2^{int(math.log2(b))}" for r, b in FLOP_BUDGET.items()))
    for v in kernelkit.get_op("matmul").variants:
        if v.unavailable():  # left out by rungs_for: say so once, as the budgets are
            log(f"{v.name} not run: {v.unavailable()}")
    records, notes = [], []
    env = environment() if args.out else None
    peaks = ceilings(log) if args.ceilings else None

    def save(complete: bool):  # after every case: a run cut short keeps what it measured
        device = (env.get("device") or "gpu").lower().replace("nvidia", "").strip().split()[0]
        return write_json(Path(args.out) / f"matmul-{device}.json",
                          {"what": "matmul rungs against torch (cuBLAS), interleaved medians", "complete": complete,
                           "command": "python benchmarks/matmul_table.py " + " ".join(
                               f"--{k} {v}" if not isinstance(v, bool) else f"--{k}" for k, v in vars(args).items()
                               if v not in (None, False) and k != "out"),
                           "flop_budget": FLOP_BUDGET, "ceilings": peaks, "records": records, "notes": notes,
                           "geomeans": geomeans(records), "environment": env})

    for dname in args.dtypes.split(","):
        for shape in shapes:
            for b_col in ((True, False) if dname == "int8" else (False,)):
                recs, ns = run_case(shape, dname, b_col, wanted, args.seconds, log)
                records += recs
                notes += [{"dtype": dname, "shape": list(shape), "note": n} for n in ns]
                torch.cuda.empty_cache()
                if args.out:
                    save(False)
    for g in geomeans(records):
        log(f"geomean {g['dtype']:8s} {g['layout']:11s} {g['rung']:13s}: {100 * g['geomean_share']:5.1f}% of torch "
            f"over {g['cases']} shapes")
    if args.out:
        log(f"wrote {save(True)}")


if __name__ == "__main__":
    main()
