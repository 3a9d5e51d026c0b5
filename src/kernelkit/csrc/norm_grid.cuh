// norm_grid: long rows shared by the whole grid. Every CTA owns one column slice of every row (CTA b the
// vectors [b V / P, (b + 1) V / P) of a row of V 16-byte vectors, P CTAs), so all SMs do the same work
// whatever the number of rows: no partial last round, no cluster placement (clusters of 8 fill 120 of an
// H100's 132 SMs), and each CTA stages its weight and bias slice (a few KB) once for the whole launch.
//
// A row's statistics meet in global memory, with no atomics (session 21: a counter a row that every CTA
// added to twice, 264 adds on one address a row, held 1024 x 65536 fp32 layer_norm to 39% of a copy).
// Warp w of every CTA takes rows w, w + kWarps, ...; for each it
//   publishes its slice's partial, (mean, M2) or (sum of squares, 0), as one 64-bit store into the row's
//     slot of `partials`; CTA r % P, row r's combiner, polls the P slots until each holds a value (a single
//     64-bit store is its own flag: no fence), combines them into (mean, rstd), published as one 64-bit
//     word in `stats`, and puts the slots back to kGridEmpty;
//   normalizes it kLag rows later, once that word holds a value.
// The statistics words come in two sets, used by alternate launches: a launch reads the launch number from
// `gen` at its start, uses set gen & 1, empties the other set (which the previous launch used, and which
// the next will), and the combiner of its last row, which all CTAs have started before, advances `gen`. So a
// launch leaves the buffers as the next one needs them (a stream's launches, and a CUDA graph's replays,
// share one set of buffers). A warp's ring of kDepth row slices in shared memory is filled by cp.async kDepth
// - kLag rows ahead of their statistics, so the exchange's round trips hide behind other rows' traffic.
// Every combination is in a fixed order (lanes over slots, then a fixed butterfly): the same bits whichever
// CTA combines. The CTAs wait for one another, so the launch must be cooperative (all CTAs resident).
#pragma once
#include "bulk.cuh"
#include "norm.cuh"

namespace kk {

constexpr unsigned long long kGridEmpty = 0x7fbadbad7fbadbadull;  // a NaN pair arithmetic never produces
constexpr int kGridStatsStride = 16;                              // statistics words 128 bytes apart: a line each
#ifndef KK_GRID_SLEEP
#define KK_GRID_SLEEP 100  // ns between polls of a word not yet written: every CTA polls the same line
#endif
#ifndef KK_GRID_PROBE
#define KK_GRID_PROBE 0  // experiments (scripts/grid_ab.py --probes), wrong results: 1 no wait for statistics,
#endif                   // 2 nor their reads or combines, 3 nor the partials' stores
#ifndef KK_GRID_BULK
#define KK_GRID_BULK 0  // 1: each warp's ring filled by one bulk copy (TMA) a row slice, not cp.async (sm_90)
#endif
#ifndef KK_GRID_COMBINE_FIRST
#define KK_GRID_COMBINE_FIRST 0  // 1: the combiner polls its row's slots before normalizing its current row
#endif

__device__ __forceinline__ void st_relaxed64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_relaxed32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed32(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned long long pack2(float a, float b) {
  return (unsigned long long)__float_as_uint(a) | ((unsigned long long)__float_as_uint(b) << 32);
}
__device__ __forceinline__ float2 unpack2(unsigned long long v) {
  return make_float2(__uint_as_float((unsigned)v), __uint_as_float((unsigned)(v >> 32)));
}


// The row's (mean, rstd) from the P slots of `slot` (row r's partials), by one warp; every lane gets it.
// Slot b's count is its slice's elements (slices are fixed by b), so the result depends on nothing but the
// slots' values. layer_norm: Chan's formula summed about the last slice's mean (the last slice is never
// empty), as cluster_chan does; rms_norm: the sum of the sums of squares.
__device__ __forceinline__ float2 grid_combine(unsigned long long* slot, int P, i64 V, int N, i64 len,
                                               float eps, int rms) {
  const int lane = threadIdx.x & 31;
  unsigned long long v[8];  // this lane's slots b = lane + 32 i (P <= 256), all requested at once: one round trip
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = lane + 32 * i < P ? ld_relaxed64(slot + lane + 32 * i) : 0ull;
  float2 own[8];
  float last_mean = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int b = lane + 32 * i;
    own[i] = make_float2(0.0f, 0.0f);
    if (b < P) {
      while (v[i] == kGridEmpty) {  // counted, but its store not yet seen
        __nanosleep(KK_GRID_SLEEP);
        v[i] = ld_relaxed64(slot + b);
      }
      own[i] = unpack2(v[i]);
      st_relaxed64(slot + b, kGridEmpty);  // read once, by this warp only: back to empty for the next launch
      if (b == P - 1) last_mean = own[i].x;
    }
  }
  if (rms) {
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) ss += own[i].x;
    return {0.0f, rms_rstd(warp_allreduce<SumOp>(ss), len, eps)};
  }
  const float m0 = __shfl_sync(0xffffffffu, last_mean, (P - 1) % 32);
  float t = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int b = lane + 32 * i;
    if (b < P) {
      const float n = (float)(((i64)(b + 1) * V / P - (i64)b * V / P) * N);
      t += n * (own[i].x - m0);
    }
  }
  const float mean = m0 + warp_allreduce<SumOp>(t) / (float)len;
  float m2 = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int b = lane + 32 * i;
    if (b < P) {
      const float n = (float)(((i64)(b + 1) * V / P - (i64)b * V / P) * N);
      const float d = own[i].x - mean;
      m2 += own[i].y + n * d * d;
    }
  }
  m2 = warp_allreduce<SumOp>(m2);
  return {mean, rsqrtf(m2 / (float)len + eps)};
}

// 16 bytes from global to shared memory without registers (cp.async, sm_80+), zeros where !ok (nothing read).
__device__ __forceinline__ void cp_async16_or_zero(void* smem, const void* gmem, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_addr(smem)), "l"(gmem),
               "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

// Bytes of dynamic shared memory: each warp's ring of kDepth row slices.
__host__ __device__ constexpr int grid_ring_bytes(int warps, int vecs, int depth) { return warps * depth * 32 * vecs * 16; }

template <typename T, int kWarps, int kVecs, int kDepth, int kLag>
__global__ void __launch_bounds__(kWarps * 32, 1)
norm_grid(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight, const T* __restrict__ bias,
          i64 rows, i64 len, float eps, int rms, unsigned long long* partials, unsigned long long* stats,
          unsigned* gen, int capacity) {
  static_assert(kLag >= 1 && kLag < kDepth, "rows between publishing and normalizing, and loads ahead of both");
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int P = gridDim.x, b = blockIdx.x;
  const i64 vecs = len / N;
  const i64 lo = (i64)b * vecs / P, hi = (i64)(b + 1) * vecs / P;
  const int mine = (int)(hi - lo);               // this CTA's vectors of a row (<= 32 kVecs)
  const float n = (float)mine * N;                // its elements
  const i64 col = (lo + lane) * N;                // this lane's first element; its vectors 32 apart
  const auto valid = [&](int k) { return lane + 32 * k < mine; };

  // this launch's set of statistics words (`capacity` rows a set); the other set emptied for the next launch
  const unsigned launch_no = ld_relaxed32(gen);
  unsigned long long* const words = stats + (i64)(launch_no & 1u) * capacity * kGridStatsStride;
  unsigned long long* const next_words = stats + (i64)(~launch_no & 1u) * capacity * kGridStatsStride;
  for (int r = b * blockDim.x + threadIdx.x; r < capacity; r += P * blockDim.x)
    st_relaxed64(next_words + (i64)r * kGridStatsStride, kGridEmpty);

  // weight and bias slices, staged once (every warp of the CTA uses the same slice), zero where absent or
  // past the slice
  __shared__ uint4 wb[2][32 * kVecs];
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      wb[0][32 * k + lane] = load_vec_or(weight && valid(k), reinterpret_cast<const uint4*>(weight + col + 32 * k * N), 0u);
      wb[1][32 * k + lane] = load_vec_or(bias && valid(k), reinterpret_cast<const uint4*>(bias + col + 32 * k * N), 0u);
    }
  }
  __syncthreads();

  // this warp's ring: kDepth row slices, lane-private (each lane copies and reads back its own vectors: no
  // barrier), read conflict-free (lane-consecutive 16-byte words)
  extern __shared__ uint4 ring_all[];
  uint4* const ring = ring_all + warp * kDepth * 32 * kVecs;
  const auto slot = [&](int s, int k) -> uint4* { return ring + (s * kVecs + k) * 32 + lane; };

  const i64 my_rows = rows > warp ? (rows - warp + kWarps - 1) / kWarps : 0;  // rows warp, warp + kWarps, ...
  const auto row_of = [&](i64 i) { return warp + i * kWarps; };

  // Copy row i into slot s (one commit group, empty past the warp's rows so that the groups stay counted).
  __shared__ unsigned long long bars[kWarps][kDepth];  // KK_GRID_BULK: a slot's copy landed
  if (KK_GRID_BULK) {
    if (lane == 0) {
      for (int j = 0; j < kDepth; ++j) mbar_init(&bars[warp][j]);
      mbar_init_fence();
    }
    __syncwarp();
  }
  const auto load = [&](int s, i64 i) {
    if (KK_GRID_BULK) {
      __syncwarp();  // every lane has read the slot's previous row
      if (lane == 0) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        const unsigned bytes = i < my_rows ? (unsigned)mine * 16u : 0u;
        mbar_expect_bytes(&bars[warp][s], bytes);
        if (bytes) bulk_load(ring + s * kVecs * 32, in + row_of(i) * len + lo * N, bytes, &bars[warp][s]);
      }
      return;
    }
    if (i < my_rows) {
      const T* x = in + row_of(i) * len + col;
#pragma unroll
      for (int k = 0; k < kVecs; ++k) cp_async16_or_zero(slot(s, k), valid(k) ? x + 32 * k * N : in, valid(k));
    }
    cp_async_commit();
  };
  const auto floats = [&](int s, int k, float(&f)[N]) {
    const V v = lds_volatile(reinterpret_cast<const V*>(slot(s, k)));
    vec_to_floats(v, f);
  };

  // Publish row i's partial from slot s.
  const auto publish = [&](int s, i64 i) {
    const i64 r = row_of(i);
    float a = 0.0f, c = 0.0f;
    if (rms) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        float f[N];
        floats(s, k, f);
#pragma unroll
        for (int j = 0; j < N; ++j) a = valid(k) ? fmaf(f[j], f[j], a) : a;
      }
      a = warp_allreduce<SumOp>(a);
    } else {
      float f[kVecs][N];
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        floats(s, k, f[k]);
#pragma unroll
        for (int j = 0; j < N; ++j) a += valid(k) ? f[k][j] : 0.0f;
      }
      a = n > 0.0f ? warp_allreduce<SumOp>(a) / n : 0.0f;  // the slice's mean
#pragma unroll
      for (int k = 0; k < kVecs; ++k)
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const float d = f[k][j] - a;
          if (valid(k)) c = fmaf(d, d, c);
        }
      c = warp_allreduce<SumOp>(c);
    }
    if (lane == 0 && KK_GRID_PROBE < 3) st_relaxed64(partials + r * P + b, pack2(a, c));
  };
  // Row i's combiner (CTA r % P): combine its slots and publish its statistics; the last row's advances gen.
  const auto combine_if_mine = [&](i64 i) {
    const i64 r = row_of(i);
    if (r % P != b || KK_GRID_PROBE >= 2) return;
    const float2 st = grid_combine(partials + r * P, P, vecs, N, len, eps, rms);
    if (lane == 0) {
      st_relaxed64(words + r * kGridStatsStride, pack2(st.x, st.y));
      if (r == rows - 1) st_relaxed32(gen, launch_no + 1u);
    }
  };
  // Normalize and store row i from slot s once its statistics are published (`first`: the word read ahead).
  const auto normalize = [&](int s, i64 i, unsigned long long first) {
    const i64 r = row_of(i);
    unsigned long long w = KK_GRID_PROBE ? pack2(0.0f, 1.0f) : first;
    while (w == kGridEmpty) {
      __nanosleep(KK_GRID_SLEEP);
      w = ld_relaxed64(words + r * kGridStatsStride);
    }
    const float2 st = unpack2(w);
    T* y = out + r * len + col;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (!valid(k)) continue;
      float f[N];
      floats(s, k, f);
      const V wk = lds_volatile(reinterpret_cast<const V*>(&wb[0][32 * k + lane]));
      const V bk = lds_volatile(reinterpret_cast<const V*>(&wb[1][32 * k + lane]));
      V o;
      affine_words<true>(o, f, st, wk, bk, weight, bias);
      store_global16(reinterpret_cast<V*>(y + 32 * k * N), o);
    }
  };

  // Prologue: kDepth rows requested, the first kLag published (and combined where this CTA combines them).
#pragma unroll
  for (int j = 0; j < kDepth; ++j) load(j, j);
#pragma unroll
  for (int j = 0; j < kLag; ++j) {
    if (KK_GRID_BULK) mbar_wait(&bars[warp][j], 0);
    else cp_async_wait<0>();
    if (j < my_rows) {
      publish(j, j);
      combine_if_mine(j);
    }
  }
  unsigned long long ahead = my_rows > 0 ? ld_relaxed64(words + row_of(0) * kGridStatsStride) : kGridEmpty;

  // Row i: publish row i + kLag (requested kDepth - kLag rows ago: the groups of the kDepth - kLag - 1 rows
  // requested since may still be in flight), normalize row i, request row i + kDepth into its slot, combine
  // row i + kLag where this CTA does (after the normalization, so that the other CTAs' slots have had time).
  for (i64 i = 0; i < my_rows; ++i) {
    const int si = (int)(i % kDepth), sp = (int)((i + kLag) % kDepth);
    const bool pub = i + kLag < my_rows;
    if (!KK_GRID_BULK) cp_async_wait<kDepth - kLag - 1>();
    else if (pub) mbar_wait(&bars[warp][sp], (unsigned)((i + kLag) / kDepth) & 1u);
    if (pub) publish(sp, i + kLag);
    if (KK_GRID_COMBINE_FIRST && pub) combine_if_mine(i + kLag);
    normalize(si, i, ahead);
    load(si, i + kDepth);
    if (!KK_GRID_COMBINE_FIRST && pub) combine_if_mine(i + kLag);
    ahead = i + 1 < my_rows && KK_GRID_PROBE < 2 ? ld_relaxed64(words + row_of(i + 1) * kGridStatsStride) : kGridEmpty;
  }
  if (!KK_GRID_BULK) cp_async_wait<0>();
}

}  // namespace kk
