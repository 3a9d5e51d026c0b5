// mma.sync fed by cp.async alone: the fast path of the mma rung for operands that 16-byte copies can
// read as they lie (aligned base, whole-vector leading dimension and batch stride; tf32 and int8
// k-major). Against the general kernel (mma.cu), which decides per chunk between a copy and an
// element-by-element load, every chunk here is one cp.async whose address advances by a constant a
// stage, and a stage is 128 bytes of K (four 32-byte mma steps a barrier instead of two). The loads
// of a stage then cost a few integer instructions a chunk, not tens: at 64x32 warp tiles and 64-byte
// stages the general kernel spent about as many issue slots on its loads as on its HMMAs.
//
// Shared memory (pipe.cuh): a stage holds an A and a B tile, k-major [r][k] or, 16-bit and tf32's B,
// [k][r] read by ldmatrix.trans (16-bit) or element-wise (tf32).
#include "pipe.cuh"

namespace kk {

// C = A @ B on mma.sync with every operand chunk one cp.async: BM x BN outputs a block, warps of
// WM x WN (WM/16 x WN/8 instructions a 32-byte K step; WM*WN/32 accumulators a lane), K in stages of
// 128 bytes kept STAGES deep (STAGES - 1 in flight while one is computed). kAK / kBK: the operands are
// k-major in memory (always so for tf32 and int8). Blocks in groups of 8 along M (tile_origin).
// Dynamic shared memory:
// max(STAGES * (BM + BN) * 128, BM * (BN + 8) * 4) bytes.
template <typename Tr, int BM, int BN, int WM, int WN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
mm_mma_pipe(const typename Tr::T* A, const typename Tr::T* B, typename Tr::Out* C, const typename Tr::Out* bias,
            i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const typename Tr::Out* res, i64 ldr) {
  using T = typename Tr::T;
  using Acc = typename Tr::Acc;
  constexpr int KB = 128, THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, MT = WM / 16, NT = WN / 8;
  static_assert(NT % 2 == 0, "B fragments load two n8 tiles at a time");
  static_assert(sizeof(T) == 2 || (kAK && (kBK || Tr::kTf32)),
                "ldmatrix.trans moves 16-bit elements: tf32 takes an n-major B element-wise, int8 neither");
  using TA = pipe::PipeTile<T, BM, KB, THREADS, kAK>;
  using TB = pipe::PipeTile<T, BN, KB, THREADS, kBK>;
  constexpr int KE = TA::KE, V = TA::V, STAGE = TA::ELEMS + TB::ELEMS;
  extern __shared__ __align__(128) unsigned char dyn[];
  T* smem = reinterpret_cast<T*>(dyn);
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<typename Tr::Out> ep{bias, res, ldr};

  int m0, n0;
  pipe::tile_origin<BM, BN>(p.M, p.N, m0, n0);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int ktiles = (p.K + KE - 1) / KE;
  const i64 astep = kAK ? (i64)KE : (i64)KE * p.lda, bstep = kBK ? (i64)KE : (i64)KE * p.ldb;

  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    TA la;
    TB lb;
    la.init(A + z * p.bsa, p.lda, m0, p.M);
    lb.init(B + z * p.bsb, p.ldb, n0, p.N);
    Acc acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ktiles) {
        la.load(smem + s * STAGE, s * KE, p.K, astep);
        lb.load(smem + s * STAGE + TA::ELEMS, s * KE, p.K, bstep);
      }
      mma::commit();
    }
    int slot = 0, next = STAGES - 1;  // the stage computed and the one loaded, as slots of the ring
    for (int kt = 0; kt < ktiles; ++kt) {
      mma::wait_pending<STAGES - 2>();
      __syncthreads();  // stage kt landed for every thread; the slot of kt - 1 is free for everyone
      if (kt + STAGES - 1 < ktiles) {
        la.load(smem + next * STAGE, (kt + STAGES - 1) * KE, p.K, astep);
        lb.load(smem + next * STAGE + TA::ELEMS, (kt + STAGES - 1) * KE, p.K, bstep);
      }
      mma::commit();
      T* sa = smem + slot * STAGE;
      T* sb = sa + TA::ELEMS;
#pragma unroll 1
      for (int ks = 0; ks < KB / 32; ++ks) {  // 32-byte mma steps
        unsigned fa[MT][4], fb[NT][2];
        const int j = lane >> 3, i = lane & 7;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const int r = wm0 + mt * 16;
          if constexpr (kAK) {
            mma::ldsm_x4(fa[mt], TA::chunk(sa, r + (lane & 15), ks * 2 + (lane >> 4)));
          } else {
            mma::ldsm_x4_trans(fa[mt], TA::chunk(sa, ks * 16 + i + (j >> 1) * 8, r / V + (j & 1)));
          }
          if constexpr (Tr::kTf32) mma::round_tf32(fa[mt]);
        }
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          const int r = wn0 + np * 16;
          unsigned x[4];
          if constexpr (kBK) {
            mma::ldsm_x4(x, TB::chunk(sb, r + i + (j >> 1) * 8, ks * 2 + (j & 1)));
          } else if constexpr (sizeof(T) == 2) {
            mma::ldsm_x4_trans(x, TB::chunk(sb, ks * 16 + i + (j & 1) * 8, r / V + (j >> 1)));
          } else {  // tf32 [k][n]: b0 = B[k = q][n = g], b1 = B[k = q + 4][n = g] of each n8 tile
            const int g = lane >> 2, q = lane & 3;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int n = r + h * 8 + g;
              x[2 * h] = __float_as_uint(*(TB::chunk(sb, ks * 8 + q, n / V) + n % V));
              x[2 * h + 1] = __float_as_uint(*(TB::chunk(sb, ks * 8 + q + 4, n / V) + n % V));
            }
          }
          if constexpr (Tr::kTf32) mma::round_tf32(x);
          fb[2 * np][0] = x[0];
          fb[2 * np][1] = x[1];
          fb[2 * np + 1][0] = x[2];
          fb[2 * np + 1][1] = x[3];
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) Tr::mma(acc[mt][nt], fa[mt], fb[nt]);
      }
      slot = slot + 1 == STAGES ? 0 : slot + 1;
      next = next + 1 == STAGES ? 0 : next + 1;
    }
    mma::wait_pending<0>();
    __syncthreads();  // every warp is done with the stages: the epilogue's tile reuses them

    int em0, en0;
    pipe::tile_origin<BM, BN>(p.M, p.N, em0, en0);
    pipe::store_tile<Tr, BM, BN, WM, WN, THREADS, EPI>(acc, reinterpret_cast<Acc*>(dyn), C + z * p.bsc, ep, p, em0,
                                                       en0);
  }
}

}  // namespace kk
