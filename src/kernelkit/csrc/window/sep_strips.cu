// Separable filters on uint8 images with nothing staged in shared memory: a warp owns a column strip
// (32 lanes x VL bytes a row, the outer HL lanes its horizontal halo) and walks down its rows. Each input
// row is loaded once (one VL-byte vector a lane), converted once, and feeds the K vertical sums it
// reaches, kept in a ring of K rows of VL floats; a row whose vertical sum is complete takes its
// horizontal taps from its own lane and, by shuffles, from the lanes beside it, and is rounded and stored.
//
// Why: the tiled kernels convert the horizontal window (VL + (K - 1) C elements for VL outputs), write and
// read back a float buffer of a whole tile (74 KB of shared memory for a 5-tap RGB tile: two blocks an
// SM) and test the run-time tap counts on every tap; here an output costs its K + K FMAs, one conversion,
// a share of the halo shuffles and the packing, and a warp needs only registers.
//
// The 1-D weights travel as a 128-byte __grid_constant__ parameter: the FMAs read them from the constant
// bank, so they take no registers and are never copied from the host. Shorter kernels (KW or KH below K)
// are centred with zero weights (uint8 inputs are finite, so a zero tap adds nothing).
//
// Layout rules, checked by the host: every input row starts 16-byte aligned (row and plane pitch and
// base) and so does every output row (WC a multiple of 16). Lanes whose chunk reaches outside the row
// (the strips at the image's edges) gather their bytes by the border rule instead of one vector load.
// The host instantiates C = 1 only: with 3 or 4 interleaved channels the halo's registers (2 R C floats)
// on top of the ring spilled at 16 bytes a lane, and 8-byte lanes ran slower than the tiled kernels
// (docs/design/window.md, "Register strips").
#include "pipeline.cuh"

namespace kk {

struct alignas(64) SepTaps {
  float x[16];  // horizontal, centred in the first K
  float y[16];  // vertical, the first K
};

// Word k of a 4-word vector (k in registers: selects, not a local array).
__device__ __forceinline__ unsigned word_of(uint4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }

// The VL bytes at element column c0 of a row gathered by the border rule (a chunk reaching past the row's
// ends: the lanes at an image's edges). A rolled loop: unrolled into every step of the row loop, it cost
// the common path registers (and a call spilled them around it).
template <int VL, int C, int HALO>
__device__ __forceinline__ uint4 strip_gather(const u8* row, int c0, int WC, int mode) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll 1
  for (int k = 0; k < VL / 4; ++k) {
    unsigned w = 0u;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int e = c0 + 4 * k + j;
      if (e < -HALO || e >= WC + HALO) continue;  // read by no output
      const int q = border_element(e, WC, C, mode);
      if (q >= 0) w |= (unsigned)__ldg(row + q) << (8 * j);
    }
    v.x = k == 0 ? w : v.x, v.y = k == 1 ? w : v.y, v.z = k == 2 ? w : v.z, v.w = k == 3 ? w : v.w;
  }
  return v;
}

// The VL bytes at element column c0 of `row` (nullptr: a zero-border row): one vector load where the chunk
// lies inside the row, else gathered.
template <int VL, int C, int HALO>
__device__ __forceinline__ void strip_load(const u8* row, int c0, int WC, int mode, bool inside,
                                           unsigned (&w)[VL / 4]) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (row != nullptr) {
    if (!inside) {
      v = strip_gather<VL, C, HALO>(row, c0, WC, mode);
    } else if constexpr (VL == 16) {
      v = __ldg(reinterpret_cast<const uint4*>(row + c0));
    } else {
      const uint2 h = __ldg(reinterpret_cast<const uint2*>(row + c0));
      v.x = h.x, v.y = h.y;
    }
  }
  w[0] = v.x, w[1] = v.y;
  if constexpr (VL == 16) w[2] = v.z, w[3] = v.w;
}

// One output row from its complete vertical sums v: the halo elements from the lanes beside this one
// (every lane shuffles; the halo lanes' own results are not stored), the K horizontal taps (the centre
// tap a multiply), rounded to bytes and stored where this lane owns outputs.
template <int K, int C, int VL, bool kBounded>
__device__ __forceinline__ void strip_row_out(const float (&v)[VL], const SepTaps& taps, u8* orow, int c0, int WC,
                                              bool owner) {
  constexpr int R = K / 2, HALO = R * C;
  float e[VL + 2 * HALO];  // elements -HALO ... VL + HALO - 1 of this lane's chunk
#pragma unroll
  for (int k = 0; k < HALO; ++k) {
    const int d = (HALO - k + VL - 1) / VL;  // lanes to the left
    e[k] = __shfl_up_sync(0xffffffffu, v[k - HALO + d * VL], d);
    const int dr = (VL + k) / VL;            // lanes to the right
    e[HALO + VL + k] = __shfl_down_sync(0xffffffffu, v[VL + k - dr * VL], dr);
  }
#pragma unroll
  for (int i = 0; i < VL; ++i) e[HALO + i] = v[i];
  float h[VL];
#pragma unroll
  for (int i = 0; i < VL; ++i) {
    h[i] = taps.x[R] * e[HALO + i];
#pragma unroll
    for (int dx = 0; dx < K; ++dx)
      if (dx != R) h[i] = fmaf(taps.x[dx], e[HALO + i + (dx - R) * C], h[i]);
  }
  unsigned o[4];
  pack_bits<u8, VL, 0, !kBounded, !kBounded>(h, o);
  if (!owner) return;
  if (c0 + VL <= WC) {
    if constexpr (VL == 16)
      store_global16(reinterpret_cast<uint4*>(orow + c0), make_uint4(o[0], o[1], o[2], o[3]));
    else
      *reinterpret_cast<uint2*>(orow + c0) = make_uint2(o[0], o[1]);
  } else {
    const uint4 ov = make_uint4(o[0], o[1], o[2], o[3]);
#pragma unroll 1
    for (int i = 0; c0 + i < WC; ++i) orow[c0 + i] = (u8)(word_of(ov, i >> 2) >> (8 * (i & 3)));
  }
}

// A strip is `strip_h` output rows of OW = (32 - 2 HL) VL elements; the warps of the grid take the strips
// of every plane in turn (plane, row band, column strip). The row loop is unrolled by K so that the ring
// slots (vertical sums, and the raw rows in flight, PD < K rows ahead) are registers.
template <int K, int C, int VL, int PD, int MINB, bool kBounded>
__global__ void __launch_bounds__(128, MINB)
sep_strips(const u8* __restrict__ in, u8* __restrict__ out, const __grid_constant__ SepTaps taps, int planes,
           int H, int WC, i64 in_plane, i64 in_row, int mode, int strip_h, int nsx, int nsy) {
  static_assert(K % 2 == 1 && K <= 15 && PD >= 1 && PD < K, "odd K up to 15, prefetched 1 to K - 1 rows ahead");
  constexpr int R = K / 2, HALO = R * C, HL = (HALO + VL - 1) / VL, OW = (32 - 2 * HL) * VL, NW = VL / 4;
  const int lane = threadIdx.x & 31;
  const int warps = (int)gridDim.x * ((int)blockDim.x >> 5);
  const int per_plane = nsx * nsy, total = per_plane * planes;
  for (int t = (int)blockIdx.x * ((int)blockDim.x >> 5) + ((int)threadIdx.x >> 5); t < total; t += warps) {
    const int p = t / per_plane, rem = t - p * per_plane, sy = rem / nsx, sx = rem - sy * nsx;
    const int y0 = sy * strip_h, c0 = sx * OW + (lane - HL) * VL;
    const int rows_in = min(strip_h, H - y0) + K - 1;
    const bool inside = c0 >= 0 && c0 + VL <= WC;
    const bool needed = c0 < WC + HALO;  // lanes past the row's end and its halo read nothing (zeros)
    const bool owner = lane >= HL && lane < 32 - HL && c0 < WC;
    const u8* plane = in + (i64)p * in_plane;
    u8* oplane = out + (i64)p * H * WC;
    auto fetch = [&](int j, unsigned (&w)[NW]) {
      const int y = border_index(y0 - R + j, H, mode);
      strip_load<VL, C, HALO>(y < 0 || !needed ? nullptr : plane + (i64)y * in_row, c0, WC, mode, inside, w);
    };
    unsigned raw[K][NW];
    float acc[K][VL];
#pragma unroll
    for (int s = 0; s < K; ++s)
#pragma unroll
      for (int i = 0; i < VL; ++i) acc[s][i] = 0.0f;
#pragma unroll
    for (int u = 0; u < PD; ++u) fetch(u, raw[u]);  // rows_in >= K > PD
    for (int j0 = 0; j0 < rows_in; j0 += K) {
#pragma unroll
      for (int u = 0; u < K; ++u) {
        const int j = j0 + u;  // input row j (image row y0 - R + j) completes output row j - (K - 1)
        if (j >= rows_in) break;
        if (j + PD < rows_in) fetch(j + PD, raw[(u + PD) % K]);
#pragma unroll
        for (int i = 0; i < VL; ++i) {
          const float x = WordElem<u8>::at(raw[u], i);
#pragma unroll
          for (int dy = 0; dy < K; ++dy) {
            float& a = acc[(u - dy + K) % K][i];  // the sum of output row j - dy
            a = dy == 0 ? taps.y[0] * x : fmaf(taps.y[dy], x, a);
          }
        }
        if (j >= K - 1)
          strip_row_out<K, C, VL, kBounded>(acc[(u + 1) % K], taps, oplane + (i64)(y0 + j - (K - 1)) * WC, c0, WC,
                                           owner);
      }
    }
  }
}

}  // namespace kk
