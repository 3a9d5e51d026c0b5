"""The pipelined window kernels run on the host: their CUDA sources compiled by g++ as C++20 with a thin
shim, so that their index arithmetic, border rules, row shifts, register windows, conversions and packing
can be checked against the float64 references on a machine without a GPU.

The shim: a block is 256 std::threads (threadIdx thread-local), __syncthreads a std::barrier, blocks run
one after another; shared memory one static array; cp.async an immediate copy of 16, 8 or 4 bytes (its wait a no-op:
the copies land before the barrier that the kernels place after the wait anyway); the intrinsics written
out (__byte_perm, __funnelshift_r, bit casts); sqrt.approx the library sqrtf. Every 16-byte access
(copies, 128-bit shared loads, float4 results, 16-byte stores) asserts its alignment, every shared access
its bounds against the bytes the host asks for, and AddressSanitizer guards the global buffers, which sit
at the same misalignment as the view on the GPU. Only the text of the asm statements and of the
__shared__ declarations is rewritten; the rest is the kernels' own source.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import torch

from kernelkit.ops.window import _common

CSRC = Path(__file__).resolve().parents[1] / "src" / "kernelkit" / "csrc"
CXX = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16", torch.uint8: "unsigned char"}
SOURCES = {"f2d": "filter2d.cu", "sobel": "sobel.cu", "sep": "separable.cu"}
KERNELS = {"f2d": "f2d_pipelined", "sobel": "sobel_pipelined", "sep": "sep_pipelined"}


def cuda_host_include() -> str | None:
    """A CUDA include directory whose cuda_fp16.h compiles for the host (it needs nv/target beside it)."""
    cands = []
    try:
        from kernelkit.runtime.headers import include_dirs
        cands += list(include_dirs())
    except Exception:
        pass
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            cands.append(os.path.join(os.environ[env], "include"))
    cands.append("/usr/local/cuda/include")
    cands += sorted(str(p) for p in Path("/usr/local").glob("cuda-*/include"))
    for d in cands:
        if (Path(d) / "cuda_fp16.h").is_file() and (Path(d) / "nv" / "target").is_file():
            return d
    return None


def available() -> str | None:
    """Why the host build cannot run here, or None."""
    if shutil.which("g++") is None:
        return "no g++"
    if cuda_host_include() is None:
        return "no CUDA include directory with cuda_fp16.h and nv/target"
    return None


def _rewrite(path: Path) -> str:
    s = path.read_text()

    def sub(old: str, new: str) -> None:
        nonlocal s
        assert old in s, f"{path.name}: the host build expects {old[:70]!r}"
        s = s.replace(old, new)

    if path.name == "pipeline.cuh":
        sub('''  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem) : "memory");''', "  A16(smem); A16(gmem); SMEM_IN(smem, 16); memcpy(smem, gmem, 16);")
        sub('''  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem) : "memory");''', "  A8(smem); A8(gmem); SMEM_IN(smem, 8); memcpy(smem, gmem, 8);")
        sub('''  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem) : "memory");''', "  A4(smem); A4(gmem); SMEM_IN(smem, 4); memcpy(smem, gmem, 4);")
        sub('asm volatile("cp.async.commit_group;" ::: "memory");', "")
        sub('asm volatile("cp.async.wait_group 1;" ::: "memory");', "")
        sub("  const uint4* src = reinterpret_cast<const uint4*>(trow) + threadIdx.x;",
            "  const uint4* src = reinterpret_cast<const uint4*>(trow) + threadIdx.x; A16(src); SMEM_IN(src, 16 * NC);")
        sub("        *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);",
            "        A16(dst); SMEM_IN(dst, 16); *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);")
        sub("        *reinterpret_cast<uint4*>(dst) = make_uint4(wd[0], wd[1], wd[2], wd[3]);",
            "        A16(dst); SMEM_IN(dst, 16); *reinterpret_cast<uint4*>(dst) = make_uint4(wd[0], wd[1], wd[2], wd[3]);")
    if path.name == "common.cuh":
        sub('''  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(c.x), "r"(c.y), "r"(c.z), "r"(c.w));''',
            "  A16(p); memcpy((void*)p, &c, 16);")
    if path.name == "separable.cu":
        sub("      const float4 f = *reinterpret_cast<const float4*>(col + r * TW + swizzled_chunk<V>(threadIdx.x, HH * VH / 4 + j));",
            "      const float4* fp = reinterpret_cast<const float4*>(col + r * TW + swizzled_chunk<V>(threadIdx.x, HH * VH / 4 + j));"
            " A16(fp); SMEM_IN(fp, 16); const float4 f = *fp;")
        sub("        *reinterpret_cast<float4*>(hbuf + r * TW + swizzled_chunk<V>(threadIdx.x, j)) =",
            "        { float* hp = hbuf + r * TW + swizzled_chunk<V>(threadIdx.x, j); A16(hp); SMEM_IN(hp, 16);"
            " *reinterpret_cast<float4*>(hp) =")
        sub("            make_float4(h[4 * j], h[4 * j + 1], h[4 * j + 2], h[4 * j + 3]);",
            "            make_float4(h[4 * j], h[4 * j + 1], h[4 * j + 2], h[4 * j + 3]); }")
    if path.name == "sobel.cu":
        sub('  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));', "  r = sqrtf(x);")
    s = s.replace("extern __shared__", "extern").replace("__shared__", "static").replace("#pragma once", "")
    return re.sub(r'#include "[a-z]+\.cuh"', "", s)


PRELUDE = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#define __launch_bounds__(...)
struct Dim3 { unsigned x, y, z; };
thread_local Dim3 threadIdx;
Dim3 blockIdx, gridDim, blockDim{32, 8, 1};
std::barrier<>* g_bar;
size_t g_shmem = 0;
namespace kk { alignas(16) float4 smem4[65536]; }
using std::max; using std::min;
inline void __syncthreads() { g_bar->arrive_and_wait(); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = ((uint64_t)y << 32) | x; unsigned r = 0;
  for (int n = 0; n < 4; ++n) r |= (unsigned)((v >> (8 * ((s >> (4 * n)) & 7))) & 255) << (8 * n);
  return r;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned sh) { return (unsigned)(((((uint64_t)hi) << 32) | lo) >> (sh & 31)); }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
template <class T> inline T __ldg(const T* p) { return *p; }
template <class P> inline int4 __ldcs(const P* p) { return *p; }
template <class P, class V> inline void __stcs(P* p, V v) { *p = v; }
inline int __float2int_rn(float f) { return (int)nearbyintf(f); }
#define A16(p) do { if (((uintptr_t)(p)) & 15) { fprintf(stderr, "misaligned 16-byte access, line %d\n", __LINE__); abort(); } } while (0)
#define A8(p) do { if (((uintptr_t)(p)) & 7) { fprintf(stderr, "misaligned 8-byte copy, line %d\n", __LINE__); abort(); } } while (0)
#define A4(p) do { if (((uintptr_t)(p)) & 3) { fprintf(stderr, "misaligned 4-byte copy, line %d\n", __LINE__); abort(); } } while (0)
#define SMEM_IN(p, n) do { const char* q_ = (const char*)(p); const char* b_ = (const char*)kk::smem4; \
  if (q_ < b_ || q_ + (n) > b_ + g_shmem) { fprintf(stderr, "shared access [%ld, +%ld) outside %zu bytes, line %d\n", \
  (long)(q_ - b_), (long)(n), g_shmem, __LINE__); abort(); } } while (0)
'''

MAIN = r'''
int main(int argc, char** argv) {
  const char* fin = argv[1]; const char* fout = argv[2]; const char* fw = argv[3];
  int planes = atoi(argv[4]), groups = atoi(argv[5]), H = atoi(argv[6]), WC = atoi(argv[7]), C = atoi(argv[8]);
  long long in_plane = atoll(argv[9]), in_row = atoll(argv[10]);
  int KH = atoi(argv[11]), KW = atoi(argv[12]), mode = atoi(argv[13]), grid = atoi(argv[14]), off = atoi(argv[15]);
  int bounded = atoi(argv[16]); long long total_in = atoll(argv[17]); g_shmem = atoll(argv[18]);
  using T = @T@;
  char* raw; if (posix_memalign((void**)&raw, 64, off + total_in * sizeof(T))) return 3;
  FILE* f = fopen(fin, "rb"); if (fread(raw + off, sizeof(T), total_in, f) != (size_t)total_in) return 4; fclose(f);
  const T* in = (const T*)(raw + off);
  std::vector<float> w(4096); f = fopen(fw, "rb"); if (!fread(w.data(), 4, 4096, f)) return 5; fclose(f);
  const size_t nout = (size_t)planes * H * WC;
  T* out; if (posix_memalign((void**)&out, 64, nout * sizeof(T))) return 3;
  memset(out, 0xFF, nout * sizeof(T));
  gridDim = {(unsigned)grid, 1, 1};
  for (int b = 0; b < grid; ++b) {
    blockIdx = {(unsigned)b, 0, 0};
    memset(kk::smem4, 0xFF, sizeof(kk::smem4));  // NaN bits: a read of anything not written shows
    std::barrier<> bar(256); g_bar = &bar;
    std::vector<std::thread> th;
    for (int t = 0; t < 256; ++t) th.emplace_back([&, t] {
      threadIdx = {(unsigned)(t % 32), (unsigned)(t / 32), 0};
      kk::@KERNEL@<@TMPL@>(in, out, w.data(), nullptr, planes, groups, H, WC, C, in_plane, in_row, KH, KW, mode@EXTRA@);
    });
    for (auto& x : th) x.join();
  }
  f = fopen(fout, "wb"); fwrite(out, sizeof(T), nout, f); fclose(f);
  free(raw); free(out);
  return 0;
}
'''


def build(op: str, dtype: torch.dtype, tmpl: str, workdir: Path) -> Path:
    """The host executable of one kernel instantiation (built once per source text)."""
    paths = [CSRC / "include" / "common.cuh", CSRC / "window" / "window.cuh", CSRC / "window" / "pipeline.cuh",
             CSRC / "window" / SOURCES[op]]
    main = (MAIN.replace("@T@", CXX[dtype]).replace("@KERNEL@", KERNELS[op]).replace("@TMPL@", tmpl)
            .replace("@EXTRA@", ", bounded" if op == "sep" else ""))
    text = PRELUDE + "\n".join(_rewrite(p) for p in paths) + main
    exe = workdir / f"{op}_{hashlib.sha1(text.encode()).hexdigest()[:16]}"
    if not exe.exists():
        src = exe.with_suffix(".cpp")
        src.write_text(text)
        cmd = ["g++", "-std=c++20", "-O1", "-g", "-fsanitize=address", "-w", f"-I{cuda_host_include()}", str(src),
               "-o", str(exe), "-lpthread"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-4000:]
    return exe


def run(op: str, tmpl: str, x: torch.Tensor, channels_last: bool, weights, KH: int, KW: int, mode: int, grid: int,
        shmem: int, workdir: Path, bounded: int = 0, groups: int = 1) -> torch.Tensor:
    """The kernel's output for the CPU view x, computed by the host build on `grid` blocks."""
    p = _common.planes_of(x, channels_last, "host")
    flat = torch.empty(0, dtype=p.x.dtype).set_(p.x.untyped_storage())
    start = p.x.storage_offset()
    fin, fout, fw = workdir / "in.bin", workdir / "out.bin", workdir / "w.bin"
    fin.write_bytes(flat[start:].contiguous().view(torch.uint8).numpy().tobytes())
    fw.write_bytes(np.asarray(weights, dtype=np.float32).tobytes() + bytes(16))
    exe = build(op, x.dtype, tmpl, workdir)
    args = [exe, fin, fout, fw, p.planes, groups, p.H, p.WC, p.C, p.plane, p.row, KH, KW, mode, grid,
            (start * x.element_size()) % 16, bounded, flat.numel() - start, shmem]
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"})
    assert r.returncode == 0, r.stderr[-4000:]
    return torch.from_numpy(np.frombuffer(fout.read_bytes(), dtype=np.uint8).copy()).view(x.dtype).view(x.shape)


def aligned(x: torch.Tensor, channels_last: bool) -> bool:
    """rows_aligned as the GPU would see the view: device allocations start on 256 bytes."""
    p = _common.planes_of(x, channels_last, "host")
    es = x.element_size()
    return ((p.x.storage_offset() * es) % 16 == 0 and (p.H == 1 or p.row * es % 16 == 0)
            and (p.planes == 1 or p.plane * es % 16 == 0))
