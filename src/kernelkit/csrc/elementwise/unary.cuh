// Kernel templates of the unary ladder (out = f(x)), shared by gelu.cu and relu.cu.
//
// An op is a functor type `Op` with
//   __device__ float operator()(float x) const;          // the math, in fp32
// and, for the paired rungs, optionally
//   __device__ T2 pair(T2 x) const;                      // two lanes at once (__half2 / __nv_bfloat162)
//
// The ladder, one template per rung:
//   unary_scalar  grid-stride loop, one element per iteration (the baseline)
//   unary_vector  grid-stride over N-element vectors (float2/float4, 8-/16-byte), scalar tail
//   unary_pairs   P packed pairs per access (half2 math; 32-, 64- or 128-bit accesses), scalar tail
//   unary_fast    16-byte vectors, launched one per thread over a grid covering the tensor (the loop
//                 strides by the grid, so any grid is correct); prologue/main/epilogue so that any
//                 output alignment works; the input is read as vectors when it shares the output's
//                 misalignment, element by element (still coalesced) when it does not.
#pragma once
#include "common.cuh"

namespace kk {

template <typename T, typename Op>
__global__ void unary_scalar(T* __restrict__ out, const T* __restrict__ in, i64 n) {
  const Op op{};
  for (i64 i = global_thread(); i < n; i += grid_threads()) out[i] = from_float<T>(op(to_float(in[i])));
}

template <typename T, int N, typename Op>
__global__ void unary_vector(T* __restrict__ out, const T* __restrict__ in, i64 n) {
  using V = Vec<T, N>;
  const Op op{};
  const i64 nvec = n / N;
  for (i64 i = global_thread(); i < nvec; i += grid_threads()) {
    V v = load_vec(reinterpret_cast<const V*>(in) + i);
#pragma unroll
    for (int j = 0; j < N; ++j) v.v[j] = from_float<T>(op(to_float(v.v[j])));
    store_vec(reinterpret_cast<V*>(out) + i, v);
  }
  // tail: the last n % N elements, one per thread of the first threads
  const i64 t = global_thread(), tail = n - nvec * N;
  if (t < tail) out[nvec * N + t] = from_float<T>(op(to_float(in[nvec * N + t])));
}

template <typename T2, int P, typename Op>
__global__ void unary_pairs(T2* __restrict__ out, const T2* __restrict__ in, i64 npairs, i64 n) {
  using V = Vec<T2, P>;
  const Op op{};
  const i64 nvec = npairs / P;
  for (i64 i = global_thread(); i < nvec; i += grid_threads()) {
    V v = load_vec(reinterpret_cast<const V*>(in) + i);
#pragma unroll
    for (int j = 0; j < P; ++j) v.v[j] = op.pair(v.v[j]);
    store_vec(reinterpret_cast<V*>(out) + i, v);
  }
  // tail: elements past the last whole vector (pairs left over, and an odd last element)
  using T = decltype(in->x);
  const T* ins = reinterpret_cast<const T*>(in);
  T* outs = reinterpret_cast<T*>(out);
  const i64 t = global_thread(), done = nvec * P * 2;
  if (t < n - done) outs[done + t] = from_float<T>(op(to_float(ins[done + t])));
}

template <typename T, typename Op, bool kInAligned>
__global__ void unary_fast(T* __restrict__ out, const T* __restrict__ in, i64 n, i64 head) {
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const Op op{};
  const i64 t = global_thread(), stride = grid_threads();
  // prologue: `head` (< N) elements bring `out + head` to a 16-byte boundary
  if (t < head) out[t] = from_float<T>(op(to_float(in[t])));
  const i64 nvec = (n - head) / N;
  V* __restrict__ ov = reinterpret_cast<V*>(out + head);
  const T* __restrict__ x = in + head;
  // not unrolled: an unrolled grid-stride loop computes its trip count with a 64-bit division (a
  // CALL to a ~100-instruction routine) in every thread, paid on each 16 bytes by a full-grid launch
#pragma unroll 1
  for (i64 i = t; i < nvec; i += stride) {
    V v;
    if constexpr (kInAligned) {
      v = load_vec(reinterpret_cast<const V*>(x) + i);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) v.v[j] = x[i * N + j];
    }
#pragma unroll
    for (int j = 0; j < N; ++j) v.v[j] = from_float<T>(op(to_float(v.v[j])));
    store_vec(ov + i, v);
  }
  // epilogue: what is left after the last whole vector
  const i64 done = head + nvec * N;
  if (t < n - done) out[done + t] = from_float<T>(op(to_float(in[done + t])));
}

}  // namespace kk
