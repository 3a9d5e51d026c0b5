// layer_norm and rms_norm over the last `len` elements of a contiguous (rows, len) tensor, with
// optional per-element weight (and bias for layer_norm) of the input's type; fp32 statistics.
// `rms` selects RMS normalization at run time (a uniform branch), so both ops share every kernel.
//
// The ladder:
//   norm_welford  one block per row: a read with a Welford (count, mean, M2) per thread, merged over
//                 the block with Chan's formula, then a read and a write for the output (any length)
//   norm_rows     the row held in registers (RowTile): per warp the mean, then the sum of squared
//                 deviations from it (two passes over registers, no cancellation), warps merged by
//                 Chan's formula, then the output: one read, one write. Rows belong to kGroup lanes
//                 of a warp, to one CTA, or to a cluster of kCluster CTAs (sm_90) that merge their
//                 (mean, M2) with Chan's formula through distributed shared memory (ClusterShare:
//                 pushed by st.async, no cluster barrier).
//   norm_bulk     long aligned rows on sm_90: persistent clusters (or one-CTA rings taking rows handed out
//                 at run time: norm_bulk_dyn) whose row slices arrive in a ring of
//                 shared-memory stages by bulk copies issued rows ahead (norm_bulk.cuh, bulk.cuh).
//   norm_smem     long aligned rows on sm_90 kept whole in shared memory (rows_smem.cuh): a CTA (or a
//                 cluster of 2) a row, registers free for loads in flight.
#include "norm.cuh"
#include "norm_bulk.cuh"
#include "rows_smem.cuh"

namespace kk {

template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
norm_welford(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
             const T* __restrict__ bias, i64 len, float eps, int rms) {
  __shared__ float smem[96];
  const T* x = in + (i64)blockIdx.x * len;
  T* y = out + (i64)blockIdx.x * len;
  float mean = 0.0f, rstd;
  if (rms) {
    float ss = 0.0f;
    for (i64 i = threadIdx.x; i < len; i += kBlock) {
      const float v = to_float(x[i]);
      ss += v * v;
    }
    ss = block_allreduce<SumOp, kBlock>(ss, smem);
    rstd = rms_rstd(ss, len, eps);
  } else {
    Welford w{0.0f, 0.0f, 0.0f};
    for (i64 i = threadIdx.x; i < len; i += kBlock) w.add(to_float(x[i]));
    w = block_allmerge<kBlock>(w, smem);
    mean = w.mean;
    rstd = rsqrtf(w.m2 / (float)len + eps);
  }
  for (i64 i = threadIdx.x; i < len; i += kBlock) y[i] = norm_out(to_float(x[i]), mean, rstd, weight, bias, i);
}


// Rows that fit one CTA (kCluster == 1) take one group per row and read weight and bias at the output
// from global memory: the row's whole weight and bias sit in L1 (<= 64 KB), shared by the CTAs of an
// SM. Rows split over a cluster would make each CTA read its slice of weight and bias from L2 at every
// row (the CTAs of an SM hold different slices: L1 cannot keep them), two more streams as large as the
// row itself. So cluster launches are persistent: the grid holds only resident CTAs, each stages its
// weight and bias slice in shared memory once (each thread its own elements: no barrier) and loops over
// rows (docs/design/row-reductions.md). The loop bound is uniform per block and per cluster, so groups
// sharing a warp run the same iterations and every CTA of a cluster the same barriers.
// At most 64 registers a thread (2048 / block size blocks per SM) for 16 values a thread: memory
// parallelism is what these kernels live on, and ptxas left alone picks 55-76, one or two fewer blocks
// per SM. Kernels holding 32 values, or reading element by element (the unaligned fallback: more
// address arithmetic), get up to 128.
//
// Tight rows: one-CTA rows of 4 vectors a thread that read weight and bias at the output (from L1, or
// staged) are held to few registers for more CTAs an SM, their values kept as loaded and converted at
// each use (TileValues) and chosen and converted on whole words (load_words, affine_words): converted
// once, or merged a 16-bit element at a time, they spill there. fp16 at 128 threads: 48 registers, 10
// CTAs an SM (+6% at 4096^2 fp16 layer_norm); fp32 at 256 threads: 40 registers, 6 CTAs. fp16 cluster
// rows of 256 x 4 and fp32 ones of 512 x 8 are held the same way to 64 registers (4 and 2 CTAs an SM).
// bf16 spills in these budgets and keeps the plain code (docs/design/row-reductions.md).
template <typename T> constexpr bool kIsHalf = false;
template <> constexpr bool kIsHalf<__half> = true;
template <typename T>
__host__ __device__ constexpr int norm_tight_blocks(int group, int vecs, int cluster, bool vec, bool early) {
  return !vec || early                                               ? 0
         : sizeof(T) == 4 && cluster != 1 && group == 512 && vecs == 8 ? 2
         : vecs != 4                                                   ? 0
         : cluster != 1                          ? (kIsHalf<T> && group == 256 ? 4 : 0)
         : kIsHalf<T> && group == 128            ? 10
         : sizeof(T) == 4 && group == 256        ? 6
                                                 : 0;
}
__host__ __device__ constexpr int norm_min_blocks(int group, int values, bool vec, int tight_blocks) {
  return tight_blocks ? tight_blocks : values > 16 || !vec ? row_min_blocks(group) : 1024 / row_block(group);
}

// kEarlyWB: weight and bias requested before the row rather than at the output, so that their L1/L2
// latency overlaps the row's loads and reductions (the host asks for it where the registers it takes
// cost no CTA an SM: fp16 rows of 128 x 4).
// kStage: each CTA stages its weight and bias slice in shared memory once (persistent launches: cluster
// rows, and one-CTA rows where the host asks); without it they are read at the output (or early).
// kDynamic (norm_rows_dyn): rows past the grid's first are handed out at run time (RowHandout, reduce.cuh),
// for persistent cluster launches; `counters` is the host's buffer for the stream.
// kForm: how rows move (RowTile's forms); the window forms (rows at any alignment) read weight and bias at
// the output by shifted loads (load_shifted), for one-CTA or warp rows that stage nothing.
template <typename T, int kGroup, int kVecs, int kCluster, int kForm, bool kEarlyWB, bool kStage, bool kDynamic>
__device__ __forceinline__ void norm_rows_body(const T* __restrict__ in, T* __restrict__ out,
                                               const T* __restrict__ weight, const T* __restrict__ bias, i64 rows,
                                               i64 len, float eps, int rms, unsigned* __restrict__ counters) {
  constexpr int kBlock = row_block(kGroup);
  using Tile = RowTile<T, kGroup, kVecs>;
  using V = Vec<T, Tile::N>;
  constexpr int N = Tile::N;
  constexpr i64 kSlice = (i64)kGroup * kVecs * N;
  constexpr int kUnits = kGroup <= 32 ? kBlock / kGroup : 1;  // rows a block holds at once
  constexpr bool kVec = kForm == kRowAligned;
  constexpr bool kWindow = kForm >= kRowWindow;
  static_assert(!kWindow || (kCluster == 1 && !kStage && !kEarlyWB), "window rows: one CTA or warp slice, nothing staged");
  constexpr bool kTight = norm_tight_blocks<T>(kGroup, kVecs, kCluster, kVec, kEarlyWB) > 0;
  static_assert(kCluster == 1 || kStage, "cluster rows stage weight and bias");
  __shared__ float smem[96];  // group reductions: 32 floats (sums) or 96 (Welford triples)
  __shared__ float2 slots[2][kCluster];
  __shared__ unsigned long long pushed[2];
  extern __shared__ __align__(16) unsigned char staged[];  // kStage: weight slice, then bias slice
  const RowPlace<kGroup, kBlock, kCluster> p;
  ClusterShare<kCluster> share{slots, pushed, p.rank};
  static_assert(!kDynamic || (kGroup > 32 && kCluster > 1), "rows handed out to clusters");
  constexpr int kHandout = kDynamic ? kCluster : 2;  // (an unused RowHandout<2> otherwise)
  __shared__ float2 handout_slots[2][kHandout];
  __shared__ unsigned long long handout_bars[2];
  RowHandout<kHandout> handout{counters, ClusterShare<kHandout>{handout_slots, handout_bars, p.rank}};
  handout.share.joined = true;  // the statistics' ClusterShare arrives and waits for both
  if constexpr (kDynamic) {
    if (threadIdx.x == 0) handout.init_barriers();  // announced by share.init()'s fence
  }
  if constexpr (kCluster > 1) share.init();
  const i64 col = (i64)p.rank * kSlice + p.lane * N;  // this thread's first element within a row
  const int n = (int)max((i64)0, min(kSlice, len - (i64)p.rank * kSlice));
  const int rem = n - p.lane * N;
  T* const ws = reinterpret_cast<T*>(staged) + p.lane * N;  // this thread's staged elements
  T* const bs = ws + kSlice;
  // Aligned slices are staged by asynchronous copies issued after the first row's loads, so that the
  // grid's copies of weight and bias (from L2) do not queue ahead of its first row's DRAM reads; others
  // by loads and stores before the loop.
  constexpr bool kStageAsync = kStage && kVec;
  if constexpr (kStage && !kStageAsync) {
    stage_weight_bias<kVec, Tile>(weight, bias, col, rem, ws, bs);
  }
  const i64 first = kGroup <= 32 ? (i64)blockIdx.x * kUnits : (i64)blockIdx.x / kCluster;
  const i64 stride = kGroup <= 32 ? (i64)gridDim.x * kUnits : (i64)gridDim.x / kCluster;
  const int unit = kGroup <= 32 ? threadIdx.x / kGroup : 0;
  Tile t;
  for (i64 r0 = first; r0 < rows;) {
    const i64 row = r0 + unit;
    const bool live = row < rows;  // groups past the end run empty: the shuffles stay full-warp
    // window forms: the row starts `a` elements into its first vector; this thread's first element is
    // at `at` of the row, its valid ones [head, wrem) of its own
    const int a = row_phase<kForm>(in + (live ? row : 0) * len);
    const i64 at = col - a;
    const int wn = kWindow ? (int)min(kSlice, a + len) : n;
    const int wrem = wn - p.lane * N;
    const int head = a - p.lane * N;
    const int rrem = live ? wrem : -p.lane * N - 1;
    // vector k's weight and bias from global memory; a vector past the row reads the row's first one
    // (never stored): no predicated loads
    const auto weight_bias_at = [&](int k, V& wv, V& bv) {
      const i64 at = Tile::valid(k, 0, rrem) ? col + k * Tile::kStride : 0;
      if constexpr (kTight) {
        load_weight_bias_words(wv, bv, weight, bias, at);
      } else {
        load_weight_bias(wv, bv, weight, bias, at);
      }
    };
    V wvs[kEarlyWB ? kVecs : 1], bvs[kEarlyWB ? kVecs : 1];
    if constexpr (kEarlyWB) {
      static_assert(kVec && !kStage, "early weight/bias loads are for one-CTA vector rows");
#pragma unroll
      for (int k = 0; k < kVecs; ++k) weight_bias_at(k, wvs[k], bvs[k]);
    }
    if constexpr (kTight) {
      t.load_words(in + (live ? row : 0) * len + col, rrem, from_float<T>(0.0f));
    } else {
      t.template load<kForm>(in + (live ? row : 0) * len + at, rrem, from_float<T>(0.0f), head);
    }
    if constexpr (kStageAsync) {
      if (r0 == first) stage_weight_bias_async<Tile>(weight, bias, col, rem, ws, bs);
    }
    if constexpr (kDynamic) handout.take(rows);
    // the values as floats for the statistics and the output: converted once, or (tight rows) at each use
    float xs[kTight ? 1 : kVecs][N];
    float2 st;
    if constexpr (kTight) {
      st = row_stats<kGroup, kCluster, kVec, true, true>(TileValues<Tile>{t}, live ? n : 0, rrem, len, kSlice, eps, rms, smem,
                                             share);
    } else {
#pragma unroll
      for (int k = 0; k < kVecs; ++k)
#pragma unroll
        for (int j = 0; j < N; ++j) xs[k][j] = to_float(t.v[k].v[j]);
      st = row_stats<kGroup, kCluster, kVec, true, true>(FloatValues<kVecs, N>{xs}, live ? wn : 0, rrem, len, kSlice, eps, rms,
                                             smem, share, live ? a : 0);
    }
    const i64 next_r0 = kDynamic ? handout.next(stride) : r0 + stride;  // after row_stats' block barriers
    if constexpr (kStageAsync) staged_wait();  // this thread's copies (at once after the first)
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int off = k * Tile::kStride;
      V wv, bv;
      if constexpr (kEarlyWB) {
        wv = wvs[k];
        bv = bvs[k];
      } else if constexpr (kStage && kTight) {
        wv = lds_volatile_if(weight != nullptr, reinterpret_cast<const V*>(ws + off));
        bv = lds_volatile_if(bias != nullptr, reinterpret_cast<const V*>(bs + off));
      } else if constexpr (kStage) {
        if (weight) wv = lds_volatile(reinterpret_cast<const V*>(ws + off));
        if (bias) bv = lds_volatile(reinterpret_cast<const V*>(bs + off));
      } else if constexpr (kWindow) {
        if (weight) wv = load_shifted<N>(weight, at + off, len);
        if (bias) bv = load_shifted<N>(bias, at + off, len);
      } else if constexpr (kVec) {
        weight_bias_at(k, wv, bv);
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if (weight && Tile::valid(k, j, rrem)) wv.v[j] = weight[col + off + j];
          if (bias && Tile::valid(k, j, rrem)) bv.v[j] = bias[col + off + j];
        }
      }
      if constexpr (kTight) {
        float x[N];
        vec_to_floats(t.v[k], x);
        affine_words(t.v[k], x, st, wv, bv, weight, bias);
      } else {
        affine(t.v[k], xs[k], st, wv, bv, weight, bias);
      }
    }
    if (live) t.template store<kForm>(out + row * len + at, wrem, head);
    r0 = next_r0;
  }
  if constexpr (kStageAsync) staged_wait();  // a CTA given no row leaves no copy in flight
}

template <typename T, int kGroup, int kVecs, int kCluster, int kForm, bool kEarlyWB>
__host__ __device__ constexpr int norm_rows_min_blocks() {
  return norm_min_blocks(kGroup, kVecs * 16 / sizeof(T), kForm == kRowAligned,
                         norm_tight_blocks<T>(kGroup, kVecs, kCluster, kForm == kRowAligned, kEarlyWB));
}

// Rows dealt to groups (or clusters) in a fixed stride: one group a row, or persistent (kStage).
template <typename T, int kGroup, int kVecs, int kCluster, int kForm, bool kEarlyWB, bool kStage>
__global__ void __launch_bounds__(row_block(kGroup), (norm_rows_min_blocks<T, kGroup, kVecs, kCluster, kForm, kEarlyWB>()))
norm_rows(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
          const T* __restrict__ bias, i64 rows, i64 len, float eps, int rms) {
  norm_rows_body<T, kGroup, kVecs, kCluster, kForm, kEarlyWB, kStage, false>(in, out, weight, bias, rows, len, eps, rms,
                                                                            nullptr);
}

// Persistent clusters of aligned rows, weight and bias staged, rows handed out at run time.
template <typename T, int kGroup, int kVecs, int kCluster>
__global__ void __launch_bounds__(row_block(kGroup), (norm_rows_min_blocks<T, kGroup, kVecs, kCluster, kRowAligned, false>()))
norm_rows_dyn(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
              const T* __restrict__ bias, i64 rows, i64 len, float eps, int rms, unsigned* __restrict__ counters) {
  norm_rows_body<T, kGroup, kVecs, kCluster, kRowAligned, false, true, true>(in, out, weight, bias, rows, len, eps, rms,
                                                                     counters);
}

// norm_smem: a persistent CTA (kCluster == 1) or cluster per row, the CTA's slice resident in shared
// memory (rows_smem.cuh, NormRow in norm.cuh). Rows move as 16-byte vectors (aligned, length a multiple
// of N); weight and bias are read at the output from global memory (L2: the ring leaves L1 little
// room), a chunk ahead.
template <typename T, int kBlock, int kPer, int kChunks, int kStages, int kCluster>
__global__ void __launch_bounds__(kBlock, (smem_rows_min_blocks<T, kBlock, kPer, kStages>()))
norm_smem(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
          const T* __restrict__ bias, i64 rows, i64 len, float eps, int rms) {
  constexpr int kSlice = kBlock * kPer * (16 / (int)sizeof(T)) * kChunks;
  NormRow<T, kBlock, kCluster, kSlice> op{weight, bias, len, eps, rms};
  smem_rows<T, kBlock, kPer, kChunks, kStages, kCluster>(in, out, rows, len, op);
}

}  // namespace kk
