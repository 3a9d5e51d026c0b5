// Median filter over a K x K window (K = 3 or 5; OpenCV's medianBlur, replicated border): the tile with
// its halo in shared memory, then per output the K*K values in registers and a forgetful selection
// network (min/max exchanges only, no branches): the smallest and largest of a working set of
// K*K/2 + 2 values are dropped while the rest are fed in, until three remain; their middle is the median.
#include "window.cuh"

namespace kk {

__device__ __forceinline__ void cswap(float& a, float& b) {
  const float lo = fminf(a, b), hi = fmaxf(a, b);
  a = lo;
  b = hi;
}

template <int N>
__device__ __forceinline__ float median_select(const float (&v)[N]) {
  constexpr int M = N / 2 + 2;
  float a[M];
#pragma unroll
  for (int k = 0; k < M; ++k) a[k] = v[k];
#pragma unroll
  for (int t = 0; t < N - M; ++t) {  // active: a[t .. M-1]; drop its min (to a[t]) and max (to a[M-1])
#pragma unroll
    for (int i = t + 1; i < M; ++i) cswap(a[t], a[i]);
#pragma unroll
    for (int i = t + 1; i < M - 1; ++i) cswap(a[i], a[M - 1]);
    a[M - 1] = v[M + t];
  }
  const float x = a[N - M], y = a[N - M + 1], z = a[N - M + 2];  // three left: their median
  return fmaxf(fminf(x, y), fminf(fmaxf(x, y), z));
}

template <typename T, int K, int C>
__global__ void __launch_bounds__(256, 2)
median_blur_k(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w_,
              const float* __restrict__ b_, int planes, int groups_, int H, int WC, int C_, i64 in_plane, i64 in_row,
              int KH_, int KW_, int mode) {
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  constexpr int V = 4, TW = 32 * V, TH = 8, R = K / 2;
  constexpr int ld = round4(TW + (K - 1) * C), rows = TH + K - 1;
  const int x0 = blockIdx.x * TW;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * TH; y0 < H; y0 += gridDim.y * TH) {
    __syncthreads();
    load_tile<T, true>(tile, ld, rows, TW + (K - 1) * C, in + (i64)p * in_plane, in_row, H, WC, C,
                       kBorderReplicate, y0 - R, x0 - R * C);
    __syncthreads();
    const int y = y0 + threadIdx.y;
    float res[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float v[K * K];
      const float* src = tile + threadIdx.y * ld + threadIdx.x * V + i;
#pragma unroll
      for (int dy = 0; dy < K; ++dy)
#pragma unroll
        for (int dx = 0; dx < K; ++dx) v[dy * K + dx] = src[dy * ld + dx * C];
      res[i] = median_select(v);
    }
    if (y < H) store_run<T, V>(out + ((i64)p * H + y) * WC, x0 + threadIdx.x * V, WC, res);
  }
}

}  // namespace kk
