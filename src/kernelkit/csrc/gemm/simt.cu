// The SIMT ladder of C = A @ B in fp32 (the first two rungs also in fp64), from one output per thread
// to warp tiles fed through registers; the cp.async-fed warp tiles (simt_async, simt_best's large tiles)
// are in simt_async.cu. Every kernel takes the problem of matmul.cuh (both operand layouts, any M, N,
// K >= 1, a batch walked through the grid's z dim) and an optional bias per column; edges are predicated.
//
// Grid: x = tiles along M, y = tiles along N, z = batch entries (looped when the batch is larger).
// Every kernel is a template, even those for fp32 only: NVRTC compiles each non-template kernel of a
// file into every build of it, and a call's first build should hold only the kernel it launches.
#include "matmul.cuh"

namespace kk {

// The parameter list every matmul kernel shares; Problem unpacks it.
//   (A, B, C, bias, M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags)

// The register-tile kernels' K tiles: both operands' tile at k0 (A's rows m0.., B's columns n0..) into
// registers, and from there into shared memory in layouts SA and SB.
template <typename FA, typename FB, typename T>
__device__ __forceinline__ void fetch_ab(FA& fa, FB& fb, const T* a, const T* b, const mm::Problem& p, int m0, int n0,
                                         int k0) {
  fa.fetch(a, p.lda, p.a_k, p.vec_a, m0, k0, p.M - m0, p.K - k0);
  fb.fetch(b, p.ldb, p.b_k, p.vec_b, n0, k0, p.N - n0, p.K - k0);
}
template <typename SA, typename SB, typename FA, typename FB, typename T>
__device__ __forceinline__ void store_ab(const FA& fa, const FB& fb, T* as, T* bs, const mm::Problem& p) {
  fa.template store<SA>(as, p.a_k);
  fb.template store<SB>(bs, p.b_k);
}

// One k of a thread's TM x TN register tile: the outer product of its A and B values
template <typename T, int TM, int TN>
__device__ __forceinline__ void outer_fma(T (&acc)[TM][TN], const T (&av)[TM], const T (&bv)[TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
}

// One output per thread, straight from global memory: 32 columns x 8 rows a 256-thread block.
// Cost: 2K loads a thread for 2K flops; the 32 threads of a row share A's element (a broadcast) and
// read B's row coalesced; nothing is reused across threads.
template <typename T, int EPI = 0>
__global__ void __launch_bounds__(256)
mm_naive(const T* A, const T* B, T* C, const T* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc,
         i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const T* res, i64 ldr) {
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<T> ep{bias, res, ldr};
  const int m = blockIdx.x * 8 + threadIdx.x / 32, n = blockIdx.y * 32 + threadIdx.x % 32;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    if (m < p.M && n < p.N) {
      T acc = 0;
      for (int k = 0; k < p.K; ++k)
        acc = fma(a[p.a_k ? m * p.lda + k : k * p.lda + m], b[p.b_k ? n * p.ldb + k : k * p.ldb + n], acc);
      mm::put<EPI>(C + z * p.bsc, ep, p, m, n, acc);
    }
  }
}

// Shared-memory tiles: a 32x32 block of outputs, one a thread; each K step stages a 32x32 tile of A
// and of B, so every element loaded from global memory is used 32 times. Cost: 2 shared loads a FMA.
template <typename T, int EPI = 0>
__global__ void __launch_bounds__(1024)
mm_smem(const T* A, const T* B, T* C, const T* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc,
        i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const T* res, i64 ldr) {
  constexpr int TS = 32;
  __shared__ T as[TS][TS + 1], bs[TS][TS + 1];
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<T> ep{bias, res, ldr};
  const int tx = threadIdx.x % TS, ty = threadIdx.x / TS;
  const int m0 = blockIdx.x * TS, n0 = blockIdx.y * TS;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    T acc = 0;
    for (int k0 = 0; k0 < p.K; k0 += TS) {
      // consecutive threads along each operand's contiguous dim: coalesced loads in either layout
      const int ar = p.a_k ? ty : tx, ak = p.a_k ? tx : ty, br = p.b_k ? ty : tx, bk = p.b_k ? tx : ty;
      as[ar][ak] = mm::element(a, p.lda, p.a_k, m0 + ar, k0 + ak, p.M, p.K);
      bs[bk][br] = mm::element(b, p.ldb, p.b_k, n0 + br, k0 + bk, p.N, p.K);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < TS; ++k) acc = fma(as[ty][k], bs[k][tx], acc);
      __syncthreads();
    }
    mm::put<EPI>(C + z * p.bsc, ep, p, m0 + ty, n0 + tx, acc);
  }
}

// Several outputs a thread, in a column: a 64x64 block tile, BK = 8, 512 threads each computing 8
// rows of one column. A value of B read from shared memory feeds 8 FMAs: 1.125 shared loads a FMA.
template <typename T, int EPI = 0>
__global__ void __launch_bounds__(512)
mm_column(const T* A, const T* B, T* C, const T* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
          i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const T* res, i64 ldr) {
  constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
  __shared__ T as[BM][BK], bs[BK][BN];
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<T> ep{bias, res, ldr};
  const int t = threadIdx.x, col = t % BN, rg = t / BN;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    T acc[TM] = {};
    for (int k0 = 0; k0 < p.K; k0 += BK) {
      const int ar = p.a_k ? t / BK : t % BM, ak = p.a_k ? t % BK : t / BM;
      const int br = p.b_k ? t / BK : t % BN, bk = p.b_k ? t % BK : t / BN;
      as[ar][ak] = mm::element(a, p.lda, p.a_k, m0 + ar, k0 + ak, p.M, p.K);
      bs[bk][br] = mm::element(b, p.ldb, p.b_k, n0 + br, k0 + bk, p.N, p.K);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        const T bv = bs[k][col];
#pragma unroll
        for (int i = 0; i < TM; ++i) acc[i] = fmaf(as[rg * TM + i][k], bv, acc[i]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) mm::put<EPI>(C + z * p.bsc, ep, p, m0 + rg * TM + i, n0 + col, acc[i]);
  }
}

// The 8x8 register tile, interleaved, as an outer product: 128x128 block tile, BK = 8, 16x16
// threads; thread (ty, tx) owns rows i*16 + ty and columns j*16 + tx (i, j < 8), so the 16 threads
// of a half-warp read 16 consecutive B values and a broadcast of A. Each k: 8 A and 8 B values from
// shared memory feed 64 FMAs (0.25 shared loads a FMA). Global loads are 16-byte chunks.
template <typename T, int EPI = 0>
__global__ void __launch_bounds__(256)
mm_reg8x8(const T* A, const T* B, T* C, const T* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
          i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const T* res, i64 ldr) {
  constexpr int BM = 128, BN = 128, BK = 8, kThreads = 256;
  using SA = mm::RowsR<BK + 1>;  // A as it comes: [m][k]
  using SB = mm::RowsK<BN>;      // B: [k][n]
  __shared__ T as[BM * (BK + 1)], bs[BK * BN];
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<T> ep{bias, res, ldr};
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    T acc[8][8] = {};
    mm::TileFetch<T, BM, BK, kThreads> fa;
    mm::TileFetch<T, BN, BK, kThreads> fb;
    for (int k0 = 0; k0 < p.K; k0 += BK) {
      fetch_ab(fa, fb, a, b, p, m0, n0, k0);
      store_ab<SA, SB>(fa, fb, as, bs, p);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        T av[8], bv[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) av[i] = as[SA::at(i * 16 + ty, k)];
#pragma unroll
        for (int j = 0; j < 8; ++j) bv[j] = bs[SB::at(j * 16 + tx, k)];
        outer_fma(acc, av, bv);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) mm::put<EPI>(C + z * p.bsc, ep, p, m0 + i * 16 + ty, n0 + j * 16 + tx, acc[i][j]);
  }
}

// The register tile fed by 128-bit shared loads: A stored transposed ([k][m]) so that a column of A
// is a row of shared memory; the thread's 8x8 tile is 2x2 blocks of 4x4 (rows ty*4 + 64*s, columns
// tx*4 + 64*s), each block's 4 values one LDS.128. Four shared loads feed 64 FMAs. kDouble adds
// double buffering: the next K tile is fetched into registers while this one is computed, and
// stored to the other buffer afterwards (one barrier a K tile).
template <bool kDouble, int EPI = 0>
__global__ void __launch_bounds__(256)
mm_lds128(const float* A, const float* B, float* C, const float* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
          i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const float* res, i64 ldr) {
  constexpr int BM = 128, BN = 128, BK = 8, T = 256, P = BM + 4, BUFS = kDouble ? 2 : 1;
  using S = mm::RowsK<P>;  // both operands [k][r]
  __shared__ __align__(16) float as[BUFS][BK * P], bs[BUFS][BK * P];
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<float> ep{bias, res, ldr};
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const float* a = A + z * p.bsa;
    const float* b = B + z * p.bsb;
    float acc[8][8] = {};
    mm::TileFetch<float, BM, BK, T> fa;
    mm::TileFetch<float, BN, BK, T> fb;
    const int tiles = (p.K + BK - 1) / BK;
    fetch_ab(fa, fb, a, b, p, m0, n0, 0);
    store_ab<S, S>(fa, fb, as[0], bs[0], p);
    __syncthreads();
    for (int kt = 0; kt < tiles; ++kt) {
      const int buf = kDouble ? kt & 1 : 0;
      const bool more = kt + 1 < tiles;
      if constexpr (kDouble) {
        if (more) {
          const int k0 = (kt + 1) * BK;
          fetch_ab(fa, fb, a, b, p, m0, n0, k0);
        }
      }
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float av[8], bv[8];
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const float4 x = *reinterpret_cast<const float4*>(&as[buf][S::at(s * 64 + ty * 4, k)]);
          const float4 y = *reinterpret_cast<const float4*>(&bs[buf][S::at(s * 64 + tx * 4, k)]);
          av[4 * s] = x.x; av[4 * s + 1] = x.y; av[4 * s + 2] = x.z; av[4 * s + 3] = x.w;
          bv[4 * s] = y.x; bv[4 * s + 1] = y.y; bv[4 * s + 2] = y.z; bv[4 * s + 3] = y.w;
        }
        outer_fma(acc, av, bv);
      }
      if constexpr (kDouble) {
        if (more) {
          store_ab<S, S>(fa, fb, as[buf ^ 1], bs[buf ^ 1], p);
        }
        __syncthreads();
      } else if (more) {
        const int k0 = (kt + 1) * BK;
        __syncthreads();  // every thread is done with the single buffer
        fetch_ab(fa, fb, a, b, p, m0, n0, k0);
        store_ab<S, S>(fa, fb, as[0], bs[0], p);
        __syncthreads();
      }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        mm::put<EPI>(C + z * p.bsc, ep, p, m0 + (i / 4) * 64 + ty * 4 + i % 4, n0 + (j / 4) * 64 + tx * 4 + j % 4,
                acc[i][j]);
    __syncthreads();  // the next batch entry overwrites the buffers
  }
}

// Warp tiles: the block tile splits into WM x WN warp tiles, and a warp's 32 lanes as 8 (along M) x
// 4 (along N), each lane holding (WM/8) x (WN/4) outputs in blocks of 4x4. A warp's shared loads of
// one k then touch 8 consecutive float4 of A (128 bytes, one wavefront) and 4 of B (one wavefront),
// against 2 wavefronts of B for the 16x16 thread grid. Double-buffered as mm_lds128<true>. MINB:
// the blocks an SM the registers are capped for (2 at 128x128: 128 registers, no spills, 16 warps).
template <int BM, int BN, int BK, int WM, int WN, int T, int MINB, int EPI = 0>
__global__ void __launch_bounds__(T, MINB)
mm_warp(const float* A, const float* B, float* C, const float* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
        i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const float* res, i64 ldr) {
  constexpr int WARPS_N = BN / WN, TM = WM / 8, TN = WN / 4, MS = TM / 4, NS = TN / 4;
  static_assert((BM / WM) * (BN / WN) * 32 == T, "one warp a warp tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "lane tiles of whole 4x4 blocks");
  constexpr int PA = BM + 4, PB = BN + 4;
  using SA = mm::RowsK<PA>;
  using SB = mm::RowsK<PB>;
  __shared__ __align__(16) float as[2][BK * PA], bs[2][BK * PB];
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<float> ep{bias, res, ldr};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int lm = lane / 4, ln = lane % 4;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const float* a = A + z * p.bsa;
    const float* b = B + z * p.bsb;
    float acc[TM][TN] = {};
    mm::TileFetch<float, BM, BK, T> fa;
    mm::TileFetch<float, BN, BK, T> fb;
    const int tiles = (p.K + BK - 1) / BK;
    fetch_ab(fa, fb, a, b, p, m0, n0, 0);
    store_ab<SA, SB>(fa, fb, as[0], bs[0], p);
    __syncthreads();
    for (int kt = 0; kt < tiles; ++kt) {
      const int buf = kt & 1;
      const bool more = kt + 1 < tiles;
      if (more) {
        const int k0 = (kt + 1) * BK;
        fetch_ab(fa, fb, a, b, p, m0, n0, k0);
      }
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float av[TM], bv[TN];
#pragma unroll
        for (int s = 0; s < MS; ++s) {
          const float4 x = *reinterpret_cast<const float4*>(&as[buf][SA::at(wm0 + s * (WM / MS) + lm * 4, k)]);
          av[4 * s] = x.x; av[4 * s + 1] = x.y; av[4 * s + 2] = x.z; av[4 * s + 3] = x.w;
        }
#pragma unroll
        for (int s = 0; s < NS; ++s) {
          const float4 y = *reinterpret_cast<const float4*>(&bs[buf][SB::at(wn0 + s * (WN / NS) + ln * 4, k)]);
          bv[4 * s] = y.x; bv[4 * s + 1] = y.y; bv[4 * s + 2] = y.z; bv[4 * s + 3] = y.w;
        }
        outer_fma(acc, av, bv);
      }
      if (more) {
        store_ab<SA, SB>(fa, fb, as[buf ^ 1], bs[buf ^ 1], p);
      }
      __syncthreads();
    }
    float* c = C + z * p.bsc;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + wm0 + (i / 4) * (WM / MS) + lm * 4 + i % 4;
#pragma unroll
      for (int s = 0; s < NS; ++s) {  // a lane's 4 consecutive columns: one 16-byte store
        const float v[4] = {acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2], acc[i][4 * s + 3]};
        mm::put4<EPI>(c, ep, p, m, n0 + wn0 + s * (WN / NS) + ln * 4, v);
      }
    }
    __syncthreads();
  }
}

}  // namespace kk
