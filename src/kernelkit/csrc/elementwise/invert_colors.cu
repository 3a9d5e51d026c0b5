// RGBA colour inversion: R, G, B -> 255 - value, alpha unchanged. The byte, uchar4 and fast rungs
// are templates of byte_map.cuh instantiated with kk::Invert; the coarsened rungs are their own:
//   invert_coarsened  32x8 blocks over (rows, width) pixels, each thread inverts BK uchar4 pixels 32
//                     apart (thread coarsening: interleaved, so each access is still coalesced)
#include "byte_map.cuh"

namespace kk {

// 255 - v on R, G and B; alpha (byte 3 of every pixel) unchanged. 255 - v == v ^ 0xff, so a word is
// inverted by one xor with the three colour bytes set, rotated to the word's phase.
struct Invert {
  u32 mask;
  __device__ __forceinline__ Invert(u32, int phase) : mask(~(0xffu << (8 * ((3 - phase) & 3)))) {}
  __device__ __forceinline__ u8 byte(u8 v, i64 idx) const { return (idx & 3) == 3 ? v : (u8)(255 - v); }
  __device__ __forceinline__ u32 word(u32 w) const { return w ^ mask; }
};

// Thread coarsening by a factor BK: block (32, 8) over (pixel column, row); a thread inverts BK
// pixels of its row, 32 pixels apart. Rows beyond gridDim.y * 8 stride.
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

}  // namespace kk
