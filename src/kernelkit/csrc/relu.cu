// ReLU: every rung is a template of elementwise.cuh (the unary ladder) instantiated with kk::Relu.
#include "elementwise.cuh"

namespace kk {

// max(x, 0) with torch's NaN rule: NaN stays NaN (fmaxf(NaN, 0) would give 0).
struct Relu {
  __device__ __forceinline__ float operator()(float x) const { return x < 0.0f ? 0.0f : x; }
  // two lanes at once; __hmax2_nan keeps NaN like the scalar form
  template <typename T2>
  __device__ __forceinline__ T2 pair(T2 x) const {
    return __hmax2_nan(x, splat2<T2>(0.0f));
  }
};

// fp16 ReLU on the bits, two lanes a 32-bit word, no conversion: a lane becomes +0 where it is
// negative and not NaN, i.e. 0x8000 < h <= 0xfc00 (-0 and negative NaNs pass unchanged, as in Relu).
struct ReluHalfBits {
  static constexpr bool kWords = true;
  __device__ __forceinline__ float operator()(float x) const { return x < 0.0f ? 0.0f : x; }
  __device__ __forceinline__ unsigned words(unsigned w) const {
    const unsigned zero = __vcmpgtu2(w, 0x80008000u) & __vcmpleu2(w, 0xfc00fc00u);
    return w & ~zero;
  }
};

// torch's formulation (clamp_min): NaN passes, everything else through fmaxf (a FMNMX after a NaN test)
struct ReluNanMax {
  __device__ __forceinline__ float operator()(float x) const { return isnan(x) ? x : fmaxf(x, 0.0f); }
};

}  // namespace kk
