// Sobel gradient magnitude in one pass: sqrt(gx^2 + gy^2) with gx the 3x3 Sobel kernel [-1 0 1; -2 0 2;
// -1 0 1] (correlated, as OpenCV's Sobel with dx = 1) and gy its transpose. The tile with its halo in
// shared memory, both gradients from the same register windows, the weights compile-time constants.
// sobel_mag stages a float tile; sobel_pipelined runs on the pipelined tiles of pipeline.cuh.
#include "pipeline.cuh"

namespace kk {

struct SobelX {
  __device__ __forceinline__ float operator()(int dy, int dx) const { return (float)(dx - 1) * (dy == 1 ? 2.0f : 1.0f); }
};
struct SobelY {
  __device__ __forceinline__ float operator()(int dy, int dx) const { return (float)(dy - 1) * (dx == 1 ? 2.0f : 1.0f); }
};

template <typename T, int C, int V, int RY>
__global__ void __launch_bounds__(256, 2)
sobel_mag(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w_, const float* __restrict__ b_,
          int planes, int groups_, int H, int WC, int C_, i64 in_plane, i64 in_row, int KH_, int KW_, int mode) {
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  constexpr int TW = 32 * V, TH = 8 * RY;
  constexpr int ld = 31 * V + round4(V + 2 * C), rows = TH + 2;
  const int x0 = blockIdx.x * TW;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * TH; y0 < H; y0 += gridDim.y * TH) {
    __syncthreads();
    load_tile<T, true>(tile, ld, rows, TW + 2 * C, in + (i64)p * in_plane, in_row, H, WC, C, mode, y0 - 1, x0 - C);
    __syncthreads();
    float gx[RY][V], gy[RY][V];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) gx[j][i] = gy[j][i] = 0.0f;
    const float* src = tile + threadIdx.y * RY * ld + threadIdx.x * V;
    window_conv<3, C, V, RY>(src, ld, SobelX(), gx);
    window_conv<3, C, V, RY>(src, ld, SobelY(), gy);
#pragma unroll
    for (int j = 0; j < RY; ++j) {
#pragma unroll
      for (int i = 0; i < V; ++i) gx[j][i] = sqrtf(fmaf(gx[j][i], gx[j][i], gy[j][i] * gy[j][i]));
      const int y = y0 + threadIdx.y * RY + j;
      if (y < H) store_run<T, V>(out + ((i64)p * H + y) * WC, x0 + threadIdx.x * V, WC, gx[j]);
    }
  }
}

// The square root as one MUFU.SQRT (relative error about 2^-23), not the refined IEEE sequence.
__device__ __forceinline__ float sqrt_approx(float x) {
  float r;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// On pipelined tiles: each tile row's window read once, its two column combinations formed once
// (t = right - left, u = left + 2 centre + right, per output), then added into every output row it
// reaches: gx takes t with weights 1, 2, 1 down the rows, gy takes u with -1, 0, 1. A magnitude is never
// negative (uint8 results are clamped above only).
template <typename T, int C, int RY, bool kAligned>
__global__ void __launch_bounds__(256, 2)
sobel_pipelined(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w_,
                const float* __restrict__ b_, int planes, int groups_, int H, int WC, int C_, i64 in_plane,
                i64 in_row, int KH_, int KW_, int mode) {
  using R = raw_t<T>;
  constexpr int V = vec16<T>(), TW = 32 * V, TH = 8 * RY;
  constexpr int HP = round_up(C, V), LD = TW + 2 * HP + (kAligned ? 0 : V), ROWS = TH + 2;
  constexpr int S = HP - C, WL = V + 2 * C;
  extern __shared__ float4 smem4[];
  R* buf = reinterpret_cast<R*>(smem4);
  int* shift = reinterpret_cast<int*>(buf + 2 * ROWS * LD);
  const TileWalk<T, kAligned, TW, TH, LD, HP> walk(in, in_plane, in_row, planes, H, WC, C, mode, ROWS, 1);
  walk.each(buf, shift, [&](const TilePos& tp, const R* tbuf, const int* tshift) {
    const R* tile = tbuf + threadIdx.y * RY * LD;
    const int* sh = tshift + threadIdx.y * RY;
    float gx[RY][V], gy[RY][V];
    unsigned o[RY][4];
#pragma unroll
    for (int r = 0; r < RY + 2; ++r) {
      float win[WL];
      read_window<T, S, WL, kAligned>(tile + r * LD, kAligned ? 0 : sh[r], win);
      float tt[V], uu[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        tt[i] = win[i + 2 * C] - win[i];
        uu[i] = fmaf(2.0f, win[i + C], win[i] + win[i + 2 * C]);
      }
#pragma unroll
      for (int j = 0; j < RY; ++j) {
        const int dy = r - j;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          if (dy == 0) {
            gx[j][i] = tt[i];
            gy[j][i] = -uu[i];
          } else if (dy == 1) {
            gx[j][i] = fmaf(2.0f, tt[i], gx[j][i]);
          } else if (dy == 2) {
            gx[j][i] += tt[i];
            gy[j][i] += uu[i];
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
#pragma unroll
      for (int i = 0; i < V; ++i) gx[j][i] = sqrt_approx(fmaf(gx[j][i], gx[j][i], gy[j][i] * gy[j][i]));
      pack_bits<T, V, 0, false, true>(gx[j], o[j]);
    }
    store_rows<T, RY>(out, tp.p, tp.y0 + threadIdx.y * RY, H, tp.x0 + threadIdx.x * V, WC, o);
  });
}

}  // namespace kk
