// The cp.async-fed SIMT kernel of C = A @ B in fp32 (rung simt_async, and simt_best where its 128x256
// tiles cover every SM) with its tile loader. Its warp tiles are laid out as mm_warp's (simt.cu), but the
// operands reach shared memory by cp.async, each in the layout it has in memory, instead of through
// registers. The problem, the register fetch (simt_best's k-major A) and the epilogue come from
// matmul.cuh; cp.async and its commit groups from mma.cuh.
#include "mma.cuh"

namespace kk {

namespace mm {

// 4 bytes from global to shared memory, asynchronously (through L1: a misaligned operand's neighbouring
// elements come from the same line); zero where `bytes` is 0.
__device__ __forceinline__ void cp_async4(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(mma::smem_addr(dst)), "l"(src), "r"(bytes)
               : "memory");
}

// One operand's tile of a stage, R rows (M or N) x BK of K, filled by cp.async from THREADS threads.
// KMAJ (k contiguous): stored [r][k] in rows of BK + 4; else [k][r] in rows of R. A thread copies CH
// 16-byte chunks of one chunk column, RSTEP tile rows apart: consecutive threads along the contiguous
// dim (coalesced). A chunk is one 16-byte copy where `vec` (aligned base, whole-vector strides), else
// four 4-byte copies; a stage wholly inside the operand copies without a check a chunk, the others zero
// fill past the operand's rows and K. SWAP (k-major only) stores row 16s + 4a + b at 16s + 4b + a, so
// that rows 4 apart, read by neighbouring lanes, lie in consecutive rows.
template <int R, int BK, int THREADS, bool KMAJ, bool SWAP = false>
struct AsyncTile {
  static constexpr int PITCH = KMAJ ? BK + 4 : R, SIZE = (KMAJ ? R : BK) * PITCH;  // floats
  static constexpr int C = (KMAJ ? BK : R) / 4, ROWS = KMAJ ? R : BK;
  static constexpr int CH = ROWS * C / THREADS, RSTEP = THREADS / C;
  static_assert(ROWS * C % THREADS == 0 && THREADS % C == 0, "whole chunk columns a thread");
  static_assert(!SWAP || (KMAJ && RSTEP % 16 == 0), "the swap keeps a thread's rows 16-row blocks apart");

  const float* base;  // the operand: the address of the copies that read nothing
  const float* g;     // the thread's first chunk in the stage to load next
  i64 gstep;          // floats between the thread's chunks (RSTEP tile rows)
  i64 kstep;          // floats from one stage to the next
  int soff;           // the first chunk's offset in the tile
  int k0, K;          // the next stage's first k; the operand's depth
  int kfirst;         // the first chunk's k offset in a stage (k-major: its column; else its row)
  int rleft;          // operand rows from the tile's first row (M - m0 or N - n0)
  int rfirst;         // the first chunk's row offset in the tile
  bool vec, whole;    // 16-byte copies; every tile row inside the operand

  __device__ __forceinline__ void init(const float* p, i64 ld, int r0, int rows, int depth, bool v) {
    const int row = (int)threadIdx.x / C, c = (int)threadIdx.x % C;
    base = p;
    soff = (SWAP ? (row & ~15) | (row & 3) << 2 | (row >> 2 & 3) : row) * PITCH + c * 4;
    gstep = (i64)RSTEP * ld;
    k0 = 0;
    K = depth;
    vec = v;
    rleft = rows - r0;
    whole = rleft >= R;
    if constexpr (KMAJ) {
      g = p + (i64)(r0 + row) * ld + c * 4;
      kstep = BK;
      kfirst = c * 4;
      rfirst = row;
    } else {
      g = p + (i64)row * ld + r0 + c * 4;
      kstep = (i64)BK * ld;
      kfirst = row;
      rfirst = c * 4;
    }
  }

  // copies the next stage into tile s
  __device__ __forceinline__ void load(float* s) {
    // read anew each stage: left visible, the compiler keeps a 64-bit pointer a chunk live across the loop
    i64 step;
    asm volatile("mov.b64 %0, %1;" : "=l"(step) : "l"(gstep));
    if (vec && whole && k0 + BK <= K) {
#pragma unroll
      for (int i = 0; i < CH; ++i) mma::cp_async16(s + soff + i * RSTEP * PITCH, g + i * step);
    } else {
#pragma unroll
      for (int i = 0; i < CH; ++i) {
        // the chunk's elements inside the operand: along k (k-major) or along r
        const int r = KMAJ ? rfirst + i * RSTEP : rfirst, k = k0 + kfirst + (KMAJ ? 0 : i * RSTEP);
        const int n = r >= rleft || k >= K ? 0 : KMAJ ? min(K - k, 4) : min(rleft - r, 4);
        float* d = s + soff + i * RSTEP * PITCH;
        const float* src = g + i * step;
        if (vec) {
          mma::cp_async16(d, n ? src : base, n * 4);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) cp_async4(d + j, j < n ? src + j : base, j < n ? 4 : 0);
        }
      }
    }
    g += kstep;
    k0 += BK;
  }
};

}  // namespace mm

// Warp tiles fed by cp.async alone: no register staging, no transposing stores. Each operand lands in
// shared memory in the layout it has in memory: a k-major operand as [r][k] rows of BK + 4 (the 8
// consecutive rows of one fragment load fall in distinct 16-byte bank groups), an m-/n-major one as
// [k][r]. A lane's fragment of 4 k is 8 LDS.128 of A and 16 of B in either layout: a 4-k row of each
// of its rows ([r][k]: A rows lm + 8i; B rows swapped within 16-row blocks, so that a lane's columns
// still come 4 consecutive for 16-byte stores), or 4 consecutive rows at each k ([k][r]). 64x64 warp
// tiles, lanes 8 x 4 with 8 x 16 outputs (128 accumulators, up to 255 registers): 6 LDS.128 a k feed
// 128 FFMA. STAGES tiles in flight, one barrier a K tile. A_STAGE (simt_best's form for a k-major A):
// A through registers instead, stored [k][m]; the [m][k] fragments put a k's A values of a lane in one
// register-bank parity, and their FFMAs stalled on dispatch (docs/design/matmul.md).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool A_K, bool B_K, int MINB, bool A_STAGE = false,
          int EPI = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
mm_async(const float* A, const float* B, float* C, const float* bias, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
         i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const float* res, i64 ldr) {
  constexpr int T = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, TM = WM / 8, TN = WN / 4;
  constexpr int MS = TM / 4, NS = TN / 4;  // [k][r] fragments: blocks of 4 rows
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "whole 4x4 blocks, whole 4-k groups");
  // A_STAGE (k-major A only): A fetched into registers and stored transposed, [k][m] in rows of BM + 4,
  // as the warp kernel does; its fragments then come 4 consecutive rows a load, as an m-major A's
  constexpr bool A_ROWS = A_K && !A_STAGE;  // A in shared memory as [m][k]
  static_assert(!A_STAGE || A_K, "staging through registers is for a k-major A");
  using TA = mm::AsyncTile<BM, BK, T, A_K>;
  using SA = mm::RowsK<BM + 4>;
  constexpr int A_SIZE = A_STAGE ? BK * (BM + 4) : TA::SIZE, A_PITCH = A_STAGE ? BM + 4 : TA::PITCH;
  using TB = mm::AsyncTile<BN, BK, T, B_K, B_K>;  // [n][k]: lane columns 4 consecutive, as [k][n]
  extern __shared__ __align__(16) float smem[];
  float* const as = smem;
  float* const bs = smem + STAGES * A_SIZE;
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<float> ep{bias, res, ldr};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int lm = lane / 4, ln = lane % 4;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const int tiles = (p.K + BK - 1) / BK;
  // the lane's first fragment element in a slot; opaque to the compiler, which would otherwise merge the
  // lane's bits with each load's constant offset (an OR and a LEA a load) instead of one base register
  int aoff = A_ROWS ? (wm0 + lm) * TA::PITCH : wm0 + lm * 4, boff = B_K ? (wn0 + ln) * TB::PITCH : wn0 + ln * 4;
  asm volatile("mov.b32 %0, %0;" : "+r"(aoff));
  asm volatile("mov.b32 %0, %0;" : "+r"(boff));
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    TA la;
    TB lb;
    mm::TileFetch<float, BM, BK, T> fa;
    const float* a = A + z * p.bsa;
    if constexpr (!A_STAGE) la.init(a, p.lda, m0, p.M, p.K, p.vec_a);
    lb.init(B + z * p.bsb, p.ldb, n0, p.N, p.K, p.vec_b);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < tiles) {
        if constexpr (A_STAGE) {
          fa.fetch(a, p.lda, true, p.vec_a, m0, s * BK, p.M - m0, p.K - s * BK);
          fa.template store<SA>(as + s * A_SIZE, true);
        } else {
          la.load(as + s * A_SIZE);
        }
        lb.load(bs + s * TB::SIZE);
      }
      mma::commit();
    }
    float acc[TM][TN] = {};
    int slot = 0, next = STAGES - 1;  // the slot computed now, the slot loaded now
    for (int kt = 0; kt < tiles; ++kt) {
      mma::wait_pending<STAGES - 2>();
      __syncthreads();  // tile kt is in; every warp is done with the slot computed last
      const bool more = kt + STAGES - 1 < tiles;
      if (more) {
        if constexpr (A_STAGE) {
          const int k0 = (kt + STAGES - 1) * BK;
          fa.fetch(a, p.lda, true, p.vec_a, m0, k0, p.M - m0, p.K - k0);
        } else {
          la.load(as + next * A_SIZE);
        }
        lb.load(bs + next * TB::SIZE);
      }
      mma::commit();
      const float* sa = as + slot * A_SIZE + aoff;
      const float* sb = bs + slot * TB::SIZE + boff;
#pragma unroll
      for (int kg = 0; kg < BK / 4; ++kg) {
        float af[TM][4], bf[TN][4];
        if constexpr (A_ROWS) {
#pragma unroll
          for (int i = 0; i < TM; ++i) {
            const float4 x = *reinterpret_cast<const float4*>(&sa[8 * i * A_PITCH + kg * 4]);
            af[i][0] = x.x; af[i][1] = x.y; af[i][2] = x.z; af[i][3] = x.w;
          }
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int s = 0; s < MS; ++s) {
              const float4 x =
                  *reinterpret_cast<const float4*>(&sa[(kg * 4 + q) * A_PITCH + s * (WM / MS)]);
              af[4 * s][q] = x.x; af[4 * s + 1][q] = x.y; af[4 * s + 2][q] = x.z; af[4 * s + 3][q] = x.w;
            }
        }
        if constexpr (B_K) {
#pragma unroll
          for (int j = 0; j < TN; ++j) {
            const float4 y = *reinterpret_cast<const float4*>(&sb[4 * j * TB::PITCH + kg * 4]);
            bf[j][0] = y.x; bf[j][1] = y.y; bf[j][2] = y.z; bf[j][3] = y.w;
          }
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int s = 0; s < NS; ++s) {
              const float4 y =
                  *reinterpret_cast<const float4*>(&sb[(kg * 4 + q) * TB::PITCH + s * (WN / NS)]);
              bf[4 * s][q] = y.x; bf[4 * s + 1][q] = y.y; bf[4 * s + 2][q] = y.z; bf[4 * s + 3][q] = y.w;
            }
        }
        if constexpr (B_K) {  // each B load's 4 k consumed at once: 32 + 4 fragment values live, not 32 + 64
#pragma unroll
          for (int j = 0; j < TN; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
#pragma unroll
              for (int i = 0; i < TM; ++i) acc[i][j] = fmaf(af[i][q], bf[j][q], acc[i][j]);
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
              for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(af[i][q], bf[j][q], acc[i][j]);
        }
      }
      if constexpr (A_STAGE) {
        if (more) fa.template store<SA>(as + next * A_SIZE, true);  // its slot was computed before the barrier
      }
      slot = slot + 1 == STAGES ? 0 : slot + 1;
      next = next + 1 == STAGES ? 0 : next + 1;
    }
    mma::wait_pending<0>();
    __syncthreads();  // the next batch entry's copies overwrite the slots
    float* c = C + z * p.bsc;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + wm0 + (A_ROWS ? lm + 8 * i : (i / 4) * (WM / MS) + lm * 4 + i % 4);
#pragma unroll
      for (int s = 0; s < NS; ++s) {  // a lane's 4 consecutive columns: one 16-byte store
        const float v[4] = {acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2], acc[i][4 * s + 3]};
        mm::put4<EPI>(c, ep, p, m, n0 + wn0 + s * (WN / NS) + ln * 4, v);
      }
    }
  }
}

}  // namespace kk
