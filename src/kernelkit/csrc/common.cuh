// Shared device helpers: element types, conversions, 16-byte vectors, 64-bit thread indexing.
// Plain CUDA C++: raw pointers and sizes only, no Python or torch types.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace kk {

using i64 = long long;

// Every kernelkit kernel computes in fp32 registers and converts at load/store.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Both lanes of a packed pair set to one value.
template <typename T2> __device__ __forceinline__ T2 splat2(float x);
template <> __device__ __forceinline__ __half2 splat2<__half2>(float x) { return __float2half2_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat162 splat2<__nv_bfloat162>(float x) {
  return __float2bfloat162_rn(x);
}

// N elements of T moved as one aligned access (16 bytes -> LDG.E.128 / STG.E.128).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// 64-bit global thread index and grid size: element counts may pass 2^31.
__device__ __forceinline__ i64 global_thread() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 grid_threads() { return (i64)gridDim.x * blockDim.x; }

}  // namespace kk
