// Max and average pooling with torch.nn.functional's semantics (kernel, stride, padding, dilation for
// max, ceil_mode, count_include_pad, divisor_override). Planar images (NCHW): each thread V outputs of a
// row, stored as one vector where aligned; the generic kernels read every tap element by element, the
// span kernels (compile-time square K x K, stride S) read each window row's inputs as 16-byte vectors.
// channels_last (NHWC): each thread a vector of VE channels of one output pixel, every tap one 16-byte
// load where the channels allow.
#include "pipeline.cuh"

namespace kk {


// max with NaN propagation (a NaN in a window gives NaN, as torch's max_pool2d): one instruction
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

template <bool kMax>
__device__ __forceinline__ void pool_take(float& acc, float v) {
  if constexpr (kMax) {
    acc = max_nan(acc, v);
  } else {
    acc += v;
  }
}

// 16 bytes of the window's neutral value: -inf for max, 0 for the average
template <typename T, bool kMax>
__device__ __forceinline__ uint4 pool_fill16() {
  const unsigned f = kMax ? fill_word<T>(from_float<T>(-__int_as_float(0x7f800000))) : 0u;
  return make_uint4(f, f, f, f);
}

// torch's divisor of an average window starting at (hs, ws) (padded coordinates, before clipping)
__device__ __forceinline__ float pool_divisor(int hs, int ws, int kh, int kw, int H, int W, int ph, int pw,
                                              int include_pad, int divisor) {
  if (divisor) return (float)divisor;
  const int he = min(hs + kh, H + ph), we = min(ws + kw, W + pw);
  if (include_pad) return (float)((he - hs) * (we - ws));
  return (float)((min(he, H) - max(hs, 0)) * (min(we, W) - max(ws, 0)));
}

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

// The channels_last kernels' grid-stride walk: thread t takes channel vector t % cv of output pixel t / cv,
// pixels in (n, oy, ox) order, one(n, oy, ox, first channel); the index arithmetic is 32-bit where the
// thread count allows.
template <int VE, typename F>
__device__ __forceinline__ void nhwc_walk(i64 total, int cv, int OH, int OW, F&& one) {
  if (total <= 0x7fffffff) {
    const unsigned ucv = cv, uow = OW, uoh = OH;
    for (unsigned t = blockIdx.x * blockDim.x + threadIdx.x; t < (unsigned)total; t += gridDim.x * blockDim.x) {
      const unsigned q = t / ucv, q2 = q / uow;
      one((int)(q2 / uoh), (int)(q2 % uoh), (int)(q % uow), (int)(t % ucv) * VE);
    }
  } else {
    for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total; t += (i64)gridDim.x * blockDim.x) {
      const i64 q = t / cv, q2 = q / OW;
      one((int)(q2 / OH), (int)(q2 % OH), (int)(q % OW), (int)(t % cv) * VE);
    }
  }
}

// channels_last: strides (elements) of the input's n, h, w; channels contiguous. The output is
// channels_last and contiguous in that layout: ((n * OH + oy) * OW + ox) * Cn + c. Thread t takes
// channel vector t % (Cn / VE) of output pixel t / (Cn / VE) (nhwc_walk).
template <typename T, bool kMax, int VE>
__global__ void __launch_bounds__(256, 3)
pool_nhwc(const T* __restrict__ in, T* __restrict__ out, int N, int Cn, int H, int W, int OH, int OW, i64 sn, i64 sh_,
          i64 sw_, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int include_pad, int divisor) {
  const int cv = Cn / VE;
  const i64 total = (i64)N * OH * OW * cv;
  auto one = [&](int n, int oy, int ox, int c) {
    const int hs = oy * sh - ph, ws = ox * sw - pw;
    float acc[VE];
#pragma unroll
    for (int j = 0; j < VE; ++j) acc[j] = kMax ? -__int_as_float(0x7f800000) : 0.0f;
    for (int a = 0; a < kh; ++a) {
      const int y = hs + a * dh;
      if ((unsigned)y >= (unsigned)H) continue;
      for (int b = 0; b < kw; ++b) {
        const int x = ws + b * dw;
        if ((unsigned)x >= (unsigned)W) continue;
        const T* src = in + n * sn + y * sh_ + x * sw_ + c;
        if constexpr (VE * sizeof(T) == 16) {
          float f[VE];
          vec16_to_floats<T>(*reinterpret_cast<const uint4*>(src), f);
#pragma unroll
          for (int j = 0; j < VE; ++j) pool_take<kMax>(acc[j], f[j]);
        } else {
#pragma unroll
          for (int j = 0; j < VE; ++j) pool_take<kMax>(acc[j], wload(src[j]));
        }
      }
    }
    const float d = kMax ? 1.0f : pool_divisor(hs, ws, kh, kw, H, W, ph, pw, include_pad, divisor);
    T* dst = out + (((i64)n * OH + oy) * OW + ox) * Cn + c;
    if constexpr (VE * sizeof(T) == 16) {
      float r[VE];
#pragma unroll
      for (int j = 0; j < VE; ++j) r[j] = kMax ? acc[j] : acc[j] / d;
      store_run<T, VE>(dst, 0, VE, r);
    } else {
#pragma unroll
      for (int j = 0; j < VE; ++j) dst[j] = wstore<T>(kMax ? acc[j] : acc[j] / d);
    }
  };
  nhwc_walk<VE>(total, cv, OH, OW, one);
}

// channels_last with a compile-time square K x K window at stride S (no dilation), C a multiple of a
// 16-byte vector on aligned pixels: thread t takes channel vector t % (C / VE) of output pixel
// t / (C / VE). All K*K taps' 16-byte loads issue before any is used (taps outside the image are not
// loaded and read as the neutral value); 16-bit max runs on the packed pairs as loaded (NaN-propagating
// max of pairs), the rest in float32.
template <typename T, bool kMax, int K, int S>
__global__ void __launch_bounds__(256, 4)
pool_nhwc_k(const T* __restrict__ in, T* __restrict__ out, int N, int Cn, int H, int W, int OH, int OW, i64 sn,
            i64 sh_, i64 sw_, int ph, int pw, int include_pad, int divisor) {
  constexpr int VE = vec16<T>();
  const int cv = Cn / VE;
  const i64 total = (i64)N * OH * OW * cv;
  auto one = [&](int n, int oy, int ox, int c) {
    const int hs = oy * S - ph, ws = ox * S - pw;
    const T* src = in + n * sn + c;
    uint4 raw[K * K];
#pragma unroll
    for (int a = 0; a < K; ++a)
#pragma unroll
      for (int b = 0; b < K; ++b) {
        const int y = hs + a, x = ws + b;
        raw[a * K + b] = (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W
                             ? *reinterpret_cast<const uint4*>(src + y * sh_ + x * sw_)
                             : pool_fill16<T, kMax>();
      }
    T* dst = out + (((i64)n * OH + oy) * OW + ox) * Cn + c;
    if constexpr (kMax && sizeof(T) == 2) {
      using P = typename Pair<T>::type;
      P m[4], v[4];
      memcpy(m, &raw[0], 16);
#pragma unroll
      for (int t = 1; t < K * K; ++t) {
        memcpy(v, &raw[t], 16);
#pragma unroll
        for (int q = 0; q < 4; ++q) m[q] = __hmax2_nan(m[q], v[q]);
      }
      uint4 o;
      memcpy(&o, m, 16);
      *reinterpret_cast<uint4*>(dst) = o;
    } else {
      float acc[VE];
      vec16_to_floats<T>(raw[0], acc);
#pragma unroll
      for (int t = 1; t < K * K; ++t) {
        float f[VE];
        vec16_to_floats<T>(raw[t], f);
#pragma unroll
        for (int j = 0; j < VE; ++j) pool_take<kMax>(acc[j], f[j]);
      }
      if constexpr (!kMax) {
        const float r = __frcp_rn(pool_divisor(hs, ws, K, K, H, W, ph, pw, include_pad, divisor));
#pragma unroll
        for (int j = 0; j < VE; ++j) acc[j] *= r;
      }
      store_vec(reinterpret_cast<Vec<T, VE>*>(dst), vec_from_floats<T, VE>(acc));
    }
  };
  nhwc_walk<VE>(total, cv, OH, OW, one);
}

}  // namespace kk
