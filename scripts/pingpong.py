"""How long one CTA takes to see another's global-memory flag (release store / acquire load at gpu
scope), by ping-pong between two CTAs on different SMs: the latency a cross-cluster merge of row
statistics would add (benchmarks/NOTES.md, session 17's tail-split design).

    python scripts/pingpong.py [--iters 2000]
"""
from __future__ import annotations

import argparse

import cupy as cp

SRC = r'''
extern "C" __global__ void pingpong(unsigned* flag, unsigned long long* t, int iters) {
  if (threadIdx.x != 0) return;
  const unsigned me = blockIdx.x;  // 0 serves odd values, 1 answers with even ones
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (int i = 0; i < iters; ++i) {
    const unsigned want = 2u * i + me, give = 2u * i + me + 1u;
    if (!(me == 0 && i == 0)) {
      unsigned v;
      do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory"); } while (v != want);
    }
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(give) : "memory");
  }
  unsigned long long t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  t[me] = t1 - t0;
}
// publish-and-wait as the tail split would: each of two CTAs stores a float2, adds 1 to a counter
// (release), spins until the counter shows both (acquire), reads the other's float2; repeated.
extern "C" __global__ void rendezvous(float2* slots, unsigned* count, unsigned long long* t, int iters, float* sink) {
  if (threadIdx.x != 0) return;
  const unsigned me = blockIdx.x;
  float acc = 0.f;
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (int i = 0; i < iters; ++i) {
    slots[2 * i + me] = make_float2(acc + me, (float)i);
    unsigned old;
    asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(count + i) : "memory");
    unsigned v = old + 1u;
    while (v < 2u) asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count + i) : "memory");
    acc += slots[2 * i + (1 - me)].x;
  }
  unsigned long long t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  t[me] = t1 - t0;
  sink[me] = acc;
}
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    a = ap.parse_args()
    mod = cp.RawModule(code=SRC, options=("-arch=sm_90",))
    pp, rv = mod.get_function("pingpong"), mod.get_function("rendezvous")
    n = a.iters
    for rep in range(3):
        flag = cp.zeros(1, cp.uint32)
        t = cp.zeros(2, cp.uint64)
        # 2 CTAs of 1024 threads: one an SM
        pp((2,), (1024,), (flag, t, cp.int32(n)))
        cp.cuda.Device().synchronize()
        ns = int(t.get().max())
        print(f"pingpong: {ns / n:.0f} ns a round trip ({ns / n / 2:.0f} one way), {n} round trips")
        slots = cp.zeros(2 * n, cp.float32).view(cp.float32)
        slots = cp.zeros(4 * n, cp.float32)
        count = cp.zeros(n, cp.uint32)
        sink = cp.zeros(2, cp.float32)
        rv((2,), (1024,), (slots, count, t, cp.int32(n), sink))
        cp.cuda.Device().synchronize()
        ns = int(t.get().max())
        print(f"rendezvous: {ns / n:.0f} ns a meeting (store, release add, acquire spin, load)")


if __name__ == "__main__":
    main()
