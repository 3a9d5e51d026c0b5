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

struct WmmaF16 {
  using Out = __half;
  using T = __half;
  using Acc = float;
  static constexpr int FM = 16, FN = 16, FK = 16, NA = 8, NB = 8, NC = 8;
  using RegA = unsigned;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void load_a_row(RegA (&x)[8], const T* p, int ld) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3]), "=r"(x[4]), "=r"(x[5]), "=r"(x[6]), "=r"(x[7])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_row(RegA (&x)[8], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3]), "=r"(x[4]), "=r"(x[5]), "=r"(x[6]), "=r"(x[7])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_col(RegA (&x)[8], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3]), "=r"(x[4]), "=r"(x[5]), "=r"(x[6]), "=r"(x[7])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void mma_row(Acc (&acc)[8], const RegA (&a)[8], const RegA (&b)[8]) {
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
  }
  __device__ __forceinline__ static void mma_col(Acc (&acc)[8], const RegA (&a)[8], const RegA (&b)[8]) {
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
  }
  __device__ __forceinline__ static void store(Acc* p, const Acc (&acc)[8], int ld) {
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                 :: "l"(p), "f"(acc[0]), "f"(acc[1]), "f"(acc[2]), "f"(acc[3]), "f"(acc[4]), "f"(acc[5]), "f"(acc[6]), "f"(acc[7]), "r"(ld) : "memory");
  }
};

struct WmmaBF16 {
  using Out = __nv_bfloat16;
  using T = __nv_bfloat16;
  using Acc = float;
  static constexpr int FM = 16, FN = 16, FK = 16, NA = 4, NB = 4, NC = 8;
  using RegA = unsigned;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void load_a_row(RegA (&x)[4], const T* p, int ld) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_row(RegA (&x)[4], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_col(RegA (&x)[4], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void mma_row(Acc (&acc)[8], const RegA (&a)[4], const RegA (&b)[4]) {
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
  }
  __device__ __forceinline__ static void mma_col(Acc (&acc)[8], const RegA (&a)[4], const RegA (&b)[4]) {
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
  }
  __device__ __forceinline__ static void store(Acc* p, const Acc (&acc)[8], int ld) {
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                 :: "l"(p), "f"(acc[0]), "f"(acc[1]), "f"(acc[2]), "f"(acc[3]), "f"(acc[4]), "f"(acc[5]), "f"(acc[6]), "f"(acc[7]), "r"(ld) : "memory");
  }
};

struct WmmaTF32 {
  using Out = float;
  using T = float;
  using Acc = float;
  static constexpr int FM = 16, FN = 16, FK = 8, NA = 4, NB = 4, NC = 8;
  using RegA = unsigned;
  static constexpr bool kTf32 = true;
  __device__ __forceinline__ static void load_a_row(RegA (&x)[4], const T* p, int ld) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_row(RegA (&x)[4], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_col(RegA (&x)[4], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void mma_row(Acc (&acc)[8], const RegA (&a)[4], const RegA (&b)[4]) {
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
  }
  __device__ __forceinline__ static void mma_col(Acc (&acc)[8], const RegA (&a)[4], const RegA (&b)[4]) {
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3]), "+f"(acc[4]), "+f"(acc[5]), "+f"(acc[6]), "+f"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
  }
  __device__ __forceinline__ static void store(Acc* p, const Acc (&acc)[8], int ld) {
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k8.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                 :: "l"(p), "f"(acc[0]), "f"(acc[1]), "f"(acc[2]), "f"(acc[3]), "f"(acc[4]), "f"(acc[5]), "f"(acc[6]), "f"(acc[7]), "r"(ld) : "memory");
  }
};

struct WmmaS8 {
  using Out = int;
  using T = signed char;
  using Acc = int;
  static constexpr int FM = 16, FN = 16, FK = 16, NA = 2, NB = 2, NC = 8;
  using RegA = unsigned;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void load_a_row(RegA (&x)[2], const T* p, int ld) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.s8 {%0, %1}, [%2], %3;"
                 : "=r"(x[0]), "=r"(x[1])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_row(RegA (&x)[2], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.s8 {%0, %1}, [%2], %3;"
                 : "=r"(x[0]), "=r"(x[1])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_col(RegA (&x)[2], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.s8 {%0, %1}, [%2], %3;"
                 : "=r"(x[0]), "=r"(x[1])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void mma_row(Acc (&acc)[8], const RegA (&a)[2], const RegA (&b)[2]) {
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.s32.s8.s8.s32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]), "+r"(acc[6]), "+r"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]));
  }
  __device__ __forceinline__ static void mma_col(Acc (&acc)[8], const RegA (&a)[2], const RegA (&b)[2]) {
    asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%0, %1, %2, %3, %4, %5, %6, %7};"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]), "+r"(acc[6]), "+r"(acc[7])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]));
  }
  __device__ __forceinline__ static void store(Acc* p, const Acc (&acc)[8], int ld) {
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.s32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
                 :: "l"(p), "r"(acc[0]), "r"(acc[1]), "r"(acc[2]), "r"(acc[3]), "r"(acc[4]), "r"(acc[5]), "r"(acc[6]), "r"(acc[7]), "r"(ld) : "memory");
  }
};

struct WmmaF64 {
  using Out = double;
  using T = double;
  using Acc = double;
  static constexpr int FM = 8, FN = 8, FK = 4, NA = 1, NB = 1, NC = 2;
  using RegA = double;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void load_a_row(RegA (&x)[1], const T* p, int ld) {
    asm volatile("wmma.load.a.sync.aligned.row.m8n8k4.f64 {%0}, [%1], %2;"
                 : "=d"(x[0])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_row(RegA (&x)[1], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.row.m8n8k4.f64 {%0}, [%1], %2;"
                 : "=d"(x[0])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void load_b_col(RegA (&x)[1], const T* p, int ld) {
    asm volatile("wmma.load.b.sync.aligned.col.m8n8k4.f64 {%0}, [%1], %2;"
                 : "=d"(x[0])
                 : "l"(p), "r"(ld) : "memory");
  }
  __device__ __forceinline__ static void mma_row(Acc (&acc)[2], const RegA (&a)[1], const RegA (&b)[1]) {
    asm volatile("wmma.mma.sync.aligned.row.row.m8n8k4.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(acc[0]), "+d"(acc[1])
                 : "d"(a[0]), "d"(b[0]));
  }
  __device__ __forceinline__ static void mma_col(Acc (&acc)[2], const RegA (&a)[1], const RegA (&b)[1]) {
    asm volatile("wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(acc[0]), "+d"(acc[1])
                 : "d"(a[0]), "d"(b[0]));
  }
  __device__ __forceinline__ static void store(Acc* p, const Acc (&acc)[2], int ld) {
    asm volatile("wmma.store.d.sync.aligned.row.m8n8k4.f64 [%0], {%1, %2}, %3;"
                 :: "l"(p), "d"(acc[0]), "d"(acc[1]), "r"(ld) : "memory");
  }
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
