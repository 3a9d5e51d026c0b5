// fp8 wgmma (sm_90a) for the scaled_matmul kernels: D (64 x N, fp32, in registers) += A (64 x 32) *
// B (32 x N), both operands e4m3 or e5m2 read K-major from shared memory through their descriptors
// (fp8 wgmma has no transposed form). A K step of 32 fp8 elements is 32 bytes of a swizzle line, as
// a K step of 16 for 16-bit types, so hopper.cuh's sw128_desc addresses these tiles unchanged. The
// D fragment is the 16-bit instructions' (hopper.cuh). scale_d = 0 overwrites D instead of adding to
// it. One asm statement per (type pair, N): the types are part of the instruction's name. The pairs
// are those torch._scaled_mm takes (not e5m2 x e5m2).
#pragma once
#include "hopper.cuh"

namespace kk {
namespace hop {

// Operand formats, as template arguments.
constexpr int kE4M3 = 0, kE5M2 = 1;

// An fp8 wgmma (no transpose immediates; scale_d a runtime predicate): operand numbers as in
// hopper.cuh's KK_WGMMA_16BIT.
#define KK_WGMMA_FP8(NAME, SHAPE, TA, TB, NACC, ACC, OUT, IA, IB, IS)                                          \
  __device__ __forceinline__ void NAME(float (&d)[NACC], unsigned long long da, unsigned long long db,          \
                                       int scale_d) {                                                          \
    KK_WG_ASM("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" IS ", 0;\n\twgmma.mma_async.sync.aligned." SHAPE       \
              ".f32." TA "." TB " {" ACC "}, %" IA ", %" IB ", p, 1, 1;\n\t}"                                  \
              : OUT(d)                                                                                         \
              : "l"(da), "l"(db), "r"(scale_d));                                                              \
  }

#define KK_WGMMA_FP8_PAIRS(N, NACC, ACC, OUT, IA, IB, IS)                                                      \
  KK_WGMMA_FP8(qgmma_e4m3_e4m3_n##N, "m64n" #N "k32", "e4m3", "e4m3", NACC, ACC, OUT, IA, IB, IS)             \
  KK_WGMMA_FP8(qgmma_e4m3_e5m2_n##N, "m64n" #N "k32", "e4m3", "e5m2", NACC, ACC, OUT, IA, IB, IS)             \
  KK_WGMMA_FP8(qgmma_e5m2_e4m3_n##N, "m64n" #N "k32", "e5m2", "e4m3", NACC, ACC, OUT, IA, IB, IS)

KK_WGMMA_FP8_PAIRS(128, 64, KK_WG_ACC64, KK_WG_OUT64, "64", "65", "66")
KK_WGMMA_FP8_PAIRS(192, 96, KK_WG_ACC96, KK_WG_OUT96, "96", "97", "98")
KK_WGMMA_FP8_PAIRS(256, 128, KK_WG_ACC128, KK_WG_OUT128, "128", "129", "130")

template <int kA, int kB, int N>
__device__ __forceinline__ void qgmma(float (&d)[N / 2], unsigned long long da, unsigned long long db, int scale_d) {
  static_assert(N == 128 || N == 192 || N == 256, "m64n128k32, m64n192k32 and m64n256k32");
  static_assert(kA == kE4M3 || kB == kE4M3, "e5m2 x e5m2 is not a pair torch._scaled_mm takes");
  if constexpr (N == 128) {
    if constexpr (kA == kE4M3 && kB == kE4M3) qgmma_e4m3_e4m3_n128(d, da, db, scale_d);
    else if constexpr (kA == kE4M3) qgmma_e4m3_e5m2_n128(d, da, db, scale_d);
    else qgmma_e5m2_e4m3_n128(d, da, db, scale_d);
  } else if constexpr (N == 192) {
    if constexpr (kA == kE4M3 && kB == kE4M3) qgmma_e4m3_e4m3_n192(d, da, db, scale_d);
    else if constexpr (kA == kE4M3) qgmma_e4m3_e5m2_n192(d, da, db, scale_d);
    else qgmma_e5m2_e4m3_n192(d, da, db, scale_d);
  } else {
    if constexpr (kA == kE4M3 && kB == kE4M3) qgmma_e4m3_e4m3_n256(d, da, db, scale_d);
    else if constexpr (kA == kE4M3) qgmma_e4m3_e5m2_n256(d, da, db, scale_d);
    else qgmma_e5m2_e4m3_n256(d, da, db, scale_d);
  }
}

}  // namespace hop
}  // namespace kk
