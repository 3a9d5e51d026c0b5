// GELU written with CuTe: the fast rung's plan (one 16-byte vector a thread over a grid covering the
// tensor, a head and a tail for any alignment) expressed as tensors and copies instead of pointer casts.
//
// The aligned run of the tensor is a pair of global tensors of shape (N, nvec), N = 16 / sizeof(T)
// elements a column: column i is 16-byte vector i. A thread's tile is one column: copied into a
// register tensor of N elements by a 128-bit copy atom (UniversalCopy<uint128_t>: one LDG.E.128), the
// functor applied element by element, copied back by the same atom (STG.E.128). Where the input does
// not share the output's misalignment its column is read element by element (still coalesced across the
// warp): CuTe's default copy would assume a tensor of static layout, as a column is, 16-byte aligned.
// The head (elements before the output's first 16-byte boundary) and the tail (after the last whole
// vector) are one element a thread, as in unary_fast. Compiled with the CuTe header set
// (runtime/cute_headers.py).
#include <cute/tensor.hpp>

#include "gelu.cu"  // the functors: GeluTanh, GeluTanhFast, GeluErf, GeluErfFast

namespace kk {

template <typename T, typename Op, bool kInAligned>
__global__ void gelu_cute(T* __restrict__ out, const T* __restrict__ in, i64 n, i64 head) {
  using namespace cute;
  constexpr int N = 16 / sizeof(T);
  using Copy128 = Copy_Atom<UniversalCopy<uint4>, T>;  // N elements as one 128-bit access
  const Op op{};
  const i64 t = global_thread(), stride = grid_threads();
  if (t < head) out[t] = from_float<T>(op(to_float(in[t])));
  const i64 nvec = (n - head) / N;
  const auto columns = make_layout(make_shape(Int<N>{}, nvec));  // (N, nvec), column-major: vector i is column i
  const Tensor x = make_tensor(make_gmem_ptr(in + head), columns);
  const Tensor y = make_tensor(make_gmem_ptr(out + head), columns);
  Tensor r = make_tensor<T>(Int<N>{});  // the thread's tile: one vector in registers
  // not unrolled, as unary_fast: an unrolled grid-stride loop divides 64-bit integers for its trip count
#pragma unroll 1
  for (i64 i = t; i < nvec; i += stride) {
    if constexpr (kInAligned) {
      copy(Copy128{}, x(_, i), r);
    } else {
      // element by element: CuTe's default copy would take this static-layout column for 16-byte aligned
#pragma unroll
      for (int j = 0; j < N; ++j) r(j) = x(j, i);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) r(j) = from_float<T>(op(to_float(r(j))));
    Tensor yi = y(_, i);
    copy(Copy128{}, r, yi);
  }
  const i64 done = head + nvec * N;
  if (t < n - done) out[done + t] = from_float<T>(op(to_float(in[done + t])));
}

}  // namespace kk
