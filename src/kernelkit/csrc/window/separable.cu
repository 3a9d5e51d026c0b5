// A separable filter (an outer product: KH x 1 after 1 x KW) in one pass: the tile with its halo in
// shared memory, the horizontal pass over every tile row into a second shared buffer, the vertical
// pass from that buffer to the outputs. Gaussian blur and the box filter run on it.
//
// `w` holds KW horizontal weights then KH vertical ones. KH, KW <= KMAX are runtime values; the
// register windows are KMAX wide and taps past K are skipped (never multiplied by a zero weight, so an
// inf beyond the window cannot turn into a NaN). sep_fused stages a float tile; sep_pipelined runs on
// the pipelined tiles of pipeline.cuh.
#include "pipeline.cuh"

namespace kk {

template <typename T, int KMAX, int C, int V, int RY>
__global__ void __launch_bounds__(256, 2)
sep_fused(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w,
          const float* __restrict__ bias, int planes, int groups, int H, int WC, int C_, i64 in_plane, i64 in_row,
          int KH, int KW, int mode) {
  extern __shared__ float4 smem4[];
  constexpr int TW = 32 * V, TH = 8 * RY, WIN = round4(V + (KMAX - 1) * C);
  constexpr int ld = 31 * V + WIN;
  const int rows = TH + KH - 1;
  float* tile = reinterpret_cast<float*>(smem4);
  float* hbuf = tile + rows * ld;  // rows x TW horizontal results
  float wx[KMAX], wy[KMAX];
#pragma unroll
  for (int k = 0; k < KMAX; ++k) {
    wx[k] = k < KW ? __ldg(w + k) : 0.0f;
    wy[k] = k < KH ? __ldg(w + KW + k) : 0.0f;
  }
  const int x0 = blockIdx.x * TW;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * TH; y0 < H; y0 += gridDim.y * TH) {
    __syncthreads();
    load_tile<T, true>(tile, ld, rows, TW + (KW - 1) * C, in + (i64)p * in_plane, in_row, H, WC, C, mode,
                       y0 - KH / 2, x0 - (KW / 2) * C);
    __syncthreads();
    for (int r = threadIdx.y; r < rows; r += 8) {
      float win[WIN];
      load_window(tile + r * ld + threadIdx.x * V, win);
      float h[V];
#pragma unroll
      for (int i = 0; i < V; ++i) h[i] = 0.0f;
#pragma unroll
      for (int dx = 0; dx < KMAX; ++dx) {
        if (dx >= KW) break;
#pragma unroll
        for (int i = 0; i < V; ++i) h[i] = fmaf(wx[dx], win[i + dx * C], h[i]);
      }
#pragma unroll
      for (int i = 0; i < V; i += 4)
        *reinterpret_cast<float4*>(hbuf + r * TW + threadIdx.x * V + i) = make_float4(h[i], h[i + 1], h[i + 2], h[i + 3]);
    }
    __syncthreads();
    float acc[RY][V];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j][i] = 0.0f;
    const float* col = hbuf + threadIdx.y * RY * TW + threadIdx.x * V;
#pragma unroll
    for (int r = 0; r < RY + KMAX - 1; ++r) {
      if (r >= RY + KH - 1) break;
      float hv[V];
#pragma unroll
      for (int i = 0; i < V; i += 4) {
        const float4 f = *reinterpret_cast<const float4*>(col + r * TW + i);
        hv[i] = f.x;
        hv[i + 1] = f.y;
        hv[i + 2] = f.z;
        hv[i + 3] = f.w;
      }
#pragma unroll
      for (int j = 0; j < RY; ++j) {
        const int dy = r - j;
        if (dy < 0 || dy >= KMAX) continue;
        if (dy < KH) {
#pragma unroll
          for (int i = 0; i < V; ++i) acc[j][i] = fmaf(wy[dy], hv[i], acc[j][i]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int y = y0 + threadIdx.y * RY + j;
      if (y < H) store_run<T, V>(out + ((i64)p * H + y) * WC, x0 + threadIdx.x * V, WC, acc[j]);
    }
  }
}

// The 1-D weights, padded to KMAX taps (x: the KW taps centred, y: the KH taps first): in registers for the
// narrow windows, read from shared memory (a broadcast load a use) for 15 and 31 taps, whose 2 KMAX
// registers would crowd out the accumulators.
template <int KMAX, bool kRegs> struct SepWeights;
template <int KMAX> struct SepWeights<KMAX, true> {
  float x[KMAX], y[KMAX];
  struct X {
    const float* v;
    __device__ __forceinline__ float operator()(int d) const { return v[d]; }
  };
  __device__ __forceinline__ void fill(float*, const float* w, int lo, int KW, int KH) {
#pragma unroll
    for (int d = 0; d < KMAX; ++d) {
      x[d] = d >= lo && d < lo + KW ? __ldg(w + d - lo) : 0.0f;
      y[d] = d < KH ? __ldg(w + KW + d) : 0.0f;
    }
  }
  __device__ __forceinline__ float wy(int d) const { return y[d]; }
  __device__ __forceinline__ X wx() const { return X{x}; }
};
template <int KMAX> struct SepWeights<KMAX, false> {
  const float* s;  // 2 KMAX floats of shared memory: x then y
  struct X {
    const float* v;
    __device__ __forceinline__ float operator()(int d) const { return v[d]; }
  };
  __device__ __forceinline__ void fill(float* smem, const float* w, int lo, int KW, int KH) {
    const int d = threadIdx.y * 32 + threadIdx.x;
    if (d < KMAX) {
      smem[d] = d >= lo && d < lo + KW ? __ldg(w + d - lo) : 0.0f;
      smem[KMAX + d] = d < KH ? __ldg(w + KW + d) : 0.0f;
    }
    s = smem;  // read after the tile loop's first barrier
  }
  __device__ __forceinline__ float wy(int d) const { return s[KMAX + d]; }
  __device__ __forceinline__ X wx() const { return X{s}; }
};

// The horizontal taps [D0, D0 + G) (clipped to KMAX) of one tile row into h, from one register window of
// V + (G - 1) C elements: wide kernels take their taps in groups so that a window stays within registers
// (each group converts its own window: V - C elements more a group). kInit: this group holds the centre
// tap KMAX / 2, which starts the sums (h = w x) before the group's other taps; it is skipped as a sum's
// term everywhere. Taps outside [lo, lo + KW) are skipped.
template <typename T, int S, int C, int KMAX, int G, int D0, bool kInit, bool kAligned, int V, typename Wx>
__device__ __forceinline__ void h_group(const raw_t<T>* trow, int m, const Wx& wx, int lo, int KW, float (&h)[V]) {
  constexpr int RM = KMAX / 2, N = KMAX - D0 < G ? KMAX - D0 : G, WL = V + (N - 1) * C;
  float win[WL];
  read_window<T, S + D0 * C, WL, kAligned>(trow, m, win);
  if constexpr (kInit) {
    static_assert(D0 <= RM && RM < D0 + N, "the first group holds the centre tap");
#pragma unroll
    for (int i = 0; i < V; ++i) h[i] = wx(RM) * win[i + (RM - D0) * C];
  }
#pragma unroll
  for (int d = 0; d < N; ++d) {
    if (D0 + d == RM || D0 + d < lo || D0 + d >= lo + KW) continue;
#pragma unroll
    for (int i = 0; i < V; ++i) h[i] = fmaf(wx(D0 + d), win[i + d * C], h[i]);
  }
}

// Every tap group from D0 on but the centre's (done first).
template <typename T, int S, int C, int KMAX, int G, int D0, bool kAligned, int V, typename Wx>
__device__ __forceinline__ void h_groups(const raw_t<T>* trow, int m, const Wx& wx, int lo, int KW, float (&h)[V]) {
  if constexpr (D0 < KMAX) {
    if constexpr (D0 != KMAX / 2 / G * G) h_group<T, S, C, KMAX, G, D0, false, kAligned>(trow, m, wx, lo, KW, h);
    h_groups<T, S, C, KMAX, G, D0 + G, kAligned>(trow, m, wx, lo, KW, h);
  }
}

// Columns [HH VH, HH VH + VH) of a thread's RY output rows from the horizontal results (`col`: the first of
// its rows), packed into words of o: taps past KH skipped (kFull: KH is KMAX, no test), the first tap (dy = 0)
// a multiply.
template <typename T, int KMAX, int RY, int V, int VH, int HH, bool kFull, typename Wts>
__device__ __forceinline__ void v_half(const float* col, const Wts& wts, int KH, int bounded, unsigned (&o)[RY][4]) {
  constexpr int TW = 32 * V;
  float acc[RY][VH];
#pragma unroll
  for (int r = 0; r < RY + KMAX - 1; ++r) {
    if (!kFull && r >= RY + KH - 1) break;
    float hv[VH];
#pragma unroll
    for (int j = 0; j < VH / 4; ++j) {
      const float4 f = *reinterpret_cast<const float4*>(col + r * TW + swizzled_chunk<V>(threadIdx.x, HH * VH / 4 + j));
      hv[4 * j] = f.x;
      hv[4 * j + 1] = f.y;
      hv[4 * j + 2] = f.z;
      hv[4 * j + 3] = f.w;
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int dy = r - j;
      if (dy < 0 || dy >= KMAX) continue;
      if (dy == 0) {
#pragma unroll
        for (int i = 0; i < VH; ++i) acc[j][i] = wts.wy(0) * hv[i];
      } else if (kFull || dy < KH) {
#pragma unroll
        for (int i = 0; i < VH; ++i) acc[j][i] = fmaf(wts.wy(dy), hv[i], acc[j][i]);
      }
    }
  }
  constexpr int OFF = HH * VH * (int)sizeof(T) / 4;
#pragma unroll
  for (int j = 0; j < RY; ++j) {
    if (sizeof(T) == 1 && bounded)
      pack_bits<T, VH, OFF, false, false>(acc[j], o[j]);
    else
      pack_bits<T, VH, OFF>(acc[j], o[j]);
  }
}

// On pipelined tiles: the horizontal pass reads each tile row's register windows (KMAX taps wide, in
// groups of G taps; taps outside the KW in the middle skipped) and writes its V floats into `hbuf` (chunks
// swizzled: conflict-free for V > 4); the vertical pass reads them back down the rows, VH columns at a
// time (uint8's 16 in two halves: 64 accumulators at once left too few registers). Shared memory: hbuf of
// rows x TW floats, then the two tile buffers, then (unaligned kernels) the rows' shifts. `bounded`
// (uint8): the weights are non-negative and each 1-D kernel sums to at most 1, so results lie in
// [0, 255] and the stores skip the clamps.
template <typename T, int KMAX, int C, int RY, bool kAligned>
__global__ void __launch_bounds__(256, sizeof(T) == 4 && KMAX <= 7 ? 3 : 2)
sep_pipelined(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w,
              const float* __restrict__ bias, int planes, int groups, int H, int WC, int C_, i64 in_plane, i64 in_row,
              int KH, int KW, int mode, int bounded) {
  using R = raw_t<T>;
  constexpr int V = vec16<T>(), TW = 32 * V, TH = 8 * RY, RM = KMAX / 2;
  constexpr int HP = round_up(RM * C, V), LD = TW + 2 * HP + (kAligned ? 0 : V);
  constexpr int S = HP - RM * C, G = (40 - V) / C + 1;  // taps a window: at most 40 floats
  constexpr int VH = V < 8 ? V : 8;
  const int rows = TH + KH - 1, lo = RM - KW / 2;
  extern __shared__ float4 smem4[];
  float* hbuf = reinterpret_cast<float*>(smem4);
  R* buf = reinterpret_cast<R*>(hbuf + rows * TW);
  int* shift = reinterpret_cast<int*>(buf + 2 * rows * LD);
  __shared__ float wsmem[2 * KMAX];
  SepWeights<KMAX, (KMAX <= 7)> wts;
  wts.fill(wsmem, w, lo, KW, KH);
  const TileWalk<T, kAligned, TW, TH, LD, HP> walk(in, in_plane, in_row, planes, H, WC, C, mode, rows, KH / 2);
  walk.each(buf, shift, [&](const TilePos& tp, const R* tile, const int* sh) {
    for (int r = threadIdx.y; r < rows; r += 8) {
      const int m = kAligned ? 0 : sh[r];
      float h[V];
      h_group<T, S, C, KMAX, G, RM / G * G, true, kAligned>(tile + r * LD, m, wts.wx(), lo, KW, h);
      h_groups<T, S, C, KMAX, G, 0, kAligned>(tile + r * LD, m, wts.wx(), lo, KW, h);
#pragma unroll
      for (int j = 0; j < V / 4; ++j)
        *reinterpret_cast<float4*>(hbuf + r * TW + swizzled_chunk<V>(threadIdx.x, j)) =
            make_float4(h[4 * j], h[4 * j + 1], h[4 * j + 2], h[4 * j + 3]);
    }
    __syncthreads();
    const float* col = hbuf + threadIdx.y * RY * TW;
    unsigned o[RY][4];
    if (KH == KMAX) {  // the common case, without a test a tap: the taps and rows are compile-time
      v_half<T, KMAX, RY, V, VH, 0, true>(col, wts, KMAX, bounded, o);
      if constexpr (V > VH) v_half<T, KMAX, RY, V, VH, 1, true>(col, wts, KMAX, bounded, o);
    } else {
      v_half<T, KMAX, RY, V, VH, 0, false>(col, wts, KH, bounded, o);
      if constexpr (V > VH) v_half<T, KMAX, RY, V, VH, 1, false>(col, wts, KH, bounded, o);
    }
    store_rows<T, RY>(out, tp.p, tp.y0 + threadIdx.y * RY, H, tp.x0 + threadIdx.x * V, WC, o);
  });  // each() ends a tile with the barrier after which hbuf and this buffer are rewritten
}

}  // namespace kk
