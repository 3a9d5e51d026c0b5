// Tensor cores through WMMA: a warp's 16x16 (8x8 for fp64) output fragment, loaded, multiplied and
// stored by warp-wide PTX wmma instructions on opaque fragments. Two rungs: one warp a fragment with
// its operands loaded straight from global memory, and block tiles staged in shared memory.
//
// The fragments are the PTX instructions themselves (wmma.load / wmma.mma / wmma.store), one traits
// struct a type: fp16 and bf16 m16n16k16 with fp32 accumulation, tf32 m16n16k8 (fp32 in memory,
// rounded to tf32 after the load), int8 m16n16k16 into int32, fp64 m8n8k4. The sub-byte shapes (s4
// m8n8k32, b1 m8n8k128) need 4- and 1-bit operands, which torch has no dtype for: not in the ladder
// (what sm_80 and sm_90 make of them: probes.cu).
#include "matmul.cuh"

namespace kk {

// The wmma instructions of a traits struct differ only in the shape, the type names and how many
// registers each fragment takes (N for A and B, NC for C): one macro writes the six wrappers. Their
// operand lists, by register count: a load's N destinations then address and stride; an MMA's NC
// accumulators (read and written), N of A, N of B; a store's address, NC values and stride. R / F:
// the constraint letter of the A/B registers and of the accumulators.
#define KK_WM_REGS1(C, x) C(x[0])
#define KK_WM_REGS2(C, x) C(x[0]), C(x[1])
#define KK_WM_REGS4(C, x) KK_WM_REGS2(C, x), C(x[2]), C(x[3])
#define KK_WM_REGS8(C, x) KK_WM_REGS4(C, x), C(x[4]), C(x[5]), C(x[6]), C(x[7])
#define KK_WM_LOAD_OPS1 "{%0}, [%1], %2;"
#define KK_WM_LOAD_OPS2 "{%0, %1}, [%2], %3;"
#define KK_WM_LOAD_OPS4 "{%0, %1, %2, %3}, [%4], %5;"
#define KK_WM_LOAD_OPS8 "{%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
#define KK_WM_ACC2 "{%0, %1}"
#define KK_WM_ACC8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define KK_WM_MMA_OPS2_1 KK_WM_ACC2 ", {%2}, {%3}, " KK_WM_ACC2 ";"
#define KK_WM_MMA_OPS8_2 KK_WM_ACC8 ", {%8, %9}, {%10, %11}, " KK_WM_ACC8 ";"
#define KK_WM_MMA_OPS8_4 KK_WM_ACC8 ", {%8, %9, %10, %11}, {%12, %13, %14, %15}, " KK_WM_ACC8 ";"
#define KK_WM_MMA_OPS8_8                                                                                      \
  KK_WM_ACC8 ", {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, "           \
  KK_WM_ACC8 ";"
#define KK_WM_STORE_OPS2 "[%0], {%1, %2}, %3;"
#define KK_WM_STORE_OPS8 "[%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"

#define KK_WM_LOAD(NAME, WHICH, LAYOUT, SHAPE, TY, N, R)                                                      \
  __device__ __forceinline__ static void NAME(RegA (&x)[N], const T* p, int ld) {                             \
    asm volatile("wmma.load." WHICH ".sync.aligned." LAYOUT "." SHAPE "." TY " " KK_WM_LOAD_OPS##N            \
                 : KK_WM_REGS##N("=" R, x)                                                                    \
                 : "l"(p), "r"(ld) : "memory");                                                               \
  }
#define KK_WM_MMA(NAME, LAYOUT, SHAPE, TYS, N, NC, R, F)                                                      \
  __device__ __forceinline__ static void NAME(Acc (&acc)[NC], const RegA (&a)[N], const RegA (&b)[N]) {       \
    asm volatile("wmma.mma.sync.aligned." LAYOUT "." SHAPE "." TYS " " KK_WM_MMA_OPS##NC##_##N                \
                 : KK_WM_REGS##NC("+" F, acc)                                                                 \
                 : KK_WM_REGS##N(R, a), KK_WM_REGS##N(R, b));                                                 \
  }
// SHAPE "m16n16k16"; TY the A/B type of the loads; TYS the MMA's D.A.B.C types; STY the store's type
#define KK_WMMA_ASM(SHAPE, TY, TYS, STY, N, NC, R, F)                                                         \
  KK_WM_LOAD(load_a_row, "a", "row", SHAPE, TY, N, R)                                                         \
  KK_WM_LOAD(load_b_row, "b", "row", SHAPE, TY, N, R)                                                         \
  KK_WM_LOAD(load_b_col, "b", "col", SHAPE, TY, N, R)                                                         \
  KK_WM_MMA(mma_row, "row.row", SHAPE, TYS, N, NC, R, F)                                                      \
  KK_WM_MMA(mma_col, "row.col", SHAPE, TYS, N, NC, R, F)                                                      \
  __device__ __forceinline__ static void store(Acc* p, const Acc (&acc)[NC], int ld) {                        \
    asm volatile("wmma.store.d.sync.aligned.row." SHAPE "." STY " " KK_WM_STORE_OPS##NC                       \
                 :: "l"(p), KK_WM_REGS##NC(F, acc), "r"(ld) : "memory");                                      \
  }

// A traits struct's types and shape: Out the output's element, T the operands', Acc the accumulator's,
// RegA a register of an A or B fragment; FM x FN x FK the fragment shape, N registers an A or B
// fragment, NC a C fragment; kTf32: fp32 operands rounded to tf32 after the load.
template <typename Out_, typename T_, typename Acc_, typename RegA_, int FM_, int FN_, int FK_, int N_, int NC_,
          bool kTf32_>
struct WmmaTypes {
  using Out = Out_;
  using T = T_;
  using Acc = Acc_;
  using RegA = RegA_;
  static constexpr int FM = FM_, FN = FN_, FK = FK_, NA = N_, NB = N_, NC = NC_;
  static constexpr bool kTf32 = kTf32_;
};

struct WmmaF16 : WmmaTypes<__half, __half, float, unsigned, 16, 16, 16, 8, 8, false> {
  KK_WMMA_ASM("m16n16k16", "f16", "f32.f32", "f32", 8, 8, "r", "f")
};

struct WmmaBF16 : WmmaTypes<__nv_bfloat16, __nv_bfloat16, float, unsigned, 16, 16, 16, 4, 8, false> {
  KK_WMMA_ASM("m16n16k16", "bf16", "f32.bf16.bf16.f32", "f32", 4, 8, "r", "f")
};

struct WmmaTF32 : WmmaTypes<float, float, float, unsigned, 16, 16, 8, 4, 8, true> {
  KK_WMMA_ASM("m16n16k8", "tf32", "f32.tf32.tf32.f32", "f32", 4, 8, "r", "f")
};

struct WmmaS8 : WmmaTypes<int, signed char, int, unsigned, 16, 16, 16, 2, 8, false> {
  KK_WMMA_ASM("m16n16k16", "s8", "s32.s8.s8.s32", "s32", 2, 8, "r", "r")
};

struct WmmaF64 : WmmaTypes<double, double, double, double, 8, 8, 4, 1, 2, false> {
  KK_WMMA_ASM("m8n8k4", "f64", "f64.f64.f64.f64", "f64", 1, 2, "d", "d")
};

// tf32 operands: the nearest tf32 value of each fp32 register (round to nearest, ties away from zero)
template <typename W, int N>
__device__ __forceinline__ void round_tf32(typename W::RegA (&x)[N]) {
  if constexpr (W::kTf32) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(x[i]) : "f"(__uint_as_float(x[i])));
  }
}

__device__ __forceinline__ bool aligned32(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 31) == 0; }

// One warp a fragment of C, its operands loaded from global memory where the whole fragment lies
// inside the operand and its address and stride suit wmma.load (32-byte aligned start, 16-byte
// stride): A k-major as a row-major fragment, B as a column-major (k-major) or row-major one
// (kBK). Fragments at the edges, misaligned views and an m-major A are staged by the warp through a
// slot of shared memory, zero-filled. Four warps a block, 2x2 fragments. Cost: every operand
// element is read from global memory (L2) once per fragment that needs it, FM or FN times in all.
template <typename W, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(128)
mm_wmma_global(const typename W::T* A, const typename W::T* B, typename W::Out* C, const typename W::Out* bias,
               i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const typename W::Out* res, i64 ldr) {
  using T = typename W::T;
  using Acc = typename W::Acc;
  using R = typename W::RegA;
  constexpr int FM = W::FM, FN = W::FN, FK = W::FK;
  __shared__ __align__(32) T sa[4][FM * FK];
  __shared__ __align__(32) T sb[4][FN * FK];
  __shared__ __align__(32) Acc sc[4][FM * FN];
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<typename W::Out> ep{bias, res, ldr};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = blockIdx.x * 2 * FM + (warp / 2) * FM, n0 = blockIdx.y * 2 * FN + (warp % 2) * FN;
  if (m0 >= p.M || n0 >= p.N) return;  // no block-wide barrier below: a warp past the edge just leaves
  const bool a_rows = m0 + FM <= p.M && p.a_k && (p.lda * (i64)sizeof(T)) % 16 == 0;
  const bool b_rows = n0 + FN <= p.N && p.b_k == kBK && (p.ldb * (i64)sizeof(T)) % 16 == 0;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    Acc acc[W::NC];
#pragma unroll
    for (int i = 0; i < W::NC; ++i) acc[i] = 0;
    for (int k0 = 0; k0 < p.K; k0 += FK) {
      const bool kin = k0 + FK <= p.K;
      R fa[W::NA], fb[W::NB];
      const T* ga = a + (i64)m0 * p.lda + k0;
      if (kin && a_rows && aligned32(ga)) {
        W::load_a_row(fa, ga, (int)p.lda);
      } else {
        for (int e = lane; e < FM * FK; e += 32)
          sa[warp][e] = mm::element(a, p.lda, p.a_k, m0 + e / FK, k0 + e % FK, p.M, p.K);
        __syncwarp();
        W::load_a_row(fa, sa[warp], FK);
      }
      const T* gb = b + (kBK ? (i64)n0 * p.ldb + k0 : (i64)k0 * p.ldb + n0);
      const bool direct_b = kin && b_rows && aligned32(gb);
      if (direct_b) {
        if constexpr (kBK) W::load_b_col(fb, gb, (int)p.ldb);
        else W::load_b_row(fb, gb, (int)p.ldb);
      } else {
        for (int e = lane; e < FN * FK; e += 32)  // [n][k]: a column-major fragment
          sb[warp][e] = mm::element(b, p.ldb, p.b_k, n0 + e / FK, k0 + e % FK, p.N, p.K);
        __syncwarp();
        W::load_b_col(fb, sb[warp], FK);
      }
      round_tf32<W>(fa);
      round_tf32<W>(fb);
      if (direct_b && !kBK) W::mma_row(acc, fa, fb);
      else W::mma_col(acc, fa, fb);
      __syncwarp();  // every lane has loaded the slots before they are refilled
    }
    W::store(sc[warp], acc, FN);
    __syncwarp();
    for (int e = lane; e < FM * FN; e += 32) mm::put<EPI>(C + z * p.bsc, ep, p, m0 + e / FN, n0 + e % FN, sc[warp][e]);
    __syncwarp();
  }
}

// Shared-memory tile of an operand for wmma.load: k cut into fragment-deep slabs [k / FK][r][FK + pad],
// so that every fragment starts 32-byte aligned and rows are PITCH elements (16 bytes of padding).
template <int R, int FK, int PITCH>
struct Slabs {
  __device__ __forceinline__ static int at(int r, int k) { return ((k / FK) * R + r) * PITCH + k % FK; }
};

// WMMA with shared-memory block tiles: BM x BN outputs a block, K in slabs of 64 bytes, each warp a WM x
// WN tile of (WM/FM) x (WN/FN) fragments. Both operands are staged k-major (transposed on the way in
// where the operand is m- or n-major), fetched into registers during the previous slab's MMAs.
// Each operand element is read from global memory once per block tile that needs it.
template <typename W, int BM, int BN, int WM, int WN, int THREADS, int EPI = 0>
__global__ void __launch_bounds__(THREADS)
mm_wmma_smem(const typename W::T* A, const typename W::T* B, typename W::Out* C, const typename W::Out* bias,
             i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags,
    const typename W::Out* res, i64 ldr) {
  using T = typename W::T;
  using Acc = typename W::Acc;
  using R = typename W::RegA;
  constexpr int FM = W::FM, FN = W::FN, FK = W::FK, BK = 64 / (int)sizeof(T), P = FK + 16 / (int)sizeof(T);
  constexpr int FI = WM / FM, FJ = WN / FN, WARPS_N = BN / WN;
  static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "one warp a warp tile");
  using SA = Slabs<BM, FK, P>;
  using SB = Slabs<BN, FK, P>;
  constexpr int A_ELEMS = BK / FK * BM * P, B_ELEMS = BK / FK * BN * P;
  static_assert(THREADS / 32 * FM * FN * sizeof(Acc) <= (A_ELEMS + B_ELEMS) * sizeof(T), "epilogue scratch fits");
  __shared__ __align__(32) unsigned char raw[(A_ELEMS + B_ELEMS) * sizeof(T)];
  T* sa = reinterpret_cast<T*>(raw);
  T* sb = sa + A_ELEMS;
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);
  const mm::Epi<typename W::Out> ep{bias, res, ldr};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    const T* a = A + z * p.bsa;
    const T* b = B + z * p.bsb;
    Acc acc[FI][FJ][W::NC];
#pragma unroll
    for (int i = 0; i < FI; ++i)
#pragma unroll
      for (int j = 0; j < FJ; ++j)
#pragma unroll
        for (int e = 0; e < W::NC; ++e) acc[i][j][e] = 0;
    mm::TileFetch<T, BM, BK, THREADS> fa;
    mm::TileFetch<T, BN, BK, THREADS> fb;
    fa.fetch(a, p.lda, p.a_k, p.vec_a, m0, 0, p.M - m0, p.K);
    fb.fetch(b, p.ldb, p.b_k, p.vec_b, n0, 0, p.N - n0, p.K);
    for (int k0 = 0; k0 < p.K; k0 += BK) {
      fa.template store<SA>(sa, p.a_k);
      fb.template store<SB>(sb, p.b_k);
      __syncthreads();
      if (k0 + BK < p.K) {  // the next slab's loads fly during this slab's MMAs
        fa.fetch(a, p.lda, p.a_k, p.vec_a, m0, k0 + BK, p.M - m0, p.K - k0 - BK);
        fb.fetch(b, p.ldb, p.b_k, p.vec_b, n0, k0 + BK, p.N - n0, p.K - k0 - BK);
      }
#pragma unroll
      for (int ks = 0; ks < BK / FK; ++ks) {
        R ra[FI][W::NA], rb[FJ][W::NB];
#pragma unroll
        for (int i = 0; i < FI; ++i) {
          W::load_a_row(ra[i], sa + SA::at(wm0 + i * FM, ks * FK), P);
          round_tf32<W>(ra[i]);
        }
#pragma unroll
        for (int j = 0; j < FJ; ++j) {
          W::load_b_col(rb[j], sb + SB::at(wn0 + j * FN, ks * FK), P);
          round_tf32<W>(rb[j]);
        }
#pragma unroll
        for (int i = 0; i < FI; ++i)
#pragma unroll
          for (int j = 0; j < FJ; ++j) W::mma_col(acc[i][j], ra[i], rb[j]);
      }
      __syncthreads();
    }
    Acc* scratch = reinterpret_cast<Acc*>(raw) + warp * FM * FN;  // the tiles are free after the last barrier
#pragma unroll
    for (int i = 0; i < FI; ++i)
#pragma unroll
      for (int j = 0; j < FJ; ++j) {
        W::store(scratch, acc[i][j], FN);
        __syncwarp();
        for (int e = lane; e < FM * FN; e += 32)
          mm::put<EPI>(C + z * p.bsc, ep, p, m0 + wm0 + i * FM + e / FN, n0 + wn0 + j * FN + e % FN, scratch[e]);
        __syncwarp();
      }
    __syncthreads();
  }
}

}  // namespace kk
