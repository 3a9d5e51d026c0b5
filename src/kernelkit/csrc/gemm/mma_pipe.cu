// mma.sync fed by cp.async alone: the fast path of the mma rung for operands that 16-byte copies can
// read as they lie (aligned base, whole-vector leading dimension and batch stride; tf32 and int8
// k-major). Against the general kernel (mma.cu), which decides per chunk between a copy and an
// element-by-element load, every chunk here is one cp.async whose address advances by a constant a
// stage, and a stage is 128 bytes of K (four 32-byte mma steps a barrier instead of two). The loads
// of a stage then cost a few integer instructions a chunk, not tens: at 64x32 warp tiles and 64-byte
// stages the general kernel spent about as many issue slots on its loads as on its HMMAs.
//
// Shared memory (pipe.cuh): a stage holds an A and a B tile, k-major [r][k] or, 16-bit and tf32's B,
// [k][r] read by ldmatrix.trans (16-bit) or by 16-byte loads of four n8 tiles' values (tf32, its
// columns permuted within each group of 32, pipe::store_tile undoing it). tf32 loads the next step's
// fragments during a step's mmas: a step's 32 HMMA.1688 then hide the 20 loads and 32 rounding adds
// that feed them; 16-bit operands at 64x64 warp tiles likewise (8 ldmatrix under 32 HMMA.16816).
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
  constexpr int KE = TA::KE, V = TA::V, STAGE = TA::ELEMS + TB::ELEMS, KS = KB / 32;
  constexpr unsigned STAGE_BYTES = STAGE * sizeof(T);
  // tf32 with an n-major B: the warp's n8 tiles take permuted columns (bfrags), 16-byte B loads
  constexpr bool kPermN = Tr::kTf32 && !kBK;
  static_assert(!kPermN || NT % 4 == 0, "tf32 [k][n] B: four n8 tiles a 16-byte load");
  // tf32, and 16-bit at 64x64 warp tiles: the fragments of the next step loaded during this step's mmas.
  // int8 and the 16-bit 32x32 warp tiles load a step's fragments, then issue its mmas (int8 spilled 16
  // bytes at 128x256 with the prefetch; the 16-bit 64x64 block went from 93 to 178 registers a lane), and
  // so do the 16-bit kernels with linear's fused epilogues (4 bytes spilled with an n-major B).
  constexpr bool kPrefetch = Tr::kTf32 || (sizeof(T) == 2 && WM == 64 && WN == 64 && EPI == mm::kPlain);
  static_assert(!Tr::kTf32 || kAK, "tf32 takes a k-major A");
  static_assert((MT & (MT - 1)) == 0 && (NT & (NT - 1)) == 0, "fragment addresses: a lane's offset XOR constants");
  static_assert(KS % 2 == 0, "fragment buffers alternate within a stage");
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

  // tf32's fragments of 32-byte step ks of the stage at shared address st (A k-major): A's of rows
  // wm0 + 16 mt.., B's of the warp's columns, rounded. Addresses are a lane's offset plus constants: chunk
  // 2 ks + (lane >> 4) of A's row r lies at (2 ks + (lane >> 4)) ^ (r & 7), the lane's step-0 chunk XOR
  // 2 ks, so its byte offset is the lane's XOR ks << 5.
  // 16-bit: ldmatrix, .trans from an m- or n-major tile, lane 8 j + i giving row i of matrix j. A [k][m]:
  // matrix j is k rows 8 (j >> 1).. at chunk wm0 / 8 + (j & 1) + 2 mt of a k row, the swizzle (chunk ^ i)
  // leaving the row block's 2 mt as an XOR, mt << 5 bytes, and step ks a constant 16 k rows; B [k][n] the
  // same (k rows 8 (j & 1).., chunk wn0 / 8 + (j >> 1) + 2 np); B [n][k] as A [m][k].
  const int lj = lane >> 3, li = lane & 7;
  const unsigned a_lane = (kAK ? TA::off(wm0 + (lane & 15), lane >> 4) : TA::off(li + (lj >> 1) * 8, wm0 / V + (lj & 1))) *
                          (unsigned)sizeof(T);
  const unsigned b_lane =
      (kPermN ? TB::off(lane & 3, wn0 / V + (lane >> 2))
              : sizeof(T) != 2 ? 0
              : kBK ? TB::off(wn0 + li + (lj >> 1) * 8, lj & 1) : TB::off(li + (lj & 1) * 8, wn0 / V + (lj >> 1))) *
      (unsigned)sizeof(T);
  auto afrag = [&](unsigned (&fa)[4], unsigned st, int ks, int mt) {
    if constexpr (kAK) {
      mma::ldsm_x4(fa, st + (a_lane ^ (unsigned)(ks << 5)) + mt * 16 * KB);
    } else {
      mma::ldsm_x4_trans(fa, st + (a_lane ^ (unsigned)(mt << 5)) + ks * 16 * TA::C * 16);
    }
    if constexpr (Tr::kTf32) mma::round_tf32(fa);
  };
  auto bfrags = [&](unsigned (&fb)[NT][2], unsigned st, int ks) {
    st += TA::ELEMS * (unsigned)sizeof(T);
    if constexpr (kPermN) {
      // [k][n]: n8 tile 4G + t of the warp takes columns wn0 + 32G + 4c + t (c = 0..7), so that a lane's b0
      // (k = q, c = g) of four tiles is one 16-byte load, and b1 (k = q + 4) another; the swizzle of k row q
      // (chunk ^ 2q) keeps the lane's chunk within its group of 8 (columns 32G..)
#pragma unroll
      for (int G = 0; G < NT / 4; ++G)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          unsigned v[4];
          mma::lds128(v, st + b_lane + ((ks * 8 + h * 4) * TB::C * V + G * 8 * V) * 4);
#pragma unroll
          for (int t = 0; t < 4; ++t) fb[4 * G + t][h] = v[t] + 0x1000u;  // rounded, as round_tf32
        }
    } else if constexpr (sizeof(T) == 2) {
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        unsigned x[4];
        if constexpr (kBK) {
          mma::ldsm_x4(x, st + (b_lane ^ (unsigned)(ks << 5)) + np * 16 * KB);
        } else {
          mma::ldsm_x4_trans(x, st + (b_lane ^ (unsigned)(np << 5)) + ks * 16 * TB::C * 16);
        }
        fb[2 * np][0] = x[0];
        fb[2 * np][1] = x[1];
        fb[2 * np + 1][0] = x[2];
        fb[2 * np + 1][1] = x[3];
      }
    } else {  // tf32 [n][k]
      const int j = lane >> 3, i = lane & 7;
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        unsigned x[4];
        mma::ldsm_x4(x, st + TB::off(wn0 + np * 16 + i + (j >> 1) * 8, ks * 2 + (j & 1)) * (unsigned)sizeof(T));
        mma::round_tf32(x);
        fb[2 * np][0] = x[0];
        fb[2 * np][1] = x[1];
        fb[2 * np + 1][0] = x[2];
        fb[2 * np + 1][1] = x[3];
      }
    }
  };
  const unsigned s_base = mma::smem_addr(dyn);

  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    TA la;
    TB lb;
    la.init(A + z * p.bsa, p.lda, m0, p.M);
    lb.init(B + z * p.bsb, p.ldb, n0, p.N);
    Acc acc[MT][NT][4];
    mma::zero(acc);

    pipe::load_prologue<STAGES>(la, lb, smem, ktiles, p.K, astep, bstep);
    if constexpr (kPrefetch) {
      // Step ks + 1's B fragments are loaded before step ks's mmas are issued, and each row block's A right
      // after its mmas (into the registers they read), so that the shared-memory latency and tf32's rounding
      // run under the mmas. The barrier of a stage sits before its last step's mmas: the loads of the next
      // stage's first step overlap them too.
      mma::wait_pending<STAGES - 2>();
      __syncthreads();
      unsigned fa[MT][4], fb[2][NT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) afrag(fa[mt], s_base, 0, mt);
      bfrags(fb[0], s_base, 0);
      int slot = 0, next = STAGES - 1;  // the stage computed and the one loaded, as slots of the ring
      for (int kt = 0; kt < ktiles; ++kt) {
        unsigned sa = s_base + slot * STAGE_BYTES;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
          if (ks == KS - 1) {
            mma::wait_pending<STAGES - 2>();
            __syncthreads();  // stage kt + 1 landed for every thread; every warp is done with stage kt - 1
            slot = slot + 1 == STAGES ? 0 : slot + 1;
            sa = s_base + slot * STAGE_BYTES;
          }
          const int nks = (ks + 1) % KS;
          bfrags(fb[(ks + 1) % 2], sa, nks);
          if (ks == 0) {  // into the slot of stage kt - 1, which every warp left before the last barrier
            if (kt + STAGES - 1 < ktiles) {
              la.load(smem + next * STAGE, (kt + STAGES - 1) * KE, p.K, astep);
              lb.load(smem + next * STAGE + TA::ELEMS, (kt + STAGES - 1) * KE, p.K, bstep);
            }
            mma::commit();
            next = next + 1 == STAGES ? 0 : next + 1;
          }
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) Tr::mma(acc[mt][nt], fa[mt], fb[ks % 2][nt]);
            afrag(fa[mt], sa, nks, mt);  // the next step's
          }
        }
      }
    } else {
      int slot = 0, next = STAGES - 1;
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
        for (int ks = 0; ks < KS; ++ks) {  // 32-byte mma steps (tf32 always prefetches: no rounding here)
          unsigned fa[MT][4], fb[NT][2];
          const int j = lane >> 3, i = lane & 7;
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) mma::ldsm_a<Tr, TA, kAK>(fa[mt], sa, wm0 + mt * 16, ks, lane, i, j);
#pragma unroll
          for (int np = 0; np < NT / 2; ++np) {
            unsigned x[4];
            mma::ldsm_b<Tr, TB, kBK>(x, sb, wn0 + np * 16, ks, i, j);
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
    }
    mma::wait_pending<0>();
    __syncthreads();  // every warp is done with the stages: the epilogue's tile reuses them

    int em0, en0;
    pipe::tile_origin<BM, BN>(p.M, p.N, em0, en0);
    pipe::store_tile<Tr, BM, BN, WM, WN, THREADS, EPI, kPermN>(acc, reinterpret_cast<Acc*>(dyn), C + z * p.bsc, ep, p, em0,
                                                       en0);
  }
}

}  // namespace kk
