// Depthwise convolution (groups == channels, one KH x KW filter per channel) with torch's conv2d
// semantics: stride, zero padding, dilation, an optional bias. One output per thread (planar layouts:
// consecutive threads along a row) or, channels_last, VE consecutive channels of one output pixel per
// thread, each tap one 16-byte input load and the weights stored tap-major so a tap's VE weights are
// adjacent. The weight of (channel c, tap t) is w[c * wc + t * wt].
#include "window.cuh"

namespace kk {

template <typename T, int VE, bool kChannelsLast>
__global__ void __launch_bounds__(256, 4)
dw_direct(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w, const float* __restrict__ bias,
          int N, int C, int H, int W, int OH, int OW, i64 sn, i64 sc, i64 sh, i64 sw, int wc, int wt, int KH, int KW,
          int s_h, int s_w, int p_h, int p_w, int d_h, int d_w) {
  const int cv = C / VE;
  const i64 total = (i64)N * cv * OH * OW;
  for (i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x; t < total; t += (i64)gridDim.x * blockDim.x) {
    int n, c, oy, ox;
    if constexpr (kChannelsLast) {  // index order n, oy, ox, c (channels fastest)
      c = (int)(t % cv) * VE;
      i64 q = t / cv;
      ox = (int)(q % OW);
      q /= OW;
      oy = (int)(q % OH);
      n = (int)(q / OH);
    } else {  // n, c, oy, ox
      ox = (int)(t % OW);
      i64 q = t / OW;
      oy = (int)(q % OH);
      q /= OH;
      c = (int)(q % C);
      n = (int)(q / C);
    }
    float acc[VE];
#pragma unroll
    for (int j = 0; j < VE; ++j) acc[j] = bias ? bias[c + j] : 0.0f;
    const T* src = in + n * sn + c * sc;
    for (int a = 0; a < KH; ++a) {
      const int y = oy * s_h - p_h + a * d_h;
      if ((unsigned)y >= (unsigned)H) continue;
      for (int b = 0; b < KW; ++b) {
        const int x = ox * s_w - p_w + b * d_w;
        if ((unsigned)x >= (unsigned)W) continue;
        const T* s = src + y * sh + x * sw;
        const float* wp = w + (i64)c * wc + (a * KW + b) * wt;
        if constexpr (VE * sizeof(T) == 16) {
          float f[VE];
          vec16_to_floats<T>(*reinterpret_cast<const uint4*>(s), f);
#pragma unroll
          for (int j = 0; j < VE; ++j) acc[j] = fmaf(wp[j * wc], f[j], acc[j]);
        } else {
#pragma unroll
          for (int j = 0; j < VE; ++j) acc[j] = fmaf(wp[j * wc], wload(s[j]), acc[j]);
        }
      }
    }
    if constexpr (kChannelsLast) {
      T* dst = out + (((i64)n * OH + oy) * OW + ox) * C + c;
      store_run<T, VE>(dst, 0, VE, acc);
    } else {
      out[(((i64)n * C + c) * OH + oy) * OW + ox] = wstore<T>(acc[0]);
    }
  }
}

// ------------------------------------------------------------------------------ channel-group tiles
// A block owns 32 channels (a warp's lanes) of an output tile of TH x TW pixels of one image, and stages
// the (TH - 1) S + K rows x (TW - 1) S + K columns of inputs they read in shared memory as float32, the
// zero padding included, pixel-major: kPix floats a pixel. Each input is read from global memory once per
// tile. Warp w computes the RY x RX outputs (wy RY.., wx RX..) of the tile for its 32 channels, a lane
// one channel: for each input row one register window of (RX - 1) S + K values feeds every output row it
// reaches, each weight (staged in shared memory) read once per output row.
//
// channels_last: loads of 16-byte channel vectors (`vec`: C a multiple of a vector, aligned pixels) stored
// by 128-bit shared stores (kPix 36: a pixel starts on 16 bytes, and the 8 lanes of a quarter-warp store
// to 8 distinct 16-byte bank groups), else one channel a lane; a pixel's 32 channels stored by the 32
// lanes. Planar (NCHW, tiles at most 32 inputs wide): a warp loads 32 / P rows of a channel at once, a
// lane an element (P: the row length rounded up to a power of two), stored with kPix 33 (odd: lanes
// walking a row hit 32 banks); the outputs staged through the tile and written as rows the same way.
constexpr int kDwGroup = 32;
constexpr int kDwBatch = 4;  // loads a thread issues before storing them to the tile

template <bool kChannelsLast>
__host__ __device__ constexpr int dw_pix() { return kChannelsLast ? 36 : 33; }

template <typename T>
__device__ __forceinline__ const T* dw_at(const T* in, i64 sc, i64 sh, i64 sw, int c, int y, int x) {
  return in + c * sc + y * sh + x * sw;
}

// 4 bytes global -> shared without a register, completed by dw_copies_wait
__device__ __forceinline__ void dw_copy4(float* dst, const float* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void dw_copies_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// q / d for the small q of a tile (q d < 2^32) as one multiply-high by m = dw_magic(d), d >= 2
__device__ __forceinline__ unsigned dw_magic(unsigned d) { return 0xffffffffu / d + 1u; }
__device__ __forceinline__ int dw_div(int q, unsigned m) { return (int)__umulhi((unsigned)q, m); }

// log2 of the power of two at or above n (1 <= n <= 32)
__device__ __forceinline__ int dw_log2_up(int n) { return 32 - __clz(n - 1); }

// Stage the tile of image `src` (channel c0's origin at input pixel (iy0, ix0)), IH x IW pixels.
template <typename T, bool kChannelsLast>
__device__ __forceinline__ void dw_load_tile(float* tile, const T* src, int C, int H, int W, i64 sc, i64 sh, i64 sw,
                                             int c0, int iy0, int ix0, int IH, int IW, bool vec) {
  constexpr int kPix = dw_pix<kChannelsLast>();
  const int lane = threadIdx.x, warp = threadIdx.y, warps = blockDim.y;
  const int tid = warp * 32 + lane, nthr = warps * 32;
  const int npix = IH * IW;
  if constexpr (kChannelsLast) {
    const unsigned m = dw_magic(IW);
    if (vec) {
      constexpr int VE = vec16<T>(), VPP = kDwGroup / VE;  // 16-byte vectors a pixel of the group
      const int items = npix * VPP;
      for (int base = tid; base < items; base += nthr * kDwBatch) {
        uint4 raw[kDwBatch];
#pragma unroll
        for (int b = 0; b < kDwBatch; ++b) {
          const int it = base + b * nthr;
          const int pix = it / VPP, v = it % VPP;
          const int py = dw_div(pix, m), px = pix - py * IW;
          const int y = iy0 + py, x = ix0 + px, c = c0 + v * VE;
          const bool ok = it < items && (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W && c < C;
          raw[b] = ok ? *reinterpret_cast<const uint4*>(src + (c + y * sh + x * sw)) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int b = 0; b < kDwBatch; ++b) {
          const int it = base + b * nthr;
          if (it >= items) break;
          float f[VE];
          vec16_to_floats<T>(raw[b], f);
          float4* d = reinterpret_cast<float4*>(tile + (it / VPP) * kPix + (it % VPP) * VE);
#pragma unroll
          for (int j = 0; j < VE / 4; ++j) d[j] = make_float4(f[4 * j], f[4 * j + 1], f[4 * j + 2], f[4 * j + 3]);
        }
      }
    } else {
      for (int base = warp; base < npix; base += warps * kDwBatch) {  // a warp a pixel, a lane a channel
        float v[kDwBatch];
#pragma unroll
        for (int b = 0; b < kDwBatch; ++b) {
          const int pix = base + b * warps;
          const int py = dw_div(pix, m), px = pix - py * IW;
          const int y = iy0 + py, x = ix0 + px, c = c0 + lane;
          const bool ok = pix < npix && (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W && c < C;
          v[b] = ok ? wload(*dw_at(src, sc, sh, sw, c, y, x)) : 0.0f;
        }
#pragma unroll
        for (int b = 0; b < kDwBatch; ++b) {
          const int pix = base + b * warps;
          if (pix < npix) tile[pix * kPix + lane] = v[b];
        }
      }
    }
  } else {
    // warp item it: channel it % 32, rows R (it / 32).. of the tile, lane = (row in the group, column)
    const int lg = dw_log2_up(IW), R = 32 >> lg;
    const int rsub = lane >> lg, px = lane & ((1 << lg) - 1);
    const int items = (IH + R - 1) / R * kDwGroup;
    for (int base = warp; base < items; base += warps * kDwBatch) {
      float v[kDwBatch];
#pragma unroll
      for (int b = 0; b < kDwBatch; ++b) {
        const int it = base + b * warps;
        const int ch = it & (kDwGroup - 1), py = (it / kDwGroup) * R + rsub;
        const int y = iy0 + py, x = ix0 + px, c = c0 + ch;
        const bool ok = it < items && px < IW && py < IH && (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W &&
                        c < C;
        v[b] = ok ? wload(*dw_at(src, sc, sh, sw, c, y, x)) : 0.0f;
      }
#pragma unroll
      for (int b = 0; b < kDwBatch; ++b) {
        const int it = base + b * warps;
        const int ch = it & (kDwGroup - 1), py = (it / kDwGroup) * R + rsub;
        if (it < items && px < IW && py < IH) tile[(py * IW + px) * kPix + ch] = v[b];
      }
    }
  }
}

template <typename T, int K, int S, int RX, int RY, bool kChannelsLast>
__global__ void __launch_bounds__(256, 3)
dw_tile(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w, const float* __restrict__ bias,
        int N, int C, int H, int W, int OH, int OW, i64 sn, i64 sc, i64 sh, i64 sw, int p_h, int p_w, int wx_warps,
        int tiles_x, int vec) {
  constexpr int kPix = dw_pix<kChannelsLast>();
  extern __shared__ float4 smem4[];
  float* ws = reinterpret_cast<float*>(smem4);  // K*K taps x 32 channels
  float* tile = ws + K * K * kDwGroup;          // 16-byte aligned: K*K*32 floats
  constexpr int NR = (RY - 1) * S + K, WL = (RX - 1) * S + K;  // input rows and window of a warp's outputs
  const int lane = threadIdx.x, warp = threadIdx.y;
  const int WX = wx_warps, WY = blockDim.y / wx_warps;
  const int TW = WX * RX, TH = WY * RY;
  const int IW = (TW - 1) * S + K, IH = (TH - 1) * S + K;
  const int ty = blockIdx.x / tiles_x, tx = blockIdx.x - ty * tiles_x;
  const int oy0 = ty * TH, ox0 = tx * TW;
  const int c0 = blockIdx.y * kDwGroup, c = c0 + lane;
  const int wy = warp / WX, wx = warp - wy * WX;
  // the block's weights, tap-major (a tap's 32 channels one coalesced read), copied to shared memory
  // while the first tile loads (in registers the 7x7 kernels needed more than 128 a thread)
  for (int t = warp; t < K * K; t += blockDim.y) {
    if (c < C) {
      dw_copy4(ws + t * kDwGroup + lane, w + (i64)t * C + c);
    } else {
      ws[t * kDwGroup + lane] = 0.0f;
    }
  }
  const float b0 = bias != nullptr && c < C ? bias[c] : 0.0f;
  for (int n = blockIdx.z; n < N; n += gridDim.z) {
    __syncthreads();  // the previous image's tile is no longer read
    dw_load_tile<T, kChannelsLast>(tile, in + n * sn, C, H, W, sc, sh, sw, c0, oy0 * S - p_h, ox0 * S - p_w, IH,
                                   IW, vec != 0);
    dw_copies_wait();
    __syncthreads();
    float acc[RY][RX];
#pragma unroll
    for (int j = 0; j < RY; ++j)
#pragma unroll
      for (int i = 0; i < RX; ++i) acc[j][i] = b0;
    const float* tb = tile + ((wy * RY * S) * IW + wx * RX * S) * kPix + lane;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      float win[WL];
#pragma unroll
      for (int i = 0; i < WL; ++i) win[i] = tb[(r * IW + i) * kPix];
#pragma unroll
      for (int j = 0; j < RY; ++j) {
        const int dy = r - j * S;
        if (dy < 0 || dy >= K) continue;
#pragma unroll
        for (int dx = 0; dx < K; ++dx) {
          const float wt = ws[(dy * K + dx) * kDwGroup + lane];
#pragma unroll
          for (int i = 0; i < RX; ++i) acc[j][i] = fmaf(wt, win[i * S + dx], acc[j][i]);
        }
      }
    }
    if constexpr (kChannelsLast) {  // out: channels_last contiguous, ((n OH + oy) OW + ox) C + c
      const int oy = oy0 + wy * RY, ox = ox0 + wx * RX;
      T* o = out + (((i64)n * OH + oy) * OW + ox) * C + c;
      if (c < C) {
#pragma unroll
        for (int j = 0; j < RY; ++j) {
#pragma unroll
          for (int i = 0; i < RX; ++i)
            if (oy + j < OH && ox + i < OW) dw_store(o, i * C, acc[j][i]);
          o += (i64)OW * C;
        }
      }
    } else {  // out: NCHW contiguous; the tile's outputs staged pixel-major, then written as rows
      __syncthreads();
#pragma unroll
      for (int j = 0; j < RY; ++j)
#pragma unroll
        for (int i = 0; i < RX; ++i) tile[((wy * RY + j) * TW + wx * RX + i) * kPix + lane] = acc[j][i];
      __syncthreads();
      const int lg = dw_log2_up(TW), R = 32 >> lg;
      const int rsub = lane >> lg, xl = lane & ((1 << lg) - 1);
      const int items = (TH + R - 1) / R * kDwGroup;
      for (int it = warp; it < items; it += blockDim.y) {
        const int ch = it & (kDwGroup - 1), yl = (it / kDwGroup) * R + rsub;
        const int oy = oy0 + yl, ox = ox0 + xl;
        if (xl < TW && yl < TH && oy < OH && ox < OW && c0 + ch < C)
          dw_store(out, (((i64)n * C + c0 + ch) * OH + oy) * OW + ox, tile[(yl * TW + xl) * kPix + ch]);
      }
    }
  }
}

// ------------------------------------------------------------------------------------ planar bands
// NCHW: a block stages a band of P whole-width planes (P > 1 only when the band is the whole plane) in
// shared memory as float32, the zero padding included, or, where a whole-width row does not fit, a
// segment of SW output columns of one band (segs segments a row; SW = OW where segs == 1): IH rows of IW
// inputs a plane (the segment's (SW - 1) S + K columns and their halo), gathered by a flat
// index over (plane, row, column) so that a warp's loads run along contiguous rows whatever the width,
// 32 bytes of loads in flight a thread (8 floats, 16 halves). At stride 2 a row is stored deinterleaved (even columns, then odd)
// so that lanes on consecutive outputs read consecutive floats. A thread computes a column strip of RY
// outputs of one plane (consecutive lanes on consecutive columns: conflict-free reads, coalesced stores),
// one register window of K inputs a staged row feeding every output row it reaches; the plane's K*K
// weights are read into registers once a strip (lanes of a plane read the same address).

template <int S>
__device__ __forceinline__ int dw_col(int cc, int half) {
  if constexpr (S == 1) return cc;
  else return (cc & 1) * half + (cc >> 1);
}

template <typename T, int K, int S, int RY>
__global__ void __launch_bounds__(256, 3)
dw_planes(const T* __restrict__ in, T* __restrict__ out, const float* __restrict__ w, const float* __restrict__ bias,
          int NC, int C, int H, int W, int OH, int OW, int p_h, int p_w, int P, int NS, int bands, int IH, int IW,
          int pitch, int SW, int segs) {
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  constexpr int NR = (RY - 1) * S + K;
  constexpr int kDwBatch2 = 32 / (int)sizeof(T);
  const int tid = threadIdx.x, nthr = blockDim.x;
  const int half = pitch >> 1;
  const int g = blockIdx.x / (bands * segs), rest = blockIdx.x - g * bands * segs;
  const int band = rest / segs, seg = rest - band * segs;
  const int plane0 = g * P;
  const int srow0 = band * NS * RY;      // first output row of the band
  const int iy0 = srow0 * S - p_h;       // input row of staged row 0
  const int ox0 = seg * SW;              // first output column of the segment
  const int ix0 = ox0 * S - p_w;         // input column of staged column 0
  const int ow = min(SW, OW - ox0);      // output columns of the segment
  const unsigned mw = dw_magic(IW), mh = dw_magic(IH);
  const int total = P * IH * IW;
  for (int base = tid; base < total; base += nthr * kDwBatch2) {
    float v[kDwBatch2];
    int at[kDwBatch2];  // the shared-memory index, kept from the load's decomposition
#pragma unroll
    for (int b = 0; b < kDwBatch2; ++b) {
      const int q = base + b * nthr;
      const int rr = dw_div(q, mw), cc = q - rr * IW;
      const int pl = dw_div(rr, mh), r = rr - pl * IH;
      const int y = iy0 + r, x = ix0 + cc, gp = plane0 + pl;
      const bool ok = q < total && gp < NC && (unsigned)y < (unsigned)H && (unsigned)x < (unsigned)W;
      v[b] = ok ? wload(in[((i64)gp * H + y) * W + x]) : 0.0f;
      at[b] = q < total ? rr * pitch + dw_col<S>(cc, half) : -1;
    }
#pragma unroll
    for (int b = 0; b < kDwBatch2; ++b)
      if (at[b] >= 0) tile[at[b]] = v[b];
  }
  __syncthreads();
  const unsigned mo = dw_magic(ow), ms = dw_magic(NS);
  const int items = P * NS * ow;
  for (int t = tid; t < items; t += nthr) {
    const int q = ow > 1 ? dw_div(t, mo) : t, ox = t - q * ow;  // ox: the column within the segment
    const int pl = NS > 1 ? dw_div(q, ms) : q, st = q - pl * NS;
    const int gp = plane0 + pl, oy0 = srow0 + st * RY;
    if (gp >= NC || oy0 >= OH) continue;
    const int c = gp % C;
    float wr[K * K];
#pragma unroll
    for (int i = 0; i < K * K; ++i) wr[i] = __ldg(w + (i64)c * (K * K) + i);
    const float b0 = bias != nullptr ? __ldg(bias + c) : 0.0f;
    float acc[RY];
#pragma unroll
    for (int j = 0; j < RY; ++j) acc[j] = b0;
    const float* rp = tile + (pl * IH + st * RY * S) * pitch + ox;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
      float win[K];
#pragma unroll
      for (int dx = 0; dx < K; ++dx) win[dx] = rp[r * pitch + (S == 1 ? dx : (dx & 1) * half + (dx >> 1))];
#pragma unroll
      for (int j = 0; j < RY; ++j) {
        const int dy = r - j * S;
        if (dy < 0 || dy >= K) continue;
#pragma unroll
        for (int dx = 0; dx < K; ++dx) acc[j] = fmaf(wr[dy * K + dx], win[dx], acc[j]);
      }
    }
    const i64 o = ((i64)gp * OH + oy0) * OW + ox0 + ox;
#pragma unroll
    for (int j = 0; j < RY; ++j)
      if (oy0 + j < OH) dw_store(out, o + (i64)j * OW, acc[j]);
  }
}

}  // namespace kk
