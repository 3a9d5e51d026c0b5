// The pieces the Hopper fp16/bf16 kernels (wgmma.cu, wgmma_persistent.cu) share: a pipeline stage of
// TMA-loaded A and B tiles with its wgmma sequence, and the epilogue that stages C in shared memory and
// writes it out (plain, or linear's fused activation and residual).
#pragma once
#include "gelu_fast.cuh"
#include "hopper.cuh"
#include "matmul.cuh"

namespace kk {
namespace hop {

constexpr int BM = 128, BK = 64;

// The bytes of A's box a stage (flags bits 8-15: its rows over 8; 0: the tile's 128 rows).
__device__ __forceinline__ int a_box_bytes(i64 flags) {
  const int r8 = (int)((flags >> 8) & 0xFF);
  return (r8 ? 8 * r8 : BM) * BK * 2;
}

// One pipeline stage: the A tile (BM x BK) then the B tile (BN x BK), each as swizzle atoms.
// kAK / kBK: the operand is k-major in memory (A row-major, B = w.t()); else m- / n-major.
template <typename T, int BN, bool kAK, bool kBK>
struct Stage {
  static_assert(sizeof(T) == 2, "16-bit operands: a K tile of 64 is one 128-byte line");
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, BYTES = A_BYTES + B_BYTES;

  // One thread: the copies of the K tile starting at k0 into the stage at s, all counted on bar. A
  // k-major operand is one box (K 64 wide, rows deep); an m- or n-major one is a box per 64 rows.
  // a_bytes: the bytes of A's box (a k-major A of M < 128 rows may come in a box of fewer rows: the
  // rows past it keep whatever the stage held, and only feed rows of C past M, never written).
  __device__ __forceinline__ static void load(unsigned char* s, const TensorMap* ta, const TensorMap* tb, int m0,
                                              int n0, int k0, int za, int zb, unsigned long long* bar,
                                              int a_bytes) {
    mbar_expect_bytes(bar, a_bytes + B_BYTES);
    load_a(s, ta, m0, k0, za, bar);
    if constexpr (kBK) {
      tma_load(s + A_BYTES, tb, k0, n0, zb, bar);
    } else {
#pragma unroll
      for (int i = 0; i < BN / 64; ++i) tma_load(s + A_BYTES + i * 8192, tb, n0 + 64 * i, k0, zb, bar);
    }
  }

  // load for the CTA of rank `rank` in a cluster of two that share the B tile (their A tiles are 128 rows
  // apart): its own A, and half of B multicast into both CTAs, so that each stage reads B from L2 once
  // for the pair. The bar of each CTA counts the whole stage (its A and both halves of B). A k-major B's
  // tensor map has a box of BN / 2 rows here.
  __device__ __forceinline__ static void load_shared_b(unsigned char* s, const TensorMap* ta, const TensorMap* tb,
                                                       int m0, int n0, int k0, int za, int zb,
                                                       unsigned long long* bar, int a_bytes, unsigned rank) {
    mbar_expect_bytes(bar, a_bytes + B_BYTES);
    load_a(s, ta, m0, k0, za, bar);
    if constexpr (kBK) {
      tma_load_multicast(s + A_BYTES + rank * (B_BYTES / 2), tb, k0, n0 + rank * (BN / 2), zb, bar, 0x3);
    } else {
#pragma unroll
      for (int h = 0; h < BN / 128; ++h) {
        const int i = rank * (BN / 128) + h;
        tma_load_multicast(s + A_BYTES + i * 8192, tb, n0 + 64 * i, k0, zb, bar, 0x3);
      }
    }
  }

  __device__ __forceinline__ static void load_a(unsigned char* s, const TensorMap* ta, int m0, int k0, int za,
                                                unsigned long long* bar) {
    if constexpr (kAK) {
      tma_load(s, ta, k0, m0, za, bar);
    } else {
#pragma unroll
      for (int i = 0; i < BM / 64; ++i) tma_load(s + i * 8192, ta, m0 + 64 * i, k0, za, bar);
    }
  }

  // Warpgroup wg's MMAs on the stage at s: its 64 rows of A (8192 bytes into the A tile in either
  // layout) against the BN columns of B, four steps of K = 16.
  __device__ __forceinline__ static void mma(float (&d)[BN / 2], const unsigned char* s, int wg) {
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) {
      const unsigned char* a = s + wg * 8192 + (kAK ? 32 : 2048) * k;
      const unsigned char* b = s + A_BYTES + (kBK ? 32 : 2048) * k;
      wgmma<T, BN, kAK ? 0 : 1, kBK ? 0 : 1>(d, sw128_desc(a, kAK ? 16 : 8192, 1024),
                                            sw128_desc(b, kBK ? 16 : 8192, 1024));
    }
  }
};

// Warpgroup wg's accumulators plus the bias (bs, in shared memory) into the C tile staged at t (S: T
// rounded, or fp32 for a fused epilogue).
template <typename S, int BN>
__device__ __forceinline__ void stage_out(const float (&d)[BN / 2], S* t, const float* bs, int wg, int ct) {
  stage_acc<BN>(d, t, bs, wg, ct, [](float acc, float b) { return acc + b; });
}

// The plain epilogue of the tma_store rung: warpgroup wg's accumulators plus the bias, rounded to T, into
// BN / 64 boxes of 128 rows x 64 columns (16 KB each, 1024-aligned at t), each the 128-byte swizzle the C
// tensor map's TMA store reads: row r's 16-byte chunk c at chunk c ^ (r % 8). A lane's pair (row g of 8,
// columns 2q, 2q + 1 of chunk j) then lands in chunk j ^ g: the 8 rows of a store in distinct chunks, no
// bank conflict (the padded staging's pitch, BN + 8, is what does that for copy_staged).
template <typename T, int BN>
__device__ __forceinline__ void stage_boxes(const float (&d)[BN / 2], unsigned char* t, const float* bs, int wg, int ct) {
  const int w = (ct % 128) / 32, l = ct % 32, g = l / 4, q = l % 4;
  const int r = wg * 64 + w * 16 + g;  // and r + 8: the same r % 8
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int c = 8 * j + 2 * q;
    const float2 b = *reinterpret_cast<const float2*>(bs + c);
    unsigned char* box = t + (j / 8) * 16384 + (((j % 8) ^ g) << 4) + 4 * q;
    put_pair(reinterpret_cast<T*>(box + r * 128), d[4 * j] + b.x, d[4 * j + 1] + b.y);
    put_pair(reinterpret_cast<T*>(box + (r + 8) * 128), d[4 * j + 2] + b.x, d[4 * j + 3] + b.y);
  }
}

// The fused epilogues: the staged fp32 tile (plus bias) through the activation, plus the residual
// (row stride ldr; null: none), rounded once to T and written as copy_staged writes. GELU's erf form
// without a residual takes gelu_erf_16bit (5.9e-5 relative error, a tenth of fp16's half ulp, in 12
// instructions where erff takes ~27); with a residual the sum may cancel, so it keeps erff. The residual is read
// in the same 16-byte row chunks as C is written, coalesced along the row.
// Why fp32 staging rather than activation and residual before staging: applied to the accumulators,
// the residual would be read in the wgmma fragment's pattern, 4-byte pairs of 8 rows a warp load (4x
// the load instructions of 16-byte chunks, half of each 32-byte sector a load); the fp32 tile (132 KB
// at BN = 256, 68 KB at 128) fits in the ring the stages leave free (192 KB at 4 stages of 256, 224 KB
// at 7 of 128), and the activation costs the same in either place.
// ROWS: the staged tile's rows (128; the persistent kernel stages 64 at a time). kFastGelu: EPI is kGelu
// and there is no residual, so gelu_erf_16bit serves (copy_out_act picks it).
template <typename T, int BN, int EPI, int ROWS = BM, bool kFastGelu = false>
__device__ __forceinline__ void copy_out_fused(const float* t, T* C, i64 ldc, const T* res, i64 ldr, int m0, int n0,
                                               int M, int N, int ct, int threads) {
  // a round's residual chunks are all loaded before any is used: RB loads in flight instead of one
  // DRAM latency exposed a chunk (the epilogue does not overlap the main loop)
  constexpr int CPR = BN / 8, P = staged_pitch<BN>(), RB = 8;
  for (int i0 = ct; i0 < ROWS * CPR; i0 += RB * threads) {
    uint4 rv[RB];
#pragma unroll
    for (int u = 0; u < RB; ++u) {
      const int i = i0 + u * threads, r = i / CPR, c = (i % CPR) * 8, m = m0 + r, n = n0 + c;
      rv[u] = make_uint4(0, 0, 0, 0);
      if (!res || i >= ROWS * CPR || m >= M || n >= N) continue;
      const T* src = res + (i64)m * ldr + n;
      if (n + 8 <= N && (reinterpret_cast<unsigned long long>(src) & 15) == 0) {
        rv[u] = *reinterpret_cast<const uint4*>(src);
      } else {
        T e8[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) e8[e] = n + e < N ? src[e] : from_float<T>(0.0f);
        memcpy(&rv[u], e8, 16);
      }
    }
#pragma unroll
    for (int u = 0; u < RB; ++u) {
      const int i = i0 + u * threads, r = i / CPR, c = (i % CPR) * 8, m = m0 + r, n = n0 + c;
      if (i >= ROWS * CPR || m >= M || n >= N) continue;
      const float4 lo = *reinterpret_cast<const float4*>(t + r * P + c);
      const float4 hi = *reinterpret_cast<const float4*>(t + r * P + c + 4);
      float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      T rt[8];
      memcpy(rt, &rv[u], 16);
      T o[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        if constexpr (kFastGelu) o[e] = from_float<T>(gelu_erf_16bit(v[e]));  // no residual: rounded once
        else o[e] = from_float<T>(mm::activate<EPI>(v[e]) + to_float(rt[e]));
      }
      T* dst = C + (i64)m * ldc + n;
      if (n + 8 <= N && (reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
        uint4 w;
        memcpy(&w, o, 16);
        *reinterpret_cast<uint4*>(dst) = w;
      } else {
        for (int e = 0; e < 8 && n + e < N; ++e) dst[e] = o[e];
      }
    }
  }
}

// copy_out_fused with GELU's erf form through gelu_erf_16bit where there is no residual to cancel against
// (the result is rounded once to 16 bits), erff otherwise.
template <typename T, int BN, int EPI, int ROWS = BM>
__device__ __forceinline__ void copy_out_act(const float* t, T* C, i64 ldc, const T* res, i64 ldr, int m0, int n0,
                                             int M, int N, int ct, int threads) {
  if (EPI == mm::kGelu && !res) copy_out_fused<T, BN, EPI, ROWS, true>(t, C, ldc, res, ldr, m0, n0, M, N, ct, threads);
  else copy_out_fused<T, BN, EPI, ROWS>(t, C, ldc, res, ldr, m0, n0, M, N, ct, threads);
}

// The epilogue after the last MMA (the tile's shared memory free): stage, a barrier of the consumer
// threads (sync), write out. kPlain stages T; the fused epilogues fp32.
template <typename T, int BN, int EPI, typename Sync>
__device__ __forceinline__ void epilogue(const float (&d)[BN / 2], unsigned char* smem, T* C, i64 ldc, const float* bs,
                                         const T* res, i64 ldr, int m0, int n0, int M, int N, int wg, int ct,
                                         Sync sync) {
  if constexpr (EPI == mm::kPlain) {
    T* tile = reinterpret_cast<T*>(smem);
    stage_out<T, BN>(d, tile, bs, wg, ct);
    sync();
    copy_staged<BN>(tile, C, ldc, m0, n0, M, N, ct, 256);
  } else {
    float* tile = reinterpret_cast<float*>(smem);
    stage_out<float, BN>(d, tile, bs, wg, ct);
    sync();
    copy_out_act<T, BN, EPI>(tile, C, ldc, res, ldr, m0, n0, M, N, ct, 256);
  }
}

}  // namespace hop
}  // namespace kk
