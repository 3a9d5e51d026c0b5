// The row statistics of layer_norm and rms_norm (norm.cu's kernels): Welford states merged by Chan's
// formula over warps, blocks and clusters, the (mean, rstd) of a row slice held in registers, and the
// output vector with weight and bias.
#pragma once
#include "reduce.cuh"
#include "norm_weights.cuh"

namespace kk {

// Welford state; merge is Chan et al.'s pairwise update (exact in count order, fixed here by the
// fixed shuffle pattern). Merged over warps and blocks by warp_allmerge / block_allmerge.
struct Welford {
  static constexpr int kFloats = 3;
  float n, mean, m2;
  __device__ __forceinline__ void add(float x) {
    n += 1.0f;
    const float d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
  __device__ __forceinline__ static Welford merge(Welford a, Welford b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float d = b.mean - a.mean, fb = __fdividef(b.n, n);
    return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
  }
  __device__ __forceinline__ Welford shfl_xor(int o) const {
    return {__shfl_xor_sync(0xffffffffu, n, o), __shfl_xor_sync(0xffffffffu, mean, o),
            __shfl_xor_sync(0xffffffffu, m2, o)};
  }
  __device__ __forceinline__ void store(float* smem, int i) const {
    smem[i] = n;
    smem[32 + i] = mean;
    smem[64 + i] = m2;
  }
  __device__ __forceinline__ static Welford load(const float* smem, int i) {
    return {smem[i], smem[32 + i], smem[64 + i]};
  }
  __device__ __forceinline__ static Welford empty() { return {0.0f, 0.0f, 0.0f}; }
};

// Chan's formula over the warps of a block, in its summed form: each warp's (count c, mean m, M2) to the
// block's mean = m0 + sum c (m - m0) / n and M2 = sum M2 + c (m - mean)^2, n the block's count, m0 warp
// 0's mean (which has elements whenever the block has): summed about m0, the terms stay as small as the
// spread (sum c m of a mean 50x the spread lost 2-4 ulps of it). Two one-float reductions over the
// warps' states and one division, where pairwise merges divide at every level.
// `smem` holds 96 floats; free again when the function returns.
template <int kThreads>
__device__ __forceinline__ float2 merge_warps(float c, float m, float m2, float n, float* smem) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) Welford{c, m, m2}.store(smem, warp);
  __syncthreads();
  // every aligned kSpan lanes: all warps (kSpan: kWarps rounded up to a power of two, the missing
  // warps' states empty, adding nothing to either sum)
  constexpr int kSpan = warp_span(kWarps);
  const int i = lane & (kSpan - 1);
  const Welford o = kSpan == kWarps || i < kWarps ? Welford::load(smem, i) : Welford::empty();
  const float m0 = smem[32];  // warp 0's mean (Welford::store layout)
  const float mean = n > 0.0f ? m0 + warp_allreduce<SumOp, kSpan>(o.n * (o.mean - m0)) / n : 0.0f;
  const float d = o.mean - mean;
  const float total = warp_allreduce<SumOp, kSpan>(o.m2 + o.n * d * d);
  __syncthreads();
  return {mean, total};
}

// Over a group of kGroup threads sharing a row: a warp slice (shuffles only) or the whole block.
template <int kGroup>
__device__ __forceinline__ Welford group_welford(Welford w, float* smem /* 96 floats */) {
  if constexpr (kGroup <= 32) {
    return warp_allmerge<Welford, kGroup>(w);
  } else {
    return block_allmerge<kGroup>(w, smem);
  }
}

// y = (x - mean) * rstd * w + b, with w = 1 and b = 0 where absent.
template <typename T>
__device__ __forceinline__ T norm_out(float x, float mean, float rstd, const T* w, const T* b, i64 i) {
  float y = (x - mean) * rstd;
  if (w) y *= to_float(w[i]);
  if (b) y += to_float(b[i]);
  return from_float<T>(y);
}

// 1 / sqrt(mean(x^2) + eps). A row holding inf gets rstd 0: its finite elements give 0 and the inf
// NaN, torch's formula and what torch's rms_norm gives for rows of 1000 elements (for 7 it gives a
// NaN row: torch itself differs by row length, so kernelkit keeps the formula).
__device__ __forceinline__ float rms_rstd(float ss, float len, float eps) { return rsqrtf(ss / len + eps); }
__device__ __forceinline__ float rms_rstd(float ss, i64 len, float eps) { return rms_rstd(ss, (float)len, eps); }

// Elements of slice r (of `slice`) of a row of len whose window starts `a` elements before it (the window
// forms; 0 otherwise): what slice r's mean was taken over.
// (32-bit: a row split over a cluster is far shorter than 2^31 elements)
__device__ __forceinline__ float slice_count(int len, int r, int slice, int a = 0) {
  return (float)max(0, min((r + 1) * slice, a + len) - max(r * slice, a));
}

// The cluster merges below read the kCluster slots in one of two forms: every thread reads every slot
// (and, for cluster_chan, recomputes every slot's count), or (kLanes) each aligned group of kCluster lanes
// reads slot lane % kCluster once and reduces by shuffles, as block_allreduce does for warps. kLanes
// saves the register-tile cluster rows most of their shared loads (about 2 points of a same-bytes copy
// for fp16 64K-element layer_norm rows); norm_bulk's 1024-thread CTAs measured slower with it and keep
// the other form (docs/design/row-reductions.md, "Statistics").

// A row's sum of squares from its slices' (each CTA's ss; kCluster == 1: ss itself).
template <bool kLanes = false, int kCluster>
__device__ __forceinline__ float cluster_sum(float ss, ClusterShare<kCluster>& share) {
  if constexpr (kCluster > 1) {
    const float2* all = share.share(make_float2(ss, 0.0f));
    if constexpr (kLanes) {
      ss = warp_allreduce<SumOp, kCluster>(all[threadIdx.x & (kCluster - 1)].x);
    } else {
      ss = 0.0f;
#pragma unroll
      for (int r = 0; r < kCluster; ++r) ss += all[r].x;
    }
  }
  return ss;
}

// A row's (mean, M2) from its slices' (mean, M2 about that mean) by Chan's formula: mean = mean_0 + sum
// n_r (mean_r - mean_0) / len (summed about slice 0's mean, which has elements whenever the row has, as
// merge_warps does), M2 = sum M2_r + n_r (mean_r - mean)^2 (kCluster == 1: the slice is the row).
template <bool kLanes = false, int kCluster>
__device__ __forceinline__ float2 cluster_chan(float mine, float m2, i64 len, i64 slice,
                                               ClusterShare<kCluster>& share, int a = 0) {
  float mean = mine;
  if constexpr (kCluster > 1 && kLanes) {
    const float2* all = share.share(make_float2(mine, m2));
    const int r = threadIdx.x & (kCluster - 1);
    const float2 s = all[r];
    const float m0 = __shfl_sync(0xffffffffu, s.x, 0, kCluster);  // slice 0's mean, from its group's lane 0
    const float c = slice_count((int)len, r, (int)slice, a);
    mean = m0 + warp_allreduce<SumOp, kCluster>(c * (s.x - m0)) / (float)len;
    const float d = s.x - mean;
    m2 = warp_allreduce<SumOp, kCluster>(s.y + c * d * d);
  } else if constexpr (kCluster > 1) {
    // volatile: read from shared memory at each use rather than held in 2 x kCluster registers
    const volatile float2* all = share.share(make_float2(mine, m2));
    const float m0 = all[0].x;
    float total = 0.0f;
#pragma unroll
    for (int r = 0; r < kCluster; ++r) total += slice_count((int)len, r, (int)slice, a) * (all[r].x - m0);
    mean = m0 + total / (float)len;
    m2 = 0.0f;
#pragma unroll
    for (int r = 0; r < kCluster; ++r) {
      const float d = all[r].x - mean;
      m2 += all[r].y + slice_count((int)len, r, (int)slice, a) * d * d;
    }
  }
  return {mean, m2};
}

template <typename T> constexpr bool kIsBf16 = false;
template <> constexpr bool kIsBf16<__nv_bfloat16> = true;

// Element e (0: the low half) of a 32-bit word of T values, as a float.
template <typename T>
__device__ __forceinline__ float word_value(unsigned w, int e) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(w);
  } else if constexpr (kIsBf16<T>) {
    // volatile: converted at each use, as meant (a plain shift was computed once and held, 32 registers)
    float r;
    if (e) {
      asm("and.b32 %0, %1, 0xffff0000;" : "=f"(r) : "r"(w));
    } else {
      asm("shl.b32 %0, %1, 16;" : "=f"(r) : "r"(w));
    }
    return r;
  } else {
    __half2 h;
    memcpy(&h, &w, 4);
    return e ? __high2float(h) : __low2float(h);
  }
}

// A thread's row values for row_stats, x(k, j) being element j of its vector k: converted to float once
// (FloatValues), or held as loaded in a WordTile and converted at each use (TileValues: half the registers
// of 16-bit values).
template <int kVecs_, int N_>
struct FloatValues {
  static constexpr int kVecs = kVecs_, N = N_;
  const float (&x)[kVecs_][N_];
  __device__ __forceinline__ float operator()(int k, int j) const { return x[k][j]; }
};
template <typename Tile>
struct TileValues {
  static constexpr int kVecs = Tile::kCount, N = Tile::N;
  const Tile& t;
  __device__ __forceinline__ float operator()(int k, int j) const {  // element j out of its word
    return word_value<typename Tile::Elem>(Tile::word(t.v[k], j * 4 / N), j % (N / 4));
  }
};

// (mean, rstd) of the row whose slice this thread group holds in `x` (its kVecs vectors of N values,
// as FloatValues or TileValues; the slice's elements [lo, n) valid (lo > 0: a window form's head), rem =
// n less this thread's first element; kVec: whole vectors are valid or not, so the bounds are checked
// per vector, not per element; a: the row's window phase, which sets what each cluster slice holds).
// Clusters exchange (sum of squares) or (slice mean, M2) through `share` (one push per CTA per row).
// kLanes: the cluster merges' lane-parallel form (above).
template <int kGroup, int kCluster, bool kVec, bool kWarpPasses = true, bool kLanes = false, typename X>
__device__ __forceinline__ float2 row_stats(const X& x, int n, int rem, i64 len, i64 slice,
                                            float eps, int rms, float* smem, ClusterShare<kCluster>& share,
                                            int lo = 0, int a = 0) {
  constexpr int kVecs = X::kVecs, N = X::N;
  constexpr int kStride = kGroup * N;  // as RowTile: elements between a thread's vectors
  const int head = lo - (n - rem);  // the valid start from this thread's first element
  const auto valid = [rem, head](int k, int j) {
    return (kVec || k > 0 || j >= head) && k * kStride + (kVec ? 0 : j) < rem;
  };
  if (rms) {
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kVecs; ++k)
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const float v = x(k, j);
        ss += v * v;
      }
    ss = cluster_sum<kLanes>(group_allreduce<SumOp, kGroup>(ss, smem), share);
    return {0.0f, rms_rstd(ss, len, eps)};
  }
  float sum = 0.0f;  // this thread's values (padding reads as 0)
#pragma unroll
  for (int k = 0; k < kVecs; ++k)
#pragma unroll
    for (int j = 0; j < N; ++j) sum += x(k, j);
  const auto squared_deviations = [&](float about) {  // over this thread's valid values
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kVecs; ++k)
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const float d = x(k, j) - about;
        if (valid(k, j)) acc += d * d;
      }
    return acc;
  };
  // This slice's mean and sum of squared deviations from it.
  float mine, m2;
  if constexpr (kWarpPasses) {
    // Two exact passes within each warp (the warp's mean by shuffles, then the squared deviations from
    // it), then Chan's formula over the warps (merge_warps): one barrier pair. The pairwise merge of
    // per-thread Welford states this replaced moved three floats and divided at every shuffle level.
    constexpr int W = kGroup < 32 ? kGroup : 32;
    // the warp's valid elements, counted rather than reduced: its vector k covers elements
    // [k * kStride + base, + W * N) of the slice, base = its first lane's first element (n - rem is
    // this thread's first element: lane * N)
    const int base = (n - rem) / (W * N) * (W * N);
    int count = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) count += max(0, min(W * N, n - k * kStride - base) - max(0, lo - k * kStride - base));
    const float wsum = warp_allreduce<SumOp, W>(sum), wcnt = (float)count;
    const float wmean = wcnt > 0.0f ? wsum / wcnt : 0.0f;
    const float wm2 = warp_allreduce<SumOp, W>(squared_deviations(wmean));
    if constexpr (kGroup > 32) {
      const float2 mm = merge_warps<kGroup>(wcnt, wmean, wm2, (float)(n - lo), smem);
      mine = mm.x;
      m2 = mm.y;
    } else {
      mine = wmean;
      m2 = wm2;
    }
  } else {
    // two reduction rounds over the group (two barrier pairs), for kernels at a 64-register budget
    // that the warp passes' merge would make spill
    const float total = group_allreduce<SumOp, kGroup>(sum, smem);
    mine = n > lo ? total / (float)(n - lo) : 0.0f;
    m2 = group_allreduce<SumOp, kGroup>(squared_deviations(mine), smem);
  }
  const float2 mm = cluster_chan<kLanes>(mine, m2, len, slice, share, a);
  return {mm.x, rsqrtf(mm.y / (float)len + eps)};
}

// One output vector: (x - mean) * rstd, times the weight and plus the bias where present.
template <typename T, int N>
__device__ __forceinline__ void affine(Vec<T, N>& o, const float (&x)[N], float2 st, const Vec<T, N>& wv,
                                       const Vec<T, N>& bv, const T* weight, const T* bias) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    float y = (x[j] - st.x) * st.y;
    if (weight && bias) {
      y = fmaf(y, to_float(wv.v[j]), to_float(bv.v[j]));
    } else {
      if (weight) y *= to_float(wv.v[j]);
      if (bias) y += to_float(bv.v[j]);
    }
    o.v[j] = from_float<T>(y);
  }
}

// affine for the kernels that convert on whole words (tight rows, 16-bit bulk rows): weight and bias
// converted a pair at a time and the output packed the same way (vec_to_floats, vec_from_floats), no
// 16-bit value merged or converted on its own. kNormalizeFirst: (x - mean) * rstd before weight and
// bias are converted, the order measured for norm_bulk (1505 SASS instructions against 1616); the tight
// rows keep the other, which fits 48 registers on sm_80 too (normalizing first spills 20-40 bytes there).
template <bool kNormalizeFirst = false, typename T, int N>
__device__ __forceinline__ void affine_words(Vec<T, N>& o, const float (&x)[N], float2 st, const Vec<T, N>& wv,
                                             const Vec<T, N>& bv, const T* weight, const T* bias) {
  float y[N], w[N], b[N];
  if constexpr (kNormalizeFirst) {
#pragma unroll
    for (int j = 0; j < N; ++j) y[j] = (x[j] - st.x) * st.y;
  }
  vec_to_floats(wv, w);
  vec_to_floats(bv, b);
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if constexpr (!kNormalizeFirst) y[j] = (x[j] - st.x) * st.y;
    if (weight && bias) {
      y[j] = fmaf(y[j], w[j], b[j]);
    } else {
      if (weight) y[j] *= w[j];
      if (bias) y[j] += b[j];
    }
  }
  o = vec_from_floats<T>(y);
}

// The norms' policy for smem_rows (rows_smem.cuh): rows resident in shared memory. The sum (layer_norm,
// of x less the slice's first element: a mean 50x the spread lost 3 ulps of it summed unshifted) or sum
// of squares (rms_norm) accumulates as chunks land; layer_norm then takes each warp's mean,
// reads the slice again for the squared deviations from it (exact, no cancellation), and merges the
// warps and the cluster's CTAs by Chan's formula, as row_stats does for rows in registers.
template <typename T, int kBlock, int kCluster, int kSlice>
struct NormRow {
  static constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  struct Aux {  // weight and bias vectors, as plain 16-byte carriers (a struct of __half copies member by member)
    uint4 w, b;
  };
  const T* weight;
  const T* bias;
  i64 len;
  float eps;
  int rms;
  float acc, shift;

  __device__ __forceinline__ void begin(float k) {
    acc = 0.0f;
    shift = k;
  }
  __device__ __forceinline__ void add(const float (&x)[N]) {
    if (rms) {
#pragma unroll
      for (int j = 0; j < N; ++j) acc = fmaf(x[j], x[j], acc);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) acc += x[j] - shift;
    }
  }
  template <typename Each>
  __device__ __forceinline__ float2 stats(int n, int wcount, Each&& each, float* smem, ClusterShare<kCluster>& share) {
    if (rms) return {0.0f, rms_rstd(cluster_sum(block_allreduce<SumOp, kBlock>(acc, smem), share), len, eps)};
    const float wcnt = (float)wcount, wsum = warp_allreduce<SumOp>(acc);
    const float wmean = wcnt > 0.0f ? shift + wsum / wcnt : 0.0f;
    float sq = 0.0f;
    each([&](const float(&x)[N]) {
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const float d = x[j] - wmean;
        sq = fmaf(d, d, sq);
      }
    });
    const float2 mm = merge_warps<kBlock>(wcnt, wmean, warp_allreduce<SumOp>(sq), (float)n, smem);
    const float2 row = cluster_chan(mm.x, mm.y, len, kSlice, share);
    return {row.x, rsqrtf(row.y / (float)len + eps)};
  }
  __device__ __forceinline__ Aux aux(i64 col) const {
    Aux a;
    if (weight) a.w = *reinterpret_cast<const uint4*>(weight + col);
    if (bias) a.b = *reinterpret_cast<const uint4*>(bias + col);
    return a;
  }
  __device__ __forceinline__ void out(V& o, const float (&x)[N], float2 st, const Aux& a) const {
    V w, b;
    memcpy(&w, &a.w, 16);
    memcpy(&b, &a.b, 16);
    affine(o, x, st, w, b, weight, bias);
  }
};

}  // namespace kk
