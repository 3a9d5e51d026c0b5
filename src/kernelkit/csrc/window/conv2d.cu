// Depthwise convolution (groups == channels, one KH x KW filter per channel) with torch's conv2d
// semantics: stride, zero padding, dilation, an optional bias. One output per thread (planar layouts:
// consecutive threads along a row) or, channels_last, VE consecutive channels of one output pixel per
// thread, each tap one 16-byte input load and the weights stored tap-major so a tap's VE weights are
// adjacent. The weight of (channel c, tap t) is w[c * wc + t * wt].
#include "window.cuh"

namespace kk {

template <typename T, int VE, bool kChannelsLast>
__global__ void __launch_bounds__(256, 4)
dw_direct(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w, const float* __restrict__ bias,
          int N, int C, int H, int W, int OH, int OW, i64 sn, i64 sc, i64 sh, i64 sw, int wc, int wt, int KH, int KW,
          int s_h, int s_w, int p_h, int p_w, int d_h, int d_w) {
  const int cv = C / VE;
  const i64 total = (i64)N * cv * OH * OW;
  for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total; t += (i64)gridDim.x * blockDim.x) {
    int n, c, oy, ox;
    if constexpr (kChannelsLast) {  // index order n, oy, ox, c (channels fastest)
      c = (int)(t % cv) * VE;
      i64 q = t / cv;
      ox = (int)(q % OW);
      q /= OW;
      oy = (int)(q % OH);
      n = (int)(q / OH);
    } else {  // n, c, oy, ox
      ox = (int)(t % OW);
      i64 q = t / OW;
      oy = (int)(q % OH);
      q /= OH;
      c = (int)(q % C);
      n = (int)(q / C);
    }
    float acc[VE];
#pragma unroll
    for (int j = 0; j < VE; ++j) acc[j] = bias ? bias[c + j] : 0.0f;
    const T* src = in + n * sn + c * sc;
    for (int a = 0; a < KH; ++a) {
      const int y = oy * s_h - p_h + a * d_h;
      if ((unsigned)y >= (unsigned)H) continue;
      for (int b = 0; b < KW; ++b) {
        const int x = ox * s_w - p_w + b * d_w;
        if ((unsigned)x >= (unsigned)W) continue;
        const T* s = src + y * sh + x * sw;
        const float* wp = w + (i64)c * wc + (a * KW + b) * wt;
        if constexpr (VE * sizeof(T) == 16) {
          float f[VE];
          vec16_to_floats<T>(*reinterpret_cast<const uint4*>(s), f);
#pragma unroll
          for (int j = 0; j < VE; ++j) acc[j] = fmaf(wp[j * wc], f[j], acc[j]);
        } else {
#pragma unroll
          for (int j = 0; j < VE; ++j) acc[j] = fmaf(wp[j * wc], wload(s[j]), acc[j]);
        }
      }
    }
    if constexpr (kChannelsLast) {
      T* dst = out + (((i64)n * OH + oy) * OW + ox) * C + c;
      store_run<T, VE>(dst, 0, VE, acc);
    } else {
      out[(((i64)n * C + c) * OH + oy) * OW + ox] = wstore<T>(acc[0]);
    }
  }
}

}  // namespace kk
