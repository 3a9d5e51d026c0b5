// Byte-image maps: RGBA colour inversion (source 001) and grayscale binarization.
//
// An op is a functor built from a 32-bit parameter and the phase (element index mod 4) of the first
// byte of a word, with
//   __device__ u8  byte(u8 v, i64 idx) const;   // one byte; idx counts from the image's first byte
//   __device__ u32 word(u32 w) const;           // four bytes at once (little-endian, phase applied)
// Rungs (one template each):
//   bytes_map         a byte per thread (8-bit accesses)
//   words_map         a 32-bit word per thread: one RGBA pixel as uchar4 (needs 4-byte alignment)
//   invert_coarsened  source 001's kernel: 32x8 blocks over (rows, width) pixels, each thread handles
//                     BK pixels 32 apart (interleaved, so each access is still coalesced), uchar4
//   bytes_fast        16-byte accesses, prologue/main/epilogue for any alignment of out; the input
//                     as 16-byte vectors when it shares out's misalignment, else byte by byte
// Grid-stride loops carry `#pragma unroll 1`: unrolled, the compiler computes their trip count with a
// 64-bit division (a CALL to a ~100-instruction routine) per thread and loop, which the one-vector-
// per-thread launches would pay on every 16 bytes (measured: invert 2858 GB/s before).
#include "common.cuh"

namespace kk {

using u8 = unsigned char;
using u32 = unsigned int;

// 255 - v on R, G and B; alpha (byte 3 of every pixel) unchanged. 255 - v == v ^ 0xff, so a word is
// inverted by one xor with the three colour bytes set, rotated to the word's phase.
struct Invert {
  u32 mask;
  __device__ __forceinline__ Invert(u32, int phase) : mask(~(0xffu << (8 * ((3 - phase) & 3)))) {}
  __device__ __forceinline__ u8 byte(u8 v, i64 idx) const { return (idx & 3) == 3 ? v : (u8)(255 - v); }
  __device__ __forceinline__ u32 word(u32 w) const { return w ^ mask; }
};

// 255 where v > threshold, else 0; the host handles thresholds outside [0, 254] (all 255 or all 0).
struct Binarize {
  u32 t;
  __device__ __forceinline__ Binarize(u32 threshold, int) : t(threshold) {}
  __device__ __forceinline__ u8 byte(u8 v, i64) const { return v > t ? 255 : 0; }
  // per-byte unsigned compare (SIMD-within-a-word): 0xff in each byte lane where w > t
  __device__ __forceinline__ u32 word(u32 w) const { return __vcmpgtu4(w, t * 0x01010101u); }
};

__device__ __forceinline__ uint4 map16(uint4 v, const Invert& op) {
  return make_uint4(op.word(v.x), op.word(v.y), op.word(v.z), op.word(v.w));
}
__device__ __forceinline__ uint4 map16(uint4 v, const Binarize& op) {
  return make_uint4(op.word(v.x), op.word(v.y), op.word(v.z), op.word(v.w));
}

template <typename Op>
__device__ __forceinline__ void bytes_range(u8* out, const u8* in, i64 lo, i64 hi, const Op& op) {
#pragma unroll 1
  for (i64 i = lo + global_thread(); i < hi; i += grid_threads()) out[i] = op.byte(in[i], i);
}

template <typename Op>
__global__ void bytes_map(u8* __restrict__ out, const u8* __restrict__ in, i64 n, u32 param) {
  const Op op(param, 0);
  bytes_range(out, in, 0, n, op);
}

// in and out 4-byte aligned (the host checks); the last n % 4 bytes one per thread.
template <typename Op>
__global__ void words_map(u8* __restrict__ out, const u8* __restrict__ in, i64 n, u32 param) {
  const Op op(param, 0);
  const i64 nw = n / 4;
  const u32* win = reinterpret_cast<const u32*>(in);
  u32* wout = reinterpret_cast<u32*>(out);
#pragma unroll 1
  for (i64 i = global_thread(); i < nw; i += grid_threads()) wout[i] = op.word(win[i]);
  bytes_range(out, in, nw * 4, n, op);
}

// Source 001's inversion kernel with its coarsening factor BK: block (32, 8) over (pixel column,
// row); a thread inverts BK pixels of its row, 32 pixels apart. rows beyond gridDim.y * 8 stride.
template <int BK>
__global__ void invert_coarsened(uchar4* __restrict__ out, const uchar4* __restrict__ in, i64 rows, i64 width) {
  const i64 x0 = (i64)blockIdx.x * (32 * BK) + threadIdx.x;
#pragma unroll 1
  for (i64 y = (i64)blockIdx.y * blockDim.y + threadIdx.y; y < rows; y += (i64)gridDim.y * blockDim.y) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const i64 x = x0 + k * 32;
      if (x < width) {
        uchar4 p = in[y * width + x];
        p.x = 255 - p.x, p.y = 255 - p.y, p.z = 255 - p.z;
        out[y * width + x] = p;
      }
    }
  }
}

// head: bytes until out + head is 16-byte aligned.
template <typename Op, bool kInAligned>
__global__ void bytes_fast(u8* __restrict__ out, const u8* __restrict__ in, i64 n, int head, u32 param) {
  const Op op(param, head & 3);
  bytes_range(out, in, 0, head, op);
  const i64 nvec = (n - head) / 16;
  uint4* vo = reinterpret_cast<uint4*>(out + head);
  const u8* x = in + head;
#pragma unroll 1
  for (i64 i = global_thread(); i < nvec; i += grid_threads()) {
    uint4 v;
    if constexpr (kInAligned) {
      v = reinterpret_cast<const uint4*>(x)[i];
    } else {  // byte loads, coalesced across the warp; assembled into words
      u32 w[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const u8* p = x + 16 * i + 4 * j;
        w[j] = p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
      }
      v = make_uint4(w[0], w[1], w[2], w[3]);
    }
    vo[i] = map16(v, op);
  }
  bytes_range(out, in, head + nvec * 16, n, op);
}

}  // namespace kk
