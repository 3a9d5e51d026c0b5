// A separable filter (an outer product: KH x 1 after 1 x KW) in one pass: the tile with its halo in
// shared memory, the horizontal pass over every tile row into a second shared buffer, the vertical
// pass from that buffer to the outputs. Gaussian blur and the box filter run on it.
//
// `w` holds KW horizontal weights then KH vertical ones. KH, KW <= KMAX are runtime values; the
// register windows are KMAX wide and taps past K are skipped (never multiplied by a zero weight, so an
// inf beyond the window cannot turn into a NaN).
#include "window.cuh"

namespace kk {

template <typename T, int KMAX, int C, int V, int RY>
__global__ void __launch_bounds__(256, 2)
sep_fused(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w,
          const float* __restrict__ bias, int planes, int groups, int H, int WC, int C_, i64 in_plane, i64 in_row,
          int KH, int KW, int mode) {
  extern __shared__ float4 smem4[];
  constexpr int TW = 32 * V, TH = 8 * RY, WIN = round4(V + (KMAX - 1) * C);
  constexpr int ld = 31 * V + WIN;
  const int rows = TH + KH - 1;
  float* tile = reinterpret_cast<float*>(smem4);
  float* hbuf = tile + rows * ld;  // rows x TW horizontal results
  float wx[KMAX], wy[KMAX];
#pragma unroll
  for (int k = 0; k < KMAX; ++k) {
    wx[k] = k < KW ? __ldg(w + k) : 0.0f;
    wy[k] = k < KH ? __ldg(w + KW + k) : 0.0f;
  }
  const int x0 = blockIdx.x * TW;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * TH; y0 < H; y0 += gridDim.y * TH) {
    __syncthreads();
    load_tile<T, true>(tile, ld, rows, TW + (KW - 1) * C, in + (i64)p * in_plane, in_row, H, WC, C, mode,
                       y0 - KH / 2, x0 - (KW / 2) * C);
    __syncthreads();
    for (int r = threadIdx.y; r < rows; r += 8) {
      float win[WIN];
      load_window(tile + r * ld + threadIdx.x * V, win);
      float h[V];
#pragma unroll
      for (int i = 0; i < V; ++i) h[i] = 0.0f;
#pragma unroll
      for (int dx = 0; dx < KMAX; ++dx) {
        if (dx >= KW) break;
#pragma unroll
        for (int i = 0; i < V; ++i) h[i] = fmaf(wx[dx], win[i + dx * C], h[i]);
      }
#pragma unroll
      for (int i = 0; i < V; i += 4)
        *reinterpret_cast<float4*>(hbuf + r * TW + threadIdx.x * V + i) = make_float4(h[i], h[i + 1], h[i + 2], h[i + 3]);
    }
    __syncthreads();
    float acc[RY][V];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j][i] = 0.0f;
    const float* col = hbuf + threadIdx.y * RY * TW + threadIdx.x * V;
#pragma unroll
    for (int r = 0; r < RY + KMAX - 1; ++r) {
      if (r >= RY + KH - 1) break;
      float hv[V];
#pragma unroll
      for (int i = 0; i < V; i += 4) {
        const float4 f = *reinterpret_cast<const float4*>(col + r * TW + i);
        hv[i] = f.x;
        hv[i + 1] = f.y;
        hv[i + 2] = f.z;
        hv[i + 3] = f.w;
      }
#pragma unroll
      for (int j = 0; j < RY; ++j) {
        const int dy = r - j;
        if (dy < 0 || dy >= KMAX) continue;
        if (dy < KH) {
#pragma unroll
          for (int i = 0; i < V; ++i) acc[j][i] = fmaf(wy[dy], hv[i], acc[j][i]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int y = y0 + threadIdx.y * RY + j;
      if (y < H) store_run<T, V>(out + ((i64)p * H + y) * WC, x0 + threadIdx.x * V, WC, acc[j]);
    }
  }
}

}  // namespace kk
