// Tensor cores through mma.sync, the warp-level PTX instruction under WMMA, with its fragments loaded
// by ldmatrix from XOR-swizzled shared memory and the operand tiles brought in by a multi-stage
// cp.async pipeline. fp16 and bf16 (m16n8k16), tf32 (m16n8k8) and int8 (m16n8k32): every shape is
// 32 bytes of K, with 4 A registers, 2 B registers and 4 accumulators a lane, so one kernel body
// serves them all.
//
// Shared memory: a stage holds an A and a B tile, each 64 bytes of K deep, stored as rows of 16-byte
// chunks. A k-major operand is stored as it is in memory, [r][k]; an m- or n-major 16-bit operand
// too, [k][r], and ldmatrix.trans transposes its 8x8 blocks on the way to the registers. (tf32 and int8
// operands are always stored k-major: ldmatrix transposes 16-bit elements only; an m- or n-major one
// is transposed by the element path of the loads.) The chunk a row stores at is XORed with bits of its
// row, so that the 8 rows one ldmatrix phase reads (and the chunks a warp's cp.async writes) fall in 8
// distinct bank groups.
#include "mma.cuh"

namespace kk {

// C = A @ B on mma.sync: BM x BN outputs a block, warps of WM x WN (WM/16 x WN/8 instructions a
// 32-byte K step, the accumulators WM*WN/32 registers a lane), K in stages of 64 bytes kept STAGES
// deep by cp.async (STAGES - 1 in flight while one is computed). kAK / kBK: the operands are k-major
// in memory (16-bit operands are stored in shared memory as they lie; tf32 and int8 always k-major).
// Blocks are handed out in groups of 8 along M, so that blocks running together share B's columns
// and A's rows in L2. Dynamic shared memory: STAGES * (BM + BN) * 64 bytes.
template <typename Tr, int BM, int BN, int WM, int WN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
mm_mma(const typename Tr::T* A, const typename Tr::T* B, typename Tr::Out* C, const typename Tr::Out* bias, i64 M,
       i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const typename Tr::Out* res, i64 ldr) {
  using T = typename Tr::T;
  using Acc = typename Tr::Acc;
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, MT = WM / 16, NT = WN / 8;
  static_assert(NT % 2 == 0, "B fragments load two n8 tiles at a time");
  constexpr bool k16 = sizeof(T) == 2;
  constexpr bool kSA = kAK || !k16, kSB = kBK || !k16;  // stored k-major
  using TA = mma::StageTile<T, BM, THREADS, kSA>;
  using TB = mma::StageTile<T, BN, THREADS, kSB>;
  constexpr int KE = TA::KE, STAGE = TA::ELEMS + TB::ELEMS;
  extern __shared__ __align__(128) unsigned char dyn[];
  T* smem = reinterpret_cast<T*>(dyn);
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<typename Tr::Out> ep{bias, res, ldr};
  const bool cp_a = p.vec_a && p.a_k == kSA, cp_b = p.vec_b && p.b_k == kSB;

  // grouped block order: 8 M tiles per group walk N together
  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  const int width = 8 * tiles_n, group = blockIdx.x / width, first = group * 8;
  const int gsize = min(tiles_m - first, 8);
  const int m0 = (first + (blockIdx.x % width) % gsize) * BM, n0 = ((blockIdx.x % width) / gsize) * BN;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int ktiles = (p.K + KE - 1) / KE;

  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    Acc acc[MT][NT][4];
    mma::zero(acc);

    auto load_stage = [&](int slot, int kt) {
      T* s = smem + slot * STAGE;
      TA::load(s, a, p.lda, p.a_k, cp_a, m0, kt * KE, p.M, p.K);
      TB::load(s + TA::ELEMS, b, p.ldb, p.b_k, cp_b, n0, kt * KE, p.N, p.K);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ktiles) load_stage(s, s);
      mma::commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
      mma::wait_pending<STAGES - 2>();
      __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free for everyone
      if (kt + STAGES - 1 < ktiles) load_stage((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
      mma::commit();
      T* sa = smem + (kt % STAGES) * STAGE;
      T* sb = sa + TA::ELEMS;
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {  // two 32-byte K steps a stage
        unsigned fa[MT][4], fb[NT][2];
        const int j = lane >> 3, i = lane & 7;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) mma::ldsm_a<Tr, TA, kSA>(fa[mt], sa, wm0 + mt * 16, ks, lane, i, j);
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          unsigned x[4];
          mma::ldsm_b<Tr, TB, kSB>(x, sb, wn0 + np * 16, ks, i, j);
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
    }
    mma::wait_pending<0>();
    __syncthreads();  // the next batch entry refills the stages

    typename Tr::Out* c = C + z * p.bsc;
    const int g = lane / 4, q = lane % 4;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int m = m0 + wm0 + mt * 16 + g, n = n0 + wn0 + nt * 8 + 2 * q;
        mm::put2<EPI>(c, ep, p, m, n, acc[mt][nt][0], acc[mt][nt][1]);
        mm::put2<EPI>(c, ep, p, m + 8, n, acc[mt][nt][2], acc[mt][nt][3]);
      }
  }
}

}  // namespace kk
