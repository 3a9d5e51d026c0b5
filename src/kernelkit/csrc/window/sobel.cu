// Sobel gradient magnitude in one pass: sqrt(gx^2 + gy^2) with gx the 3x3 Sobel kernel [-1 0 1; -2 0 2;
// -1 0 1] (correlated, as OpenCV's Sobel with dx = 1) and gy its transpose. The tile with its halo in
// shared memory, both gradients from the same register windows, the weights compile-time constants.
#include "window.cuh"

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

}  // namespace kk
