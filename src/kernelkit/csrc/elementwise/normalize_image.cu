// Vision pre-processing in one pass: uint8 pixels (P, C) channels-last to float
//   out = x * scale[c] + bias[c]     (scale = 1 / (255 std), bias = -mean / std, fp32 fma)
// either planar (N, C, H*W) ("CHW") or in the input's order (N, H*W, C) ("HWC"). C <= 4; the
// per-channel constants travel as eight float kernel parameters s0..s3, b0..b3 (no device buffer, no
// copy), gathered into a Coef in each kernel.
// Rungs:
//   norm_element   one output element per thread: index arithmetic (divisions) per element, a byte
//                  load per element
//   norm_pixel     one pixel per thread: C byte loads, C stores (coalesced within each plane); any
//                  C, alignment and plane size
//   norm_chw_vec   16 / sizeof(out) pixels per thread: their C bytes each in 4- to 16-byte loads, a
//                  16-byte store into every plane; needs H*W % (16 / sizeof(out)) == 0 and aligned
//                  pointers (else norm_pixel)
//   norm_hwc_vec   one 16-byte output vector per thread from 4 or 8 input bytes, tail element by element
// Grid-stride loops carry `#pragma unroll 1`: unrolled, the compiler computes their trip count with a
// 64-bit division (a CALL to a ~100-instruction routine) per thread and loop, which the one-vector-
// per-thread launches would pay on every 16 bytes (docs/design/elementwise.md).
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


// total = N * C * hw output elements; kCHW: out is (N, C, hw), else (N, hw, C) like the input.
template <typename TO, bool kCHW>
__global__ void norm_element(TO* __restrict__ out, const u8* __restrict__ in, i64 total, i64 hw, int C,
                             float s0, float s1, float s2, float s3, float b0, float b1, float b2, float b3) {
  const Coef k{s0, s1, s2, s3, b0, b1, b2, b3};
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
                           float s0, float s1, float s2, float s3, float b0, float b1, float b2, float b3) {
  const Coef k{s0, s1, s2, s3, b0, b1, b2, b3};
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

// E = 16 / sizeof(TO) fp32 values as one 16-byte store of TO (dst 16-byte aligned).
template <typename TO>
__device__ __forceinline__ void store_row16(TO* dst, const float (&v)[16 / sizeof(TO)]) {
  if constexpr (sizeof(TO) == 4) {
    st_global16(dst, __float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  } else {
    st_global16(dst, pack2(TO{}, v[0], v[1]), pack2(TO{}, v[2], v[3]), pack2(TO{}, v[4], v[5]), pack2(TO{}, v[6], v[7]));
  }
}

// B consecutive input bytes (B a multiple of 4, p aligned to the load width) into 32-bit words,
// with the widest loads B allows: 16 bytes when B % 16 == 0, else 8, else 4.
template <int B>
__device__ __forceinline__ void load_bytes(unsigned (&w)[B / 4], const u8* p) {
  if constexpr (B % 16 == 0) {
#pragma unroll
    for (int k = 0; k < B / 16; ++k) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[k];
      w[4 * k] = v.x, w[4 * k + 1] = v.y, w[4 * k + 2] = v.z, w[4 * k + 3] = v.w;
    }
  } else if constexpr (B % 8 == 0) {
#pragma unroll
    for (int k = 0; k < B / 8; ++k) {
      const uint2 v = reinterpret_cast<const uint2*>(p)[k];
      w[2 * k] = v.x, w[2 * k + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < B / 4; ++k) w[k] = reinterpret_cast<const unsigned*>(p)[k];
  }
}

template <int NW>
__device__ __forceinline__ u8 byte_at(const unsigned (&w)[NW], int b) {  // b compile-time after unrolling
  return (u8)(w[b >> 2] >> (8 * (b & 3)));
}

// A thread makes one 16-byte vector of every output plane: E = 16 / sizeof(TO) pixels, read as
// E * C contiguous bytes. Consecutive threads take consecutive pixel groups, so each store
// instruction of a warp writes 512 contiguous bytes of one plane and each load instruction reads
// within one contiguous E * C * 32-byte span (more pixels a thread would make the lanes' stores
// stride 32-64 bytes apart and half-fill every sector: docs/design/elementwise.md).
// units = N * hw / E groups; hw % E == 0, so a group never straddles two images.
template <typename TO, int C>
__global__ void norm_chw_vec(TO* __restrict__ out, const u8* __restrict__ in, i64 units, i64 hw,
                             float s0, float s1, float s2, float s3, float b0, float b1, float b2, float b3) {
  constexpr int E = 16 / sizeof(TO);
  const Coef k{s0, s1, s2, s3, b0, b1, b2, b3};
  const i64 per_image = hw / E, stride = grid_threads();
#pragma unroll 1
  for (i64 u = global_thread(); u < units; u += stride) {
    unsigned w[E * C / 4];
    load_bytes<E * C>(w, in + u * (E * C));
    const i64 n = div_u(u, per_image), q = (u - n * per_image) * E;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float v[E];
#pragma unroll
      for (int p = 0; p < E; ++p) v[p] = k.apply(byte_at(w, p * C + c), c);
      store_row16(out + (n * C + c) * hw + q, v);
    }
  }
}

// total = N * hw * C elements in input order; a thread makes one 16-byte output vector from E
// input bytes. For C == 3 the channel of the thread's first element varies with the thread, so the
// three coefficients are rotated once per thread and element j takes rotation slot j % 3.
template <typename TO, int C>
__global__ void norm_hwc_vec(TO* __restrict__ out, const u8* __restrict__ in, i64 total,
                             float s0, float s1, float s2, float s3, float b0, float b1, float b2, float b3) {
  constexpr int E = 16 / sizeof(TO);
  const Coef k{s0, s1, s2, s3, b0, b1, b2, b3};
  const i64 units = total / E;
#pragma unroll 1
  for (i64 u = global_thread(); u < units; u += grid_threads()) {
    unsigned w[E / 4];
    load_bytes<E>(w, in + u * E);
    int c0 = 0;  // channel of element u * E
    if constexpr (C == 3) c0 = (int)((u - 3 * div_u(u, 3)) * (E % 3) % 3);
    float sc[C], bi[C];
#pragma unroll
    for (int r = 0; r < C; ++r) {
      const int c = C == 3 ? (c0 + r) % 3 : r;
      sc[r] = k.scale(c), bi[r] = k.bias(c);
    }
    float v[E];
#pragma unroll
    for (int j = 0; j < E; ++j) v[j] = fmaf((float)byte_at(w, j), sc[j % C], bi[j % C]);
    store_row16(out + u * E, v);
  }
#pragma unroll 1
  for (i64 e = units * E + global_thread(); e < total; e += grid_threads())
    out[e] = from_float<TO>(k.apply(in[e], (int)(e % C)));
}

}  // namespace kk
