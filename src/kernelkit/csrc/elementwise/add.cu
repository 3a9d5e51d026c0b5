// out = a + b, one template per rung of the `add` ladder:
//   add_2d       2D grid of 32x8 blocks over (rows, cols), a thread per element, idle threads where
//                cols is not a multiple of 32 (the matrix-shaped launch)
//   add_1d       1D grid, a thread per element (the linear launch)
//   add_vec      16-byte vectors (float4 / 8 halves), a thread per vector; launched only when all
//                three pointers are 16-byte aligned (the host's alignment check), tail in-kernel
//   add_aligned  prologue / main / epilogue: scalar head until `out` is 16-byte aligned, vectors,
//                scalar tail; needs a and b misaligned by the same amount as out
//   add_shuffle  any misalignments: out is written in aligned vectors; each input is read in aligned
//                16-byte chunks and every lane takes the neighbouring chunk from lane+1 with
//                __shfl_down_sync, then shifts the 32 bytes into place (padding instead would need
//                aligned copies of the inputs, i.e. twice the traffic)
// fp32 math for every dtype; 64-bit indices everywhere.
// Grid-stride loops carry `#pragma unroll 1`: unrolled, the compiler computes their trip count with a
// 64-bit division (a CALL to a ~100-instruction routine) per thread and loop, which the one-vector-
// per-thread launches would pay on every 16 bytes (docs/design/elementwise.md).
#include "common.cuh"

namespace kk {

template <typename T>
__device__ __forceinline__ T add1(T a, T b) {
  return from_float<T>(to_float(a) + to_float(b));
}

// One 16-byte vector of T, element-wise sum in fp32.
template <typename T>
__device__ __forceinline__ uint4 add16(uint4 a, uint4 b) {
  constexpr int N = 16 / sizeof(T);
  T x[N], y[N];
  memcpy(x, &a, 16);
  memcpy(y, &b, 16);
#pragma unroll
  for (int j = 0; j < N; ++j) x[j] = add1(x[j], y[j]);
  uint4 r;
  memcpy(&r, x, 16);
  return r;
}

template <typename T>
__global__ void add_2d(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, i64 rows,
                       i64 cols) {
  const i64 x = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  // rows past gridDim.y * blockDim.y (65535 x 8) are covered by striding in y
#pragma unroll 1
  for (i64 y = (i64)blockIdx.y * blockDim.y + threadIdx.y; y < rows; y += (i64)gridDim.y * blockDim.y) {
    if (x < cols) {
      const i64 i = y * cols + x;
      out[i] = add1(a[i], b[i]);
    }
  }
}

template <typename T>
__global__ void add_1d(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, i64 n) {
  const i64 i = global_thread();
  if (i < n) out[i] = add1(a[i], b[i]);
}

template <typename T>
__global__ void add_vec(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, i64 n) {
  constexpr int N = 16 / sizeof(T);
  const i64 i = global_thread(), nvec = n / N;
  if (i < nvec) {
    const uint4 va = reinterpret_cast<const uint4*>(a)[i], vb = reinterpret_cast<const uint4*>(b)[i];
    reinterpret_cast<uint4*>(out)[i] = add16<T>(va, vb);
  }
  const i64 tail = n - nvec * N;  // < N elements, one per thread of the first threads
  if (i < tail) out[nvec * N + i] = add1(a[nvec * N + i], b[nvec * N + i]);
}

// Scalar loops over [lo, hi): the prologue and epilogue of the vector kernels. Grid-stride, so they
// are right for any grid, down to one thread.
template <typename T>
__device__ __forceinline__ void add_range(T* out, const T* a, const T* b, i64 lo, i64 hi) {
#pragma unroll 1
  for (i64 i = lo + global_thread(); i < hi; i += grid_threads()) out[i] = add1(a[i], b[i]);
}

// The grid-stride loop carries one 16-byte vector of each input per iteration; the fast rung's grid
// covers the tensor, so each thread runs it once.
template <typename T>
__global__ void add_aligned(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, i64 n, int head) {
  constexpr int N = 16 / sizeof(T);
  const i64 nvec = (n - head) / N, stride = grid_threads();
  add_range(out, a, b, 0, head);
  const uint4* va = reinterpret_cast<const uint4*>(a + head);
  const uint4* vb = reinterpret_cast<const uint4*>(b + head);
  uint4* vo = reinterpret_cast<uint4*>(out + head);
#pragma unroll 1
  for (i64 i = global_thread(); i < nvec; i += stride) {
    const uint4 x = load_vec(va + i), y = load_vec(vb + i);  // both loads before the math
    store_vec(vo + i, add16<T>(x, y));
  }
  add_range(out, a, b, head + nvec * N, n);
}

// ---- warp-shuffle realignment --------------------------------------------------------------------

// Bytes [d, d + 16) of the 32 bytes lo:hi (little-endian), d in [0, 16): the word shift picks with
// selects (no dynamic register indexing, which would go to local memory), the byte shift is a funnel
// shift (d is a multiple of the element size, so 0 or 2 for 16-bit types, 0 for fp32).
__device__ __forceinline__ uint4 shift_bytes(uint4 lo, uint4 hi, int d) {
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int q = d >> 2, r = (d & 3) * 8;
  unsigned s[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) s[j] = q == 0 ? w[j] : q == 1 ? w[j + 1] : q == 2 ? w[j + 2] : w[j + 3];
  return make_uint4(__funnelshift_r(s[0], s[1], r), __funnelshift_r(s[1], s[2], r),
                    __funnelshift_r(s[2], s[3], r), __funnelshift_r(s[3], s[4], r));
}

// Aligned 16-byte chunk k of an input whose element 0 sits `off` bytes past the aligned base p0
// (off in [0, 16)). Chunks reaching outside [0, n) elements (the first and last only) are read
// element by element, so nothing outside the tensor is touched.
template <typename T>
__device__ __forceinline__ uint4 load_chunk(const T* in, const uint4* p0, i64 k, int off, i64 n) {
  constexpr int N = 16 / sizeof(T);
  const i64 first = (16 * k - off) / (i64)sizeof(T);  // element index of the chunk's first slot
  if (first >= 0 && first + N <= n) return p0[k];
  T v[N];
#pragma unroll
  for (int j = 0; j < N; ++j) v[j] = (first + j >= 0 && first + j < n) ? in[first + j] : from_float<T>(0.f);
  uint4 r;
  memcpy(&r, v, 16);
  return r;
}

// Output vector i needs, from an input misaligned by d bytes against the output, chunk i shifted
// with chunk i + 1. Each lane loads its own chunk i; chunk i + 1 comes from the next lane by
// shuffle, except on lane 31, which loads it too. Both loads are issued before any shuffle, so a
// warp waits for one memory latency, not two (with the second load after the shuffle: 2829 against
// 3087 GB/s fp32, docs/design/elementwise.md). All 32 lanes of a warp call these with consecutive i.
struct Chunks {
  uint4 cur, extra;
};

template <typename T>
__device__ __forceinline__ Chunks load_chunks(const T* in, const uint4* p0, i64 i, i64 nvec, int d, i64 n,
                                              int lane) {
  Chunks c{make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
  if (i < nvec || (d && i == nvec)) c.cur = load_chunk(in, p0, i, d, n);
  if (d && lane == 31 && i < nvec) c.extra = load_chunk(in, p0, i + 1, d, n);
  return c;
}

__device__ __forceinline__ uint4 realign(const Chunks& c, int d, int lane) {
  if (d == 0) return c.cur;  // uniform across the grid: an input aligned like out skips the shuffles
  uint4 nxt;
  nxt.x = __shfl_down_sync(0xffffffffu, c.cur.x, 1);
  nxt.y = __shfl_down_sync(0xffffffffu, c.cur.y, 1);
  nxt.z = __shfl_down_sync(0xffffffffu, c.cur.z, 1);
  nxt.w = __shfl_down_sync(0xffffffffu, c.cur.w, 1);
  if (lane == 31) nxt = c.extra;
  return shift_bytes(c.cur, nxt, d);
}

// a + head and b + head sit da and db bytes past a 16-byte boundary; out + head is aligned.
// The main loop strides by whole warps so that every shuffle has all 32 lanes present.
// __launch_bounds__: 3 blocks of 512 per SM (<= 40 registers, 75% occupancy) instead of 2 (50 registers).
template <typename T>
__global__ void __launch_bounds__(512, 3)
    add_shuffle(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, i64 n, int head, int da, int db) {
  constexpr int N = 16 / sizeof(T);
  const i64 nvec = (n - head) / N;
  add_range(out, a, b, 0, head);
  const T* a1 = a + head;
  const T* b1 = b + head;
  const uint4* pa = reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(a1) - da);
  const uint4* pb = reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(b1) - db);
  uint4* vo = reinterpret_cast<uint4*>(out + head);
  const int lane = threadIdx.x & 31;
  const i64 warps = grid_threads() >> 5;
#pragma unroll 1
  for (i64 base = (global_thread() >> 5) << 5; base < nvec; base += warps << 5) {
    const i64 i = base + lane;
    const Chunks ca = load_chunks(a1, pa, i, nvec, da, n - head, lane);
    const Chunks cb = load_chunks(b1, pb, i, nvec, db, n - head, lane);
    const uint4 x = realign(ca, da, lane), y = realign(cb, db, lane);
    if (i < nvec) vo[i] = add16<T>(x, y);
  }
  add_range(out, a, b, head + nvec * N, n);
}

}  // namespace kk
