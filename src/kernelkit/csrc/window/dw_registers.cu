// Depthwise convolution from registers, no shared memory: channels_last tiles (first), NCHW column strips
// (below, "planar").
//
// channels_last: a thread owns 4 consecutive channels (one 8-byte vector of a 16-bit type, 16 bytes of fp32) of
// an output tile of RY rows x RX columns of one image, and walks `chunk` such tiles down the image. Its K*K x 4
// weights are read once into registers (36 floats for 3x3); each input row of a tile is read as (RX - 1) S + K
// vectors, converted once, and feeds every output row and column it reaches. Consecutive threads take
// consecutive channel vectors, then the next tile along the row, so a warp's loads are whole pixel runs. Zero
// padding: rows outside the image are skipped, columns outside read as zeros. Each input vector is fetched
// (RX - 1) S + K over RX times along the row and about twice down it (the tile below re-reads its first rows,
// from L1 while the same thread moves down).
#include "window.cuh"

namespace kk {

// 4 elements of T as floats, from one 8-byte (16-bit T) or 16-byte (fp32) load
template <typename T>
struct Quad {
  using Raw = typename Carrier<4 * sizeof(T)>::type;
  __device__ __forceinline__ static Raw load(const T* p, bool ok) {
    if constexpr (sizeof(T) == 2) {
      return ok ? *reinterpret_cast<const uint2*>(p) : make_uint2(0, 0);
    } else {
      return ok ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ __forceinline__ static void to_floats(Raw r, float (&f)[4]) {
    Vec<T, 4> v;
    memcpy(&v, &r, sizeof(r));
    vec_to_floats(v, f);
  }
  __device__ __forceinline__ static void store(T* p, const float (&f)[4]) {
    const Vec<T, 4> v = vec_from_floats<T, 4>(f);
    store_vec(reinterpret_cast<Vec<T, 4>*>(p), v);
  }
};

// One tile's RY x RX x 4 sums (started from the bias): its NR input rows of WL vectors are loaded in groups of G
// rows, every load of a group issued before the first is used (one memory round trip a group, not one a row: a
// thread's tile is short-lived, so its latency chain sets the rate), then each vector converted once and fed to
// every output row and column it reaches. G: as many rows as about 56 registers of raw vectors hold (all of a
// 16-bit tile); fp32 a row at a time (its 16-byte vectors spill beside the sums and weights in groups; each load
// moves twice the bytes of a 16-bit one). kInside: every row and column of the tile's inputs is in the image (no
// tests, no zero fills: most tiles of a plane); outside, rows and columns outside the image read as zeros.
template <typename T, int K, int S, int RX, int RY, bool kInside>
__device__ __forceinline__ void dw_registers_tile(const T* src, i64 sh, i64 sw, int H, int W, int iy0, int ix0,
                                                  const float (&wr)[K * K][4], float (&acc)[RY][RX][4]) {
  constexpr int NR = (RY - 1) * S + K, WL = (RX - 1) * S + K;
  constexpr int kWords = (int)sizeof(typename Quad<T>::Raw) / 4;
  constexpr int G = kWords == 4 ? 1 : NR < 56 / (WL * kWords) ? NR : 56 / (WL * kWords);
  static_assert(G >= 1, "a row of raw vectors fits the budget");
#pragma unroll
  for (int r0 = 0; r0 < NR; r0 += G) {
    if (G == 1 && !kInside && (unsigned)(iy0 + r0) >= (unsigned)H) continue;  // a row at a time: skip it
    typename Quad<T>::Raw raw[G][WL];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int y = iy0 + r0 + g;
      const bool row_ok = r0 + g < NR && (G == 1 || kInside || (unsigned)y < (unsigned)H);
      const T* row = src + y * sh;
#pragma unroll
      for (int i = 0; i < WL; ++i)
        raw[g][i] = Quad<T>::load(row + i * sw, row_ok && (kInside || (unsigned)(ix0 + i) < (unsigned)W));
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int r = r0 + g;
      if (r >= NR) break;
#pragma unroll
      for (int i = 0; i < WL; ++i) {
        float f[4];
        Quad<T>::to_floats(raw[g][i], f);
#pragma unroll
        for (int j = 0; j < RY; ++j) {
          const int dy = r - j * S;
          if (dy < 0 || dy >= K) continue;
#pragma unroll
          for (int dx = 0; dx < K; ++dx) {  // input column i feeds output column (i - dx) / S
            const int o = (i - dx) / S;
            if (i - dx < 0 || (i - dx) % S != 0 || o >= RX) continue;
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[j][o][e] = fmaf(wr[dy * K + dx][e], f[e], acc[j][o][e]);
          }
        }
      }
    }
  }
}

template <typename T, int K, int S, int RX, int RY>
__global__ void __launch_bounds__(128, 4)
dw_registers(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w,
             const float* __restrict__ bias, int C, int H, int W, int OH, int OW, i64 sn, i64 sh, i64 sw, int p_h,
             int p_w, int cv, int tiles_x, int tiles_y, int chunks, int chunk, int total) {
  constexpr int NR = (RY - 1) * S + K, WL = (RX - 1) * S + K;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= total) return;
  int q = t / cv;
  const int c = (t - q * cv) * 4;
  const int tx = q % tiles_x;
  q /= tiles_x;
  const int yc = q % chunks, n = q / chunks;
  float wr[K * K][4];
#pragma unroll
  for (int k = 0; k < K * K; ++k) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(w + (i64)k * C + c));
    wr[k][0] = v.x, wr[k][1] = v.y, wr[k][2] = v.z, wr[k][3] = v.w;
  }
  float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (bias != nullptr) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(bias + c));
    b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
  }
  const int ox0 = tx * RX, ix0 = ox0 * S - p_w;
  const bool cols_inside = ix0 >= 0 && ix0 + WL <= W;
  const T* src = in + n * sn + c + ix0 * sw;
  T* dst = out + (i64)n * OH * OW * C + c;
  const int ty_end = min(tiles_y, (yc + 1) * chunk);
  for (int ty = yc * chunk; ty < ty_end; ++ty) {
    const int oy0 = ty * RY, iy0 = oy0 * S - p_h;
    float acc[RY][RX][4];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < RX; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][i][e] = b[e];
    if (cols_inside && iy0 >= 0 && iy0 + NR <= H) {
      dw_registers_tile<T, K, S, RX, RY, true>(src, sh, sw, H, W, iy0, ix0, wr, acc);
    } else {
      dw_registers_tile<T, K, S, RX, RY, false>(src, sh, sw, H, W, iy0, ix0, wr, acc);
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      if (oy0 + j >= OH) break;
#pragma unroll
      for (int i = 0; i < RX; ++i)
        if (ox0 + i < OW) Quad<T>::store(dst + ((i64)(oy0 + j) * OW + ox0 + i) * C, acc[j][i]);
    }
  }
}

// ------------------------------------------------------------------------------------------- planar
// NCHW: a thread computes a column strip of RY outputs (output column ox, rows oy0..) of one plane from
// global memory: the (RY - 1) S + K input rows x K columns it reads, all loads issued before the first
// use, element by element (any plane width and alignment), its plane's K*K weights in registers.
// Consecutive threads take consecutive columns, then the next strip, then the next plane, so a warp's
// load is a run of a row (or of a few small planes' rows); neighbouring columns' reads hit L1.
template <typename T>
__device__ __forceinline__ float dw_elem(const T* p, bool ok) {
  using U = typename Carrier<sizeof(T)>::type;
  const U u = ok ? *reinterpret_cast<const U*>(p) : U(0);
  T v;
  memcpy(&v, &u, sizeof(T));
  return wload(v);
}

template <typename T, int K, int S, int RY, bool kInside>
__device__ __forceinline__ void dw_column(const T* src, int W, int H, int iy0, int ix0, const float (&wr)[K * K],
                                          float (&acc)[RY]) {
  constexpr int NR = (RY - 1) * S + K;
  float v[NR][K];
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    const bool row_ok = kInside || (unsigned)(iy0 + r) < (unsigned)H;
#pragma unroll
    for (int dx = 0; dx < K; ++dx)
      v[r][dx] = dw_elem(src + (i64)(iy0 + r) * W + dx, row_ok && (kInside || (unsigned)(ix0 + dx) < (unsigned)W));
  }
#pragma unroll
  for (int j = 0; j < RY; ++j)
#pragma unroll
    for (int dy = 0; dy < K; ++dy)
#pragma unroll
      for (int dx = 0; dx < K; ++dx) acc[j] = fmaf(wr[dy * K + dx], v[j * S + dy][dx], acc[j]);
}

template <typename T, int K, int S, int RY>
__global__ void __launch_bounds__(128, 4)
dw_columns(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w,
           const float* __restrict__ bias, int C, int H, int W, int OH, int OW, int p_h, int p_w, int strips,
           int total) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const int q = t / OW, ox = t - q * OW;
  const int plane = q / strips, oy0 = (q - plane * strips) * RY;
  const int c = plane % C;
  float wr[K * K];
#pragma unroll
  for (int k = 0; k < K * K; ++k) wr[k] = __ldg(w + c * (K * K) + k);
  const float b = bias != nullptr ? __ldg(bias + c) : 0.0f;
  float acc[RY];
#pragma unroll
  for (int j = 0; j < RY; ++j) acc[j] = b;
  const int iy0 = oy0 * S - p_h, ix0 = ox * S - p_w;
  const T* src = in + (i64)plane * H * W + ix0;
  if (ix0 >= 0 && ix0 + K <= W && iy0 >= 0 && iy0 + (RY - 1) * S + K <= H) {
    dw_column<T, K, S, RY, true>(src, W, H, iy0, ix0, wr, acc);
  } else {
    dw_column<T, K, S, RY, false>(src, W, H, iy0, ix0, wr, acc);
  }
  T* dst = out + ((i64)plane * OH + oy0) * OW + ox;
#pragma unroll
  for (int j = 0; j < RY; ++j)
    if (oy0 + j < OH) dw_store(dst, (i64)j * OW, acc[j]);
}

}  // namespace kk
