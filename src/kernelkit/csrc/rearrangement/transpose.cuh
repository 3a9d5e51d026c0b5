// What the transpose kernels share: the tile kernels' problem statement and tile order (TileGrid), the
// register transpose of V rows (pack_column) and a plain 16-byte global store (store16). The kernels:
// transpose.cu (naive, shared/padded, wide, skinny, gather), transpose_window.cu (the window and skew
// tiles), transpose_cute.cu (the CuTe tile).
//
// The tile kernels share one problem statement, a batch of 2D transposes with free strides:
//   out[b*out_sb + c*out_sc + r] = in[b*in_sb + r*in_sr + c]   for b < B, r < R, c < C
// (strides in elements; the unit-stride dims are the input's columns and the output's rows). A
// contiguous (B, R, C) -> (B, C, R) is in_sb = out_sb = R*C, in_sr = C, out_sc = R; NCHW -> NHWC is
// that with B = N, R = C, C = H*W. Tiles are numbered b-major, then tile rows, then tile columns,
// over a 1D grid (no 65535 limit on any dimension); a block loops if the grid is short of tiles.
#pragma once
#include "common.cuh"

namespace kk {

struct TileGrid {
  i64 ntr, ntc, ntiles;
  __device__ TileGrid(i64 B, i64 R, i64 C, int TR, int TC)
      : ntr((R + TR - 1) / TR), ntc((C + TC - 1) / TC), ntiles(B * ntr * ntc) {}
  // Tile t -> its batch and its first row / column (64-bit divisions, once per tile).
  __device__ void at(i64 t, int TR, int TC, i64& b, i64& r0, i64& c0) const {
    if (ntiles <= 0xffffffffLL) {  // the common case: 32-bit divides, not the 64-bit subroutine
      const unsigned tt = (unsigned)t, nc = (unsigned)ntc, nr = (unsigned)ntr, rest = tt / nc, bb = rest / nr;
      c0 = (i64)(tt - rest * nc) * TC;
      r0 = (i64)(rest - bb * nr) * TR;
      b = bb;
      return;
    }
    const i64 rest = t / ntc;
    c0 = (t - rest * ntc) * TC;
    b = rest / ntr;
    r0 = (rest - b * ntr) * TR;
  }
};

// The register transpose of the wide and skew tiles: a thread's V units (U = max(4, E) bytes) of V
// consecutive rows, one unit column each.
template <int E> struct Unit { using type = unsigned int; };
template <> struct Unit<8> { using type = unsigned long long; };

// Output vector p: column p of the little V x P block.
template <int E, typename W>
__device__ __forceinline__ uint4 pack_column(const W* w, int p) {
  if constexpr (E == 8) {  // two 8-byte elements: the vector is the two units
    return make_uint4((unsigned)w[0], (unsigned)(w[0] >> 32), (unsigned)w[1], (unsigned)(w[1] >> 32));
  } else if constexpr (E == 4) {
    return make_uint4(w[0], w[1], w[2], w[3]);
  } else if constexpr (E == 2) {  // word q: halves p of rows 2q and 2q+1
    const unsigned sel = p == 0 ? 0x5410 : 0x7632;
    return make_uint4(__byte_perm(w[0], w[1], sel), __byte_perm(w[2], w[3], sel), __byte_perm(w[4], w[5], sel),
                      __byte_perm(w[6], w[7], sel));
  } else {  // E == 1, word q: bytes p of rows 4q..4q+3, two permutes (pairs of rows, then pairs of pairs)
    const unsigned lo = p < 2 ? 0x5140 : 0x7362, hi = (p & 1) ? 0x7632 : 0x5410;
    unsigned q[4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
      q[m] = __byte_perm(__byte_perm(w[4 * m], w[4 * m + 1], lo), __byte_perm(w[4 * m + 2], w[4 * m + 3], lo), hi);
    return make_uint4(q[0], q[1], q[2], q[3]);
  }
}

// A plain 16-byte global store (STG.E.128). A uint4 assignment compiles to four STG.E for 4-byte
// elements (the SASS claims check the width) and __stwb to STG.E.128.STRONG.SM. No "memory" clobber:
// nothing in these kernels reads what they store, so later shared reads may move above it.
__device__ __forceinline__ void store16(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}

}  // namespace kk
