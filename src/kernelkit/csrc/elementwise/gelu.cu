// GELU: every rung is a template of unary.cuh (the unary ladder) instantiated with one of the
// functors below.
#include "gelu_fast.cuh"
#include "unary.cuh"

namespace kk {

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), torch's approximate="tanh".
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// Accurate fp32 math (tanhf); pair() is the half2 SIMD form: the polynomial and the final products
// in packed 16-bit arithmetic, the tanh itself per lane in fp32.
struct GeluTanh {
  __device__ __forceinline__ float operator()(float x) const {
    const float inner = kSqrt2OverPi * fmaf(kCubic * x, x * x, x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  template <typename T2>
  __device__ __forceinline__ T2 pair(T2 x) const {
    const T2 a = splat2<T2>(kSqrt2OverPi), b = splat2<T2>(kCubic);
    const T2 h = splat2<T2>(0.5f), one = splat2<T2>(1.0f);
    T2 z = __hmul2(a, __hfma2(__hmul2(b, x), __hmul2(x, x), x));
    z.x = from_float<decltype(z.x)>(tanhf(to_float(z.x)));
    z.y = from_float<decltype(z.y)>(tanhf(to_float(z.y)));
    return __hmul2(__hmul2(h, x), __hadd2(one, z));
  }
};

// The fastest fp16/bf16 form: the hardware tanh (MUFU.TANH, max relative error ~2^-11, below the
// rounding of a 16-bit result) instead of tanhf's ~20 instructions, which at 2^28 elements would
// otherwise make the 16-bit rungs issue-bound rather than memory-bound.
struct GeluTanhFast {
  __device__ __forceinline__ float operator()(float x) const {
    const float inner = kSqrt2OverPi * fmaf(kCubic * x, x * x, x);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(inner));
    return 0.5f * x * (1.0f + t);
  }
};

// 0.5 x (1 + erf(x / sqrt(2))), torch's approximate="none".
struct GeluErf {
  __device__ __forceinline__ float operator()(float x) const {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  }
  template <typename T2>
  __device__ __forceinline__ T2 pair(T2 x) const {
    const T2 h = splat2<T2>(0.5f), one = splat2<T2>(1.0f);
    T2 e;
    e.x = from_float<decltype(e.x)>(erff(to_float(x.x) * 0.7071067811865476f));
    e.y = from_float<decltype(e.y)>(erff(to_float(x.y) * 0.7071067811865476f));
    return __hmul2(__hmul2(h, x), __hadd2(one, e));
  }
};

// The fp16/bf16 erf form of the fast rung (gelu_erf_16bit in gelu_fast.cuh: the fitted erfc, 5.9e-5
// relative error, a tenth of fp16's half ulp, against erff's ~27 instructions an element).
struct GeluErfFast {
  __device__ __forceinline__ float operator()(float x) const { return gelu_erf_16bit(x); }
};

}  // namespace kk
