"""Experiment: L1 eviction hints in the one-CTA-a-row norm kernels (4K-16K rows), timed interleaved.

Question (NOTES, "Norms and softmax"): 4096^2 fp16 layer_norm reaches 91% of a same-bytes copy and
rms_norm 93% where softmax, the same register tile without weight or bias, reaches 98%. The norms read
weight and bias at the output from L1; the row's own lines stream through the same L1 and may evict
them, sending those reads to L2. Variants (norm.cu compiled from a patched copy of csrc/):
  rows_ef      row loads ld.global.nc.L1::evict_first
  rows_na      row loads ld.global.nc.L1::no_allocate
  wb_el        weight/bias loads ld.global.nc.L1::evict_last
  rows_ef_wb_el both
and the weight/bias loads before the statistics or at the output (norm_rows' kEarlyWB, forced either
way: `early`, `late`). Every variant, kernelkit's own kernel, torch and a same-bytes copy are timed in turn (one round each
per repetition, 4 input copies rotated when the working set is near L2).

  python scripts/norm_hints.py [--shapes 4096x4096,16384x8192] [--dtypes float16,float32] [--reps 200]
                               [--variants early,late,rows_ef,...] [--configs 256x2,512x1]
                               [--baseline DIR]

--baseline times another norm.cu (an earlier commit's csrc/, e.g. `git archive HEAD~1 src/kernelkit/csrc
| tar -x -C /tmp/base`) beside the current one: an A/B of a kernel change in one interleaved run.
"""
from __future__ import annotations

import argparse
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import kernelkit
from kernelkit.bench import time_interleaved
from kernelkit.ops import norm
from kernelkit.ops._rowwise import grid_for_rows, per_vec, pick, row_name
from kernelkit.runtime import get_kernel
from kernelkit.runtime.launch import launch
from rowbench import case_args, device_line

CSRC = Path(kernelkit.__file__).parent / "csrc"

LD = """
template <typename V> __device__ __forceinline__ V ld_hint_%(tag)s(const V* p) {
  static_assert(sizeof(V) == 16, "16-byte loads");
  uint4 r;
  // volatile: a plain asm may be speculated above its `if (bias)` guard (a load from address 0)
  asm volatile("ld.global.nc.%(hint)s.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  V v;
  memcpy(&v, &r, 16);
  return v;
}
"""

VARIANTS = {  # name: (row hint, weight/bias hint, kEarlyWB forced: None keeps the kernel's default)
    "rows_ef": ("L1::evict_first", None, None),
    "rows_na": ("L1::no_allocate", None, None),
    "wb_el": (None, "L1::evict_last", None),
    "rows_ef_wb_el": ("L1::evict_first", "L1::evict_last", None),
    "early_wb_el": (None, "L1::evict_last", True),
    "early_rows_ef_wb_el": ("L1::evict_first", "L1::evict_last", True),
}


def patched_csrc(row_hint, wb_hint) -> Path:
    d = Path(tempfile.mkdtemp(prefix="kk-hint-"))
    for f in CSRC.glob("*.cu*"):
        shutil.copy(f, d / f.name)
    common = (d / "common.cuh").read_text()
    extra = ""
    if row_hint:
        extra += LD % {"tag": "row", "hint": row_hint}
    if wb_hint:
        extra += LD % {"tag": "wb", "hint": wb_hint}
    # after load16's definition: memcpy and Vec are known there
    common = common.replace("template <bool kStreaming, typename V>\n__device__ __forceinline__ void store16",
                            extra + "template <bool kStreaming, typename V>\n__device__ __forceinline__ void store16", 1)
    assert extra == "" or "ld_hint_" in common
    (d / "common.cuh").write_text(common)
    if row_hint:
        red = (d / "reduce.cuh").read_text()
        old = "v[k] = load_vec(reinterpret_cast<const Vec<T, N>*>(p + k * kStride));"
        assert old in red
        (d / "reduce.cuh").write_text(red.replace(old, old.replace("load_vec", "ld_hint_row")))
    if wb_hint:
        nc = (d / "norm.cuh").read_text()
        nc2 = re.sub(r"(w|b)v = load_vec\(", r"\1v = ld_hint_wb(", nc)
        assert nc2 != nc
        (d / "norm.cuh").write_text(nc2)
    return d / "norm.cu"


def main() -> None:
    ap = argparse.ArgumentParser()
    case_args(ap, shapes="4096x4096,16384x8192,65536x1024,32768x32768", dtypes="float16,float32",
              ops="layer_norm,rms_norm", reps=200)
    ap.add_argument("--variants", default="early,late," + ",".join(VARIANTS))
    ap.add_argument("--configs", default="", help="more one-CTA configurations to time, early and late: "
                                                  "GROUPxVECS[,...], e.g. 256x2,512x1 for 4096-element fp16 rows")
    ap.add_argument("--baseline", default="", help="a csrc directory (say an earlier commit's, from `git "
                    "archive`) whose norm.cu is timed beside the current one as 'baseline'")
    a = ap.parse_args()
    picked = a.variants.split(",")
    sources = {name: (str(patched_csrc(row, wb)), early) for name, (row, wb, early) in VARIANTS.items()
               if name in picked}
    if a.baseline:
        sources["baseline"] = (str(Path(a.baseline).resolve() / "norm.cu"), None)
    print(device_line())
    for shape in a.shapes.split(","):
        rows, len_ = map(int, shape.split("x"))
        for dt in a.dtypes.split(","):
            dtype = getattr(torch, dt)
            cfg = pick(len_, norm.TABLES.table("fast", dtype, 0))
            if cfg is None or cfg[2] != 1:
                print(f"{shape} {dt}: not a one-CTA row configuration ({cfg}); skipped")
                continue
            def named(c, early=None):  # the instantiation with kEarlyWB forced (None: the default)
                name = row_name("norm_rows", dtype, c, True, False)
                return name if early is None else name[:-1] + f", {'true' if early else 'false'}>"

            grid = grid_for_rows(rows, cfg)[:2]
            kernels = {v: (get_kernel(src, named(cfg, early), device_index=0), *grid)
                       for v, (src, early) in sources.items()}
            for v, early in (("early", True), ("late", False)):
                if v in picked:
                    kernels[v] = (get_kernel("norm.cu", named(cfg, early), device_index=0), *grid)
            for spec in filter(None, a.configs.split(",")):
                c = (*map(int, spec.split("x")), 1)
                if c[0] * c[1] * per_vec(dtype) < len_:
                    continue  # does not hold the row
                for early in (True, False):
                    kernels[f"{spec} {'early' if early else 'late'}"] = (
                        get_kernel("norm.cu", named(c, early), device_index=0), *grid_for_rows(rows, c)[:2])
            nbytes = 2 * rows * len_ * torch.finfo(dtype).bits // 8
            copies = 4 if nbytes <= 4 * 50 * 2**20 else 1
            xs = [torch.randn(rows, len_, device="cuda", dtype=dtype) for _ in range(copies)]
            w, b = torch.randn(2, len_, device="cuda", dtype=dtype)
            for op in a.ops.split(","):
                rms = op == "rms_norm"
                bias = None if rms else b
                out = torch.empty_like(xs[0])

                def apply(mod, x, weight, bias_, rms=rms):  # kernelkit and torch.nn.functional alike
                    if rms:
                        return mod.rms_norm(x, (len_,), weight, eps=1e-5)
                    return mod.layer_norm(x, (len_,), weight, bias_, eps=1e-5)

                def ours(i, bias=bias):
                    apply(kernelkit, xs[i % copies], w, bias)

                def variant(kbb):
                    k, blocks, block = kbb
                    def run(i):
                        x = xs[i % copies]
                        launch(k, blocks, block, x.data_ptr(), out.data_ptr(), w.data_ptr(),
                               0 if bias is None else bias.data_ptr(), rows, len_, np.float32(1e-5),
                               np.int32(rms), device_index=0)
                    return run

                def torch_op(i, bias=bias):
                    apply(F, xs[i % copies], w, bias)

                def copy(i):
                    out.copy_(xs[i % copies])

                # correctness of each variant before timing it
                ref = apply(F, xs[0].double(), w.double(), None if bias is None else bias.double())
                for v, k in kernels.items():
                    out.fill_(float("nan"))
                    variant(k)(0)
                    err = (out.double() - ref).abs().max().item()
                    assert err < {torch.float16: 2e-2, torch.bfloat16: 6e-2}.get(dtype, 1e-4), (v, err)
                fns = {"kernelkit": ours, **{v: variant(k) for v, k in kernels.items()},
                       "torch": torch_op, "copy": copy}
                times = time_interleaved(list(fns.values()), reps=a.reps, warmup=10, flush_l2=True,
                                         max_seconds=30)
                base = times[0].median_us
                print(f"{op} {dt} {shape} [{cfg}]")
                for (label, _), t in zip(fns.items(), times):
                    print(f"  {label:14s} {t.median_us:8.2f} us  {nbytes / t.seconds / 1e9:7.0f} GB/s"
                          f"  {base / t.median_us:6.3f}x kernelkit")


if __name__ == "__main__":
    main()
