// What the pooling kernels share (pool.cu: planar images; pool_nhwc.cu: channels_last): the window's
// combine (NaN-propagating max, or a sum), its neutral value as 16 bytes of elements, and torch's divisor
// of an average window.
#pragma once
#include "pipeline.cuh"

namespace kk {

// max with NaN propagation (a NaN in a window gives NaN, as torch's max_pool2d): one instruction
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

template <bool kMax>
__device__ __forceinline__ void pool_take(float& acc, float v) {
  if constexpr (kMax) {
    acc = max_nan(acc, v);
  } else {
    acc += v;
  }
}

// 16 bytes of the window's neutral value: -inf for max, 0 for the average
template <typename T, bool kMax>
__device__ __forceinline__ uint4 pool_fill16() {
  const unsigned f = kMax ? fill_word<T>(from_float<T>(-__int_as_float(0x7f800000))) : 0u;
  return make_uint4(f, f, f, f);
}

// torch's divisor of an average window starting at (hs, ws) (padded coordinates, before clipping)
__device__ __forceinline__ float pool_divisor(int hs, int ws, int kh, int kw, int H, int W, int ph, int pw,
                                              int include_pad, int divisor) {
  if (divisor) return (float)divisor;
  const int he = min(hs + kh, H + ph), we = min(ws + kw, W + pw);
  if (include_pad) return (float)((he - hs) * (we - ws));
  return (float)((min(he, H) - max(hs, 0)) * (min(we, W) - max(ws, 0)));
}

}  // namespace kk
