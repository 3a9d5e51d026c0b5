// The pieces of the mma.sync kernels: the instruction of each dtype (fp16 and bf16 m16n8k16, tf32 m16n8k8,
// int8 m16n8k32: every shape is 32 bytes of K, with 4 A registers, 2 B registers and 4 accumulators a
// lane), cp.async, ldmatrix, tf32 rounding, and the XOR swizzle of 16-byte chunks in shared memory.
#pragma once
#include "matmul.cuh"

namespace kk {

struct MmaF16 {
  using T = __half;
  using Acc = float;
  using Out = __half;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
struct MmaBF16 {
  using T = __nv_bfloat16;
  using Acc = float;
  using Out = __nv_bfloat16;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
struct MmaTF32 {
  using T = float;
  using Acc = float;
  using Out = float;
  static constexpr bool kTf32 = true;
  __device__ __forceinline__ static void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
struct MmaS8 {
  using T = signed char;
  using Acc = int;
  using Out = int;
  static constexpr bool kTf32 = false;
  __device__ __forceinline__ static void mma(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

namespace mma {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, asynchronously; the bytes past `bytes` (0 to 16) are zeros.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes)
               : "memory");
}
// 16 bytes from global to shared memory, asynchronously, all of them inside the operand.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// The same at a shared-memory address (a 32-bit address of the shared window)
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
// 8 bytes of shared memory at a 32-bit shared address
__device__ __forceinline__ double lds64(unsigned a) {
  double x;
  asm volatile("ld.shared.f64 %0, [%1];" : "=d"(x) : "r"(a));
  return x;
}
// 16 bytes of shared memory at a 32-bit shared address
__device__ __forceinline__ void lds128(unsigned (&r)[4], unsigned a) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// fp32 operands of a tf32 mma rounded to nearest, ties away from zero (cvt.rna's rounding): the mma
// reads the top 19 bits and ignores the low 13, so adding half of the dropped unit to the bit pattern is
// the whole rounding, carries into the exponent included. One integer add a value, where cvt.rna
// compiles to two (it also keeps infinities out of the add, which only matters to a reader of all 32
// bits: inf + 0x1000 differs from inf in ignored bits only).
template <int N>
__device__ __forceinline__ void round_tf32(unsigned (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) x[i] += 0x1000u;
}

// The MT x NT accumulator fragments of a warp, zeroed
template <typename Acc, int MT, int NT>
__device__ __forceinline__ void zero(Acc (&acc)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;
}

// ldmatrix fragments of 32-byte K step ks of a stage, .trans from a tile stored [k][r] (kSA / kSB
// false), tf32 rounded; i = lane & 7 and j = lane >> 3 (lane 8 j + i gives row i of matrix j), from the
// caller. A's of the 16 rows r.. (tile TA at sa):
template <typename Tr, typename TA, bool kSA>
__device__ __forceinline__ void ldsm_a(unsigned (&fa)[4], typename Tr::T* sa, int r, int ks, int lane, int i,
                                       int j) {
  if constexpr (kSA) {
    ldsm_x4(fa, TA::chunk(sa, r + (lane & 15), ks * 2 + (lane >> 4)));
  } else {
    ldsm_x4_trans(fa, TA::chunk(sa, ks * 16 + i + (j >> 1) * 8, r / TA::V + (j & 1)));
  }
  if constexpr (Tr::kTf32) round_tf32(fa);
}
// B's of the two n8 tiles of columns r.. (tile TB at sb): x[0..1] the first's, x[2..3] the second's. (The
// caller splits them: split here, tf32's kernels compiled differently.)
template <typename Tr, typename TB, bool kSB>
__device__ __forceinline__ void ldsm_b(unsigned (&x)[4], typename Tr::T* sb, int r, int ks, int i, int j) {
  if constexpr (kSB) {
    ldsm_x4(x, TB::chunk(sb, r + i + (j >> 1) * 8, ks * 2 + (j & 1)));
  } else {
    ldsm_x4_trans(x, TB::chunk(sb, ks * 16 + i + (j & 1) * 8, r / TB::V + (j >> 1)));
  }
  if constexpr (Tr::kTf32) round_tf32(x);
}

// The physical chunk of logical chunk c in row `row` of a tile with C chunks a row.
template <int C>
__device__ __forceinline__ int swz(int row, int c) {
  if constexpr (C >= 8) return c ^ (row & 7);
  else if constexpr (C == 4) return c ^ ((row >> 1) & 3);
  else return c ^ ((row >> 2) & 1);
}

// One operand's tile of a stage: R rows (M or N) x 64 bytes of K, THREADS threads. kSmemK: stored
// [r][k] (4 chunks a row), else [k][r] (R / V chunks a row, 16-bit elements). `cp`: the operand may be
// read by 16-byte asynchronous copies (aligned, whole-vector strides, and stored as it lies in memory);
// otherwise its elements are read one by one (zero-filled past the edges) and stored as 16-byte chunks.
template <typename T, int R, int THREADS, bool kSmemK>
struct StageTile {
  static constexpr int V = 16 / (int)sizeof(T), KE = 64 / (int)sizeof(T);
  static constexpr int ROWS = kSmemK ? R : KE, C = kSmemK ? 64 / 16 : R / V;
  static constexpr int CHUNKS = ROWS * C / THREADS;
  static_assert(ROWS * C % THREADS == 0, "whole chunks a thread");
  static constexpr int ELEMS = ROWS * C * V;

  __device__ __forceinline__ static T* chunk(T* s, int row, int c) { return s + row * C * V + swz<C>(row, c) * V; }

  // the tile at (r0, k0) of an operand of `rows` x `ks` (absolute extents)
  __device__ __forceinline__ static void load(T* s, const T* g, i64 ld, bool gk, bool cp, int r0, int k0, int rows,
                                              int ks) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < CHUNKS; ++i) {
      const int q = tid + i * THREADS;
      // consecutive threads along the operand's contiguous dim in memory
      const bool along = gk == kSmemK;
      const int row = along ? q / C : q % ROWS, c = along ? q % C : q / ROWS;
      const int r = kSmemK ? row : c * V, k = kSmemK ? c * V : row;  // the chunk's first element
      T* dst = chunk(s, row, c);
      if (cp) {
        const int rr = r0 + r, kk = k0 + k;
        const bool row_in = kSmemK ? rr < rows : kk < ks;
        const int left = kSmemK ? ks - kk : rows - rr;
        const int bytes = row_in ? max(0, min(left, V)) * (int)sizeof(T) : 0;
        const T* src = bytes ? g + (kSmemK ? (i64)rr * ld + kk : (i64)kk * ld + rr) : g;
        cp_async16(dst, src, bytes);
      } else {
        unsigned w[4] = {0u, 0u, 0u, 0u};  // packed in registers: a byte array would live in local memory
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const T x = kSmemK ? mm::element(g, ld, gk, r0 + r, k0 + k + j, rows, ks)
                             : mm::element(g, ld, gk, r0 + r + j, k0 + k, rows, ks);
          unsigned bits = 0;
          memcpy(&bits, &x, sizeof(T));
          w[j * (int)sizeof(T) / 4] |= bits << (8 * (j * (int)sizeof(T) % 4));
        }
        *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
};

}  // namespace mma

}  // namespace kk
