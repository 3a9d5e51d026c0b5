// Sliding-window building blocks: border index rules, element conversions (uint8 rounded and
// saturated), and the tile-with-halo loader every tiled window kernel stages its inputs through.
//
// A plane is `H` rows of `WC` elements (`C` channels interleaved per pixel: HWC images have C > 1,
// planar images C = 1). Horizontal neighbours are C elements apart; the border rule maps pixel
// columns, so an interleaved channel keeps its channel index when reflected or clamped.
#pragma once
#include "common.cuh"

namespace kk {

using u8 = unsigned char;

// Border modes, as the Python side numbers them (ops/window/_common.py BORDERS).
constexpr int kBorderZero = 0;       // outside reads as 0
constexpr int kBorderReplicate = 1;  // clamp to the nearest edge pixel
constexpr int kBorderReflect = 2;    // mirror about the edge pixel, edge not repeated (torch "reflect"),
                                     // extended periodically (period 2(n-1)) for reads farther than n-1

// The in-plane index that position i (any integer) reads under `mode`, or -1 for a zero read.
__device__ __forceinline__ int border_index(int i, int n, int mode) {
  if ((unsigned)i < (unsigned)n) return i;
  if (mode == kBorderZero) return -1;
  if (mode == kBorderReplicate || n == 1) return i < 0 ? 0 : n - 1;
  if (i < 0 ? i > -n : i < 2 * n - 1) return i < 0 ? -i : 2 * n - 2 - i;  // one reflection: no division
  const int period = 2 * (n - 1);
  int m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

// The element of an interleaved row that element position e (any integer) reads, or -1.
__device__ __forceinline__ int border_element(int e, int wc, int c, int mode) {
  if ((unsigned)e < (unsigned)wc) return e;
  const int p = e >= 0 ? e / c : -((-e + c - 1) / c);  // floor division: the pixel
  const int q = border_index(p, wc / c, mode);
  return q < 0 ? -1 : q * c + (e - p * c);
}

// Loads as float, stores from float: floats and 16-bit floats round to nearest; uint8 rounds half to
// even and saturates to [0, 255] (OpenCV's saturate_cast of a float).
__device__ __forceinline__ float wload(float v) { return v; }
__device__ __forceinline__ float wload(__half v) { return __half2float(v); }
__device__ __forceinline__ float wload(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float wload(u8 v) { return (float)v; }

template <typename T> __device__ __forceinline__ T wstore(float v) { return from_float<T>(v); }
template <> __device__ __forceinline__ u8 wstore<u8>(float v) {
  const int r = __float2int_rn(v);
  return (u8)(r < 0 ? 0 : (r > 255 ? 255 : r));
}

// Elements of T in one 16-byte vector.
template <typename T> __host__ __device__ constexpr int vec16() { return 16 / (int)sizeof(T); }

// A loaded 16-byte vector's elements as floats; bytes are taken apart by shifts of its four words (a
// byte array copied out of the vector went through the stack).
template <typename T>
__device__ __forceinline__ void vec16_to_floats(uint4 c, float (&f)[vec16<T>()]) {
  if constexpr (sizeof(T) == 1) {
    const unsigned u[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
    for (int j = 0; j < 16; ++j) f[j] = (float)((u[j / 4] >> (8 * (j % 4))) & 255u);
  } else {
    Vec<T, vec16<T>()> v;
    memcpy(&v, &c, 16);
    vec_to_floats(v, f);
  }
}

// Stage rows [y0, y0 + rows) x element columns [e0, e0 + cols) of a plane into `tile` (floats, row
// stride `ld`), border rules applied; columns [cols, ld) are zeroed. Each warp takes whole rows. With
// kVec, the in-image part of a row runs as 16-byte vector loads between a peeled head and tail (any
// alignment of the plane or the row stride); without, element by element.
template <typename T, bool kVec>
__device__ __forceinline__ void load_tile(float* tile, int ld, int rows, int cols, const T* plane, i64 row_stride,
                                          int H, int WC, int C, int mode, int y0, int e0) {
  constexpr int VE = vec16<T>();
  const int lane = threadIdx.x & 31, warps = (blockDim.x * blockDim.y) >> 5;
  const int warp = (threadIdx.y * blockDim.x + threadIdx.x) >> 5;
  for (int r = warp; r < rows; r += warps) {
    float* trow = tile + (i64)r * ld;
    const int y = border_index(y0 + r, H, mode);
    if (y < 0) {
      for (int c = lane; c < ld; c += 32) trow[c] = 0.0f;
      continue;
    }
    const T* row = plane + (i64)y * row_stride;
    const int lo = max(e0, 0), hi = min(e0 + cols, WC);  // the in-image columns, element positions
    int a0 = hi, a1 = hi;                                 // the vector body [a0, a1)
    if (kVec && hi - lo >= VE) {
      const unsigned off = (unsigned)((unsigned long long)(row + lo) & 15);  // bytes past a 16-byte boundary
      a0 = min(hi, lo + (off ? (int)((16 - off) / sizeof(T)) : 0));
      a1 = a0 + (hi - a0) / VE * VE;
    }
    if (kVec) {
      for (int v = lane; v < (a1 - a0) / VE; v += 32) {
        float f[VE];
        vec16_to_floats<T>(*reinterpret_cast<const uint4*>(row + a0 + v * VE), f);
        float* dst = trow + (a0 - e0) + v * VE;
#pragma unroll
        for (int j = 0; j < VE; ++j) dst[j] = f[j];
      }
    }
    // everything outside the body: the border columns, the head and tail of the in-image part, padding
    const int left = a0 - e0, right = ld - (a1 - e0);
    for (int k = lane; k < left + right; k += 32) {
      const int c = k < left ? k : (a1 - e0) + (k - left);
      float v = 0.0f;
      if (c < cols) {
        const int e = border_element(e0 + c, WC, C, mode);
        if (e >= 0) v = wload(row[e]);
      }
      trow[c] = v;
    }
  }
}

// Store V consecutive results of one output row from element column x: one 16-byte (or V-element)
// vector where the address is aligned and the run is inside the row, else element by element.
template <typename T, int V>
__device__ __forceinline__ void store_run(T* row, int x, int WC, const float (&acc)[V]) {
  if (x >= WC) return;
  T* p = row + x;
  if (x + V <= WC && ((unsigned long long)p % (sizeof(T) * V)) == 0) {
    Vec<T, V> o;
#pragma unroll
    for (int i = 0; i < V; ++i) o.v[i] = wstore<T>(acc[i]);
    store_vec(reinterpret_cast<Vec<T, V>*>(p), o);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (x + i < WC) p[i] = wstore<T>(acc[i]);
  }
}

// One element stored from a float through its integer carrier: assigning the __half itself kept the
// depthwise 7x7 channels_last kernels past 80 registers (its copy operator), the carrier at 64.
template <typename T>
__device__ __forceinline__ void dw_store(T* p, i64 at, float v) {
  using U = typename Carrier<sizeof(T)>::type;
  const T h = wstore<T>(v);
  U u;
  memcpy(&u, &h, sizeof(T));
  reinterpret_cast<U*>(p)[at] = u;
}

// A thread's window of W floats from a tile row, starting at a 16-byte aligned tile position: W / 4
// shared-memory loads of 128 bits.
template <int W>
__device__ __forceinline__ void load_window(const float* src, float (&win)[W]) {
  static_assert(W % 4 == 0, "windows are whole float4s");
#pragma unroll
  for (int k = 0; k < W / 4; ++k) {
    const float4 f = *reinterpret_cast<const float4*>(src + 4 * k);
    win[4 * k] = f.x;
    win[4 * k + 1] = f.y;
    win[4 * k + 2] = f.z;
    win[4 * k + 3] = f.w;
  }
}

__host__ __device__ constexpr int round4(int n) { return (n + 3) / 4 * 4; }

// The register-window correlation of a thread's RY x V outputs (compile-time K x K taps, C-interleaved
// columns): for each of the RY + K - 1 tile rows it reads, one window of V + (K - 1) C floats (128-bit
// shared loads) feeds every output row that row reaches. `src` is the thread's first tile element.
template <int K, int C, int V, int RY, typename Wt>
__device__ __forceinline__ void window_conv(const float* src, int ld, const Wt& w, float (&acc)[RY][V]) {
  constexpr int WIN = round4(V + (K - 1) * C);
#pragma unroll
  for (int r = 0; r < RY + K - 1; ++r) {
    float win[WIN];
    load_window(src + r * ld, win);
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int dy = r - j;
      if (dy < 0 || dy >= K) continue;
#pragma unroll
      for (int dx = 0; dx < K; ++dx)
#pragma unroll
        for (int i = 0; i < V; ++i) acc[j][i] = fmaf(w(dy, dx), win[i + dx * C], acc[j][i]);
    }
  }
}

}  // namespace kk
