// Max and average pooling with torch.nn.functional's semantics (kernel, stride, padding, dilation for
// max, ceil_mode, count_include_pad, divisor_override). Planar images (NCHW): each thread V outputs of a
// row, stored as one vector where aligned; channels_last (NHWC): each thread a vector of VE channels
// of one output pixel, every tap one 16-byte load where the channels allow.
#include "window.cuh"

namespace kk {


template <bool kMax>
__device__ __forceinline__ void pool_take(float& acc, float v) {
  if constexpr (kMax) {
    if (v > acc || v != v) acc = v;  // NaN wins and stays, as torch's max_pool2d
  } else {
    acc += v;
  }
}

// torch's divisor of an average window starting at (hs, ws) (padded coordinates, before clipping)
__device__ __forceinline__ float pool_divisor(int hs, int ws, int kh, int kw, int H, int W, int ph, int pw,
                                              int include_pad, int divisor) {
  if (divisor) return (float)divisor;
  const int he = min(hs + kh, H + ph), we = min(ws + kw, W + pw);
  if (include_pad) return (float)((he - hs) * (we - ws));
  return (float)((min(he, H) - max(hs, 0)) * (min(we, W) - max(ws, 0)));
}

template <typename T, bool kMax, int V>
__global__ void __launch_bounds__(256, 2)
pool_nchw(const T* __restrict__ in, T* __restrict__ out, int planes, int H, int W, int OH, int OW, i64 in_plane,
          i64 in_row, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int include_pad, int divisor) {
  const int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (ox0 >= OW) return;
  for (int p = blockIdx.z; p < planes; p += gridDim.z) {
    const T* src = in + (i64)p * in_plane;
    for (int oy = blockIdx.y * blockDim.y + threadIdx.y; oy < OH; oy += gridDim.y * blockDim.y) {
      const int hs = oy * sh - ph;
      float res[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const int ws = (ox0 + i) * sw - pw;
        float acc = kMax ? -__int_as_float(0x7f800000) : 0.0f;
        for (int a = 0; a < kh; ++a) {
          const int y = hs + a * dh;
          if ((unsigned)y >= (unsigned)H) continue;
          const T* row = src + (i64)y * in_row;
          for (int b = 0; b < kw; ++b) {
            const int x = ws + b * dw;
            if ((unsigned)x < (unsigned)W) pool_take<kMax>(acc, wload(row[x]));
          }
        }
        res[i] = kMax ? acc : acc / pool_divisor(hs, ws, kh, kw, H, W, ph, pw, include_pad, divisor);
      }
      store_run<T, V>(out + ((i64)p * OH + oy) * OW, ox0, OW, res);
    }
  }
}

// channels_last: strides (elements) of the input's n, h, w; channels contiguous. The output is
// channels_last and contiguous in that layout: ((n * OH + oy) * OW + ox) * Cn + c.
template <typename T, bool kMax, int VE>
__global__ void __launch_bounds__(256, 4)
pool_nhwc(const T* __restrict__ in, T* __restrict__ out, int N, int Cn, int H, int W, int OH, int OW, i64 sn, i64 sh_,
          i64 sw_, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int include_pad, int divisor) {
  const int cv = Cn / VE;
  const i64 total = (i64)N * OH * OW * cv;
  for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total; t += (i64)gridDim.x * blockDim.x) {
    const int c = (int)(t % cv) * VE;
    i64 q = t / cv;
    const int ox = (int)(q % OW);
    q /= OW;
    const int oy = (int)(q % OH);
    const int n = (int)(q / OH);
    const int hs = oy * sh - ph, ws = ox * sw - pw;
    float acc[VE];
#pragma unroll
    for (int j = 0; j < VE; ++j) acc[j] = kMax ? -__int_as_float(0x7f800000) : 0.0f;
    for (int a = 0; a < kh; ++a) {
      const int y = hs + a * dh;
      if ((unsigned)y >= (unsigned)H) continue;
      for (int b = 0; b < kw; ++b) {
        const int x = ws + b * dw;
        if ((unsigned)x >= (unsigned)W) continue;
        const T* src = in + n * sn + y * sh_ + x * sw_ + c;
        if constexpr (VE * sizeof(T) == 16) {
          float f[VE];
          vec16_to_floats<T>(*reinterpret_cast<const uint4*>(src), f);
#pragma unroll
          for (int j = 0; j < VE; ++j) pool_take<kMax>(acc[j], f[j]);
        } else {
#pragma unroll
          for (int j = 0; j < VE; ++j) pool_take<kMax>(acc[j], wload(src[j]));
        }
      }
    }
    const float d = kMax ? 1.0f : pool_divisor(hs, ws, kh, kw, H, W, ph, pw, include_pad, divisor);
    T* dst = out + (((i64)n * OH + oy) * OW + ox) * Cn + c;
    if constexpr (VE * sizeof(T) == 16) {
      float r[VE];
#pragma unroll
      for (int j = 0; j < VE; ++j) r[j] = kMax ? acc[j] : acc[j] / d;
      store_run<T, VE>(dst, 0, VE, r);
    } else {
#pragma unroll
      for (int j = 0; j < VE; ++j) dst[j] = wstore<T>(kMax ? acc[j] : acc[j] / d);
    }
  }
}

}  // namespace kk
