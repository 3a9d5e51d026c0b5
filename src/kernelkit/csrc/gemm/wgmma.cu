// Matrix multiplication on Hopper's warpgroup tensor cores (sm_90a): operand tiles brought into shared
// memory by the TMA (tensor maps built on the host from the operands' strides, 128-byte swizzle),
// completion counted on mbarriers, a ring of STAGES tiles, wgmma reading both operands from shared
// memory into fp32 accumulators in registers. fp16 and bf16.
//
// A block computes a 128 x BN tile of C (BN = 128 or 256) with two consumer warpgroups of 64 rows each
// (m64nBNk16: BN / 2 accumulators a thread), K in tiles of 64 elements (one 128-byte swizzle line).
// Two rungs share the stage and the epilogue:
// - mm_tma_wgmma: 256 threads, all consumers; thread 0 also issues the copies. A stage is refilled once
//   both warpgroups' MMAs on it are done (wgmma.wait_group 1 keeps one K tile of MMAs in flight, then
//   a block barrier).
// - mm_ws: warp specialization, 384 threads. Warpgroup 0 is the producer: it gives registers back
//   (setmaxnreg.dec) and one thread issues the copies, waiting on an "empty" mbarrier per stage; the two
//   consumer warpgroups take the registers (setmaxnreg.inc), wait on the "full" mbarrier, and arrive on
//   "empty" once their MMAs on a stage are done. No block-wide barrier in the main loop.
// Split-K (splitk.cuh): grid y is the number of K slices; block y takes slice y's K tiles, and where
// there is more than one slice the tile's blocks meet in the workspace `ws` (tickets in `tickets`), the
// last one summing the partials in slice order before the epilogue below.
// Edges: the TMA zero-fills the parts of a box outside the tensor (M, N and K tails), and the epilogue
// writes only inside C. The epilogue stages the C tile (plus bias, rounded to T) in shared memory and
// writes it as 16-byte row chunks where the row and the address allow, element by element otherwise.
// linear's fused epilogues (EPI other than mm::kPlain) stage the tile in fp32 instead and apply the
// activation and the residual on the way out, so that the result is rounded once.
#include "hopper.cuh"
#include "matmul.cuh"
#include "splitk.cuh"

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
    if constexpr (kAK) {
      tma_load(s, ta, k0, m0, za, bar);
    } else {
#pragma unroll
      for (int i = 0; i < BM / 64; ++i) tma_load(s + i * 8192, ta, m0 + 64 * i, k0, za, bar);
    }
    if constexpr (kBK) {
      tma_load(s + A_BYTES, tb, k0, n0, zb, bar);
    } else {
#pragma unroll
      for (int i = 0; i < BN / 64; ++i) tma_load(s + A_BYTES + i * 8192, tb, n0 + 64 * i, k0, zb, bar);
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

// The fused epilogues: the staged fp32 tile (plus bias) through the activation, plus the residual
// (row stride ldr; null: none), rounded once to T and written as copy_staged writes. The residual is read
// in the same 16-byte row chunks as C is written, coalesced along the row.
// Why fp32 staging rather than activation and residual before staging: applied to the accumulators,
// the residual would be read in the wgmma fragment's pattern, 4-byte pairs of 8 rows a warp load (4x
// the load instructions of 16-byte chunks, half of each 32-byte sector a load); the fp32 tile (132 KB
// at BN = 256, 68 KB at 128) fits in the ring the stages leave free (192 KB at 4 stages of 256, 224 KB
// at 7 of 128), and the activation costs the same in either place.
template <typename T, int BN, int EPI>
__device__ __forceinline__ void copy_out_fused(const float* t, T* C, i64 ldc, const T* res, i64 ldr, int m0, int n0,
                                               int M, int N, int ct, int threads) {
  // a round's residual chunks are all loaded before any is used: RB loads in flight instead of one
  // DRAM latency exposed a chunk (the epilogue does not overlap the main loop)
  constexpr int CPR = BN / 8, P = staged_pitch<BN>(), RB = 8;
  for (int i0 = ct; i0 < BM * CPR; i0 += RB * threads) {
    uint4 rv[RB];
#pragma unroll
    for (int u = 0; u < RB; ++u) {
      const int i = i0 + u * threads, r = i / CPR, c = (i % CPR) * 8, m = m0 + r, n = n0 + c;
      rv[u] = make_uint4(0, 0, 0, 0);
      if (!res || i >= BM * CPR || m >= M || n >= N) continue;
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
      if (i >= BM * CPR || m >= M || n >= N) continue;
      const float4 lo = *reinterpret_cast<const float4*>(t + r * P + c);
      const float4 hi = *reinterpret_cast<const float4*>(t + r * P + c + 4);
      float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      T rt[8];
      memcpy(rt, &rv[u], 16);
      T o[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] = from_float<T>(mm::activate<EPI>(v[e]) + to_float(rt[e]));
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
    copy_out_fused<T, BN, EPI>(tile, C, ldc, res, ldr, m0, n0, M, N, ct, 256);
  }
}

}  // namespace hop

// C[z] = A[z] @ B[z] (+ bias): ta / tb the tensor maps of A (K, M, batch) or (M, K, batch) and B
// likewise (innermost first), flags bit 0 / 1: A / B have a batch dim (else z = 0 for them), bits 8-15:
// the rows of A's box over 8 where it is shorter than the tile (a k-major A of few rows; 0: 128). With
// gridDim.y > 1 slices of K: ws holds gridDim.x * gridDim.z * gridDim.y partial tiles of 128 x BN
// floats, tickets one counter a tile (0 at launch; left at 0).
// Dynamic shared memory: 1024 + STAGES * (128 + BN) * 128 bytes.
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(256, 1)
mm_tma_wgmma(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, T* C,
             const T* bias, i64 M, i64 N, i64 K, i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr, float* ws,
             unsigned* tickets) {
  using S = hop::Stage<T, BN, kAK, kBK>;
  static_assert(hop::staged_tile_fits<BN, STAGES, EPI == mm::kPlain ? 2 : 4>(),
                "the epilogue's C tile reuses the stages");
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x, wg = tid / 128;
  const int Mi = (int)M, Ni = (int)N, slices = gridDim.y;
  int kt0, ktiles;  // this block's K tiles: [kt0, kt0 + ktiles)
  hop::k_slice((int)((K + hop::BK - 1) / hop::BK), blockIdx.y, slices, kt0, ktiles);
  int m0, n0;
  hop::tile_of<hop::BM, BN>(Mi, Ni, m0, n0);
  const int z = blockIdx.z;
  const int za = (flags & 1) ? z : 0, zb = (flags & 2) ? z : 0;
  const int a_bytes = hop::a_box_bytes(flags);
  if (tid == 0) hop::init_ring<STAGES>(&ta, &tb, full);
  __syncthreads();
  if (tid == 0) {
    for (int s = 0; s < STAGES && s < ktiles; ++s)
      S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, (kt0 + s) * hop::BK, za, zb, &full[s], a_bytes);
  }
  hop::load_bias<BN>(bias_s, bias, n0, Ni, tid, 256);  // seen after the main loop's block barriers
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
  hop::pin(d);
  for (int kt = 0; kt < ktiles; ++kt) {
    const int slot = kt % STAGES;
    mbar_wait(&full[slot], (kt / STAGES) & 1);
    hop::wg_fence();
    S::mma(d, smem + slot * S::BYTES, wg);
    hop::wg_commit();
    hop::wg_wait<1>();  // this warpgroup's MMAs of K tile kt - 1 are done
    __syncthreads();    // and the other's: the stage of kt - 1 may be refilled
    const int next = kt - 1 + STAGES;
    if (tid == 0 && kt >= 1 && next < ktiles) {
      const int s = (kt - 1) % STAGES;
      S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, (kt0 + next) * hop::BK, za, zb, &full[s], a_bytes);
    }
  }
  hop::wg_wait<0>();
  hop::pin(d);
  if (slices > 1 && !hop::split_meet<hop::BM, BN>(d, ws, tickets, z * gridDim.x + blockIdx.x, blockIdx.y, slices,
                                                  min(Mi - m0, hop::BM), tid, 0))
    return;  // another slice's block finishes the tile
  __syncthreads();  // every MMA has read its stage: the stages hold the C tile now
  hop::epilogue<T, BN, EPI>(d, smem, C + z * bsc, ldc, bias_s, res, ldr, m0, n0, Mi, Ni, wg, tid,
                            [] { __syncthreads(); });
}

// The same tile with warp specialization: warpgroup 0 produces (40 registers a thread), warpgroups 1
// and 2 consume (232), full / empty mbarrier pairs per stage; consumers sync among themselves only
// (named barrier 1) for the epilogue.
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(384, 1)
mm_ws(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, T* C, const T* bias,
      i64 M, i64 N, i64 K, i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr, float* ws, unsigned* tickets) {
  using S = hop::Stage<T, BN, kAK, kBK>;
  static_assert(hop::staged_tile_fits<BN, STAGES, EPI == mm::kPlain ? 2 : 4>(),
                "the epilogue's C tile reuses the stages");
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES], empty[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x;
  const int Mi = (int)M, Ni = (int)N, slices = gridDim.y;
  int kt0, ktiles;  // this block's K tiles: [kt0, kt0 + ktiles)
  hop::k_slice((int)((K + hop::BK - 1) / hop::BK), blockIdx.y, slices, kt0, ktiles);
  int m0, n0;
  hop::tile_of<hop::BM, BN>(Mi, Ni, m0, n0);
  const int z = blockIdx.z;
  const int za = (flags & 1) ? z : 0, zb = (flags & 2) ? z : 0;
  const int a_bytes = hop::a_box_bytes(flags);
  if (tid == 0) hop::init_ring<STAGES, 256>(&ta, &tb, full, empty);  // 256 consumer threads empty a stage
  __syncthreads();
  if (tid < 128) {
    hop::regs_release<40>();
    if (tid == 0) {
      for (int kt = 0; kt < ktiles; ++kt) {
        const int slot = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[slot], (kt / STAGES - 1) & 1);  // K tile kt - STAGES consumed
        S::load(smem + slot * S::BYTES, &ta, &tb, m0, n0, (kt0 + kt) * hop::BK, za, zb, &full[slot], a_bytes);
      }
    }
  } else {
    hop::regs_claim<232>();
    const int ct = tid - 128, wg = ct / 128;
    hop::load_bias<BN>(bias_s, bias, n0, Ni, ct, 256);  // seen after the consumers' barrier below
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    hop::pin(d);
    for (int kt = 0; kt < ktiles; ++kt) {
      const int slot = kt % STAGES;
      mbar_wait(&full[slot], (kt / STAGES) & 1);
      hop::wg_fence();
      S::mma(d, smem + slot * S::BYTES, wg);
      hop::wg_commit();
      hop::wg_wait<1>();  // the MMAs of K tile kt - 1 are done: its stage goes back to the producer
      if (kt > 0) hop::bar_arrive(&empty[(kt - 1) % STAGES]);
    }
    hop::wg_wait<0>();
    hop::pin(d);
    if (slices > 1 && !hop::split_meet<hop::BM, BN>(d, ws, tickets, z * gridDim.x + blockIdx.x, blockIdx.y,
                                                    slices, min(Mi - m0, hop::BM), ct, 1))
      return;  // another slice's block finishes the tile
    hop::named_sync(1, 256);  // both consumer warpgroups are past their last MMA
    hop::epilogue<T, BN, EPI>(d, smem, C + z * bsc, ldc, bias_s, res, ldr, m0, n0, Mi, Ni, wg, ct,
                              [] { hop::named_sync(1, 256); });
  }
}

}  // namespace kk
