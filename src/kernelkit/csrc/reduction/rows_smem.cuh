// Rows kept whole in shared memory (sm_90): norm_smem's loop, generic over the row policy.
//
// Why: the register-tile row kernels hold a CTA's slice of a row in registers, which caps a CTA at
// 32 values a thread (1024 threads x 64 registers): 64K-element 16-bit rows need two CTAs a row
// (clusters of 2 at 1024 threads, measured 85-88% of a same-bytes copy, a third of the issue slots
// waiting on L1TEX), and 64K fp32 rows clusters of 4 or 8, which the driver places on 120 of the 132
// SMs. Here a CTA's slice lives in shared memory instead (up to 227 KB: a whole 64K-element 16-bit
// row, or half a 64K fp32 row), so a CTA of any size holds it, registers stay free for loads in
// flight, and one CTA (or a cluster of 2) an SM serves every SM.
//
// The slice arrives as kChunks chunks, each of kBlock threads x kPer 16-byte vectors (thread t's
// vector k of a chunk at element k * kBlock * N + t * N: coalesced), by bulk copies into a ring of
// kStages > kChunks chunk stages issued by one thread as far ahead as the ring allows. The policy
// `Row` accumulates its statistics over each chunk as it lands, finishes them (block and cluster
// reductions; it may read the resident slice again), then writes the output chunk by chunk, and each
// stage is refilled (with the next rows' chunks) as soon as every thread has written from it.
//
// Row's interface (see NormRow in norm.cuh):
//   begin(shift)                  a new row; shift: its slice's first element (for a shifted sum)
//   add(x)                        a landed vector of N floats (valid elements only)
//   stats(n, wcount, each, smem, share) -> float2
//                                 the row's statistics; n: valid elements of this CTA's slice, wcount:
//                                 of this warp's vectors, each(f): f(x) over every valid vector again
//   aux(col)                      what the output of the vector at row column col needs besides x (say
//                                 weight and bias), requested a chunk ahead
//   out(o, x, st, aux)            the output vector o
#pragma once
#include "bulk.cuh"
#include "reduce.cuh"

namespace kk {

// CTAs an SM can hold (ring in dynamic shared memory, <= 227 KB an SM beside ~1 KB of static), but
// never so many that a thread gets fewer than 64 registers: the __launch_bounds__ minimum, which sets
// ptxas' register budget (two 1024-thread CTAs an SM, 32 registers, spilled).
template <typename T, int kBlock, int kPer, int kStages>
__host__ __device__ constexpr int smem_rows_min_blocks() {
  constexpr int kRing = kStages * kBlock * kPer * 16;
  constexpr int kFit = (227 * 1024) / (kRing + 1024);
  constexpr int kRegs = 1024 / kBlock;
  return kFit < 1 ? 1 : (kFit < kRegs ? kFit : kRegs);
}

// Every valid vector of a resident slice again, as floats: each(f) calls f(x) for each. A functor
// rather than a generic lambda: NVRTC 13.0 compiles a generic lambda's call operator as host code.
template <typename T, int kBlock, int kPer, int kChunks, int kStages>
struct SliceValues {
  static constexpr int N = 16 / sizeof(T);
  static constexpr int kChunk = kBlock * kPer * N;
  const T* ring;  // the ring's first stage
  int q0, n;      // the slice's first copy number (its chunk c is in stage (q0 + c) % kStages), elements
  template <typename F>
  __device__ __forceinline__ void operator()(F&& f) const {
#pragma unroll 1
    for (int c = 0; c < kChunks; ++c)
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int at = k * kBlock * N + (int)threadIdx.x * N;
        if (c * kChunk + at < n) {
          const Vec<T, N> v = load_vec(reinterpret_cast<const Vec<T, N>*>(ring + ((q0 + c) % kStages) * kChunk + at));
          float x[N];
#pragma unroll
          for (int j = 0; j < N; ++j) x[j] = to_float(v.v[j]);
          f(x);
        }
      }
  }
};

template <typename T, int kBlock, int kPer, int kChunks, int kStages, int kCluster, typename Row>
__device__ __forceinline__ void smem_rows(const T* __restrict__ in, T* __restrict__ out, i64 rows, i64 len,
                                          Row& op) {
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  constexpr int kChunk = kBlock * kPer * N, kSlice = kChunk * kChunks;  // elements
  static_assert(kStages > kChunks, "the ring holds a whole slice and at least one chunk of the next");
  __shared__ float smem[96];
  __shared__ float2 slots[2][kCluster];
  __shared__ unsigned long long pushed[2], full[kStages];
  extern __shared__ __align__(128) unsigned char dyn[];
  const BulkRing<T, kChunk, kStages> ring{reinterpret_cast<T*>(dyn), full};
  const unsigned rank = blockIdx.x % kCluster;
  const int n = (int)max((i64)0, min((i64)kSlice, len - (i64)rank * kSlice));  // this CTA's elements of a row
  const i64 first = blockIdx.x / kCluster, stride = gridDim.x / kCluster;
  ClusterShare<kCluster> share{slots, pushed, rank};
  if constexpr (kCluster > 1) share.init();
  ring.init();
  // one thread: copy number q of this CTA's sequence of row chunks (BulkRing::fill_slice)
  const auto fill = [&](int q) {
    ring.template fill_slice<kChunks>(q, in, rows, len, first, stride, (i64)rank * kSlice, n);
  };
  if (threadIdx.x == 0 && n > 0) {
#pragma unroll 1
    for (int q = 0; q < kStages; ++q) fill(q);
  }
  // this thread's vector k of chunk c: its first element within the slice
  const auto at = [](int c, int k) { return c * kChunk + k * kBlock * N + (int)threadIdx.x * N; };
  // elements of this warp's vectors that hold data (a whole number of vectors: len % N == 0)
  const int warp0 = (int)(threadIdx.x & ~31u) * N;
  int wcount = 0;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int k = 0; k < kPer; ++k) wcount += max(0, min(32 * N, n - (c * kChunk + k * kBlock * N + warp0)));

  int i = 0;
  for (i64 row = first; row < rows; row += stride, ++i) {
    const int q0 = i * kChunks;
    const auto values = [&](int c, int k, float (&x)[N]) {
      const V v = load_vec(reinterpret_cast<const V*>(ring.stage(q0 + c) + k * kBlock * N + threadIdx.x * N));
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = to_float(v.v[j]);
    };
    // the chunk loops stay rolled (a chunk's kPer vectors unrolled): unrolled, ptxas hoisted the
    // shared-memory loads of several chunks at once and spilled
#pragma unroll 1
    for (int c = 0; c < kChunks; ++c) {
      if (n > 0) ring.wait(q0 + c);
      // the slice's first element, the same for every thread: a shift that keeps the sums small
      if (c == 0) op.begin(n > 0 ? to_float(ring.stage(q0)[0]) : 0.0f);
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        if (at(c, k) < n) {
          float x[N];
          values(c, k, x);
          op.add(x);
        }
      }
    }
    const SliceValues<T, kBlock, kPer, kChunks, kStages> each{ring.buf, q0, n};
    const i64 col0 = (i64)rank * kSlice;  // the slice's first column
    const auto aux_of = [&](int c, typename Row::Aux (&a)[kPer]) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) a[k] = op.aux(at(c, k) < n ? col0 + at(c, k) : 0);
    };
    // chunk 0's auxiliary inputs requested before the statistics: their latency overlaps the reductions
    typename Row::Aux cur[kPer], next[kPer];
    aux_of(0, cur);
    const float2 st = op.stats(n, wcount, each, smem, share);
    T* const y = out + row * len + col0;
#pragma unroll 1
    for (int c = 0; c < kChunks; ++c) {
      if (c + 1 < kChunks) aux_of(c + 1, next);  // a chunk ahead: across this chunk's barrier
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        if (at(c, k) < n) {
          float x[N];
          values(c, k, x);
          V o;
          op.out(o, x, st, cur[k]);
          store_global16(reinterpret_cast<V*>(y + at(c, k)), o);
        }
      }
      __syncthreads();  // every thread has read this chunk's stage: refill it with a later chunk
      if (threadIdx.x == 0 && n > 0) fill(q0 + c + kStages);
#pragma unroll
      for (int k = 0; k < kPer; ++k) cur[k] = next[k];
    }
  }
}

}  // namespace kk
