"""Hash the SASS (address and encoding comments stripped) and the ptxas -v lines of every kernel of the gemm
ladders, for checking that a restructuring of csrc/gemm changes no compiled kernel:

    KERNELKIT_CACHE_DIR=/tmp/kk-before python scripts/gemm_sass_hashes.py /tmp/before   # on the old tree
    KERNELKIT_CACHE_DIR=/tmp/kk-after python scripts/gemm_sass_hashes.py /tmp/after     # on the new tree
    python scripts/gemm_sass_hashes.py --compare /tmp/before /tmp/after

Arguments: OUT [OPS [SOURCES]]: OPS comma-separated (default matmul,linear,scaled_matmul), SOURCES substrings
of the kernel sources to keep (e.g. "wgmma"). Writes OUT/summary.json and each kernel's SASS text. Every
kernel is compiled for sm_90 (sm_90a where it asks) and, where it runs there, sm_80.
"""
import hashlib
import json
import os
import re
import sys

import kernelkit  # noqa: F401  (registers the ops)
from kernelkit.ladder import get_op
from kernelkit.runtime import compile_source
from kernelkit.analyze.sass import disassemble
from kernelkit.warmup import run_parallel

OPS = sys.argv[2].split(",") if len(sys.argv) > 2 else ["matmul", "linear", "scaled_matmul"]
ARCHS = ("sm_80", "sm_90")

def kernels():
    ks = {}
    for opn in OPS:
        op = get_op(opn)
        for v in op.variants:
            if v.unavailable():
                print("unavailable", opn, v.name, v.unavailable(), file=sys.stderr)
                continue
            for dt in v.dtypes:
                for params in op.param_combinations():
                    for k in v.kernels(dt, **params):
                        ks[(k.source, k.arch_suffix, k.name)] = k
    return ks

def ptxas_by_fn(log):
    out, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?", line)
        if m:
            cur = m.group(1)
        if cur is not None and ("Compile time" not in line):
            out.setdefault(cur, []).append(line.strip())
    return out

def build(item):
    source, arch, names = item
    b = compile_source(source, names, arch)
    sass = disassemble(b.cubin)
    px = ptxas_by_fn(b.log)
    res = {}
    for n in names:
        m = b.mangled(n)
        # the instruction text: address and encoding comments (/* ... */) removed, blank lines dropped
        lines = (re.sub(r"/\*.*?\*/", "", l).strip() for l in sass[m].splitlines())
        s = "\n".join(l for l in lines if l)
        res[n] = (hashlib.md5(s.encode()).hexdigest(), "\n".join(px.get(m, ["<none>"])), s)
    return source, arch, res

def compare(before: str, after: str) -> int:
    a = json.load(open(os.path.join(before, "summary.json")))
    b = json.load(open(os.path.join(after, "summary.json")))
    changed = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    for k in changed:
        print("changed:", k)
    for k in sorted(a.keys() ^ b.keys()):
        print("only in", before if k in a else after, ":", k)
    print(f"{len(a.keys() & b.keys())} builds compared, {len(changed)} changed")
    return 1 if changed or a.keys() != b.keys() else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    ks = kernels()
    groups = {}
    for (src, suf, name) in ks:
        for a in ARCHS:
            if ks[(src, suf, name)].min_sm <= int(a[3:]):
                groups.setdefault((src, a + suf), []).append(name)
    CH = 12
    items = [(s, a, tuple(sorted(n))[i:i + CH]) for (s, a), n in sorted(groups.items()) for i in range(0, len(n), CH)]
    if len(sys.argv) > 3:  # only sources matching
        items = [it for it in items if any(p in it[0] for p in sys.argv[3].split(","))]
    print(len(ks), "kernels;", len(items), "builds", file=sys.stderr)
    summary = {}
    for source, arch, res in run_parallel(build, items, 2):
        for n, (h, px, s) in res.items():
            key = f"{arch} {source} {n}"
            summary[key] = {"sass": h, "ptxas": px}
            fn = re.sub(r"[^\w.-]+", "_", key)[:200]
            open(os.path.join(outdir, fn + ".sass"), "w").write(s)
    json.dump(summary, open(os.path.join(outdir, "summary.json"), "w"), indent=1, sort_keys=True)
    print(len(summary), "kernel builds hashed", file=sys.stderr)
