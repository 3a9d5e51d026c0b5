// Vision pre-processing in one pass: uint8 pixels (P, C) channels-last to float
//   out = x * scale[c] + bias[c]     (scale = 1 / (255 std), bias = -mean / std, fp32 fma)
// either planar (N, C, H*W) ("CHW") or in the input's order (N, H*W, C) ("HWC"). C <= 4; the
// per-channel constants travel as eight float kernel parameters (no device buffer, no copy).
// Rungs:
//   norm_element   one output element per thread: index arithmetic (divisions) per element, a byte
//                  load per element
//   norm_pixel     one pixel per thread: C byte loads, C stores (coalesced within each plane); any
//                  C, alignment and plane size
//   norm_chw_vec   16 pixels per thread: 16 C bytes in as C/..., 16-byte loads, every plane written
//                  with 16-byte stores; needs H*W % 16 == 0 and aligned pointers (else norm_pixel)
//   norm_hwc_vec   16 L bytes per thread (L = 3 for C = 3 so every thread sees the same channel
//                  pattern), 16-byte loads and stores, tail element by element
// Grid-stride loops carry `#pragma unroll 1`: unrolled, the compiler computes their trip count with a
// 64-bit division (a CALL to a ~100-instruction routine) per thread and loop, which the one-vector-
// per-thread launches would pay on every 16 bytes (measured: invert 2858 GB/s before).
#include "common.cuh"

namespace kk {

using u8 = unsigned char;

struct Coef {
  float s0, s1, s2, s3, b0, b1, b2, b3;
  // runtime channel: selects, not an indexed local array (which would live in local memory)
  __device__ __forceinline__ float scale(int c) const { return c == 0 ? s0 : c == 1 ? s1 : c == 2 ? s2 : s3; }
  __device__ __forceinline__ float bias(int c) const { return c == 0 ? b0 : c == 1 ? b1 : c == 2 ? b2 : b3; }
  __device__ __forceinline__ float apply(u8 x, int c) const { return fmaf((float)x, scale(c), bias(c)); }
};

// a / b for non-negative a, b: the 32-bit unsigned division (a few instructions) when both fit in
// 32 bits, the 64-bit routine (a CALL of ~100 instructions) only past that.
__device__ __forceinline__ i64 div_u(i64 a, i64 b) {
  if ((((unsigned long long)a | (unsigned long long)b) >> 32) == 0) return (unsigned)a / (unsigned)b;
  return a / b;
}

#define KK_COEF_PARAMS float s0, float s1, float s2, float s3, float b0, float b1, float b2, float b3
#define KK_COEF Coef { s0, s1, s2, s3, b0, b1, b2, b3 }

// total = N * C * hw output elements; kCHW: out is (N, C, hw), else (N, hw, C) like the input.
template <typename TO, bool kCHW>
__global__ void norm_element(TO* __restrict__ out, const u8* __restrict__ in, i64 total, i64 hw, int C,
                             KK_COEF_PARAMS) {
  const Coef k = KK_COEF;
#pragma unroll 1
  for (i64 o = global_thread(); o < total; o += grid_threads()) {
    i64 src;
    int c;
    if constexpr (kCHW) {
      const i64 plane = div_u(o, hw), p = o - plane * hw;  // plane = n * C + c
      const i64 n = div_u(plane, C);
      c = (int)(plane - n * C);
      src = (n * hw + p) * C + c;
    } else {
      src = o;
      c = (int)(o - div_u(o, C) * C);
    }
    out[o] = from_float<TO>(k.apply(in[src], c));
  }
}

// npix = N * hw pixels, one per thread.
template <typename TO, bool kCHW>
__global__ void norm_pixel(TO* __restrict__ out, const u8* __restrict__ in, i64 npix, i64 hw, int C,
                           KK_COEF_PARAMS) {
  const Coef k = KK_COEF;
#pragma unroll 1
  for (i64 p = global_thread(); p < npix; p += grid_threads()) {
    const i64 n = div_u(p, hw), q = p - n * hw;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if (c < C) {
        const float v = k.apply(in[p * C + c], c);
        out[kCHW ? (n * C + c) * hw + q : p * C + c] = from_float<TO>(v);
      }
    }
  }
}

// Two fp32 values rounded to TO and packed into one 32-bit word (low half first); fp32 takes one.
__device__ __forceinline__ unsigned pack2(__half, float a, float b) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack2(__nv_bfloat16, float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&h);
}

// One 16-byte global store, spelled in PTX: written as a uint4 assignment, the compiler split the
// stores of some channels into four 32-bit STGs (seen in the SASS), which the vector path exists to avoid.
__device__ __forceinline__ void st_global16(void* p, unsigned a, unsigned b, unsigned c, unsigned d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// 16 fp32 values as 16 outputs of type TO in 16-byte stores (dst 16-byte aligned).
template <typename TO>
__device__ __forceinline__ void store16_outputs(TO* dst, const float (&v)[16]) {
  uint4* d = reinterpret_cast<uint4*>(dst);
  if constexpr (sizeof(TO) == 4) {
#pragma unroll
    for (int s = 0; s < 4; ++s)
      st_global16(d + s, __float_as_uint(v[4 * s]), __float_as_uint(v[4 * s + 1]), __float_as_uint(v[4 * s + 2]),
                  __float_as_uint(v[4 * s + 3]));
  } else {
#pragma unroll
    for (int s = 0; s < 2; ++s)
      st_global16(d + s, pack2(TO{}, v[8 * s], v[8 * s + 1]), pack2(TO{}, v[8 * s + 2], v[8 * s + 3]),
                  pack2(TO{}, v[8 * s + 4], v[8 * s + 5]), pack2(TO{}, v[8 * s + 6], v[8 * s + 7]));
  }
}

__device__ __forceinline__ u8 byte_of(const uint4 (&w)[4], int b) {  // b compile-time after unrolling
  const unsigned word = b / 4 % 4 == 0 ? w[b / 16].x : b / 4 % 4 == 1 ? w[b / 16].y : b / 4 % 4 == 2 ? w[b / 16].z : w[b / 16].w;
  return (u8)(word >> (8 * (b % 4)));
}

// units = N * hw / 16; unit u covers pixels [16u, 16u + 16) of one image (hw % 16 == 0).
template <typename TO, int C>
__global__ void norm_chw_vec(TO* __restrict__ out, const u8* __restrict__ in, i64 units, i64 hw, KK_COEF_PARAMS) {
  const Coef k = KK_COEF;
  const i64 per_image = hw / 16;
#pragma unroll 1
  for (i64 u = global_thread(); u < units; u += grid_threads()) {
    uint4 w[4];
#pragma unroll
    for (int j = 0; j < C; ++j) w[j] = load_vec(reinterpret_cast<const uint4*>(in) + u * C + j);
    const i64 n = div_u(u, per_image), q = (u - n * per_image) * 16;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float v[16];
#pragma unroll
      for (int p = 0; p < 16; ++p) v[p] = k.apply(byte_of(w, p * C + c), c);
      store16_outputs(out + (n * C + c) * hw + q, v);
    }
  }
}

// total = N * hw * C elements in input order; a thread handles 16 L of them (L = 3 when C == 3,
// so that 16 L is a multiple of C and element j always has channel j % C).
template <typename TO, int C>
__global__ void norm_hwc_vec(TO* __restrict__ out, const u8* __restrict__ in, i64 total, KK_COEF_PARAMS) {
  const Coef k = KK_COEF;
  constexpr int L = C == 3 ? 3 : 1;
  const i64 units = total / (16 * L);
#pragma unroll 1
  for (i64 u = global_thread(); u < units; u += grid_threads()) {
    uint4 w[4];
#pragma unroll
    for (int j = 0; j < L; ++j) w[j] = load_vec(reinterpret_cast<const uint4*>(in) + u * L + j);
#pragma unroll
    for (int j = 0; j < L; ++j) {
      float v[16];
#pragma unroll
      for (int b = 0; b < 16; ++b) v[b] = k.apply(byte_of(w, 16 * j + b), (16 * j + b) % C);
      store16_outputs(out + (u * L + j) * 16, v);
    }
  }
#pragma unroll 1
  for (i64 e = units * 16 * L + global_thread(); e < total; e += grid_threads())
    out[e] = from_float<TO>(k.apply(in[e], (int)(e % C)));
}

#undef KK_COEF_PARAMS
#undef KK_COEF

}  // namespace kk
