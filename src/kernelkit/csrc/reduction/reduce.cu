// Reductions (sum, mean, amax, amin) over contiguous rows: a full reduction is one row of numel
// elements, a last-dim reduction `rows` rows, a reduction over a leading or middle dim an
// (outer, R, inner) volume reduced over R (reduce_cols). Accumulation is always fp32; Tout is the
// result type (the input's for the final pass, float for partials). Block b of a row-split launch
// handles chunk b % bpr of row b / bpr ("bpr": blocks per row).
//
// The ladder (the classic shared-memory tree reduction, then the techniques that make it memory-bound):
//   reduce_interleaved   one element per thread, shared-memory tree, interleaved addressing: the
//                        active threads are every 2s-th (divergent warps), multi-pass
//   reduce_sequential    sequential addressing: the active threads are the first s (whole warps
//                        retire, consecutive shared-memory words: no divergence, no bank conflicts)
//   reduce_first_add     each thread adds two elements while loading: half the blocks, no idle
//                        threads in the first step
//   reduce_warp_shuffle  first add, shared-memory tree down to 64 values, then the last warp
//                        reduces with shuffles (no barriers, no shared memory)
//   reduce_vector        grid-stride 16-byte loads, U in flight per thread, fixed grid per device,
//                        shuffle block reduction; reduce_finish is the fixed-order second pass
//   reduce_fast          the same main loop with the finish done by the last block of each row
//                        (integer ticket, no float atomics): one launch, same bits every time
// plus the default rung's other shapes: reduce_warp_rows (a warp per short row) and reduce_cols.
#include "reduce.cuh"

namespace kk {

// ---------------------------------------------------------------- the tree rungs (shared memory)

template <typename Tin, typename Tout, typename Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_interleaved(const Tin* __restrict__ in, Tout* __restrict__ out, i64 len, i64 bpr, float scale) {
  __shared__ float s[kBlock];
  const int tid = threadIdx.x;
  const i64 row = blockIdx.x / bpr, i = (blockIdx.x % bpr) * kBlock + tid;
  s[tid] = i < len ? to_float(in[row * len + i]) : Op::identity();
  __syncthreads();
  for (int stride = 1; stride < kBlock; stride *= 2) {
    if (tid % (2 * stride) == 0) s[tid] = Op::combine(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = from_float<Tout>(s[0] * scale);
}

template <typename Tin, typename Tout, typename Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_sequential(const Tin* __restrict__ in, Tout* __restrict__ out, i64 len, i64 bpr, float scale) {
  __shared__ float s[kBlock];
  const int tid = threadIdx.x;
  const i64 row = blockIdx.x / bpr, i = (blockIdx.x % bpr) * kBlock + tid;
  s[tid] = i < len ? to_float(in[row * len + i]) : Op::identity();
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] = Op::combine(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = from_float<Tout>(s[0] * scale);
}

// Two elements per thread, kBlock apart (both loads coalesced), combined before the tree.
template <typename Tin, typename Op, int kBlock>
__device__ __forceinline__ float load_two(const Tin* __restrict__ in, i64 len, i64 bpr) {
  const i64 row = blockIdx.x / bpr, i = (blockIdx.x % bpr) * (2 * kBlock) + threadIdx.x;
  const Tin* x = in + row * len;
  float v = i < len ? to_float(x[i]) : Op::identity();
  if (i + kBlock < len) v = Op::combine(v, to_float(x[i + kBlock]));
  return v;
}

template <typename Tin, typename Tout, typename Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_first_add(const Tin* __restrict__ in, Tout* __restrict__ out, i64 len, i64 bpr, float scale) {
  __shared__ float s[kBlock];
  const int tid = threadIdx.x;
  s[tid] = load_two<Tin, Op, kBlock>(in, len, bpr);
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride >>= 1) {
    if (tid < stride) s[tid] = Op::combine(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = from_float<Tout>(s[0] * scale);
}

template <typename Tin, typename Tout, typename Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_warp_shuffle(const Tin* __restrict__ in, Tout* __restrict__ out, i64 len, i64 bpr, float scale) {
  static_assert(kBlock >= 64, "the shuffle stage takes the last 64 values");
  __shared__ float s[kBlock];
  const int tid = threadIdx.x;
  s[tid] = load_two<Tin, Op, kBlock>(in, len, bpr);
  __syncthreads();
  for (int stride = kBlock / 2; stride > 32; stride >>= 1) {
    if (tid < stride) s[tid] = Op::combine(s[tid], s[tid + stride]);
    __syncthreads();
  }
  if (tid < 32) {  // the last six steps inside one warp: registers and shuffles, no barriers
    float v = Op::combine(s[tid], s[tid + 32]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
    if (tid == 0) out[blockIdx.x] = from_float<Tout>(v * scale);
  }
}

// ---------------------------------------------------------------- vectorized grid-stride rungs

// The reduction of the elements of `row` that thread t of `stride` threads owns: a scalar head up to
// the first 16-byte boundary, 16-byte vectors (kUnroll loads issued before any math, one accumulator
// each), a scalar tail. The order depends only on (len, alignment, t, stride): deterministic.
template <typename T, typename Op, int kUnroll>
__device__ __forceinline__ float accumulate_row(const T* __restrict__ row, i64 len, i64 t, i64 stride) {
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const i64 mis = (i64)(reinterpret_cast<unsigned long long>(row) & 15);
  const i64 head = min(len, ((16 - mis) & 15) / (i64)sizeof(T));
  float acc[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) acc[u] = Op::identity();
  if (t < head) acc[0] = to_float(row[t]);
  const V* body = reinterpret_cast<const V*>(row + head);
  const i64 nvec = (len - head) / N;
  for (i64 i = t; i < nvec; i += stride * kUnroll) {
    V v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * stride < nvec) v[u] = load_vec(body + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * stride < nvec) {
#pragma unroll
        for (int e = 0; e < N; ++e) acc[u] = Op::combine(acc[u], to_float(v[u].v[e]));
      }
  }
  const i64 done = head + nvec * N;
  if (t < len - done) acc[0] = Op::combine(acc[0], to_float(row[done + t]));
#pragma unroll
  for (int u = 1; u < kUnroll; ++u) acc[0] = Op::combine(acc[0], acc[u]);
  return acc[0];
}

// Pass 1 of the two-pass rung: bpr blocks per row, one fp32 partial each.
template <typename T, typename Op, int kBlock, int kUnroll>
__global__ void __launch_bounds__(kBlock)
reduce_vector(const T* __restrict__ in, float* __restrict__ partials, i64 len, int bpr) {
  __shared__ float smem[32];
  const i64 row = blockIdx.x / bpr;
  const i64 t = (i64)(blockIdx.x % bpr) * kBlock + threadIdx.x;
  float v = accumulate_row<T, Op, kUnroll>(in + row * len, len, t, (i64)bpr * kBlock);
  v = block_allreduce<Op, kBlock>(v, smem);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// The fixed-order finish: the bpr partials of row `row` reduced by one block of kBlock threads.
template <typename Op, int kBlock>
__device__ __forceinline__ float reduce_partials(const float* partials, int bpr, float* smem) {
  float acc = Op::identity();
  for (int j = threadIdx.x; j < bpr; j += kBlock) acc = Op::combine(acc, __ldcg(partials + j));
  return block_allreduce<Op, kBlock>(acc, smem);
}

// Pass 2 of the two-pass rung: one block per row.
template <typename Tout, typename Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_finish(const float* __restrict__ partials, Tout* __restrict__ out, int bpr, float scale) {
  __shared__ float smem[32];
  const float r = reduce_partials<Op, kBlock>(partials + (i64)blockIdx.x * bpr, bpr, smem);
  if (threadIdx.x == 0) out[blockIdx.x] = from_float<Tout>(r * scale);
}

// One launch: every block writes its partial and takes a ticket; the last block of a row (ticket
// bpr - 1) reduces the row's partials in fixed order. atomicInc wraps the counter back to 0, so the
// counters are ready for the next launch without a memset. bpr == 1: the block writes the result.
template <typename T, typename Tout, typename Op, int kBlock, int kUnroll>
__global__ void __launch_bounds__(kBlock)
reduce_fast(const T* __restrict__ in, Tout* __restrict__ out, float* __restrict__ partials,
            unsigned* __restrict__ counters, i64 len, int bpr, float scale) {
  __shared__ float smem[32];
  __shared__ bool last;
  const i64 row = blockIdx.x / bpr;
  const i64 t = (i64)(blockIdx.x % bpr) * kBlock + threadIdx.x;
  float r = accumulate_row<T, Op, kUnroll>(in + row * len, len, t, (i64)bpr * kBlock);
  r = block_allreduce<Op, kBlock>(r, smem);
  if (bpr == 1) {
    if (threadIdx.x == 0) out[row] = from_float<Tout>(r * scale);
    return;
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = r;
    __threadfence();  // the partial is visible device-wide before the ticket says so
    last = atomicInc(counters + row, (unsigned)(bpr - 1)) == (unsigned)(bpr - 1);
  }
  __syncthreads();
  if (!last) return;
  __threadfence();  // and the last block sees every other block's partial
  r = reduce_partials<Op, kBlock>(partials + row * bpr, bpr, smem);
  if (threadIdx.x == 0) out[row] = from_float<Tout>(r * scale);
}

// ---------------------------------------------------------------- the default rung's other shapes

// Short rows: one warp per row (kBlock / 32 rows per block), vector loads from each row's first
// 16-byte boundary, shuffle reduction.
template <typename T, typename Tout, typename Op, int kBlock>
__global__ void __launch_bounds__(kBlock)
reduce_warp_rows(const T* __restrict__ in, Tout* __restrict__ out, i64 rows, i64 len, float scale) {
  const i64 row = (i64)blockIdx.x * (kBlock / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave: the shuffles below stay full-warp
  const int lane = threadIdx.x & 31;
  float v = accumulate_row<T, Op, 2>(in + row * len, len, lane, 32);
  v = warp_allreduce<Op>(v);
  if (lane == 0) out[row] = from_float<Tout>(v * scale);
}

// Reduction over R of an (outer, R, inner) volume, inner > 1: threadIdx.x walks V consecutive
// columns (one 16-byte load when V > 1: inner % V == 0 and an aligned base), threadIdx.y every 8th
// row, so each warp reads 32 x V contiguous elements per row. Block (cb, split, o) reduces rows
// [split * rps, (split + 1) * rps) of column block cb. With rsplit == 1 it writes the result; with
// rsplit > 1 it writes fp32 partials (outer, rsplit, inner) and takes a ticket of its column block, and
// the last of the rsplit blocks to finish reduces their partials in split order (one launch, the same
// bits every time; atomicInc wraps the counter back to 0 for the next launch).
constexpr int kColRows = 8;

template <typename Op, int V>
__device__ __forceinline__ void combine_rows(float (&s)[kColRows][32 * V], float (&acc)[V], int tx, int ty) {
#pragma unroll
  for (int v = 0; v < V; ++v) s[ty][tx * V + v] = acc[v];
  __syncthreads();
  if (ty == 0) {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      float r = s[0][tx * V + v];
#pragma unroll
      for (int y = 1; y < kColRows; ++y) r = Op::combine(r, s[y][tx * V + v]);
      acc[v] = r;
    }
  }
}

template <typename Tin, typename Tout, typename Op, int V>
__global__ void __launch_bounds__(32 * kColRows, 4)
reduce_cols(const Tin* __restrict__ in, Tout* __restrict__ out, float* __restrict__ partials,
            unsigned* __restrict__ counters, i64 R, i64 inner, i64 col_blocks, i64 rsplit, i64 rps, float scale) {
  __shared__ float s[kColRows][32 * V];
  __shared__ bool last;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 cb = blockIdx.x % col_blocks, rest = blockIdx.x / col_blocks;
  const i64 split = rest % rsplit, o = rest / rsplit;
  const i64 c0 = (cb * 32 + tx) * V;
  const i64 r0 = split * rps, r1 = min(R, r0 + rps);
  float acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = Op::identity();
  const Tin* base = in + o * R * inner + c0;
  // loads in flight a thread: four 16-byte vectors, or eight elements where the columns take no vectors
#pragma unroll (V > 1 ? 4 : 8)
  for (i64 r = r0 + ty; r < r1; r += kColRows) {
    if constexpr (V > 1) {
      if (c0 < inner) {
        const Vec<Tin, V> x = load_vec(reinterpret_cast<const Vec<Tin, V>*>(base + r * inner));
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = Op::combine(acc[v], to_float(x.v[v]));
      }
    } else {
      if (c0 < inner) acc[0] = Op::combine(acc[0], to_float(base[r * inner]));
    }
  }
  combine_rows<Op, V>(s, acc, tx, ty);
  if (rsplit > 1) {
    if (ty == 0) {
      float* dst = partials + (o * rsplit + split) * inner;
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (c0 + v < inner) dst[c0 + v] = acc[v];
      __threadfence();  // this warp's partials are visible device-wide before the ticket says so
    }
    __syncthreads();
    if (tx == 0 && ty == 0)
      last = atomicInc(counters + o * col_blocks + cb, (unsigned)(rsplit - 1)) == (unsigned)(rsplit - 1);
    __syncthreads();
    if (!last) return;
    __threadfence();  // and the last block sees every other block's partials
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = Op::identity();
    const float* src = partials + o * rsplit * inner + c0;
    for (i64 k = ty; k < rsplit; k += kColRows) {
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (c0 + v < inner) acc[v] = Op::combine(acc[v], __ldcg(src + k * inner + v));
    }
    __syncthreads();  // s is reused
    combine_rows<Op, V>(s, acc, tx, ty);
  }
  if (ty == 0) {
    Tout* dst = out + o * inner;
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (c0 + v < inner) dst[c0 + v] = from_float<Tout>(acc[v] * scale);
  }
}

}  // namespace kk
