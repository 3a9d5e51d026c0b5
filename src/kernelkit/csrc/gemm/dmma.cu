// fp64 on Hopper's tensor cores: mma.sync m16n8k16 .f64 (DMMA.16x8x16, sm_90), fed by the copy-only
// pipeline of pipe.cuh. The m8n8k4 shape that WMMA's fp64 fragments compile to (DMMA.8x8x4) runs at
// half the rate on an H100 (33.7 against 66.5 TFLOP/s from registers, docs/design/matmul.md).
//
// Fragments (PTX ISA, mma.m16n8k16 .f64; g = lane / 4, t = lane % 4): A 8 values, a[2j] = A[g][4j + t]
// and a[2j + 1] = A[g + 8][4j + t]; B 4 values, b[i] = B[4i + t][g]; C as every m16n8 accumulator.
// Each value is one 8-byte shared load: a half-warp reads 4 rows of 32 bytes (k-major) or 4 rows
// 4i + t at 32 bytes of columns (m-/n-major), which the swizzle of pipe.cuh spreads over the 8 bank
// groups. (A load of 16 bytes, two values of a row, would need a permuted K; tried, it made ptxas move
// every fragment into its aligned register group and spill.) The fragments are double-buffered across
// stages (64 registers each): a stage's DMMAs never wait on a shared load, and the next stage's loads,
// copies and barrier are issued while the DMMA pipe works through the previous ones.
#include "pipe.cuh"

namespace kk {

struct DmmaF64 {
  using T = double;
  using Acc = double;
  using Out = double;
  __device__ __forceinline__ static void mma(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
  }
};

// C = A @ B in fp64: BM x BN outputs a block, warps of WM x WN (WM/16 x WN/8 DMMAs a 16-deep step,
// WM*WN/32 accumulators a lane), K in stages of 128 bytes (16 values, one step) kept STAGES deep by
// cp.async. kAK / kBK: the operands are k-major in memory. Blocks in groups of 8 along M (tile_origin).
// Dynamic shared memory: max(STAGES * (BM + BN) * 128, BM * (BN + 8) * 8) bytes.
template <int BM, int BN, int WM, int WN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
mm_dmma_pipe(const double* A, const double* B, double* C, const double* bias, i64 M, i64 N, i64 K, i64 lda,
             i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const double* res, i64 ldr) {
  constexpr int KB = 128, THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, MT = WM / 16, NT = WN / 8;
  using TA = pipe::PipeTile<double, BM, KB, THREADS, kAK>;
  using TB = pipe::PipeTile<double, BN, KB, THREADS, kBK>;
  constexpr int KE = TA::KE, STAGE = TA::ELEMS + TB::ELEMS;
  static_assert(KE == 16, "a stage is one 16-deep step");
  extern __shared__ __align__(128) unsigned char dyn[];
  double* smem = reinterpret_cast<double*>(dyn);
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<double> ep{bias, res, ldr};

  int m0, n0;
  pipe::tile_origin<BM, BN>(p.M, p.N, m0, n0);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int ktiles = (p.K + KE - 1) / KE;
  const i64 astep = kAK ? (i64)KE : (i64)KE * p.lda, bstep = kBK ? (i64)KE : (i64)KE * p.ldb;

  // A fragment value a[2j + h] = A[row g + 8h][4j + t] of row block mt, and B's b[i] = B[4i + t][n] of n8 tile
  // nt, as byte offsets in a stage. A k-major tile's chunk (2j + t/2) ^ ((row & 3) << 1) is the lane's j = 0
  // chunk XOR 2j (row & 3 = g & 3 for every row a lane reads), so a value's offset is the lane's XOR j << 5
  // plus a constant; an n-major B's chunk of column n at k row 4i + t likewise flips bit 2 with nt's parity.
  const unsigned a_lane = kAK ? TA::off(wm0 + g, t / 2) * 8u + (t % 2) * 8u : 0u;
  const unsigned b_lane = kBK ? 0u : TB::off(t, wn0 / 2 + g / 2) * 8u + (g % 2) * 8u;
  auto afrag = [&](double (&fa)[8], unsigned st, int mt) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // a[2j + h] = A[row g + 8h][4j + t]
        const int r = wm0 + mt * 16 + g + 8 * h;
        fa[2 * j + h] = mma::lds64(st + (kAK ? (a_lane ^ (unsigned)(j << 5)) + (mt * 16 + 8 * h) * KB
                                             : TA::off(4 * j + t, r / 2) * 8u + (r % 2) * 8u));
      }
  };
  auto bfrags = [&](double (&fb)[NT][4], unsigned st) {
    st += TA::ELEMS * 8u;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int n = wn0 + nt * 8 + g;
#pragma unroll
      for (int i = 0; i < 4; ++i)  // b[i] = B[4i + t][n]
        fb[nt][i] = mma::lds64(st + (kBK ? TB::off(n, 2 * i + t / 2) * 8u + (t % 2) * 8u
                                         : (b_lane ^ (unsigned)((nt & 1) << 6)) + (nt >> 1) * 128 + i * 4 * TB::C * 16));
    }
  };
  const unsigned s_base = mma::smem_addr(dyn);

  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    TA la;
    TB lb;
    la.init(A + z * p.bsa, p.lda, m0, p.M);
    lb.init(B + z * p.bsb, p.ldb, n0, p.N);
    double acc[MT][NT][4];
    mma::zero(acc);

    pipe::load_prologue<STAGES>(la, lb, smem, ktiles, p.K, astep, bstep);
    // Fragments double-buffered across stages: stage kt + 1's are loaded before stage kt's DMMAs are
    // issued, so that no DMMA waits on a shared load, and the copies of a stage and its barrier come while
    // the DMMA pipe still works on the previous stage's.
    mma::wait_pending<STAGES - 2>();
    __syncthreads();
    double fa[2][MT][8], fb[2][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) afrag(fa[0][mt], s_base, mt);
    bfrags(fb[0], s_base);
    int slot = 0, next = STAGES - 1;
    for (int kt = 0; kt < ktiles; ++kt) {
      // into the slot of stage kt - 1, whose fragments every warp loaded before the last barrier
      if (kt + STAGES - 1 < ktiles) {
        la.load(smem + next * STAGE, (kt + STAGES - 1) * KE, p.K, astep);
        lb.load(smem + next * STAGE + TA::ELEMS, (kt + STAGES - 1) * KE, p.K, bstep);
      }
      mma::commit();
      next = next + 1 == STAGES ? 0 : next + 1;
      mma::wait_pending<STAGES - 2>();
      __syncthreads();  // stage kt + 1 landed for every thread
      slot = slot + 1 == STAGES ? 0 : slot + 1;
      const unsigned st = s_base + slot * STAGE * 8u;
      // kt is even or odd: two copies of the body, so that the buffers stay registers
      auto step = [&](const int c) {
        bfrags(fb[c ^ 1], st);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) afrag(fa[c ^ 1][mt], st, mt);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) DmmaF64::mma(acc[mt][nt], fa[c][mt], fb[c][nt]);
      };
      if (kt % 2 == 0) step(0);
      else step(1);
    }
    mma::wait_pending<0>();
    __syncthreads();  // every warp is done with the stages: the epilogue's tile reuses them
    int em0, en0;
    pipe::tile_origin<BM, BN>(p.M, p.N, em0, en0);
    pipe::store_tile<DmmaF64, BM, BN, WM, WN, THREADS, EPI>(acc, reinterpret_cast<double*>(dyn), C + z * p.bsc, ep,
                                                            p, em0, en0);
  }
}

}  // namespace kk
