// filter2d: one KH x KW correlation (the kernel not flipped) applied to every plane, the output the
// input's size. The rungs: naive global reads; a shared-memory tile with its halo; several outputs per
// thread over a tile loaded by 16-byte vectors; a compile-time K x K with the weights in registers; the
// same on pipelined tiles (persistent blocks, the next tile copied asynchronously while one is computed).
//
// Every kernel takes the same arguments: `w` holds `groups` weight sets of KH * KW floats (plane p uses
// set p % groups; filter2d passes one set, a depthwise convolution one per channel), `bias` is null or
// one float per set. Planes are `in_plane` elements apart, rows `in_row`; the output is contiguous.
#include "pipeline.cuh"

namespace kk {

#define KK_WINDOW_ARGS                                                                                    \
  const T *__restrict__ in, T *__restrict__ out, const float *__restrict__ w, const float *__restrict__ bias, \
      int planes, int groups, int H, int WC, int C, i64 in_plane, i64 in_row, int KH, int KW, int mode

// One output element per thread, every tap read from global memory through the border rule.
template <typename T>
__global__ void __launch_bounds__(256, 4) f2d_naive(KK_WINDOW_ARGS) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= WC) return;
  const int px = x / C, ch = x - px * C, W = WC / C;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < H; y += gridDim.y * blockDim.y) {
    const int g = p % groups;
    const T* src = in + (i64)p * in_plane;
    const float* wp = w + (i64)g * KH * KW;
    float acc = bias ? bias[g] : 0.0f;
    for (int dy = 0; dy < KH; ++dy) {
      const int yy = border_index(y - KH / 2 + dy, H, mode);
      if (yy < 0) continue;
      for (int dx = 0; dx < KW; ++dx) {
        const int xx = border_index(px - KW / 2 + dx, W, mode);
        if (xx < 0) continue;
        acc = fmaf(wp[dy * KW + dx], wload(src[yy * in_row + xx * C + ch]), acc);
      }
    }
    out[((i64)p * H + y) * WC + x] = wstore<T>(acc);
  }
}

// A 32 x 8 block stages its outputs' inputs with the halo in shared memory (element by element), then
// each thread computes one output from the tile; the weights come through the read-only cache.
template <typename T>
__global__ void __launch_bounds__(256, 4) f2d_shared(KK_WINDOW_ARGS) {
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  const int ld = 32 + (KW - 1) * C, rows = 8 + KH - 1;
  const int x0 = blockIdx.x * 32;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * 8; y0 < H; y0 += gridDim.y * 8) {
    const int g = p % groups;
    __syncthreads();  // the previous plane's reads are done
    load_tile<T, false>(tile, ld, rows, ld, in + (i64)p * in_plane, in_row, H, WC, C, mode, y0 - KH / 2,
                        x0 - (KW / 2) * C);
    __syncthreads();
    const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= WC || y >= H) continue;
    const float* wp = w + (i64)g * KH * KW;
    float acc = bias ? bias[g] : 0.0f;
    for (int dy = 0; dy < KH; ++dy)
      for (int dx = 0; dx < KW; ++dx)
        acc = fmaf(__ldg(wp + dy * KW + dx), tile[(threadIdx.y + dy) * ld + threadIdx.x + dx * C], acc);
    out[((i64)p * H + y) * WC + x] = wstore<T>(acc);
  }
}

// Each thread of a 32 x 8 block computes RY rows x V outputs, V columns 32 apart (consecutive lanes
// read consecutive tile words: no bank conflicts); the tile arrives by 16-byte vector loads and the
// weights are staged in shared memory once per plane. K is a runtime value (any odd KH x KW). The
// output type may differ from the input's (the fp32 intermediate of a two-pass separable filter).
template <typename T, typename To, int V, int RY>
__global__ void __launch_bounds__(256, 4) f2d_vector(const T* __restrict__ in, To* __restrict__ out,
                                                  const float* __restrict__ w, const float* __restrict__ bias,
                                                  int planes, int groups, int H, int WC, int C, i64 in_plane,
                                                  i64 in_row, int KH, int KW, int mode) {
  extern __shared__ float4 smem4[];
  float* ws = reinterpret_cast<float*>(smem4);
  float* tile = ws + round4(KH * KW);
  constexpr int TW = 32 * V, TH = 8 * RY;
  const int ld = round4(TW + (KW - 1) * C), rows = TH + KH - 1;
  const int x0 = blockIdx.x * TW, tid = threadIdx.y * 32 + threadIdx.x;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * TH; y0 < H; y0 += gridDim.y * TH) {
    const int g = p % groups;
    __syncthreads();
    for (int k = tid; k < KH * KW; k += 256) ws[k] = w[(i64)g * KH * KW + k];
    load_tile<T, true>(tile, ld, rows, TW + (KW - 1) * C, in + (i64)p * in_plane, in_row, H, WC, C, mode,
                       y0 - KH / 2, x0 - (KW / 2) * C);
    __syncthreads();
    float acc[RY][V];
    const float b = bias ? bias[g] : 0.0f;
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j][i] = b;
    const float* src = tile + threadIdx.y * RY * ld + threadIdx.x;
    for (int r = 0; r < RY + KH - 1; ++r) {
      for (int dx = 0; dx < KW; ++dx) {
        float v[V];
#pragma unroll
        for (int i = 0; i < V; ++i) v[i] = src[r * ld + i * 32 + dx * C];
#pragma unroll
        for (int j = 0; j < RY; ++j) {
          const int dy = r - j;
          if (dy < 0 || dy >= KH) continue;
          const float wt = ws[dy * KW + dx];
#pragma unroll
          for (int i = 0; i < V; ++i) acc[j][i] = fmaf(wt, v[i], acc[j][i]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int y = y0 + threadIdx.y * RY + j;
      if (y >= H) break;
      To* orow = out + ((i64)p * H + y) * WC;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const int x = x0 + threadIdx.x + i * 32;
        if (x < WC) orow[x] = wstore<To>(acc[j][i]);
      }
    }
  }
}

// Compile-time K x K and C: the weights in registers (loaded once per plane), each thread RY rows x V
// consecutive outputs from register windows of the tile (128-bit shared loads), stored as one
// 16-byte vector a row where aligned.
template <typename T, int K, int C, int V, int RY>
__global__ void __launch_bounds__(256, 2) f2d_registers(const T* __restrict__ in, T* __restrict__ out,
                                                     const float* __restrict__ w, const float* __restrict__ bias,
                                                     int planes, int groups, int H, int WC, int C_, i64 in_plane,
                                                     i64 in_row, int KH_, int KW_, int mode) {
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  constexpr int TW = 32 * V, TH = 8 * RY, R = K / 2;
  constexpr int ld = 31 * V + round4(V + (K - 1) * C), rows = TH + K - 1;
  const int x0 = blockIdx.x * TW;
  for (int p = blockIdx.z; p < planes; p += gridDim.z)
  for (int y0 = blockIdx.y * TH; y0 < H; y0 += gridDim.y * TH) {
    const int g = p % groups;
    struct Weights {
      float v[K * K];
      __device__ float operator()(int dy, int dx) const { return v[dy * K + dx]; }
    } wr;
#pragma unroll
    for (int k = 0; k < K * K; ++k) wr.v[k] = __ldg(w + (i64)g * K * K + k);
    __syncthreads();
    load_tile<T, true>(tile, ld, rows, TW + (K - 1) * C, in + (i64)p * in_plane, in_row, H, WC, C, mode, y0 - R,
                       x0 - R * C);
    __syncthreads();
    float acc[RY][V];
    const float b = bias ? bias[g] : 0.0f;
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j][i] = b;
    window_conv<K, C, V, RY>(tile + threadIdx.y * RY * ld + threadIdx.x * V, ld, wr, acc);
#pragma unroll
    for (int j = 0; j < RY; ++j) {
      const int y = y0 + threadIdx.y * RY + j;
      if (y < H) store_run<T, V>(out + ((i64)p * H + y) * WC, x0 + threadIdx.x * V, WC, acc[j]);
    }
  }
}

// Compile-time K x K and C on pipelined tiles (pipeline.cuh): a persistent block computes its tiles in
// turn while the next one's raw elements arrive by cp.async in the other of two buffers. Each thread
// computes RY rows x V outputs (one 16-byte vector a row) from register windows converted at the read,
// the weights in registers (reloaded only when a tile's weight set differs from the last one's). Blocks
// of BX x 256 / BX threads: 32 x 8, or 64 x 4 for the wide tiles (the host's WIDE_* rules in filter2d.py).
template <typename T, int K, int C, int RY, bool kAligned, int BX = 32>
__global__ void __launch_bounds__(256, 2) f2d_pipelined(const T* __restrict__ in, T* __restrict__ out,
                                                     const float* __restrict__ w, const float* __restrict__ bias,
                                                     int planes, int groups, int H, int WC, int C_, i64 in_plane,
                                                     i64 in_row, int KH_, int KW_, int mode) {
  using R = raw_t<T>;
  constexpr int V = vec16<T>(), TW = BX * V, TH = 256 / BX * RY, RAD = K / 2;
  constexpr int HP = round_up(RAD * C, V), LD = TW + 2 * HP + (kAligned ? 0 : V), ROWS = TH + K - 1;
  constexpr int S = HP - RAD * C, WL = V + (K - 1) * C;
  extern __shared__ float4 smem4[];
  R* buf = reinterpret_cast<R*>(smem4);
  int* shift = reinterpret_cast<int*>(buf + 2 * ROWS * LD);
  const TileWalk<T, kAligned, TW, TH, LD, HP> walk(in, in_plane, in_row, planes, H, WC, C, mode, ROWS, RAD);
  float wr[K * K];
  int loaded = -1;
  walk.each(buf, shift, [&](const TilePos& tp, const R* tbuf, const int* tshift) {
    const int g = tp.p % groups;
    if (g != loaded) {
#pragma unroll
      for (int k = 0; k < K * K; ++k) wr[k] = __ldg(w + (i64)g * K * K + k);
      loaded = g;
    }
    float acc[RY][V];
    const float b = bias ? __ldg(bias + g) : 0.0f;
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j][i] = b;
    const R* tile = tbuf + threadIdx.y * RY * LD;
    const int* sh = tshift + threadIdx.y * RY;
#pragma unroll
    for (int r = 0; r < RY + K - 1; ++r) {
      float win[WL];
      read_window<T, S, WL, kAligned>(tile + r * LD, kAligned ? 0 : sh[r], win);
#pragma unroll
      for (int j = 0; j < RY; ++j) {
        const int dy = r - j;
        if (dy < 0 || dy >= K) continue;
#pragma unroll
        for (int dx = 0; dx < K; ++dx)
#pragma unroll
          for (int i = 0; i < V; ++i) acc[j][i] = fmaf(wr[dy * K + dx], win[i + dx * C], acc[j][i]);
      }
    }
    unsigned o[RY][4];
#pragma unroll
    for (int j = 0; j < RY; ++j) pack_bits<T, V, 0>(acc[j], o[j]);
    store_rows<T, RY>(out, tp.p, tp.y0 + threadIdx.y * RY, H, tp.x0 + threadIdx.x * V, WC, o);
  });
}

#undef KK_WINDOW_ARGS

}  // namespace kk
