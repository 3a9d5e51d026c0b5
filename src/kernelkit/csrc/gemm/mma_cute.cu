// The mma.sync GEMM written with CuTe: a TiledMMA of m16n8k16 atoms fed by ldmatrix TiledCopies from
// swizzled shared memory, and a cp.async TiledCopy from global memory, fp16 and bf16 (fp32 accumulation).
//
// The plan of mm_mma (mma.cu) at its large tile, so that the two rungs compare the writing and not the
// plan: 128 x 128 outputs a block of 8 warps (2 x 4, 64 x 32 outputs a warp), K in stages of 32 elements
// kept 4 deep by cp.async, blocks handed out in groups of 8 along M. One tile only: a CuTe GEMM
// instantiation takes NVRTC about 15 s, and the small problems the 64 x 64 tile is for are the mma
// rung's. What CuTe writes for us:
// - the shared tiles are layouts: a k-major operand [r][k] is 8-row atoms of 64 bytes whose 16-byte
//   chunks are XORed with bits 1-2 of the row (Swizzle<2,3,3>), an m- or n-major one [k][r] 128-byte
//   rows of 8 chunks XORed with the k row (Swizzle<3,3,3>): the 8 rows one ldmatrix phase reads, and
//   the chunks a warp's cp.async writes, fall in 8 different bank groups;
// - the TiledMMA (2 x BN/32 warps of SM80_16x8x16 atoms, the N mode widened to 16 columns a warp so that
//   one ldmatrix.x4 loads a warp's B fragment) says which accumulators, A and B fragments a thread holds;
// - make_tiled_copy_A/B turn an ldmatrix atom (LDSM_N for k-major, LDSM_T for m/n-major operands) into
//   the shared-to-register copy that fills exactly those fragments.
// Edges and misaligned operands: a 16-byte chunk inside the operand goes by cp.async where the operand
// allows 16-byte accesses (the flags word), otherwise element by element with zeros outside. The epilogue
// writes pairs of columns through mm::put2 (bias, conversion, edges). Compiled with the CuTe header set
// (runtime/cute_headers.py).
#include <cute/tensor.hpp>

#include "matmul.cuh"

namespace kk {

struct CuteF16 {
  using T = __half;        // the pointers' type
  using E = cute::half_t;  // the same bits as CuTe's element
  using Atom = cute::SM80_16x8x16_F32F16F16F32_TN;
};
struct CuteBF16 {
  using T = __nv_bfloat16;
  using E = cute::bfloat16_t;
  using Atom = cute::SM80_16x8x16_F32BF16BF16F32_TN;
};

namespace mmc {

using namespace cute;
constexpr int BK = 32;  // K elements a stage (64 bytes)

// The shared layout of one operand, STAGES deep: R rows (M or N) x BK, k-major or r-major.
template <typename E, int R, int STAGES, bool kKMajor>
__device__ __forceinline__ auto smem_layout() {
  if constexpr (kKMajor) {
    const auto atom = composition(Swizzle<2, 3, 3>{}, Layout<Shape<_8, Int<BK>>, Stride<Int<BK>, _1>>{});
    return tile_to_shape(atom, Shape<Int<R>, Int<BK>, Int<STAGES>>{});
  } else {
    const auto atom = composition(Swizzle<3, 3, 3>{}, Layout<Shape<_64, _8>, Stride<_1, _64>>{});
    return tile_to_shape(atom, Shape<Int<R>, Int<BK>, Int<STAGES>>{});
  }
}

// The cp.async copy of one operand's tile: 16-byte chunks along its contiguous dim, THREADS threads.
template <typename E, int R, int THREADS, bool kKMajor>
__device__ __forceinline__ auto g2s_copy() {
  using Atom = Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, E>;
  if constexpr (kKMajor) {  // 4 threads a row of BK, THREADS / 4 rows a pass
    return make_tiled_copy(Atom{}, Layout<Shape<Int<THREADS / 4>, _4>, Stride<_4, _1>>{}, Layout<Shape<_1, _8>>{});
  } else {  // R / 8 threads a k row, THREADS * 8 / R k rows a pass
    return make_tiled_copy(Atom{}, Layout<Shape<Int<R / 8>, Int<THREADS * 8 / R>>, Stride<_1, Int<R / 8>>>{},
                           Layout<Shape<_8, _1>>{});
  }
}

// An operand's (r, k) strides as it lies in memory, the unit stride static (what lets a copy vectorize).
template <bool kKMajor>
__device__ __forceinline__ auto operand_stride(i64 ld) {
  if constexpr (kKMajor) return make_stride(ld, _1{});
  else return make_stride(_1{}, ld);
}

// One stage of one operand: the tile at (r0, k0) of an operand with `bound` = (rows, ks) left from there.
// g, s, c: this thread's (CPY, CPY_R, CPY_K) partitions of the global tile, the stage and the coordinates.
template <class Atom, class G, class S, class C, class Bound>
__device__ __forceinline__ void load_stage(const Atom& atom, const G& g, S&& s, const C& c, const Bound& bound,
                                           bool vec) {
  using E = typename remove_cvref_t<S>::value_type;
  CUTE_UNROLL
  for (int i = 0; i < size<1>(g); ++i) {
    CUTE_UNROLL
    for (int j = 0; j < size<2>(g); ++j) {
      if (vec && elem_less(c(size<0>(c) - 1, i, j), bound)) {  // the chunk's last element inside: all are
        copy(atom, g(_, i, j), s(_, i, j));
      } else {
        CUTE_UNROLL
        for (int e = 0; e < size<0>(g); ++e) s(e, i, j) = elem_less(c(e, i, j), bound) ? g(e, i, j) : E(0);
      }
    }
  }
}

}  // namespace mmc

// C = A @ B (+ bias) on the TiledMMA; the arguments and the flags word as mm_mma's. kAK / kBK: the
// operands lie k-major in memory (the host launches the instantiation of the call's layouts). Dynamic
// shared memory: STAGES * (BM + BN) * BK * 2 bytes (64 KB).
template <typename Tr, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(256, 1)
mm_cute(const typename Tr::T* A, const typename Tr::T* B, typename Tr::T* C, const typename Tr::T* bias, i64 M,
        i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const typename Tr::T* res, i64 ldr) {
  using namespace cute;
  using E = typename Tr::E;
  using mmc::BK;
  constexpr int BM = 128, BN = 128, STAGES = 4, WARPS_N = 4, THREADS = 2 * WARPS_N * 32;
  extern __shared__ __align__(128) unsigned char dyn[];
  E* smem = reinterpret_cast<E*>(dyn);
  const auto sa_layout = mmc::smem_layout<E, BM, STAGES, kAK>();
  const auto sb_layout = mmc::smem_layout<E, BN, STAGES, kBK>();
  Tensor sA = make_tensor(make_smem_ptr(smem), sa_layout);                      // (BM, BK, STAGES)
  Tensor sB = make_tensor(make_smem_ptr(smem + cosize(sa_layout)), sb_layout);  // (BN, BK, STAGES)

  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<typename Tr::T> ep{bias, res, ldr};

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;  // grouped order: 8 M tiles a group
  const int width = 8 * tiles_n, first = blockIdx.x / width * 8, gsize = min(tiles_m - first, 8);
  const int m0 = (first + (blockIdx.x % width) % gsize) * BM, n0 = (blockIdx.x % width) / gsize * BN;
  const int tid = threadIdx.x, ktiles = (p.K + BK - 1) / BK;

  const auto g2s_a = mmc::g2s_copy<E, BM, THREADS, kAK>();
  const auto g2s_b = mmc::g2s_copy<E, BN, THREADS, kBK>();
  const auto thr_ga = g2s_a.get_slice(tid);
  const auto thr_gb = g2s_b.get_slice(tid);
  const Tensor cA = thr_ga.partition_S(make_identity_tensor(Shape<Int<BM>, Int<BK>>{}));  // (r, k) of each element
  const Tensor cB = thr_gb.partition_S(make_identity_tensor(Shape<Int<BN>, Int<BK>>{}));
  Tensor tsA = thr_ga.partition_D(sA);  // (CPY, CPY_M, CPY_K, STAGES)
  Tensor tsB = thr_gb.partition_D(sB);

  using MmaAtom = MMA_Atom<typename Tr::Atom>;
  const auto mma = make_tiled_mma(MmaAtom{}, Layout<Shape<_2, Int<WARPS_N>, _1>>{},
                                  Tile<_32, Int<WARPS_N * 16>, _16>{});  // 16 columns a warp: ldmatrix.x4 for B
  const auto thr_mma = mma.get_slice(tid);
  Tensor acc = partition_fragment_C(mma, Shape<Int<BM>, Int<BN>>{});  // (MMA, MMA_M, MMA_N) fp32
  Tensor fa = thr_mma.partition_fragment_A(sA(_, _, 0));               // (MMA, MMA_M, MMA_K)
  Tensor fb = thr_mma.partition_fragment_B(sB(_, _, 0));               // (MMA, MMA_N, MMA_K)
  using LdsmA = conditional_t<kAK, SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T>;
  using LdsmB = conditional_t<kBK, SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T>;
  const auto s2r_a = make_tiled_copy_A(Copy_Atom<LdsmA, E>{}, mma);
  const auto s2r_b = make_tiled_copy_B(Copy_Atom<LdsmB, E>{}, mma);
  const auto thr_sa = s2r_a.get_slice(tid);
  const auto thr_sb = s2r_b.get_slice(tid);
  const Tensor xsA = thr_sa.partition_S(sA);  // (CPY, MMA_M, MMA_K, STAGES)
  const Tensor xsB = thr_sb.partition_S(sB);
  Tensor xfa = thr_sa.retile_D(fa);
  Tensor xfb = thr_sb.retile_D(fb);
  const Tensor cC = thr_mma.partition_C(make_identity_tensor(Shape<Int<BM>, Int<BN>>{}));  // (m, n) of each acc

  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const E* a = reinterpret_cast<const E*>(A) + z * p.bsa;
    const E* b = reinterpret_cast<const E*>(B) + z * p.bsb;
    const auto a_stride = mmc::operand_stride<kAK>(p.lda);
    const auto b_stride = mmc::operand_stride<kBK>(p.ldb);
    auto load = [&](int slot, int kt) {
      const int k0 = kt * BK;
      const Tensor ga = make_tensor(make_gmem_ptr(a + m0 * get<0>(a_stride) + k0 * get<1>(a_stride)),
                                    make_layout(Shape<Int<BM>, Int<BK>>{}, a_stride));
      const Tensor gb = make_tensor(make_gmem_ptr(b + n0 * get<0>(b_stride) + k0 * get<1>(b_stride)),
                                    make_layout(Shape<Int<BN>, Int<BK>>{}, b_stride));
      mmc::load_stage(g2s_a, thr_ga.partition_S(ga), tsA(_, _, _, slot), cA, make_coord(p.M - m0, p.K - k0), p.vec_a);
      mmc::load_stage(g2s_b, thr_gb.partition_S(gb), tsB(_, _, _, slot), cB, make_coord(p.N - n0, p.K - k0), p.vec_b);
    };
    clear(acc);
    CUTE_UNROLL
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ktiles) load(s, s);
      cp_async_fence();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free for everyone
      if (kt + STAGES - 1 < ktiles) load((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
      cp_async_fence();
      const int slot = kt % STAGES;
      CUTE_UNROLL
      for (int kb = 0; kb < size<2>(fa); ++kb) {  // BK / 16 steps of the atoms' K
        copy(s2r_a, xsA(_, _, kb, slot), xfa(_, _, kb));
        copy(s2r_b, xsB(_, _, kb, slot), xfb(_, _, kb));
        gemm(mma, fa(_, _, kb), fb(_, _, kb), acc);
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // the next batch entry refills the stages

    typename Tr::T* c = C + z * p.bsc;
    // an m16n8 accumulator holds (row g: columns 2q, 2q+1) and (row g + 8: the same columns)
    CUTE_UNROLL
    for (int i = 0; i < size<1>(acc); ++i) {
      CUTE_UNROLL
      for (int j = 0; j < size<2>(acc); ++j) {
        CUTE_UNROLL
        for (int v = 0; v < size<0>(acc); v += 2) {
          const auto mn = cC(v, i, j);
          mm::put2<EPI>(c, ep, p, m0 + get<0>(mn), n0 + get<1>(mn), acc(v, i, j), acc(v + 1, i, j));
        }
      }
    }
  }
}

}  // namespace kk
