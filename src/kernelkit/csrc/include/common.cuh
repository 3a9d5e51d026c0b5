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

// Load/store a Vec through a plain integer carrier of the same size. __half2 and friends have
// user-written copy operations, so copying a struct of them goes member by member (32-bit LDGs);
// going through uint2/uint4 makes the access one 64- or 128-bit instruction.
template <int Bytes> struct Carrier;
template <> struct Carrier<2> { using type = unsigned short; };
template <> struct Carrier<4> { using type = unsigned int; };
template <> struct Carrier<8> { using type = uint2; };
template <> struct Carrier<16> { using type = uint4; };

template <typename V>
__device__ __forceinline__ V load_vec(const V* p) {
  using C = typename Carrier<sizeof(V)>::type;
  const C c = *reinterpret_cast<const C*>(p);
  V v;
  memcpy(&v, &c, sizeof(V));
  return v;
}
// *p where `ok`, else a vector of `fill` (no access made), for 16-byte vectors. The choice is made on
// 32-bit words, the fill given as one: a Vec of 16-bit elements chosen element by element compiles to
// a PRMT per element merging the halves of each register.
template <typename T>
__device__ __forceinline__ unsigned fill_word(T fill) {  // `fill` repeated over 32 bits
  if constexpr (sizeof(T) == 4) {
    unsigned u;
    memcpy(&u, &fill, 4);
    return u;
  } else {
    unsigned short h;
    memcpy(&h, &fill, 2);
    return (unsigned)h * 0x10001u;
  }
}

template <typename V, typename T>
__device__ __forceinline__ V load_vec_or(bool ok, const V* p, T fill) {
  static_assert(sizeof(V) == 16, "16-byte vectors");
  const unsigned f = fill_word(fill);
  const uint4 c = ok ? *reinterpret_cast<const uint4*>(p) : make_uint4(f, f, f, f);
  V v;
  memcpy(&v, &c, 16);
  return v;
}

// A 16-byte vector's values as floats, and back (rounded to nearest), a 32-bit pair at a time for 16-bit
// types: converting a struct of 16-bit values element by element made NVVM hold each value in a
// register of its own, merged back with a PRMT per element (16-bit norm kernels: 272 of 1440 SASS
// instructions); pairs convert straight from and into the loaded and stored registers.
template <typename T> struct Pair;  // the packed pair type of a 16-bit T and its conversions
template <> struct Pair<__half> {
  using type = __half2;
  __device__ __forceinline__ static float2 to(type h) { return __half22float2(h); }
  __device__ __forceinline__ static type from(float a, float b) { return __floats2half2_rn(a, b); }
};
template <> struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  __device__ __forceinline__ static float2 to(type h) { return __bfloat1622float2(h); }
  __device__ __forceinline__ static type from(float a, float b) { return __floats2bfloat162_rn(a, b); }
};

template <typename T, int N>
__device__ __forceinline__ void vec_to_floats(const Vec<T, N>& v, float (&x)[N]) {
  if constexpr (sizeof(T) == 2) {
    typename Pair<T>::type h[N / 2];
    memcpy(h, &v, sizeof(h));
#pragma unroll
    for (int j = 0; j < N / 2; ++j) {
      const float2 f = Pair<T>::to(h[j]);
      x[2 * j] = f.x;
      x[2 * j + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) x[j] = to_float(v.v[j]);
  }
}

template <typename T, int N>
__device__ __forceinline__ Vec<T, N> vec_from_floats(const float (&x)[N]) {
  Vec<T, N> v;
  if constexpr (sizeof(T) == 2) {
    typename Pair<T>::type h[N / 2];
#pragma unroll
    for (int j = 0; j < N / 2; ++j) h[j] = Pair<T>::from(x[2 * j], x[2 * j + 1]);
    memcpy(&v, h, sizeof(h));
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) v.v[j] = from_float<T>(x[j]);
  }
  return v;
}

template <typename V>
__device__ __forceinline__ void store_vec(V* p, const V& v) {
  using C = typename Carrier<sizeof(V)>::type;
  C c;
  memcpy(&c, &v, sizeof(V));
  *reinterpret_cast<C*>(p) = c;
}

// A 16-byte global store written as PTX's st.global.v4 itself: NVVM split the plain vector store of
// store_vec into four 32-bit STGs in some kernels (the cluster form of norm_smem), which this keeps as
// one STG.E.128. The address must be 16-byte aligned.
template <typename V>
__device__ __forceinline__ void store_global16(V* p, const V& v) {
  static_assert(sizeof(V) == 16, "store_global16 moves 16 bytes");
  uint4 c;
  memcpy(&c, &v, 16);
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(c.x), "r"(c.y), "r"(c.z), "r"(c.w));
}

// 16-byte global accesses with an explicit cache policy. Streaming (.cs, evict-first) suits data
// touched once, so it does not push reusable lines out of L2; the plain form is the default policy.
template <bool kStreaming, typename V>
__device__ __forceinline__ V load16(const V* p) {
  static_assert(sizeof(V) == 16, "load16 moves 16 bytes");
  if constexpr (kStreaming) {
    int4 r = __ldcs(reinterpret_cast<const int4*>(p));
    return *reinterpret_cast<V*>(&r);
  } else {
    return load_vec(p);
  }
}
template <bool kStreaming, typename V>
__device__ __forceinline__ void store16(V* p, const V& v) {
  static_assert(sizeof(V) == 16, "store16 moves 16 bytes");
  if constexpr (kStreaming) {
    __stcs(reinterpret_cast<int4*>(p), *reinterpret_cast<const int4*>(&v));
  } else {
    store_vec(p, v);
  }
}

// 64-bit global thread index and grid size: element counts may pass 2^31.
__device__ __forceinline__ i64 global_thread() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 grid_threads() { return (i64)gridDim.x * blockDim.x; }

}  // namespace kk
