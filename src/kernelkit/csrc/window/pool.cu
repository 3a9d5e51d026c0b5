// Max and average pooling with torch.nn.functional's semantics (kernel, stride, padding, dilation for
// max, ceil_mode, count_include_pad, divisor_override) on planar images (NCHW): each thread V outputs of a
// row, stored as one vector where aligned; the generic kernel reads every tap element by element, the span
// kernels (compile-time square K x K, stride S) read each window row's inputs as 16-byte vectors. The
// channels_last kernels are in pool_nhwc.cu; the combine, neutral value and divisor in pool.cuh.
#include "pool.cuh"

namespace kk {

// Any window (kernel, stride, padding, dilation), every tap read element by element; V outputs a thread.
template <typename T, bool kMax, int V>
__global__ void __launch_bounds__(256, 2)
pool_nchw(const T* __restrict__ in, T* __restrict__ out, int planes, int H, int W, int OH, int OW, i64 in_plane,
          i64 in_row, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int include_pad, int divisor) {
  const int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (ox0 >= OW) return;
  for (int p = blockIdx.z; p < planes; p += gridDim.z) {
    const T* src = in + (i64)p * in_plane;
    for (int oy = blockIdx.y * blockDim.y + threadIdx.y; oy < OH; oy += gridDim.y * blockDim.y) {
      const int hs = oy * sh - ph;
      float res[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const int ws = (ox0 + i) * sw - pw;
        float acc = kMax ? -__int_as_float(0x7f800000) : 0.0f;
        for (int a = 0; a < kh; ++a) {
          const int y = hs + a * dh;
          if ((unsigned)y >= (unsigned)H) continue;
          const T* row = src + (i64)y * in_row;
          for (int b = 0; b < kw; ++b) {
            const int x = ws + b * dw;
            if ((unsigned)x < (unsigned)W) pool_take<kMax>(acc, wload(row[x]));
          }
        }
        res[i] = kMax ? acc : acc / pool_divisor(hs, ws, kh, kw, H, W, ph, pw, include_pad, divisor);
      }
      store_run<T, V>(out + ((i64)p * OH + oy) * OW, ox0, OW, res);
    }
  }
}

// ---------------------------------------------------------------------------------------- span kernels
// A thread's V outputs of a row at stride S read the L = (V - 1) S + K inputs from column c0 of each
// window row. They are loaded as the 16-byte vectors that cover them: OFF (the elements between the
// vector boundary and c0, 0 <= OFF < V) is a compile-time value in each copy of the body, so every
// element lands in a register of known index.
template <typename T, int L, int OFF>
__device__ __forceinline__ void span_vectors(const T* base, float (&win)[L]) {
  constexpr int VE = vec16<T>(), NV = (OFF + L + VE - 1) / VE;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    float f[VE];
    vec16_to_floats<T>(load_vec(reinterpret_cast<const uint4*>(base) + k), f);
#pragma unroll
    for (int j = 0; j < VE; ++j) {
      const int i = k * VE + j - OFF;
      if (i >= 0 && i < L) win[i] = f[j];
    }
  }
}

// The span from a 16-byte aligned row (its row start aligned, W a multiple of a vector, so each covering
// vector lies wholly inside or wholly outside the row): vectors outside are not loaded and read as the
// window's neutral value. Straight-line code: every row's loads issue before any is used.
template <typename T, bool kMax, int L, int OFF>
__device__ __forceinline__ void span_masked(const T* row, int a, int W, float (&win)[L]) {
  constexpr int VE = vec16<T>(), NV = (OFF + L + VE - 1) / VE;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int e0 = a + k * VE;
    const uint4 raw = (unsigned)e0 < (unsigned)W ? *reinterpret_cast<const uint4*>(row + e0) : pool_fill16<T, kMax>();
    float f[VE];
    vec16_to_floats<T>(raw, f);
#pragma unroll
    for (int j = 0; j < VE; ++j) {
      const int i = k * VE + j - OFF;
      if (i >= 0 && i < L) win[i] = f[j];
    }
  }
}

// Elements of T from the last 16-byte boundary at or before address p.
template <typename T>
__device__ __forceinline__ int vec_offset(const T* p) {
  return (int)(((unsigned long long)p & 15) / sizeof(T));
}

// The span from a row of any alignment: the 16-byte vectors covering it from the boundary at or before
// row + c0, each loaded only where it holds a column of the span inside the row (the rest read as zero
// words), then moved down by the run-time offset without a branch: whole 32-bit words by selects on the
// word offset's two bits, a half word by one funnel shift. kEdge: the span reaches past the row, so its
// columns outside [0, W) are set to the window's neutral value; else every column lies inside.
template <typename T, bool kMax, int L, bool kEdge>
__device__ __forceinline__ void span_shifted(const T* row, int c0, int W, float (&win)[L]) {
  constexpr int VE = vec16<T>(), EPW = 4 / (int)sizeof(T), NV = (VE - 1 + L + VE - 1) / VE, NW = 4 * NV + 1;
  const int off = vec_offset(row + c0);
  const T* base = row + (c0 - off);
  const int lo = kEdge ? max(c0, 0) : c0, hi = kEdge ? min(c0 + L, W) : c0 + L;
  unsigned w[NW];
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    const int e0 = c0 - off + k * VE;
    const uint4 c = e0 < hi && e0 + VE > lo ? *reinterpret_cast<const uint4*>(base + k * VE) : make_uint4(0, 0, 0, 0);
    w[4 * k] = c.x;
    w[4 * k + 1] = c.y;
    w[4 * k + 2] = c.z;
    w[4 * k + 3] = c.w;
  }
  w[NW - 1] = 0u;
  const int words = off / EPW;
#pragma unroll
  for (int b = 1; b <= 2; b *= 2) {
    const bool on = (words & b) != 0;
#pragma unroll
    for (int k = 0; k + b < NW; ++k) w[k] = on ? w[k + b] : w[k];
  }
  if constexpr (EPW > 1) {
    const int bits = (off % EPW) * 8 * (int)sizeof(T);
#pragma unroll
    for (int k = 0; k + 1 < NW; ++k) w[k] = __funnelshift_r(w[k], w[k + 1], bits);
  }
  const float fill = kMax ? -__int_as_float(0x7f800000) : 0.0f;
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const float v = WordElem<T>::at(w, i);
    win[i] = !kEdge || (unsigned)(c0 + i) < (unsigned)W ? v : fill;
  }
}

// RY output rows x V outputs of one plane from NR = (RY - 1) S + K input rows, each read once and fed to
// every output row whose window holds it. The loads of a row's span, by kMode: kOff >= 0, rows start on
// a 16-byte boundary and hold whole vectors, every span sits kOff elements past one (span_masked, the
// image's edges by predicated vectors); kShifted / kShiftedEdge, any alignment, the offset found per row
// (span_shifted; kShiftedEdge where the thread's span reaches past the row). Either way the body is
// straight-line: the loads of all rows issue before any is used. Rows outside the image are read from a
// clamped row and not used.
constexpr int kShifted = -1, kShiftedEdge = -2;

template <typename T, bool kMax, int K, int S, int RY, int kMode>
__device__ __forceinline__ void pool_rows_body(const T* src, i64 in_row, int H, int W, int y0, int c0,
                                               float (&acc)[RY][vec16<T>()]) {
  constexpr int V = vec16<T>(), L = (V - 1) * S + K, NR = (RY - 1) * S + K;
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    const int y = y0 + r;
    const bool yin = (unsigned)y < (unsigned)H;
    const T* row = src + (i64)min(max(y, 0), H - 1) * in_row;
    float win[L];
    if constexpr (kMode >= 0) {
      span_masked<T, kMax, L, kMode>(row, c0 - kMode, W, win);
    } else {
      span_shifted<T, kMax, L, kMode == kShiftedEdge>(row, c0, W, win);
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int dy = r - j * S;
      if (dy < 0 || dy >= K) continue;
#pragma unroll
      for (int i = 0; i < V; ++i)
#pragma unroll
        for (int dx = 0; dx < K; ++dx)
          if (yin) pool_take<kMax>(acc[j][i], win[i * S + dx]);
    }
  }
}

// The straight-line body for the run-time offset `off` of aligned rows: one copy per offset.
template <typename T, bool kMax, int K, int S, int RY, int kOff = 0>
__device__ __forceinline__ void pool_rows_aligned(int off, const T* src, i64 in_row, int H, int W, int y0, int c0,
                                                  float (&acc)[RY][vec16<T>()]) {
  if constexpr (kOff + 1 < vec16<T>()) {
    if (off != kOff) {
      pool_rows_aligned<T, kMax, K, S, RY, kOff + 1>(off, src, in_row, H, W, y0, c0, acc);
      return;
    }
  }
  pool_rows_body<T, kMax, K, S, RY, kOff>(src, in_row, H, W, y0, c0, acc);
}

// Planar pooling with a compile-time square K x K window, stride S, no dilation: thread (x, g) computes
// outputs [V x, V x + V) of rows [RY r, RY r + RY) of plane p, where g = p * groups + r enumerates the
// row groups of every plane (groups = ceil(OH / RY)).
// Blocks an SM the registers are held for: 3 (85 registers a thread), but 2 for the 16-bit average on GPUs
// before sm_90, whose allocation of its unaligned-row selects spilled 16 bytes at 3 (sm_90 does not)
template <typename T, bool kMax>
__host__ __device__ constexpr int span_min_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return sizeof(T) == 2 && !kMax ? 2 : 3;
#else
  return 3;
#endif
}

template <typename T, bool kMax, int K, int S, int RY>
__global__ void __launch_bounds__(256, span_min_blocks<T, kMax>())
pool_span(const T* __restrict__ in, T* __restrict__ out, int planes, int H, int W, int OH, int OW, i64 in_plane,
          i64 in_row, int ph, int pw, int include_pad, int divisor) {
  constexpr int V = vec16<T>(), L = (V - 1) * S + K;
  const int ox0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (ox0 >= OW) return;
  const int groups = (OH + RY - 1) / RY;
  const i64 total = (i64)planes * groups;
  const int c0 = ox0 * S - pw;
  const bool aligned_rows = in_row % V == 0 && W % V == 0;
  for (i64 g = blockIdx.y * (i64)blockDim.y + threadIdx.y; g < total; g += (i64)gridDim.y * blockDim.y) {
    const int p = (int)(g / groups);
    const int oy0 = (int)(g - (i64)p * groups) * RY;
    const int y0 = oy0 * S - ph;
    const T* src = in + (i64)p * in_plane;
    float acc[RY][V];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j][i] = kMax ? -__int_as_float(0x7f800000) : 0.0f;
    if (aligned_rows && vec_offset(src) == 0) {  // every span the same offset from a vector boundary
      pool_rows_aligned<T, kMax, K, S, RY>(vec_offset(src + c0), src, in_row, H, W, y0, c0, acc);
    } else if (c0 >= 0 && c0 + L <= W) {
      pool_rows_body<T, kMax, K, S, RY, kShifted>(src, in_row, H, W, y0, c0, acc);
    } else {
      pool_rows_body<T, kMax, K, S, RY, kShiftedEdge>(src, in_row, H, W, y0, c0, acc);
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int oy = oy0 + j;
      if (oy >= OH) break;
      float res[V];
      // the divisor as a correctly rounded reciprocal (one rounding more than a division, no slow path);
      // windows whose divisor is K*K (a divisor_override; counting the padding: inside the padded image;
      // else inside the image) share one reciprocal where every window of the warp's threads does (decided per
      // warp: a thread of the edge beside others would run both paths, slower than the per-output one)
      const int hs = oy * S - ph;
      const bool full = include_pad ? hs + K <= H + ph && c0 + L <= W + pw
                                    : hs >= 0 && hs + K <= H && c0 >= 0 && c0 + L <= W;
      // (3x3 windows only: the 16-bit 2x2 kernels, at 80 registers, spilled for it, and reached 94-97% of
      // the copy without; K*K's reciprocal is a compile-time constant, correctly rounded as __frcp_rn's)
      const bool whole = !kMax && K > 2 && (divisor != 0 || __all_sync(__activemask(), full));
      const float whole_rcp = divisor ? __frcp_rn((float)divisor) : 1.0f / (float)(K * K);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        res[i] = kMax    ? acc[j][i]
                 : whole ? acc[j][i] * whole_rcp
                         : acc[j][i] * __frcp_rn(pool_divisor(hs, (ox0 + i) * S - pw, K, K, H, W, ph, pw, include_pad,
                                                              divisor));
      }
      store_run<T, V>(out + ((i64)p * OH + oy) * OW, ox0, OW, res);
    }
  }
}

}  // namespace kk
