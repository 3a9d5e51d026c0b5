// The CUDA built-ins that the rearrangement and reduction kernels use, for running their source on the
// host (tests/test_host_emulation_cpu.py): a std::thread per CUDA thread, a std::barrier per block and per
// warp, shuffles through a per-warp slot array, and global loads checked against the allowed byte ranges
// (what compute-sanitizer's memcheck would flag). PTX `asm` is stripped from the sources by the driver;
// the few statements whose effect the kernels need (16-byte stores, NaN-propagating max and min) get host
// forms there.
#pragma once
#include <vector_functions.h>
#include <vector_types.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static  // one block runs at a time: a static local is its shared memory
#define __restrict__

inline thread_local uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 gridDim, blockDim;

struct WarpExchange {
  std::barrier<>* bar;
  unsigned long long slot[32];
};
inline std::barrier<>* g_block_barrier = nullptr;
inline thread_local WarpExchange* t_warp = nullptr;
inline thread_local int t_lane = 0;

inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T>
inline T __shfl_xor_sync(unsigned, T v, int offset, int = 32) {
  static_assert(sizeof(T) <= 8, "shuffles of up to 8 bytes");
  unsigned long long u = 0;
  memcpy(&u, &v, sizeof(T));
  t_warp->slot[t_lane] = u;
  t_warp->bar->arrive_and_wait();
  const unsigned long long got = t_warp->slot[t_lane ^ offset];
  t_warp->bar->arrive_and_wait();
  T r;
  memcpy(&r, &got, sizeof(T));
  return r;
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, int offset, int = 32) {
  unsigned long long u = 0;
  memcpy(&u, &v, sizeof(T));
  t_warp->slot[t_lane] = u;
  t_warp->bar->arrive_and_wait();
  const unsigned long long got = t_warp->slot[t_lane + offset < 32 ? t_lane + offset : t_lane];
  t_warp->bar->arrive_and_wait();
  T r;
  memcpy(&r, &got, sizeof(T));
  return r;
}

template <class T>
inline T min(T a, T b) { return a < b ? a : b; }
template <class T>
inline T max(T a, T b) { return a > b ? a : b; }

// Global loads must lie within one of these byte ranges (the 16-byte hull of each input).
inline std::vector<std::pair<uintptr_t, uintptr_t>> g_ranges;
inline void check_load(const void* p, size_t n) {
  const uintptr_t a = (uintptr_t)p;
  for (const auto& r : g_ranges)
    if (a >= r.first && a + n <= r.second) return;
  fprintf(stderr, "load of %zu bytes outside the inputs at %p\n", n, p);
  abort();
}
template <class T>
inline T __ldg(const T* p) {
  check_load(p, sizeof(T));
  if (sizeof(T) == 16 && ((uintptr_t)p & 15)) {
    fprintf(stderr, "misaligned 16-byte load\n");
    abort();
  }
  return *p;
}
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
inline void store16_checked(void* p, const void* v) {
  if ((uintptr_t)p & 15) {
    fprintf(stderr, "misaligned 16-byte store\n");
    abort();
  }
  memcpy(p, v, 16);
}

inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)((((unsigned long long)hi << 32) | lo) >> (shift & 31));
}
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
inline unsigned __cvta_generic_to_shared(const void* p) { return (unsigned)(uintptr_t)p; }
inline void __trap() { abort(); }

inline std::atomic_flag g_atomic_lock = ATOMIC_FLAG_INIT;
template <class F>
inline unsigned locked(F f) {
  while (g_atomic_lock.test_and_set()) {}
  const unsigned r = f();
  g_atomic_lock.clear();
  return r;
}
inline unsigned atomicInc(unsigned* p, unsigned m) {
  return locked([&] { const unsigned o = *p; *p = o >= m ? 0 : o + 1; return o; });
}
inline unsigned atomicAdd(unsigned* p, unsigned v) { return locked([&] { const unsigned o = *p; *p += v; return o; }); }
inline unsigned atomicExch(unsigned* p, unsigned v) { return locked([&] { const unsigned o = *p; *p = v; return o; }); }

// kernel() over a grid of `grid` x `gy` blocks of bx x by threads, one block at a time. A thread that
// returns leaves its warp's and block's barriers, as a CUDA thread that exits does.
template <class F>
void launch(F kernel, unsigned grid, unsigned bx, unsigned by = 1, unsigned gy = 1) {
  gridDim = dim3(grid, gy, 1);
  blockDim = dim3(bx, by, 1);
  const unsigned threads = bx * by, warps = (threads + 31) / 32;
  for (unsigned b = 0; b < grid * gy; ++b) {
    blockIdx = make_uint3(b % grid, b / grid, 0);
    std::barrier<> block_barrier(threads);
    g_block_barrier = &block_barrier;
    std::vector<WarpExchange> wx(warps);
    for (unsigned w = 0; w < warps; ++w) wx[w].bar = new std::barrier<>(std::min(32u, threads - 32 * w));
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        threadIdx = make_uint3(t % bx, t / bx, 0);
        t_warp = &wx[t / 32];
        t_lane = t % 32;
        kernel();
        t_warp->bar->arrive_and_drop();
        g_block_barrier->arrive_and_drop();
      });
    for (auto& t : ts) t.join();
    for (auto& w : wx) delete w.bar;
  }
}
