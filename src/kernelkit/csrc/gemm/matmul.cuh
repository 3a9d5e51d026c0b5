// The matrix multiplication family's shared pieces: the problem every kernel receives, element access
// through either operand layout, the zero-filled tile loads, and the epilogue's conversions.
//
// Every kernel computes C[z] = A[z] @ B[z] (+ bias) for z < batch, C row-major (row stride ldc); linear's
// fused epilogues (Epilogue below) add an activation and a residual before the one rounding.
// An operand is an R x K view (R = M for A, N for B) stored with one contiguous dim: "k-major" when k
// is contiguous (A row-major, B = w.t() of a row-major w), else "r-major" (A = a.t(), B row-major);
// ld is the stride of the other dim. Layout and vector flags travel in one word (Flags), so a kernel
// instantiation serves every layout where only its loads differ.
#pragma once
#include "common.cuh"

namespace kk {
namespace mm {

// flags word: bit 0 A k-major, bit 1 B k-major, bit 2 A 16-byte loads allowed, bit 3 the same for B
struct Problem {
  int M, N, K, batch;
  i64 lda, ldb, ldc, bsa, bsb, bsc;
  bool a_k, b_k, vec_a, vec_b;
};

__device__ __forceinline__ Problem make_problem(i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb,
                                                i64 bsc, i64 batch, i64 flags) {
  Problem p;
  p.M = (int)M; p.N = (int)N; p.K = (int)K; p.batch = (int)batch;
  p.lda = lda; p.ldb = ldb; p.ldc = ldc; p.bsa = bsa; p.bsb = bsb; p.bsc = bsc;
  p.a_k = flags & 1; p.b_k = (flags >> 1) & 1; p.vec_a = (flags >> 2) & 1; p.vec_b = (flags >> 3) & 1;
  return p;
}

template <typename T>
__device__ __forceinline__ T zero_of() {
  T z;
  memset(&z, 0, sizeof(T));
  return z;
}

// Element (r, k) of an operand, or zero outside rows x ks (never read out of bounds).
template <typename T>
__device__ __forceinline__ T element(const T* p, i64 ld, bool kmaj, int r, int k, int rows, int ks) {
  if (r >= rows || k >= ks) return zero_of<T>();
  return p[kmaj ? (i64)r * ld + k : (i64)k * ld + r];
}

// Accumulator <-> element conversions: fp32 for fp32/16-bit inputs, int for int8, double for fp64.
template <typename Acc> __device__ __forceinline__ Acc widen(float x) { return x; }
template <typename Acc> __device__ __forceinline__ Acc widen(__half x) { return __half2float(x); }
template <typename Acc> __device__ __forceinline__ Acc widen(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename Acc> __device__ __forceinline__ Acc widen(double x) { return x; }
template <typename Acc> __device__ __forceinline__ Acc widen(int x) { return x; }
template <typename Acc> __device__ __forceinline__ Acc widen(signed char x) { return x; }

template <typename To> __device__ __forceinline__ To narrow(float v) { return from_float<To>(v); }
template <> __device__ __forceinline__ double narrow<double>(float v) { return v; }
template <typename To> __device__ __forceinline__ To narrow(double v) { return v; }
template <typename To> __device__ __forceinline__ To narrow(int v) { return v; }

// The epilogue. EPI, a kernel template parameter, picks it at compile time: kPlain is matmul's (bias,
// then the one rounding); the others are linear's fused forms, act(acc + bias) + residual computed in
// the accumulator type and rounded once, the residual (an M x N view, row stride ldr) read where its
// pointer is not null. kPlain never reads the residual, so its code is that of the plain epilogue.
enum Epilogue : int { kPlain = 0, kIdentity = 1, kRelu = 2, kGelu = 3, kGeluTanh = 4 };

// What the epilogue reads besides the accumulators: bias by column, residual by (row, column).
template <typename To>
struct Epi {
  const To* bias;
  const To* res;
  i64 ldr;
};

// The activation in the accumulator's precision, written as torch writes it (F.relu, F.gelu with
// approximate "none" and "tanh"), so that the fused result rounds like torch's unfused one.
template <int EPI>
__device__ __forceinline__ float activate(float x) {
  if constexpr (EPI == kRelu) return x > 0.0f ? x : 0.0f;
  if constexpr (EPI == kGelu) return x * 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  if constexpr (EPI == kGeluTanh) {
    const float cube = x * x * x;
    const float inner = 0.79788456080286536f * (x + 0.044715f * cube);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  return x;
}
template <int EPI>
__device__ __forceinline__ double activate(double x) {
  if constexpr (EPI == kRelu) return x > 0.0 ? x : 0.0;
  if constexpr (EPI == kGelu) return x * 0.5 * (1.0 + erf(x * 0.70710678118654752));
  if constexpr (EPI == kGeluTanh) return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
  return x;
}

// One output value's epilogue before the rounding (bias already added): activation, then residual.
template <int EPI, typename To, typename Acc>
__device__ __forceinline__ Acc finish(Acc v, const Epi<To>& e, int m, int n) {
  if constexpr (EPI == kPlain) {
    return v;
  } else {
    v = activate<EPI>(v);
    if (e.res) v += widen<Acc>(e.res[(i64)m * e.ldr + n]);
    return v;
  }
}

// The epilogue of one output element (bias indexed by column, may be null).
template <int EPI, typename To, typename Acc>
__device__ __forceinline__ void put(To* c, const Epi<To>& e, const Problem& p, int m, int n, Acc v) {
  if (m < p.M && n < p.N) {
    if (e.bias) v += widen<Acc>(e.bias[n]);
    c[(i64)m * p.ldc + n] = narrow<To>(finish<EPI>(v, e, m, n));
  }
}

// Two outputs of one row at columns n and n + 1, as one store where both lie inside and the address
// allows it (the row's and the pointer's alignment are known only here).
template <int EPI, typename To, typename Acc>
__device__ __forceinline__ void put2(To* c, const Epi<To>& e, const Problem& p, int m, int n, Acc v0, Acc v1) {
  if (m >= p.M || n >= p.N) return;
  To* q = c + (i64)m * p.ldc + n;
  if (e.bias) {
    v0 += widen<Acc>(e.bias[n]);
    if (n + 1 < p.N) v1 += widen<Acc>(e.bias[n + 1]);
  }
  v0 = finish<EPI>(v0, e, m, n);
  if (n + 1 < p.N) v1 = finish<EPI>(v1, e, m, n + 1);
  if (n + 1 < p.N && (reinterpret_cast<unsigned long long>(q) % (2 * sizeof(To))) == 0) {
    using W = typename Carrier<2 * sizeof(To)>::type;  // one integer word: one store instruction
    const To x[2] = {narrow<To>(v0), narrow<To>(v1)};
    W w;
    memcpy(&w, x, sizeof(W));
    *reinterpret_cast<W*>(q) = w;
  } else {
    q[0] = narrow<To>(v0);
    if (n + 1 < p.N) q[1] = narrow<To>(v1);
  }
}

// Four outputs of one row at columns n..n + 3 as one 16-byte store where all lie inside and the address
// allows it, else element by element.
template <int EPI, typename Acc>
__device__ __forceinline__ void put4(float* c, const Epi<float>& e, const Problem& p, int m, int n,
                                     const Acc (&v)[4]) {
  if (m >= p.M || n >= p.N) return;
  float* q = c + (i64)m * p.ldc + n;
  if (n + 3 < p.N && (reinterpret_cast<unsigned long long>(q) % 16) == 0) {
    float4 w = make_float4(v[0], v[1], v[2], v[3]);
    if (e.bias) {
      w.x += e.bias[n]; w.y += e.bias[n + 1]; w.z += e.bias[n + 2]; w.w += e.bias[n + 3];
    }
    if constexpr (EPI != kPlain) {
      w.x = finish<EPI>(w.x, e, m, n);
      w.y = finish<EPI>(w.y, e, m, n + 1);
      w.z = finish<EPI>(w.z, e, m, n + 2);
      w.w = finish<EPI>(w.w, e, m, n + 3);
    }
    *reinterpret_cast<float4*>(q) = w;
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) put<EPI>(c, e, p, m, n + j, v[j]);
  }
}

// A tile of R x BK elements of an operand, fetched into registers by THREADS threads and stored to
// shared memory at Smem::at(r, k). Chunks of V = 16 / sizeof(T) elements run along the operand's
// contiguous dim: with `vec` (aligned base, ld and batch stride whole vectors) a chunk inside the
// operand is one 16-byte load, else (edges, misaligned views) its elements load one by one with
// zero fill. The two halves are split so that a kernel can fetch the next tile while it computes.
template <typename T, int R, int BK, int THREADS>
struct TileFetch {
  static constexpr int V = 16 / (int)sizeof(T);
  static constexpr int CHUNKS = R * BK / V / THREADS;
  static_assert(R * BK % (V * THREADS) == 0, "a tile is a whole number of chunks a thread");
  static_assert(R % V == 0 && BK % V == 0, "tile sides are whole vectors");
  T v[CHUNKS][V];

  // rows and ks: the operand's extent left from (r0, k0), the tile's origin. A tile wholly inside an
  // operand that 16-byte loads may read (all but the edge tiles) takes them without a check a chunk.
  __device__ __forceinline__ void fetch(const T* p, i64 ld, bool kmaj, bool vec, int r0, int k0, int rows, int ks) {
    const int tid = threadIdx.x;
    if (vec && rows >= R && ks >= BK) {
#pragma unroll
      for (int i = 0; i < CHUNKS; ++i) {
        int r, k;
        place(kmaj, tid + i * THREADS, r, k);
        const T* src = p + (kmaj ? (i64)(r0 + r) * ld + (k0 + k) : (i64)(k0 + k) * ld + (r0 + r));
        const uint4 c = *reinterpret_cast<const uint4*>(src);
        memcpy(v[i], &c, 16);
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      const int q = tid + i * THREADS;
      int r, k;
      place(kmaj, q, r, k);
      const bool whole = kmaj ? (r < rows && k + V <= ks) : (k < ks && r + V <= rows);
      if (vec && whole) {
        const T* src = p + (kmaj ? (i64)(r0 + r) * ld + (k0 + k) : (i64)(k0 + k) * ld + (r0 + r));
        const uint4 c = *reinterpret_cast<const uint4*>(src);
        memcpy(v[i], &c, 16);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const int rr = kmaj ? r : r + j, kk = kmaj ? k + j : k;
          v[i][j] = element(p, ld, kmaj, r0 + rr, k0 + kk, r0 + rows, k0 + ks);
        }
      }
    }
  }

  template <typename Smem>
  __device__ __forceinline__ void store(T* s, bool kmaj) const {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      int r, k;
      place(kmaj, tid + i * THREADS, r, k);
#pragma unroll
      for (int j = 0; j < V; ++j) s[Smem::at(kmaj ? r : r + j, kmaj ? k + j : k)] = v[i][j];
    }
  }

  // chunk q's first element in the tile: consecutive threads along the contiguous dim (coalesced)
  __device__ __forceinline__ static void place(bool kmaj, int q, int& r, int& k) {
    if (kmaj) {
      r = q / (BK / V);
      k = (q % (BK / V)) * V;
    } else {
      k = q / (R / V);
      r = (q % (R / V)) * V;
    }
  }
};

// Shared-memory layouts of a tile, as index functions: k-major rows [r][k] or r-major rows [k][r],
// each with a pitch (padding against bank conflicts).
template <int PITCH>
struct RowsR {  // [r][k]: row r of the operand
  __device__ __forceinline__ static int at(int r, int k) { return r * PITCH + k; }
};
template <int PITCH>
struct RowsK {  // [k][r]: A stored transposed, the outer product's column of A as a row
  __device__ __forceinline__ static int at(int r, int k) { return k * PITCH + r; }
};

}  // namespace mm
}  // namespace kk
