// Shared reduction machinery of the reduction family (reduce.cu, softmax.cu, norm.cu):
//   * combine functors (sum, NaN-propagating max/min) in fp32,
//   * warp / block all-reductions built from butterfly shuffles: every lane ends with the same bits,
//     and the combination order is fixed by the block shape alone (determinism),
//   * thread-block-cluster primitives (sm_90) for rows split over several CTAs,
//   * row tiles: a thread's slice of a row held in registers as 16-byte vectors (row_tile.cuh).
#pragma once
#include "mbarrier.cuh"
#include "row_tile.cuh"

namespace kk {

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float pos_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float qnan() { return __int_as_float(0x7fffffff); }

// max/min that return NaN when either input is NaN, as torch.amax/amin do (fmaxf would drop it).
// One instruction on sm_80+ (FMNMX.NAN).
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

struct SumOp {
  __device__ __forceinline__ static float identity() { return 0.0f; }
  __device__ __forceinline__ static float combine(float a, float b) { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ static float identity() { return neg_inf(); }
  __device__ __forceinline__ static float combine(float a, float b) { return max_nan(a, b); }
};
struct MinOp {
  __device__ __forceinline__ static float identity() { return pos_inf(); }
  __device__ __forceinline__ static float combine(float a, float b) { return min_nan(a, b); }
};

// Butterfly over the W lanes of an aligned group (W a power of two <= 32): every lane gets the result.
template <typename Op, int W = 32>
__device__ __forceinline__ float warp_allreduce(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The smallest power of two >= w (w <= 32): the lanes a reduction over w warps' partials spans.
__host__ __device__ constexpr int warp_span(int w) { return w <= 1 ? 1 : 2 * warp_span((w + 1) / 2); }

// All threads of a block of kThreads (a multiple of 32) get the reduction of their values.
// `smem` holds kThreads / 32 floats; it is free again when the function returns.
template <typename Op, int kThreads>
__device__ __forceinline__ float block_allreduce(float v, float* smem) {
  constexpr int kWarps = kThreads / 32;
  v = warp_allreduce<Op>(v);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    // every warp reduces the kWarps partials itself (no second barrier to broadcast a result); each
    // aligned group of kSpan lanes (kWarps rounded up to a power of two, the missing warps read as the
    // identity) holds a full copy, so every lane, not only the first kWarps, ends with the result
    constexpr int kSpan = warp_span(kWarps);
    const int i = lane & (kSpan - 1);
    float r = kSpan == kWarps || i < kWarps ? smem[i] : Op::identity();
    r = warp_allreduce<Op, kSpan>(r);
    __syncthreads();
    return r;
  }
}

// Reduction over a group of kGroup threads that share one row: a warp slice (kGroup <= 32, shuffles
// only) or the whole block (kGroup == blockDim.x > 32).
template <typename Op, int kGroup>
__device__ __forceinline__ float group_allreduce(float v, float* smem) {
  if constexpr (kGroup <= 32) {
    return warp_allreduce<Op, kGroup>(v);
  } else {
    return block_allreduce<Op, kGroup>(v, smem);
  }
}

// The same all-reductions for a state of several floats merged by S::merge (a Welford triple, a
// softmax (max, sum) pair): S::kFloats floats, S::shfl_xor(o) the state of lane ^ o, S::store(smem, i)
// / S::load(smem, i) its slot i of a structure-of-arrays in shared memory (32 slots a float), S::empty()
// the state of no values.
template <typename S, int W = 32>
__device__ __forceinline__ S warp_allmerge(S v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = S::merge(v, v.shfl_xor(o));
  return v;
}

// `smem` holds 32 * S::kFloats floats; free again when the function returns.
template <int kThreads, typename S>
__device__ __forceinline__ S block_allmerge(S v, float* smem) {
  constexpr int kWarps = kThreads / 32;
  v = warp_allmerge(v);
  if constexpr (kWarps > 1) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) v.store(smem, warp);
    __syncthreads();
    constexpr int kSpan = warp_span(kWarps);
    const int i = lane & (kSpan - 1);
    v = warp_allmerge<S, kSpan>(kSpan == kWarps || i < kWarps ? S::load(smem, i) : S::empty());  // as block_allreduce
    __syncthreads();
  }
  return v;
}

// ---- thread-block clusters (sm_90): a row split over kCluster CTAs exchanges statistics through
// distributed shared memory. Compiled for sm_80 too (the ladders are checked there); the host never
// launches a cluster kernel there.
//
// Once per kernel every CTA's mbarriers must exist before a peer pushes into them: a cluster barrier
// between the inits and the first push, split in two. The arrive comes right after the inits and is
// relaxed (the inits are published by the release fence that follows them, mbar_init_fence); the
// wait, which acquires, comes only before the first push, so the loads and reductions of the first
// row overlap it. (A release arrive compiles to MEMBAR.ALL.GPU; ncu showed that as 17-19% of the warp
// stalls of the one-cluster-a-row softmax, every CTA paying it before its first load.)
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// Per-row exchange of one float2 among the kCluster CTAs of a cluster without cluster barriers:
// thread 0 of each CTA pushes its value into slot [rank] of every CTA's shared memory (st.async,
// itself included), and every thread waits on its own CTA's mbarrier for the kCluster values. The
// barrier.cluster it replaces cost a wait for the thread's earlier global stores and an L1
// invalidation per row (mbarrier.cuh). Two parities of slots and barriers: peers can push row i + 1
// while this CTA still reads row i's values, never row i + 2 (that needs this CTA's row i + 1
// value, which thread 0 pushes only after a block reduction that every thread enters after reading).
// Every thread calls share() once per row, the same number of times in every CTA of the cluster.
template <int kCluster>
struct ClusterShare {
  float2 (*slots)[kCluster];  // __shared__ [2][kCluster]
  unsigned long long* bars;   // __shared__ [2]
  unsigned rank;
  int i = 0;
  bool joined = false;  // set where another ClusterShare of the CTA made the start's cluster arrive and wait

  // thread 0, before a fence and the cluster arrive (init's, or another ClusterShare's)
  __device__ __forceinline__ void init_barriers() const {
    mbar_init(&bars[0]);
    mbar_init(&bars[1]);
  }

  // all threads of every CTA, before any share(): this CTA's barriers, announced to the cluster
  __device__ __forceinline__ void init() const {
    if (threadIdx.x == 0) {
      init_barriers();
      mbar_init_fence();
    }
    cluster_arrive_relaxed();
  }
  // every thread; thread 0's v is the one shared. Returns this CTA's slots, by rank.
  __device__ __forceinline__ const float2* share(float2 v) {
    const int p = i & 1;
    if (i == 0 && !joined) cluster_wait();  // every peer's barriers exist (init)
    if (threadIdx.x == 0) {
      mbar_expect_bytes(&bars[p], kCluster * sizeof(float2));
#pragma unroll
      for (int r = 0; r < kCluster; ++r) st_async_peer(&slots[p][rank], v, &bars[p], r);
    }
    mbar_wait(&bars[p], (i >> 1) & 1);
    ++i;
    return slots[p];
  }
};

// Rows handed out at run time to a persistent grid of clusters (every cluster resident, looping over
// rows): the grid's first rows by position, each later one to whichever cluster finishes a row first.
// Why: a cluster's CTAs wait for one another at every row, and the SMs hosting them carry 1-4 CTAs, so
// with rows dealt in a fixed stride the kernel runs at the pace of the most crowded clusters (1984 x
// 65536 fp16 rms_norm: 93.4% of a same-bytes copy in a fixed stride, 98.1% handed out;
// docs/design/row-reductions-long.md).
// counters[0] counts rows handed out past the first gridDim / kCluster. Every row a cluster does takes one
// number, so a launch takes exactly `rows` numbers, 0 .. rows - 1, and the cluster that takes rows - 1
// (the last atomic on the counter) sets it to 0 again: a buffer serves one launch at a time (the host
// keeps one a stream), and a replayed launch (a CUDA graph) finds it zero too. Which cluster takes a row
// changes from run to run, what it computes for the row does not.
// Thread 0 of rank 0 takes a number once the row's loads are issued (its latency hides behind theirs)
// and passes it to the cluster through a ClusterShare beside the row's statistics.
template <int kCluster>
struct RowHandout {
  static_assert(kCluster > 1, "rows handed out to clusters");
  unsigned* counters;
  ClusterShare<kCluster> share;  // rank 0's number to every CTA
  int taken = 0;

  // thread 0, before the fence that announces the CTA's mbarriers (ClusterShare::init of the statistics)
  __device__ __forceinline__ void init_barriers() const { share.init_barriers(); }
  // every thread, once this row's loads are issued
  __device__ __forceinline__ void take(i64 rows) {
    if (threadIdx.x == 0 && share.rank == 0) {
      taken = (int)atomicAdd(counters, 1u);
      // the launch's last number: no take follows, so the counter is reset here (a reset by the last CTA to
      // exit, after a fence and a second atomic, ends each launch about a microsecond later)
      if ((i64)taken == rows - 1) atomicExch(counters, 0u);
    }
  }
  // every thread, once per row after take(): the row to do next (>= rows: none)
  __device__ __forceinline__ i64 next(i64 first_rows) {
    return first_rows + __float_as_int(share.share(make_float2(__int_as_float(taken), 0.0f))[0].x);
  }
};

// Block shape of a row kernel: kRowBlockThreads threads holding several rows (kGroup <= 32) or one CTA of
// kGroup per row slice. The min-blocks hint of __launch_bounds__ lets ptxas use up to 128 registers
// (64 at 1024 threads) rather than guess a lower target and spill.
constexpr int kRowBlockThreads = 128;
__host__ __device__ constexpr int row_block(int group) { return group <= 32 ? kRowBlockThreads : group; }
__host__ __device__ constexpr int row_min_blocks(int group) {
  return row_block(group) >= 512 ? 1 : 512 / row_block(group);
}

// The configuration of a register-tile row kernel (softmax_rows, norm_rows): the one struct its kernels
// read, written by the host as kk::RowConfig<threads, vecs, cluster, form, rows, weights>.
//   kGroup     threads holding a row slice: <= 32 a power-of-two slice of a warp (several rows a block of
//              kRowBlockThreads), else the whole CTA
//   kVecs      16-byte vectors a thread holds;  kCluster  CTAs of a thread-block cluster sharing a row (sm_90)
//   kForm      how the row moves (the RowTile forms, row_tile.cuh)
//   kRows      how rows reach groups: kRowsEach (a group or cluster a row, the grid covering the rows),
//              kRowsStride (persistent: only resident CTAs, looping over rows in a fixed stride) or
//              kRowsHandout (persistent clusters taking rows from a counter at run time: RowHandout)
//   kWeights   the norms' weight and bias: kWeightsGlobal (read at the output from global memory, L1/L2) or
//              kWeightsStaged (each persistent CTA copies its slice into shared memory once)
enum : int { kRowsEach = 0, kRowsStride = 1, kRowsHandout = 2 };
enum : int { kWeightsGlobal = 0, kWeightsStaged = 1 };

template <int kThreads, int kVecs_, int kCluster_, int kForm_, int kRows_ = kRowsEach, int kWeights_ = kWeightsGlobal>
struct RowConfig {
  static constexpr int kGroup = kThreads;
  static constexpr int kVecs = kVecs_;
  static constexpr int kCluster = kCluster_;
  static constexpr int kForm = kForm_;
  static constexpr int kRows = kRows_;
  static constexpr int kWeights = kWeights_;
  static constexpr int kBlock = row_block(kThreads);
};

// The register budget of a row kernel whose threads hold `words` 32-bit registers of row values (as loaded):
// those plus kRowOverhead for addresses, statistics and the weight, bias and output vectors of the element
// being written, in steps of 8, at most 64. A row kernel lives on bytes in flight, so the budget is as
// tight as the values allow: at 64 an SM holds 1024 threads, at 48 (4 vectors a thread) 1365, at 40 1638
// (docs/design/row-reductions.md). `extra`: registers a kernel needs besides (16-bit values' conversions,
// the shifted weight reads of the window forms).
constexpr int kRowOverhead = 32;
__host__ __device__ constexpr int row_registers(int words, int extra = 0) {
  return (words + kRowOverhead + extra + 7) / 8 * 8 < 64 ? (words + kRowOverhead + extra + 7) / 8 * 8 : 64;
}
// The registers a thread ptxas allows a kernel that must fit `blocks` CTAs of `block` threads an SM: each of
// the 4 SM sub-partitions' 16384 registers over its share of the warps (rounded up), in steps of 8.
__host__ __device__ constexpr int launch_registers(int blocks, int block) {
  return 16384 / (32 * ((blocks * ((block + 31) / 32) + 3) / 4)) / 8 * 8;
}
// The __launch_bounds__ minimum of blocks an SM that holds a kernel of `block` threads to that budget: the
// most blocks for which ptxas still allows it.
__host__ __device__ constexpr int row_budget_blocks(int block, int words, int extra = 0) {
  int blocks = 65536 / (row_registers(words, extra) * block);
  while (blocks > 1 && launch_registers(blocks, block) < row_registers(words, extra)) --blocks;
  return blocks < 1 ? 1 : blocks;
}

// Where a row's group of threads sits: one row per kGroup lanes of a block (kGroup <= 32), or one
// row slice per CTA (kGroup == block size), kCluster consecutive CTAs sharing a row.
template <int kGroup, int kBlock, int kCluster>
struct RowPlace {
  i64 row;
  int lane;
  unsigned rank;  // CTA rank in the cluster (0 without clusters)
  __device__ __forceinline__ RowPlace() {
    if constexpr (kGroup <= 32) {
      row = (i64)blockIdx.x * (kBlock / kGroup) + threadIdx.x / kGroup;
      lane = threadIdx.x % kGroup;
      rank = 0;
    } else {
      row = (i64)blockIdx.x / kCluster;
      lane = threadIdx.x;
      rank = blockIdx.x % kCluster;  // 1-D clusters are runs of kCluster consecutive blocks
    }
  }
};

}  // namespace kk
