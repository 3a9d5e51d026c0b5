// scaled_matmul: C = (A @ B) * scale_a * scale_b (+ bias), A (M x K) and B (K x N) in fp8 (e4m3 or
// e5m2), torch._scaled_mm's semantics with per-tensor scales read from device memory.
//
// Hopper (sm_90a): both operands are K-major (A row-major, B column-major), loaded by the TMA with the
// 128-byte swizzle: a K tile of 128 fp8 elements is one 128-byte line a row, a stage the 128 x 128 A
// tile then the BN x 128 B tile (BN = 128, 192 or 256). Two consumer warpgroups of 64 rows each issue
// wgmma m64nBNk32 (four a stage) into fp32 accumulators. Accumulation, two forms (kPromote):
// - promoted (torch's default, use_fast_accum=False): the tensor cores' fp8 accumulation keeps fewer
//   bits than fp32, so each stage's four MMAs start a fresh partial sum (scale-d = 0) that is added
//   into fp32 registers once they are done: one rounding of the tensor cores' sum per 128 K;
// - fast (use_fast_accum=True): the MMAs accumulate across all of K.
// Rungs: f8_tma_wgmma (256 threads, thread 0 issues the copies, a block barrier before a stage is
// refilled) and f8_ws (warp specialization: a producer warpgroup with 40 registers, two consumers with
// 232, full / empty mbarriers per stage). Epilogue: acc * (scale_a * scale_b) + bias rounded once to
// TOut, staged as a C tile in the ring, then written in 16-byte row chunks (element by element where
// a chunk crosses N or its address is off the 16-byte grid).
//
// Portable path (any GPU): fp8_widen decodes an fp8 matrix to fp32 (exact: fp8 values are fp32 and
// tf32 values), the matmul ladder multiplies (tf32 tensor cores, fp32 accumulation), fp8_scale_out
// applies the scales and bias and rounds.
#include "hopper_fp8.cuh"

namespace kk {
namespace f8 {

constexpr int BM = 128, BK = 128;  // rows of C a block; K elements (bytes) a stage: one swizzle line

template <int kA, int kB, int BN>
struct Stage {
  static constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, BYTES = A_BYTES + B_BYTES;

  // One thread: the two boxes of the K tile at k0 into the stage at s, counted on bar.
  __device__ __forceinline__ static void load(unsigned char* s, const hop::TensorMap* ta, const hop::TensorMap* tb,
                                              int m0, int n0, int k0, unsigned long long* bar) {
    mbar_expect_bytes(bar, BYTES);
    hop::tma_load(s, ta, k0, m0, 0, bar);
    hop::tma_load(s + A_BYTES, tb, k0, n0, 0, bar);
  }

  // Warpgroup wg's four K steps of 32 on the stage at s: its 64 rows of A (8192 bytes) against BN
  // rows of B. add = false: the first step overwrites d.
  __device__ __forceinline__ static void mma(float (&d)[BN / 2], const unsigned char* s, int wg, bool add) {
#pragma unroll
    for (int k = 0; k < BK / 32; ++k) {
      const unsigned char* a = s + wg * 8192 + 32 * k;
      const unsigned char* b = s + A_BYTES + 32 * k;
      hop::qgmma<kA, kB, BN>(d, hop::sw128_desc(a, 16, 1024), hop::sw128_desc(b, 16, 1024), (add || k > 0) ? 1 : 0);
    }
  }
};

// Warpgroup wg's accumulators times the scale, plus the bias (bs, in shared memory), rounded to T into
// the tile at t.
template <typename T, int BN>
__device__ __forceinline__ void stage_out(const float (&d)[BN / 2], T* t, const float* bs, float scale, int wg,
                                          int ct) {
  hop::stage_acc<BN>(d, t, bs, wg, ct, [scale](float acc, float b) { return fmaf(acc, scale, b); });
}

}  // namespace f8

// 256 threads, both warpgroups consume; thread 0 issues the copies. Dynamic shared memory:
// 1024 + STAGES * (128 + BN) * 128 bytes.
template <int kA, int kB, typename TOut, int BN, int STAGES, bool kPromote>
__global__ void __launch_bounds__(256, 1)
f8_tma_wgmma(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, TOut* C,
             const TOut* bias, const float* scale_a, const float* scale_b, i64 M, i64 N, i64 K, i64 ldc) {
  using S = f8::Stage<kA, kB, BN>;
  static_assert(hop::staged_tile_fits<BN, STAGES, sizeof(TOut)>(), "the epilogue's C tile reuses the stages");
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x, wg = tid / 128;
  const int Mi = (int)M, Ni = (int)N, ktiles = (int)((K + f8::BK - 1) / f8::BK);
  int m0, n0;
  hop::tile_of<f8::BM, BN>(Mi, Ni, m0, n0);
  if (tid == 0) hop::init_ring<STAGES>(&ta, &tb, full);
  __syncthreads();
  if (tid == 0) {
    for (int s = 0; s < STAGES && s < ktiles; ++s) S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, s * f8::BK, &full[s]);
  }
  hop::load_bias<BN>(bias_s, bias, n0, Ni, tid, 256);  // seen after the block barriers below
  float acc[BN / 2], part[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = part[i] = 0.0f;
  hop::pin(acc);
  // The ring written out, not through hop::ring_fill / ring_consume as mm_tma_wgmma: with them ptxas
  // scheduled this kernel differently (its SASS changed), where that of f8_ws and mm_tma_wgmma did not.
  for (int kt = 0; kt < ktiles; ++kt) {
    const int slot = kt % STAGES;
    mbar_wait(&full[slot], (kt / STAGES) & 1);
    hop::wg_fence();
    if constexpr (kPromote) {
      S::mma(part, smem + slot * S::BYTES, wg, false);
      hop::wg_commit();
      hop::wg_wait<0>();
      hop::pin(part);
      __syncthreads();  // both warpgroups are done with this stage
      const int next = kt + STAGES;
      if (tid == 0 && next < ktiles) S::load(smem + slot * S::BYTES, &ta, &tb, m0, n0, next * f8::BK, &full[slot]);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] += part[i];
    } else {
      S::mma(acc, smem + slot * S::BYTES, wg, true);
      hop::wg_commit();
      hop::wg_wait<1>();  // this warpgroup's MMAs of K tile kt - 1 are done
      __syncthreads();    // and the other's: that stage may be refilled
      const int next = kt - 1 + STAGES;
      if (tid == 0 && kt >= 1 && next < ktiles) {
        const int s = (kt - 1) % STAGES;
        S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, next * f8::BK, &full[s]);
      }
    }
  }
  hop::wg_wait<0>();
  hop::pin(acc);
  const float scale = __ldg(scale_a) * __ldg(scale_b);
  __syncthreads();  // every MMA has read its stage: the ring holds the C tile now
  TOut* tile = reinterpret_cast<TOut*>(smem);
  f8::stage_out<TOut, BN>(acc, tile, bias_s, scale, wg, tid);
  __syncthreads();
  hop::copy_staged<BN>(tile, C, ldc, m0, n0, Mi, Ni, tid, 256);
}

// Warp specialization, 384 threads: warpgroup 0 produces (40 registers), warpgroups 1 and 2 consume
// (232); a consumer thread arrives on a stage's "empty" mbarrier once its warpgroup's MMAs on it are done.
template <int kA, int kB, typename TOut, int BN, int STAGES, bool kPromote>
__global__ void __launch_bounds__(384, 1)
f8_ws(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, TOut* C,
      const TOut* bias, const float* scale_a, const float* scale_b, i64 M, i64 N, i64 K, i64 ldc) {
  using S = f8::Stage<kA, kB, BN>;
  static_assert(hop::staged_tile_fits<BN, STAGES, sizeof(TOut)>(), "the epilogue's C tile reuses the stages");
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES], empty[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x;
  const int Mi = (int)M, Ni = (int)N, ktiles = (int)((K + f8::BK - 1) / f8::BK);
  int m0, n0;
  hop::tile_of<f8::BM, BN>(Mi, Ni, m0, n0);
  if (tid == 0) hop::init_ring<STAGES, 256>(&ta, &tb, full, empty);  // 256 consumer threads empty a stage
  __syncthreads();
  if (tid < 128) {
    hop::regs_release<40>();
    if (tid == 0) {
      hop::ring_produce<STAGES>(ktiles, empty, [&](int s, int kt) {
        S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, kt * f8::BK, &full[s]);
      });
    }
  } else {
    hop::regs_claim<232>();
    const int ct = tid - 128, wg = ct / 128;
    hop::load_bias<BN>(bias_s, bias, n0, Ni, ct, 256);  // seen after the consumers' barrier below
    float acc[BN / 2], part[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = part[i] = 0.0f;
    hop::pin(acc);
    if constexpr (kPromote) {
      auto mma = [&](int slot) { S::mma(part, smem + slot * S::BYTES, wg, false); };
      hop::ring_consume<STAGES, 0>(ktiles, full, mma, [&](int kt) {
        hop::pin(part);
        hop::bar_arrive(&empty[kt % STAGES]);  // the stage goes back while the partial sum is added
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] += part[i];
      });
    } else {  // once the MMAs of K tile kt - 1 are done, its stage goes back to the producer
      hop::ring_consume<STAGES>(ktiles, full, [&](int slot) { S::mma(acc, smem + slot * S::BYTES, wg, true); },
                                [&](int kt) { if (kt > 0) hop::bar_arrive(&empty[(kt - 1) % STAGES]); });
    }
    hop::wg_wait<0>();
    hop::pin(acc);
    const float scale = __ldg(scale_a) * __ldg(scale_b);
    hop::named_sync(1, 256);  // both consumer warpgroups are past their last MMA
    TOut* tile = reinterpret_cast<TOut*>(smem);
    f8::stage_out<TOut, BN>(acc, tile, bias_s, scale, wg, ct);
    hop::named_sync(1, 256);
    hop::copy_staged<BN>(tile, C, ldc, m0, n0, Mi, Ni, ct, 256);
  }
}

// ---- the portable path ---------------------------------------------------------------------------

// An fp8 byte to fp32, exactly. e5m2 is the upper byte of an fp16 (same exponent bias, infinities and
// NaNs included). e4m3 (bias 7, no infinities, S.1111.111 the only NaN): its 7 magnitude bits shifted
// into an fp16's exponent and mantissa give the value times 2^-8, normal or subnormal alike.
template <int kFmt>
__device__ __forceinline__ float fp8_to_float(unsigned char b) {
  if constexpr (kFmt == hop::kE5M2) {
    return __half2float(__ushort_as_half((unsigned short)(b << 8)));
  } else {
    if ((b & 0x7F) == 0x7F) return __int_as_float(0x7FC00000);
    const unsigned short h = (unsigned short)(((b & 0x80) << 8) | ((b & 0x7F) << 7));
    return __half2float(__ushort_as_half(h)) * 256.0f;
  }
}

// out (rows x cols, contiguous fp32) <- in (rows of cols bytes, ld bytes apart), decoded.
template <int kFmt>
__global__ void __launch_bounds__(256)
fp8_widen(const unsigned char* __restrict__ in, float* __restrict__ out, i64 rows, i64 cols, i64 ld) {
  const i64 total = rows * cols, stride = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const i64 r = i / cols, c = i - r * cols;
    out[i] = fp8_to_float<kFmt>(in[r * ld + c]);
  }
}

// out (M x N, rows ldo apart) <- c * (scale_a * scale_b) + bias, rounded once; c contiguous fp32.
template <typename TOut>
__global__ void __launch_bounds__(256)
fp8_scale_out(const float* __restrict__ c, TOut* __restrict__ out, const TOut* __restrict__ bias,
              const float* __restrict__ scale_a, const float* __restrict__ scale_b, i64 M, i64 N, i64 ldo) {
  const float scale = __ldg(scale_a) * __ldg(scale_b);
  const i64 total = M * N, stride = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const i64 r = i / N, n = i - r * N;
    const float b = bias ? to_float(bias[n]) : 0.0f;
    out[r * ldo + n] = from_float<TOut>(fmaf(c[i], scale, b));
  }
}

}  // namespace kk
