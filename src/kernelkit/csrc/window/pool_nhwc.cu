// Max and average pooling of channels_last (NHWC) images, torch.nn.functional's semantics as pool.cu's
// planar kernels: each thread a vector of VE channels of one output pixel, every tap one 16-byte load where
// the channels allow. The combine, neutral value and divisor are pool.cuh's.
#include "pool.cuh"

namespace kk {

// The channels_last kernels' grid-stride walk: thread t takes channel vector t % cv of output pixel t / cv,
// pixels in (n, oy, ox) order, one(n, oy, ox, first channel); the index arithmetic is 32-bit where the
// thread count allows.
template <int VE, typename F>
__device__ __forceinline__ void nhwc_walk(i64 total, int cv, int OH, int OW, F&& one) {
  if (total <= 0x7fffffff) {
    const unsigned ucv = cv, uow = OW, uoh = OH;
    for (unsigned t = blockIdx.x * blockDim.x + threadIdx.x; t < (unsigned)total; t += gridDim.x * blockDim.x) {
      const unsigned q = t / ucv, q2 = q / uow;
      one((int)(q2 / uoh), (int)(q2 % uoh), (int)(q % uow), (int)(t % ucv) * VE);
    }
  } else {
    for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total; t += (i64)gridDim.x * blockDim.x) {
      const i64 q = t / cv, q2 = q / OW;
      one((int)(q2 / OH), (int)(q2 % OH), (int)(q % OW), (int)(t % cv) * VE);
    }
  }
}

// channels_last: strides (elements) of the input's n, h, w; channels contiguous. The output is
// channels_last and contiguous in that layout: ((n * OH + oy) * OW + ox) * Cn + c. Thread t takes
// channel vector t % (Cn / VE) of output pixel t / (Cn / VE) (nhwc_walk).
template <typename T, bool kMax, int VE>
__global__ void __launch_bounds__(256, 3)
pool_nhwc(const T* __restrict__ in, T* __restrict__ out, int N, int Cn, int H, int W, int OH, int OW, i64 sn, i64 sh_,
          i64 sw_, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int include_pad, int divisor) {
  const int cv = Cn / VE;
  const i64 total = (i64)N * OH * OW * cv;
  auto one = [&](int n, int oy, int ox, int c) {
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
  };
  nhwc_walk<VE>(total, cv, OH, OW, one);
}

// channels_last with a compile-time square K x K window at stride S (no dilation), C a multiple of a
// 16-byte vector on aligned pixels: thread t takes channel vector t % (C / VE) of output pixel
// t / (C / VE). All K*K taps' 16-byte loads issue before any is used (taps outside the image are not
// loaded and read as the neutral value); 16-bit max runs on the packed pairs as loaded (NaN-propagating
// max of pairs), the rest in float32.
template <typename T, bool kMax, int K, int S>
__global__ void __launch_bounds__(256, 4)
pool_nhwc_k(const T* __restrict__ in, T* __restrict__ out, int N, int Cn, int H, int W, int OH, int OW, i64 sn,
            i64 sh_, i64 sw_, int ph, int pw, int include_pad, int divisor) {
  constexpr int VE = vec16<T>();
  const int cv = Cn / VE;
  const i64 total = (i64)N * OH * OW * cv;
  auto one = [&](int n, int oy, int ox, int c) {
    const int hs = oy * S - ph, ws = ox * S - pw;
    const T* src = in + n * sn + c;
    uint4 raw[K * K];
#pragma unroll
    for (int a = 0; a < K; ++a)
#pragma unroll
      for (int b = 0; b < K; ++b) {
        const int y = hs + a, x = ws + b;
        raw[a * K + b] = (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W
                             ? *reinterpret_cast<const uint4*>(src + y * sh_ + x * sw_)
                             : pool_fill16<T, kMax>();
      }
    T* dst = out + (((i64)n * OH + oy) * OW + ox) * Cn + c;
    if constexpr (kMax && sizeof(T) == 2) {
      using P = typename Pair<T>::type;
      P m[4], v[4];
      memcpy(m, &raw[0], 16);
#pragma unroll
      for (int t = 1; t < K * K; ++t) {
        memcpy(v, &raw[t], 16);
#pragma unroll
        for (int q = 0; q < 4; ++q) m[q] = __hmax2_nan(m[q], v[q]);
      }
      uint4 o;
      memcpy(&o, m, 16);
      *reinterpret_cast<uint4*>(dst) = o;
    } else {
      float acc[VE];
      vec16_to_floats<T>(raw[0], acc);
#pragma unroll
      for (int t = 1; t < K * K; ++t) {
        float f[VE];
        vec16_to_floats<T>(raw[t], f);
#pragma unroll
        for (int j = 0; j < VE; ++j) pool_take<kMax>(acc[j], f[j]);
      }
      if constexpr (!kMax) {
        const float r = __frcp_rn(pool_divisor(hs, ws, K, K, H, W, ph, pw, include_pad, divisor));
#pragma unroll
        for (int j = 0; j < VE; ++j) acc[j] *= r;
      }
      store_vec(reinterpret_cast<Vec<T, VE>*>(dst), vec_from_floats<T, VE>(acc));
    }
  };
  nhwc_walk<VE>(total, cv, OH, OW, one);
}

}  // namespace kk
