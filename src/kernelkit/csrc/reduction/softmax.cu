// Softmax over the last dim of a contiguous (rows, len) tensor, fp32 statistics.
//
// The ladder:
//   softmax_three_pass  one block per row: read for the max, read for the sum of exp(x - max), read
//                       again to write exp(x - max) / sum (three reads, one write)
//   softmax_online      one read keeps a running (max, sum) per thread, the sum rescaled when the max
//                       grows; the pairs merge across the block; a second read writes (two reads)
//   softmax_rows        the row held in registers (RowTile): one read, one write. A row belongs to
//                       kGroup lanes of a warp (short rows), to one CTA, or to a cluster of kCluster
//                       CTAs (sm_90) that exchange their (max, sum) through distributed shared memory.
//   softmax_handout     softmax_rows' cluster rows as persistent clusters taking rows handed out at run
//                       time (RowHandout), optionally asking L2 for the next row's slice ahead of its loads
//   softmax_packed      short rows (rows_packed.cuh): a CTA moves a block of whole rows through shared
//                       memory as 16-byte vectors of one contiguous stream, kG lanes reducing each row.
//
// Special values follow torch's formula exp(x - max) / sum: a row with +inf or NaN is NaN everywhere,
// a row of -inf is NaN, -inf elements of any other row give 0.
#include "reduce.cuh"
#include "rows_packed.cuh"

namespace kk {

constexpr float kLog2e = 1.4426950408889634f;
// exp(d) for d = x - max <= 0: one MUFU.EX2 of d * log2(e). d is formed first so that the relative
// error stays ~|d| * 2^-24 (x * log2e - max * log2e would lose it at large |x|). ftz: results below
// 2^-126 flush to 0, under every tolerance and below any 16-bit result.
__device__ __forceinline__ float exp_shifted(float d) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d * kLog2e));
  return r;
}

template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
softmax_three_pass(const T* __restrict__ in, T* __restrict__ out, i64 len) {
  __shared__ float smem[32];
  const T* x = in + (i64)blockIdx.x * len;
  T* y = out + (i64)blockIdx.x * len;
  float m = neg_inf();
  for (i64 i = threadIdx.x; i < len; i += kBlock) m = max_nan(m, to_float(x[i]));
  m = block_allreduce<MaxOp, kBlock>(m, smem);
  float s = 0.0f;
  for (i64 i = threadIdx.x; i < len; i += kBlock) s += exp_shifted(to_float(x[i]) - m);
  s = block_allreduce<SumOp, kBlock>(s, smem);
  const float inv = 1.0f / s;
  for (i64 i = threadIdx.x; i < len; i += kBlock) y[i] = from_float<T>(exp_shifted(to_float(x[i]) - m) * inv);
}

// A running softmax state: max m and sum s of exp(x - m) over the elements seen. -inf elements add
// nothing (exp(-inf) = 0), which also keeps the m = -inf start from producing exp(-inf + inf) = NaN.
struct MaxSum {
  float m, s;
  __device__ __forceinline__ void add(float x) {
    if (x <= m) {
      s += x == neg_inf() ? 0.0f : exp_shifted(x - m);
    } else if (m == m) {  // the max grows (or x is NaN): rescale the sum. exp(x - x) rather than 1
                          // keeps +inf -> NaN; a NaN x makes m and s NaN for good (the row is NaN)
      s = s * exp_shifted(m - x) + exp_shifted(x - x);
      m = x;
    }
  }
  __device__ __forceinline__ static MaxSum merge(MaxSum a, MaxSum b) {
    const float m = max_nan(a.m, b.m);
    const float sa = a.m == neg_inf() ? 0.0f : a.s * exp_shifted(a.m - m);
    const float sb = b.m == neg_inf() ? 0.0f : b.s * exp_shifted(b.m - m);
    return {m, sa + sb};
  }
  // for warp_allmerge / block_allmerge (reduce.cuh)
  static constexpr int kFloats = 2;
  __device__ __forceinline__ MaxSum shfl_xor(int o) const {
    return {__shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o)};
  }
  __device__ __forceinline__ void store(float* smem, int i) const {
    smem[i] = m;
    smem[32 + i] = s;
  }
  __device__ __forceinline__ static MaxSum load(const float* smem, int i) { return {smem[i], smem[32 + i]}; }
  __device__ __forceinline__ static MaxSum empty() { return {neg_inf(), 0.0f}; }
};

// A row's (max, sum) from its cluster slices' (kCluster == 1: the slice's own). Each CTA reads only
// its own shared memory (peers pushed into it): no barrier before exit. kLanes: each aligned group of
// kCluster lanes reads one slot a lane and merges them by shuffles (every thread gets the same bits, in
// butterfly order rather than rank order), where every thread reading every slot held 2 x kCluster
// values at once (the persistent kernels spilled 88-160 bytes at their 64-register budget).
template <bool kLanes = false, int kCluster>
__device__ __forceinline__ MaxSum cluster_maxsum(MaxSum v, ClusterShare<kCluster>& share) {
  if constexpr (kCluster > 1 && kLanes) {
    const float2 mine = share.share(make_float2(v.m, v.s))[threadIdx.x & (kCluster - 1)];
    const float M = warp_allreduce<MaxOp, kCluster>(mine.x);
    v = {M, warp_allreduce<SumOp, kCluster>(mine.x == neg_inf() ? 0.0f : mine.y * exp_shifted(mine.x - M))};
  } else if constexpr (kCluster > 1) {
    const float2* all = share.share(make_float2(v.m, v.s));
    float M = neg_inf(), S = 0.0f;
#pragma unroll
    for (int r = 0; r < kCluster; ++r) M = max_nan(M, all[r].x);
#pragma unroll
    for (int r = 0; r < kCluster; ++r) {  // fixed rank order: the same bits on every CTA and run
      const float mr = all[r].x;
      S += mr == neg_inf() ? 0.0f : all[r].y * exp_shifted(mr - M);
    }
    v = {M, S};
  }
  return v;
}

template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
softmax_online(const T* __restrict__ in, T* __restrict__ out, i64 len) {
  __shared__ float smem[64];
  const T* x = in + (i64)blockIdx.x * len;
  T* y = out + (i64)blockIdx.x * len;
  MaxSum st{neg_inf(), 0.0f};
  for (i64 i = threadIdx.x; i < len; i += kBlock) st.add(to_float(x[i]));
  st = block_allmerge<kBlock>(st, smem);
  const float inv = 1.0f / st.s;
  for (i64 i = threadIdx.x; i < len; i += kBlock) y[i] = from_float<T>(exp_shifted(to_float(x[i]) - st.m) * inv);
}

// The softmax of a row slice that a group of kGroup threads holds in t (kCluster slices a row): the group's
// (max, sum of exp(x - max)), merged over the cluster, then every value replaced by its output.
// between() runs once the row's statistics are known and before the output is computed (the handed-out
// rows take their next row's number there).
template <int kGroup, int kCluster, bool kLanes = false, typename T, int kVecs, typename Between>
__device__ __forceinline__ void softmax_slice(RowTile<T, kGroup, kVecs>& t, float* smem, ClusterShare<kCluster>& share,
                                              Between&& between) {
  constexpr int N = RowTile<T, kGroup, kVecs>::N;
  float m = neg_inf();
#pragma unroll
  for (int k = 0; k < kVecs; ++k)
#pragma unroll
    for (int j = 0; j < N; ++j) m = max_nan(m, to_float(t.v[k].v[j]));
  m = group_allreduce<MaxOp, kGroup>(m, smem);
  float s = 0.0f;
  // The exponentials stay in fp32 registers (x is dead once they exist, so they reuse its registers),
  // up to 32 per thread; a 16-bit thread holding 64 values recomputes them at the store instead
  // (one more MUFU.EX2 per element, ~60% of its rate at 3 TB/s) to stay under 64 registers.
  constexpr bool kKeep = kVecs * N <= 32;
  float e[kKeep ? kVecs : 1][N];
#pragma unroll
  for (int k = 0; k < kVecs; ++k)
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const float ex = exp_shifted(to_float(t.v[k].v[j]) - m);
      if constexpr (kKeep) e[k][j] = ex;
      s += ex;
    }
  s = group_allreduce<SumOp, kGroup>(s, smem);

  float scale = 1.0f / s;
  bool dead = false;  // a cluster slice with nothing above -inf while the row has more
  if constexpr (kCluster > 1) {
    const MaxSum row = cluster_maxsum<kLanes>(MaxSum{m, s}, share);
    dead = m == neg_inf();
    scale = dead ? 0.0f / row.s : exp_shifted(m - row.m) / row.s;
  }
  between();
#pragma unroll
  for (int k = 0; k < kVecs; ++k)
#pragma unroll
    for (int j = 0; j < N; ++j) {
      float ex;
      if constexpr (kKeep) {
        ex = e[k][j];
      } else {
        ex = exp_shifted(to_float(t.v[k].v[j]) - m);
      }
      t.v[k].v[j] = from_float<T>(dead ? scale : ex * scale);
    }
}

// The __launch_bounds__ minimum of blocks an SM: threads keeping their exponentials (up to 32 values)
// take row_min_blocks, where ptxas settles at 48-56 registers; threads of more values (16-bit rows of
// 64) recompute them, and without a budget ptxas took 80 (fp16) to 128 (bf16) registers at 416 threads,
// one CTA an SM: they get the budget of the words they hold (row_budget_blocks).
template <typename T, typename C>
__host__ __device__ constexpr int softmax_min_blocks() {
  return C::kVecs * (16 / (int)sizeof(T)) <= 32 ? row_min_blocks(C::kGroup)
                                                 : row_budget_blocks(C::kBlock, 4 * C::kVecs, sizeof(T) == 2 ? 8 : 0);
}

// Rows short enough to hold, configured by a RowConfig (reduce.cuh): kGroup threads x kVecs 16-byte
// vectors per row slice, kCluster slices; kForm: how the row moves (RowTile's forms: aligned vectors, or
// the vectors of the aligned window covering a row at any alignment).
template <typename T, typename C>
__global__ void __launch_bounds__(C::kBlock, (softmax_min_blocks<T, C>()))
softmax_rows(const T* __restrict__ in, T* __restrict__ out, i64 rows, i64 len) {
  constexpr int kGroup = C::kGroup, kVecs = C::kVecs, kCluster = C::kCluster, kForm = C::kForm, kBlock = C::kBlock;
  static_assert(C::kRows == kRowsEach, "softmax rows: a group (or cluster) a row");
  using Tile = RowTile<T, kGroup, kVecs>;
  constexpr int N = Tile::N;
  constexpr i64 kSlice = (i64)kGroup * kVecs * N;
  __shared__ float smem[32];
  __shared__ float2 slots[2][kCluster];
  __shared__ unsigned long long pushed[2];
  const RowPlace<kGroup, kBlock, kCluster> p;
  ClusterShare<kCluster> share{slots, pushed, p.rank};
  if constexpr (kCluster > 1) share.init();
  // rows past the end still run (as empty slices): lanes of a warp must not leave before its shuffles
  const i64 row = p.row < rows ? p.row : 0;
  const int a = row_phase<kForm>(in + row * len);  // the row's start past a 16-byte boundary
  // this thread's first element (from the row's start) and its valid ones: [head, rem) of its own
  const i64 first = (i64)p.rank * kSlice + p.lane * N - a;
  const i64 base = row * len + first;
  const int rem = (p.row < rows ? (int)max((i64)0, min(kSlice, a + len - (i64)p.rank * kSlice)) : 0) - p.lane * N;
  const int head = (int)max((i64)-kSlice, (i64)a - (i64)p.rank * kSlice) - p.lane * N;
  Tile t;
  t.template load<kForm>(in + base, rem, from_float<T>(neg_inf()), head);
  softmax_slice<kGroup, kCluster>(t, smem, share, [] {});
  t.template store<kForm>(out + base, rem, head);
}

// Ask L2 for `bytes` (a multiple of 16) from p (16-byte aligned) without waiting for them (sm_90).
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if KK_SM90
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// softmax_rows' rows as persistent clusters taking their rows handed out at run time (RowHandout in
// reduce.cuh): the grid holds only resident clusters, each doing its first row by position and every
// later one by the counter. Why: a long 16-bit row slice is half the bytes of an fp32 one at the same
// registers, so each CTA's start, its cluster barrier and a row's exchange weigh twice as much against
// its loads; here a CTA starts and meets its cluster once, and takes rows as fast as its SM frees up.
// Its loop state and the handout's exchange left ptxas at 80 registers a thread for 16-bit 416 x 4
// tiles (one CTA an SM) without a budget: it gets that of the values a thread holds (row_budget_blocks).
// kPrefetch: once the next row's number is known (after this row's statistics), thread 0 asks L2 for
// its CTA's slice of that row, so DRAM reads it while this row's output is computed and stored.
template <typename T, typename C>
__host__ __device__ constexpr int softmax_handout_min_blocks() {
  // the values a thread holds: its exponentials as floats (up to 32), else its 16-byte words
  constexpr int kValues = C::kVecs * (16 / (int)sizeof(T));
  return row_budget_blocks(C::kBlock, kValues <= 32 ? kValues : 4 * C::kVecs);
}

template <typename T, typename C, int kPrefetch>
__global__ void __launch_bounds__(C::kBlock, (softmax_handout_min_blocks<T, C>()))
softmax_handout(const T* __restrict__ in, T* __restrict__ out, i64 rows, i64 len, unsigned* __restrict__ counters) {
  constexpr int kGroup = C::kGroup, kVecs = C::kVecs, kCluster = C::kCluster, kForm = C::kForm;
  static_assert(C::kRows == kRowsHandout && kCluster > 1 && kGroup > 32, "handed-out rows: clusters of CTA slices");
  using Tile = RowTile<T, kGroup, kVecs>;
  constexpr int N = Tile::N;
  constexpr i64 kSlice = (i64)kGroup * kVecs * N;
  __shared__ float smem[32];
  __shared__ float2 slots[2][kCluster], handout_slots[2][kCluster];
  __shared__ unsigned long long pushed[2], handout_bars[2];
  const unsigned rank = blockIdx.x % kCluster;  // 1-D clusters are runs of kCluster consecutive blocks
  ClusterShare<kCluster> share{slots, pushed, rank};
  RowHandout<kCluster> handout{counters, ClusterShare<kCluster>{handout_slots, handout_bars, rank}};
  handout.share.joined = true;  // the statistics' ClusterShare arrives and waits for both
  if (threadIdx.x == 0) handout.init_barriers();  // announced by share.init()'s fence
  share.init();
  const i64 stride = gridDim.x / kCluster;
  const int lane = threadIdx.x;
  Tile t;
  for (i64 row = blockIdx.x / kCluster; row < rows;) {  // the same rows in every CTA of the cluster
    const int a = row_phase<kForm>(in + row * len);
    const i64 first = (i64)rank * kSlice + lane * N - a;
    const int rem = (int)max((i64)0, min(kSlice, a + len - (i64)rank * kSlice)) - lane * N;
    const int head = (int)max((i64)-kSlice, (i64)a - (i64)rank * kSlice) - lane * N;
    t.template load<kForm>(in + row * len + first, rem, from_float<T>(neg_inf()), head);
    handout.take(rows);
    i64 next = rows;
    softmax_slice<kGroup, kCluster, true>(t, smem, share, [&] {
      next = handout.next(stride);
      if constexpr (kPrefetch) {
        if (threadIdx.x == 0 && next < rows) {
          // the next row's window from this slice's first element: whole 16-byte chunks of that row
          const T* const w = in + next * len;
          const int na = row_phase<kForm>(w);
          const i64 n = min(kSlice, na + len - (i64)rank * kSlice);
          if (n > 0) prefetch_l2(w - na + (i64)rank * kSlice, (unsigned)((n * (i64)sizeof(T) + 15) & ~(i64)15));
        }
      }
    });
    t.template store<kForm>(out + row * len + first, rem, head);
    row = next;
  }
}

// Short rows, a block of them at a time through shared memory (rows_packed.cuh); per_block: rows a block
// (PackedRows::rows_per_block of the row length).
template <typename T, typename C>
__global__ void __launch_bounds__(C::kBlock, C::kMinBlocks)
softmax_packed(const T* __restrict__ in, T* __restrict__ out, i64 rows, i64 len, i64 per_block) {
  constexpr int kG = C::kG, kE = C::kE;
  __shared__ __align__(16) T buf[PackedRows<T, C>::kElems];
  const PackedRows<T, C> pr{buf};
  const int g = (int)threadIdx.x % kG;
  packed_blocks<T, C>(in, out, rows, len, per_block, pr, [&](int nr, int a) {
    // every thread runs every pass (the shuffles span whole warps); row i of the block from element a + i len
    for (int i0 = 0; i0 < nr; i0 += C::kBlock / kG) {
      const int i = i0 + (int)threadIdx.x / kG;
      T* const row = buf + a + (i < nr ? i : 0) * (int)len;
      float x[kE];
      float m = neg_inf();
#pragma unroll
      for (int e = 0; e < kE; ++e) {
        const int j = g + e * kG;
        x[e] = i < nr && j < len ? to_float(row[j]) : neg_inf();
        m = max_nan(m, x[e]);
      }
      m = warp_allreduce<MaxOp, kG>(m);
      float s = 0.0f;
#pragma unroll
      for (int e = 0; e < kE; ++e) {
        // torch's exp(x - max): a row holding +inf or NaN, or of -inf only, comes out NaN
        x[e] = g + e * kG < len ? exp_shifted(x[e] - m) : 0.0f;
        s += x[e];
      }
      const float inv = 1.0f / warp_allreduce<SumOp, kG>(s);
      if (i < nr) {
#pragma unroll
        for (int e = 0; e < kE; ++e)
          if (g + e * kG < len) row[g + e * kG] = from_float<T>(x[e] * inv);
      }
    }
  });
}

}  // namespace kk
