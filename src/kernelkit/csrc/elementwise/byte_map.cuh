// Kernel templates of the byte-image maps (uint8 in, uint8 out, one byte to one), shared by
// invert_colors.cu and binarize.cu.
//
// An op is a functor built from a 32-bit parameter and the phase (element index mod 4) of the first
// byte of a word, with
//   __device__ u8  byte(u8 v, i64 idx) const;   // one byte; idx counts from the image's first byte
//   __device__ u32 word(u32 w) const;           // four bytes at once (little-endian, phase applied)
// Templates:
//   bytes_map   a byte per thread (8-bit accesses)
//   words_map   a 32-bit word per thread (needs 4-byte alignment)
//   bytes_fast  16-byte accesses, prologue/main/epilogue for any alignment of out; the input as
//               16-byte vectors when it shares out's misalignment, else byte by byte
// Grid-stride loops carry `#pragma unroll 1`: unrolled, the compiler computes their trip count with a
// 64-bit division (a CALL to a ~100-instruction routine) per thread and loop, which the one-vector-
// per-thread launches would pay on every 16 bytes (docs/design/elementwise.md).
#pragma once
#include "common.cuh"

namespace kk {

using u8 = unsigned char;
using u32 = unsigned int;

template <typename Op>
__device__ __forceinline__ uint4 map16(uint4 v, const Op& op) {
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
