// ReLU: every rung is a template of unary.cuh (the unary ladder) instantiated with kk::Relu.
#include "unary.cuh"

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

}  // namespace kk
