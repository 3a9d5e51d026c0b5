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
// plus the default rung's other shapes: reduce_warp_rows (a warp per short row) and reduce_cols (with
// reduce_cols_fold, its second pass where narrow rows are read in groups).
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

// A 16-byte vector's values as floats. A bf16 is the upper half of its fp32, so a word of two becomes
// two floats by one shift and one AND; the library conversion first extracts each half into a register
// of its own (a PRMT and a multiply per value, and the registers to hold them: 56 against 40 for fp16
// in reduce_fast<512, 4>, which cost bf16 a quarter of its occupancy).
template <typename T, int N>
struct AsFloats {
  __device__ __forceinline__ static void get(const Vec<T, N>& v, float (&f)[N]) { vec_to_floats(v, f); }
};
template <int N>
struct AsFloats<__nv_bfloat16, N> {
  __device__ __forceinline__ static void get(const Vec<__nv_bfloat16, N>& v, float (&f)[N]) {
    unsigned w[N / 2];
    memcpy(w, &v, sizeof(w));
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
};
template <typename T, int N>
__device__ __forceinline__ void as_floats(const Vec<T, N>& v, float (&f)[N]) {
  AsFloats<T, N>::get(v, f);
}

// The reduction of the elements of `row` that thread t of `stride` threads owns: a scalar head up to
// the first 16-byte boundary, 16-byte vectors (kUnroll loads issued before any math, one accumulator
// each), a scalar tail. The order depends only on (len, alignment, t, stride): deterministic.
// 16-bit rows take one round of kUnroll loads at a time: the kernels that hold them to 32 registers
// (full occupancy) spill once the compiler unrolls rounds on its own.
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
  if constexpr (sizeof(T) == 2) {
#pragma unroll 1
    for (i64 i = t; i < nvec; i += stride * kUnroll) {
      V v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * stride < nvec) v[u] = load_vec(body + i + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * stride < nvec) {
          float f[N];
          as_floats(v[u], f);
#pragma unroll
          for (int e = 0; e < N; ++e) acc[u] = Op::combine(acc[u], f[e]);
        }
    }
  } else {
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
  }
  const i64 done = head + nvec * N;
  if (t < len - done) acc[0] = Op::combine(acc[0], to_float(row[done + t]));
#pragma unroll
  for (int u = 1; u < kUnroll; ++u) acc[0] = Op::combine(acc[0], acc[u]);
  return acc[0];
}

// Full occupancy (2048 threads an SM) for 16-bit inputs: their loads carry half as many elements, so
// only a full SM keeps the bytes in flight that fp32 keeps at the compiler's own register count.
template <typename T, int kBlock>
__host__ __device__ constexpr int min_blocks() { return sizeof(T) == 2 ? 2048 / kBlock : 0; }

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
__global__ void __launch_bounds__(kBlock, min_blocks<T, kBlock>())
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
__global__ void __launch_bounds__(kBlock, min_blocks<T, kBlock>())
reduce_warp_rows(const T* __restrict__ in, Tout* __restrict__ out, i64 rows, i64 len, float scale) {
  const i64 row = (i64)blockIdx.x * (kBlock / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave: the shuffles below stay full-warp
  const int lane = threadIdx.x & 31;
  float v = accumulate_row<T, Op, 2>(in + row * len, len, lane, 32);
  v = warp_allreduce<Op>(v);
  if (lane == 0) out[row] = from_float<Tout>(v * scale);
}

// Reduction over R of an (outer, R, inner) volume, inner > 1, in one launch. threadIdx.y walks every
// 8th row, threadIdx.x one 16-byte vector of V columns a row, so a warp reads 32 contiguous vectors of a
// row. Block (cb, split, o) reduces rows [split * rps, (split + 1) * rps) of column block cb. With
// rsplit == 1 it writes the result; with rsplit > 1 it writes fp32 partials (outer, rsplit, inner) and
// takes a ticket of its column block, and the last of the rsplit blocks to finish reduces their
// partials in split order (one launch, the same bits every time; atomicInc wraps the counter back to 0).
// counters == nullptr: the two-pass form, the partials are left for reduce_cols_fold.
// kWindow = false: every row starts on a 16-byte boundary (inner % V == 0, aligned input), a block
// takes 32V columns. kWindow = true, any inner and alignment: rows 8 apart start at the same place
// within 16 bytes (8 * inner * sizeof(Tin) is a multiple of 16), so each thread reads the same aligned
// chunk position in all its rows: lane tx takes the chunk tx of the aligned window that starts p
// columns before the block's first column (p: its rows' phase). 32 such chunks cover the block's 31V
// columns at every phase; the elements outside them (lane 0's first p, lane 31's last V - p) are
// summed but never written. The rows' sums meet in shared memory by column, where each thread's slot e
// is column tx * V + e - p.
constexpr int kColRows = 8;
template <typename Tin>
__host__ __device__ constexpr int kColMinBlocks() { return 5; }
// The block's meeting place: the rows' sums, column i of the block at v[row][V + i], and the ticket's
// answer (declared beside them: a __shared__ of its own inside col_finish cost sm_80 a spill).
template <int V>
struct ColSlots {
  float v[kColRows][33 * V];
  bool last;
};

// acc[v] <- the 8 rows of slots of column threadIdx.x * V + v, combined in row order.
template <typename Op, int V>
__device__ __forceinline__ void col_slot_sums(const ColSlots<V>& s, float (&acc)[V]) {
  const int tx = threadIdx.x;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    float r = s.v[0][V + tx * V + v];
#pragma unroll
    for (int y = 1; y < kColRows; ++y) r = Op::combine(r, s.v[y][V + tx * V + v]);
    acc[v] = r;
  }
}

// The main pass of a column block: this thread's rows of split `split` (rps rows a split), then the
// block's 8 rows of threads meet by column. On return the threads of row 0 (ty == 0) hold the sums
// of the block's columns tx * V + v in acc; every thread has passed a barrier after the meeting.
template <typename Tin, typename Op, int V, bool kWindow>
__device__ __forceinline__ void col_block_sums(const Tin* __restrict__ in, i64 R, i64 inner, i64 c0, unsigned o,
                                               unsigned split, i64 rps, ColSlots<V>& s, float (&acc)[V]) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 r0 = (i64)split * rps + ty;  // this thread's first row
  const int rows = r0 < R ? (int)((min(R, (i64)(split + 1) * rps) - r0 + kColRows - 1) / kColRows) : 0;
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = Op::identity();
  const Tin* first = in + ((i64)o * R + r0) * inner + c0;  // the thread's first row, at the block's column 0
  const int p = kWindow ? (int)((reinterpret_cast<unsigned long long>(first) & 15) / sizeof(Tin)) : 0;
  if (c0 - p + tx * V < inner) {  // the thread's chunk holds a column of the row (else it lies past the row)
    const Vec<Tin, V>* x = reinterpret_cast<const Vec<Tin, V>*>(first - p) + tx;
    const i64 step = kColRows * inner / V;  // chunks between a thread's rows
#pragma unroll 4
    for (int k = 0; k < rows; ++k, x += step) {
      float f[V];
      as_floats(load_vec(x), f);
#pragma unroll
      for (int v = 0; v < V; ++v) acc[v] = Op::combine(acc[v], f[v]);
    }
  }
  // the rows' sums by column, then row 0 of the block combines the 8 in row order
#pragma unroll
  for (int v = 0; v < V; ++v) s.v[ty][V + tx * V + v - p] = acc[v];
  __syncthreads();
  if (ty == 0) col_slot_sums<Op, V>(s, acc);  // columns tx * V + v of the block
}

// The end of a column block whose sums are in row 0's acc (col_block_sums): with rsplit == 1 the
// result; else the fp32 partial of split `split` of rsplit and the ticket of the column block, the
// last block to finish reducing the rsplit partials in split order (counters == nullptr: partials
// only, for reduce_cols_fold). Every thread of the block calls it.
template <typename Tout, typename Op, int V, bool kWindow>
__device__ __forceinline__ void col_finish(float (&acc)[V], ColSlots<V>& s, Tout* __restrict__ out,
                                           float* __restrict__ partials, unsigned* __restrict__ counters,
                                           i64 inner, i64 c0, unsigned o, unsigned cb, i64 col_blocks, i64 rsplit,
                                           unsigned split, float scale) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  // how many of columns tx * V + v are the block's and the tensor's (lane 31 of a window block: none)
  const int nv = !kWindow || tx < 31 ? (int)max((i64)0, min((i64)V, inner - (c0 + tx * V))) : 0;
  if (rsplit > 1) {
    if (ty == 0) {
      float* dst = partials + ((i64)o * rsplit + split) * inner + c0 + tx * V;
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (v < nv) dst[v] = acc[v];
      __threadfence();  // this warp's partials are visible device-wide before the ticket says so
    }
    if (counters == nullptr) return;  // the two-pass form: reduce_cols_fold reduces the partials
    __syncthreads();
    if (tx == 0 && ty == 0)
      s.last = atomicInc(counters + (i64)o * col_blocks + cb, (unsigned)(rsplit - 1)) == (unsigned)(rsplit - 1);
    __syncthreads();
    if (!s.last) return;
    __threadfence();  // and the last block sees every other block's partials
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = Op::identity();
    const float* src = partials + ((i64)o * rsplit + ty) * inner + c0 + tx * V;
#pragma unroll 1
    for (i64 k = ty; k < rsplit; k += kColRows, src += kColRows * inner) {  // V loads in flight a round
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (v < nv) acc[v] = Op::combine(acc[v], __ldcg(src + v));
    }
#pragma unroll
    for (int v = 0; v < V; ++v) s.v[ty][V + tx * V + v] = acc[v];
    __syncthreads();
    if (ty == 0) col_slot_sums<Op, V>(s, acc);
  }
  if (ty == 0) {
    Tout* dst = out + (i64)o * inner;
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (v < nv) dst[c0 + tx * V + v] = from_float<Tout>(acc[v] * scale);
  }
}

// Block b of a column launch as (column block, split, outer index): 32-bit divides (a grid has fewer than
// 2^31 blocks).
struct ColBlock {
  unsigned cb, split, o;
  __device__ __forceinline__ ColBlock(unsigned b, i64 col_blocks, i64 splits) {
    const unsigned ncb = (unsigned)col_blocks, nsp = (unsigned)splits, rest = b / ncb;
    cb = b - rest * ncb;
    o = rest / nsp;
    split = rest - o * nsp;
  }
};

template <typename Tin, typename Tout, typename Op, int V, bool kWindow>
__global__ void __launch_bounds__(32 * kColRows, kColMinBlocks<Tin>())
reduce_cols(const Tin* __restrict__ in, Tout* __restrict__ out, float* __restrict__ partials,
            unsigned* __restrict__ counters, i64 R, i64 inner, i64 col_blocks, i64 rsplit, i64 rps, float scale) {
  constexpr int W = kWindow ? 31 * V : 32 * V;  // columns a block
  __shared__ ColSlots<V> s;
  const ColBlock b(blockIdx.x, col_blocks, rsplit);
  float acc[V];
  col_block_sums<Tin, Op, V, kWindow>(in, R, inner, (i64)b.cb * W, b.o, b.split, rps, s, acc);
  col_finish<Tout, Op, V, kWindow>(acc, s, out, partials, counters, inner, (i64)b.cb * W, b.o, b.cb, col_blocks,
                                   rsplit, b.split, scale);
}

// reduce_cols with the C splits of a column block met in a thread-block cluster of C CTAs (sm_90; C the
// launch's cluster size): cluster (cb, o) takes splits 0..C-1 of column block cb, split = rank. Each
// CTA's column sums go by st.async into the shared memory of rank 0, which waits on an mbarrier for them,
// combines them in rank order and writes the result. The meeting costs a shared-memory round trip inside
// the GPC, where reduce_cols' ticket costs a fence, an atomic and the partials' L2 round trips after the
// main pass (H200, 64 x 197 x 768 bf16 over dim 1, 3 splits of 66 rows: 10.3 us against 12.6;
// docs/design/reductions.md).
constexpr int kColClusterMax = 8;
template <typename Tin, typename Tout, typename Op, int V, bool kWindow>
__global__ void __launch_bounds__(32 * kColRows, kColMinBlocks<Tin>())
reduce_cols_cluster(const Tin* __restrict__ in, Tout* __restrict__ out, i64 R, i64 inner, i64 col_blocks, i64 rps,
                    float scale) {
#if KK_SM90
  constexpr int W = kWindow ? 31 * V : 32 * V;  // columns a block
  __shared__ ColSlots<V> s;
  __shared__ alignas(16) float inbox[kColClusterMax][32 * V];  // rank 0: rank r's sums of column i at [r][i]
  __shared__ unsigned long long arrived;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (cluster_rank() == 0 && tx == 0 && ty == 0) {
    mbar_init(&arrived);
    mbar_init_fence();
  }
  cluster_arrive_relaxed();  // rank 0's barrier exists before any peer pushes (the wait below)
  float acc[V];
  {
    const ColBlock b(blockIdx.x / cluster_size(), col_blocks, 1);
    col_block_sums<Tin, Op, V, kWindow>(in, R, inner, (i64)b.cb * W, b.o, cluster_rank(), rps, s, acc);
  }
  cluster_wait();
  // the cluster's shape is read again here rather than held across the main loop (held, it spilled)
  const unsigned C = cluster_size(), rank = cluster_rank();
  if (rank != 0) {
    if (ty == 0) {
      const float2* mine = reinterpret_cast<const float2*>(&inbox[rank][tx * V]);
#pragma unroll
      for (int v = 0; v < V; v += 2) st_async_peer(mine + v / 2, make_float2(acc[v], acc[v + 1]), &arrived, 0);
    }
    return;  // the pushed values travel from registers: this CTA's shared memory is no longer read
  }
  if (ty == 0) {
    if (tx == 0) mbar_expect_bytes(&arrived, (C - 1) * 32 * V * sizeof(float));
    mbar_wait(&arrived, 0);
#pragma unroll 1
    for (unsigned r = 1; r < C; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) acc[v] = Op::combine(acc[v], inbox[r][tx * V + v]);
    }
  }
  const ColBlock b(blockIdx.x / C, col_blocks, 1);
  col_finish<Tout, Op, V, kWindow>(acc, s, out, nullptr, nullptr, inner, (i64)b.cb * W, b.o, b.cb, col_blocks, 1, 0,
                                   scale);
#else
  __trap();
#endif
}

// The second pass of a column reduction read as grouped rows. Where inner * sizeof(Tin) is no multiple
// of 16, g consecutive rows (g * inner * sizeof(Tin) a multiple of 16) are read by reduce_cols as one row
// of g * inner columns, so that full warps read whole vectors however narrow inner is; its fp32 partials
// (P = splits x g rows of inner, per outer index) hold g partial columns of each column. This reduces
// them in row order, then the rem rows past the last whole group (tail, read from the input), times
// scale: out[o, c] = reduce(partials[o, :, c], tail[o, :rem, c]) * scale. A block takes 32 columns of
// one outer index; each of its kFoldRows warps walks every kFoldRows-th partial row (the loads do not
// wait for the running value: several in flight), and the warps' values meet in shared memory in order.
constexpr int kFoldRows = 32;
template <typename Tin, typename Tout, typename Op>
__global__ void __launch_bounds__(32 * kFoldRows)
reduce_cols_fold(const float* __restrict__ partials, const Tin* __restrict__ tail, Tout* __restrict__ out,
                 i64 P, i64 inner, i64 slab, int rem, float scale) {
  __shared__ float s[kFoldRows][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 o = blockIdx.y, c = (i64)blockIdx.x * 32 + tx;
  float acc = Op::identity();
  if (c < inner) {
    const float* src = partials + (o * P + ty) * inner + c;
#pragma unroll 8
    for (i64 k = ty; k < P; k += kFoldRows, src += kFoldRows * inner) acc = Op::combine(acc, __ldcg(src));
    if (ty < rem) acc = Op::combine(acc, to_float(tail[o * slab + ty * inner + c]));
  }
  s[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && c < inner) {
    float r = s[0][tx];
#pragma unroll
    for (int y = 1; y < kFoldRows; ++y) r = Op::combine(r, s[y][tx]);
    out[o * inner + c] = from_float<Tout>(r * scale);
  }
}

}  // namespace kk
