// SAXPY, y = alpha * x + y in place, one template per rung:
//   saxpy_monolithic   one thread per element, `if (i < n)`: the grid must cover the array
//   saxpy_grid_stride  a grid-stride loop: any grid covers any n, so the host sizes the grid from the
//                      SM count, and a <<<1, 1>>> launch runs the same loop serially (debugging)
//   saxpy_vec          16-byte vectors of y (prologue/main/epilogue for any alignment of y); x read
//                      as vectors when it shares y's misalignment, element by element otherwise.
//                      Still a grid-stride loop, so the serial launch works for it too.
// fp32 math (one fma) for every dtype; 64-bit indices.
// Grid-stride loops carry `#pragma unroll 1`: unrolled, the compiler computes their trip count with a
// 64-bit division (a CALL to a ~100-instruction routine) per thread and loop, which the one-vector-
// per-thread launches would pay on every 16 bytes (docs/design/elementwise.md).
#include "common.cuh"

namespace kk {

template <typename T>
__device__ __forceinline__ T axpy1(float alpha, T x, T y) {
  return from_float<T>(fmaf(alpha, to_float(x), to_float(y)));
}

template <typename T>
__global__ void saxpy_monolithic(T* __restrict__ y, const T* __restrict__ x, i64 n, float alpha) {
  const i64 i = global_thread();
  if (i < n) y[i] = axpy1(alpha, x[i], y[i]);
}

template <typename T>
__global__ void saxpy_grid_stride(T* __restrict__ y, const T* __restrict__ x, i64 n, float alpha) {
  for (i64 i = global_thread(); i < n; i += grid_threads()) y[i] = axpy1(alpha, x[i], y[i]);
}

// head: elements until y + head is 16-byte aligned. Every loop strides by the grid, prologue and
// epilogue included, so one thread does all the work in a serial launch.
template <typename T, bool kXAligned>
__global__ void saxpy_vec(T* __restrict__ y, const T* __restrict__ x, i64 n, float alpha, int head) {
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const i64 t = global_thread(), stride = grid_threads();
#pragma unroll 1
  for (i64 i = t; i < head; i += stride) y[i] = axpy1(alpha, x[i], y[i]);
  const i64 nvec = (n - head) / N;
  V* __restrict__ yv = reinterpret_cast<V*>(y + head);
  const T* __restrict__ xs = x + head;
#pragma unroll 1
  for (i64 i = t; i < nvec; i += stride) {
    V vy = load_vec(yv + i), vx;
    if constexpr (kXAligned) {
      vx = load_vec(reinterpret_cast<const V*>(xs) + i);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) vx.v[j] = xs[i * N + j];  // coalesced across the warp; L1 absorbs
    }
#pragma unroll
    for (int j = 0; j < N; ++j) vy.v[j] = axpy1(alpha, vx.v[j], vy.v[j]);
    store_vec(yv + i, vy);
  }
#pragma unroll 1
  for (i64 i = head + nvec * N + t; i < n; i += stride) y[i] = axpy1(alpha, x[i], y[i]);
}

}  // namespace kk
