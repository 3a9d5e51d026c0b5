// Pipelined tiles of the sliding-window kernels: a persistent block walks its tiles in turn and, while it
// computes one, the next one's inputs arrive in a second shared buffer by asynchronous 16-byte copies
// (cp.async, sm_80+). The tile holds the raw elements (1, 2 or 4 bytes, not floats): the copies need no
// registers and no conversion on the way in, a block keeps a whole tile (about 20 KB) in flight, and the
// shared footprint is a quarter of a float tile for uint8. Conversions happen when a thread reads its
// register window; uint8 converts by a byte permute and one add, not the quarter-rate I2F.
//
// Tile geometry: a block of BX x 256 / BX threads (32 x 8; filter2d's wide tiles 64 x 4) computes TW = BX V
// elements x TH = 256 / BX x RY rows, V = one 16-byte vector of outputs a thread a row. Its tile row starts
// HP elements (a whole number of vectors, at least the horizontal reach) left of the outputs, so a 16-byte
// chunk of the tile is a 16-byte chunk of the image row. A row whose address is not 16-byte aligned (offset
// views, odd row strides) copies each chunk in 8- or 4-byte pieces (copy_chunk); a 16-bit or uint8 row not
// even on 4 bytes is stored m elements to the right (m its misalignment within a word, kept per row) and the
// window reader shifts it back. Kernels compiled "aligned" (every row 16-byte aligned, the host checks) skip
// the test.
#pragma once
#include "window.cuh"

namespace kk {

template <int B> struct RawOf;
template <> struct RawOf<1> { using type = unsigned char; };
template <> struct RawOf<2> { using type = unsigned short; };
template <> struct RawOf<4> { using type = unsigned int; };
template <typename T> using raw_t = typename RawOf<sizeof(T)>::type;  // an element's bits

__host__ __device__ constexpr int round_up(int n, int m) { return (n + m - 1) / m * m; }

__device__ __forceinline__ void tile_copy16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem) : "memory");
}
__device__ __forceinline__ void tile_copy8(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem) : "memory");
}
__device__ __forceinline__ void tile_copy4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem) : "memory");
}

// The 16-byte tile chunk `dst` from the image elements at `src` (the chunk's first element), in the widest
// copies the address allows: one of 16 bytes, two of 8 or four of 4. A source below a 4-byte boundary
// (16-bit and uint8 rows only) is copied from the boundary before it, so its elements land m to the
// right: the returned m, which the window reader shifts out. So a float row at any offset is stored as an
// aligned one, and a narrower row needs at most a shift within a 32-bit word.
template <typename R>
__device__ __forceinline__ int copy_chunk(R* dst, const R* src) {
  const unsigned a = (unsigned)(unsigned long long)src;
  const int m = sizeof(R) == 4 ? 0 : (int)((a & 3u) / sizeof(R));
  const char* from = reinterpret_cast<const char*>(src - m);
  char* to = reinterpret_cast<char*>(dst);
  const unsigned mis = (a - m * (unsigned)sizeof(R)) & 15u;
  if (mis == 0) {
    tile_copy16(to, from);
  } else if ((mis & 7u) == 0) {
    tile_copy8(to, from);
    tile_copy8(to + 8, from + 8);
  } else {
#pragma unroll
    for (int k = 0; k < 16; k += 4) tile_copy4(to + k, from + k);
  }
  return m;
}

__device__ __forceinline__ void tile_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void tile_wait_previous() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

// One tile's place: plane p, first output row y0 and element column x0.
struct TilePos {
  int p, y0, x0;
};

// The persistent walk over the tiles of every plane (row-major within a plane, planes in turn: the
// blocks resident at one time work on one band of rows, whose halos stay in L2) and the copies that
// fill a tile buffer of `rows` x LD elements, rows starting `top` rows above the outputs and HP
// elements left of them. Tile numbers are 32-bit: the host keeps the tiles of a launch (plus its grid)
// below 2^31.
template <typename T, bool kAligned, int TW, int TH, int LD, int HP>
struct TileWalk {
  using R = raw_t<T>;
  static constexpr int V = vec16<T>(), NCH = LD / V;
  // a thread's chunks are s = tid, tid + 256, ...: (row, chunk) of the first and the step between them
  static constexpr int DR = 256 / NCH, DC = 256 % NCH;
  const R* in;
  i64 in_plane, in_row;
  int per_plane, total, H, WC, C, mode, ntx, rows, top;

  __device__ __forceinline__ TileWalk(const T* in_, i64 in_plane_, i64 in_row_, int planes, int H_, int WC_,
                                      int C_, int mode_, int rows_, int top_)
      : in(reinterpret_cast<const R*>(in_)), in_plane(in_plane_), in_row(in_row_), H(H_), WC(WC_), C(C_),
        mode(mode_), rows(rows_), top(top_) {
    ntx = (WC + TW - 1) / TW;
    per_plane = ntx * ((H + TH - 1) / TH);
    total = per_plane * planes;
  }

  // Unsigned divisions (tile numbers are not negative): about half the instructions of signed ones.
  __device__ __forceinline__ TilePos at(int t) const {
    const unsigned u = (unsigned)t, pp = (unsigned)per_plane, nx = (unsigned)ntx;
    const unsigned p = u / pp, rem = u - p * pp, ty = rem / nx;
    return TilePos{(int)p, (int)ty * TH, (int)(rem - ty * nx) * TW};
  }

  // Start the copies of the tile at tp into `buf`; `shift` gets each
  // row's m. A tile whose rows and chunks all lie inside the image (nearly every tile of a large plane)
  // copies each chunk by cp.async with no border test. Elsewhere: rows outside the image under the zero
  // border are zero-filled; chunks wholly inside the image row go by cp.async; chunks that reach past
  // a row's ends take the border rule element by element (all loads issued before the one 16-byte
  // shared store); chunks that start past every input a stored output reads (HP past the row's end) are
  // not filled, since only outputs that are not stored read them.
  __device__ __forceinline__ void issue(const TilePos& tp, R* buf, int* shift) const {
    const R* plane = in + (i64)tp.p * in_plane;
    const int y0 = tp.y0 - top, g0 = tp.x0 - HP;
    const int s = threadIdx.y * (TW / V) + threadIdx.x;  // blocks of TW / V x 256 V / TW threads
    int r = s / NCH, c = s - r * NCH;
    if (y0 >= 0 && y0 + rows <= H && g0 >= (kAligned ? 0 : V) && g0 + LD <= WC) {
      // chunk (r, c) is element r LD + c V = 16 s bytes of the buffer (LD = NCH V), and the source steps by
      // whole rows and vectors: the addresses advance by adds, with no multiply a chunk. A chunk's
      // misalignment is its row's (g0 and c V are whole vectors).
      const R* src = plane + (i64)(y0 + r) * in_row + g0 + c * V;
      const i64 step = (i64)DR * in_row + DC * V, wrap = in_row - NCH * V;
      R* dst = buf + s * V;
#pragma unroll 1
      for (; r < rows; r += DR, c += DC, src += step, dst += 256 * V) {
        if (DC != 0 && c >= NCH) {
          c -= NCH;
          ++r;
          src += wrap;
          if (r >= rows) break;
        }
        if constexpr (kAligned) {
          tile_copy16(dst, src);
        } else {
          const int m = copy_chunk(dst, src);
          if (c == 0) shift[r] = m;
        }
      }
      return;
    }
    for (; r < rows; r += DR, c += DC) {
      if (c >= NCH) {
        c -= NCH;
        ++r;
        if (r >= rows) break;
      }
      R* dst = buf + r * LD + c * V;
      const int y = border_index(y0 + r, H, mode);
      if (y < 0) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
        if (!kAligned && c == 0) shift[r] = 0;
        continue;
      }
      const R* row = plane + (i64)y * in_row;
      const int m = kAligned || sizeof(R) == 4 ? 0 : (int)(((unsigned long long)row & 3) / sizeof(R));
      if (!kAligned && c == 0) shift[r] = m;
      const int e = g0 + c * V - m;
      if (e >= 0 && e + V <= WC) {
        if constexpr (kAligned)
          tile_copy16(dst, row + e);
        else
          copy_chunk(dst, row + e + m);
      } else if (e < WC + HP) {
        constexpr int EPW = 4 / (int)sizeof(R), B = 8 * (int)sizeof(R);
        unsigned wd[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          wd[k] = 0u;
#pragma unroll
          for (int j = 0; j < EPW; ++j) {
            const int q = border_element(e + k * EPW + j, WC, C, mode);
            if (q >= 0) wd[k] |= (unsigned)row[q] << (B * j);
          }
        }
        *reinterpret_cast<uint4*>(dst) = make_uint4(wd[0], wd[1], wd[2], wd[3]);
      }
    }
  }

  // This block's tiles (blockIdx.x, then gridDim.x apart), double-buffered in the two halves of `buf`
  // (and of `shift`): the next tile's copies go out before body(position, tile buffer, its rows' shifts)
  // reads this one's. A barrier ends each tile, since its half is the next copy target.
  template <typename F>
  __device__ __forceinline__ void each(R* buf, int* shift, F&& body) const {
    int t = blockIdx.x;
    TilePos cur = at(t);
    if (t < total) issue(cur, buf, shift);
    tile_commit();
    for (int s = 0; t < total; s ^= 1) {
      const int tn = t + (int)gridDim.x;
      const TilePos next = at(tn);  // found once: the copies now, the body on the next turn
      if (tn < total) issue(next, buf + (s ^ 1) * rows * LD, shift + (s ^ 1) * rows);
      tile_commit();
      tile_wait_previous();
      __syncthreads();
      body(cur, buf + s * rows * LD, shift + s * rows);
      __syncthreads();
      cur = next;
      t = tn;
    }
  }
};

// Element j of a run of 32-bit words as a float. uint8: the byte placed under the exponent of 2^23 by one
// permute, then 2^23 subtracted (exact); bf16: the bits moved to the top half; fp16: the half converted
// straight from its half of the word.
template <typename T> struct WordElem;
template <> struct WordElem<float> {
  template <int N> __device__ __forceinline__ static float at(const unsigned (&w)[N], int j) { return __uint_as_float(w[j]); }
};
template <> struct WordElem<__half> {
  template <int N> __device__ __forceinline__ static float at(const unsigned (&w)[N], int j) {
    __half2 h;
    memcpy(&h, &w[j >> 1], 4);
    return (j & 1) ? __high2float(h) : __low2float(h);
  }
};
template <> struct WordElem<__nv_bfloat16> {
  template <int N> __device__ __forceinline__ static float at(const unsigned (&w)[N], int j) {
    return __uint_as_float((j & 1) ? (w[j >> 1] & 0xffff0000u) : (w[j >> 1] << 16));
  }
};
template <> struct WordElem<u8> {
  template <int N> __device__ __forceinline__ static float at(const unsigned (&w)[N], int j) {
    return __uint_as_float(__byte_perm(w[j >> 2], 0x4B000000u, 0x7540u | (unsigned)(j & 3))) - 8388608.0f;
  }
};

// The WL elements of a tile row at positions V tx + S + m ... as floats: V tx is the thread's chunk, S a
// compile-time offset, m the row's shift (below one 32-bit word: copy_chunk; 0 in aligned kernels and for
// floats). The covering chunks are read by 128-bit shared loads (consecutive lanes, consecutive chunks: no
// bank conflict); a shifted row moves its words down by m elements, one funnel shift a word.
template <typename T, int S, int WL, bool kAligned>
__device__ __forceinline__ void read_window(const raw_t<T>* trow, int m, float (&win)[WL]) {
  constexpr int V = vec16<T>(), EPW = 4 / (int)sizeof(T);
  constexpr bool kShift = !kAligned && EPW > 1;
  constexpr int NC = (S + WL + (kShift ? EPW - 1 : 0) + V - 1) / V, NW = 4 * NC + 1;
  unsigned w[NW];
  const uint4* src = reinterpret_cast<const uint4*>(trow) + threadIdx.x;
#pragma unroll
  for (int k = 0; k < NC; ++k) {
    const uint4 c = src[k];
    w[4 * k] = c.x;
    w[4 * k + 1] = c.y;
    w[4 * k + 2] = c.z;
    w[4 * k + 3] = c.w;
  }
  w[NW - 1] = 0u;
  if constexpr (kShift) {
    const int bits = m * 8 * (int)sizeof(T);
#pragma unroll
    for (int k = 0; k + 1 < NW; ++k) w[k] = __funnelshift_r(w[k], w[k + 1], bits);
  }
#pragma unroll
  for (int j = 0; j < WL; ++j) win[j] = WordElem<T>::at(w, S + j);
}

// A float rounded to uint8 bits: clamped to [0, 255] (each side only where the values can pass it), then
// 1.5 * 2^23 added so that the FPU's round-to-nearest-even leaves the integer in the low byte: what
// __float2int_rn and a clamp give (NaN to 0 where clamped below), without the quarter-rate F2I.
template <bool kLow, bool kHigh>
__device__ __forceinline__ unsigned u8_round(float v) {
  if constexpr (kLow) v = fmaxf(v, 0.0f);
  if constexpr (kHigh) v = fminf(v, 255.0f);
  return __float_as_uint(v + 12582912.0f);
}

// N results as T bits into words [OFF, OFF + N sizeof(T) / 4) of a 16-byte vector's words: floats as they
// are, 16-bit pairs rounded by one pack instruction, uint8 by u8_round and byte permutes. kLow / kHigh:
// uint8 results may fall below 0 / above 255 (a caller that knows they cannot skips that clamp).
template <typename T, int N, int OFF, bool kLow = true, bool kHigh = true>
__device__ __forceinline__ void pack_bits(const float (&a)[N], unsigned (&o)[4]) {
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < N; ++i) o[OFF + i] = __float_as_uint(a[i]);
  } else if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int k = 0; k < N / 2; ++k) {
      const typename Pair<T>::type h = Pair<T>::from(a[2 * k], a[2 * k + 1]);
      memcpy(&o[OFF + k], &h, 4);
    }
  } else {
#pragma unroll
    for (int k = 0; k < N / 4; ++k) {
      const unsigned b0 = u8_round<kLow, kHigh>(a[4 * k]), b1 = u8_round<kLow, kHigh>(a[4 * k + 1]);
      const unsigned b2 = u8_round<kLow, kHigh>(a[4 * k + 2]), b3 = u8_round<kLow, kHigh>(a[4 * k + 3]);
      o[OFF + k] = __byte_perm(__byte_perm(b0, b1, 0x0040u), __byte_perm(b2, b3, 0x0040u), 0x5410u);
    }
  }
}

// The V = 16 / sizeof(T) packed results of one output row, from element column x: one 16-byte store where
// the address is aligned and the run inside the row, else element by element.
template <typename T>
__device__ __forceinline__ void store_bits(T* row, int x, int WC, const unsigned (&o)[4]) {
  constexpr int V = vec16<T>(), B = 8 * (int)sizeof(T);
  if (x >= WC) return;
  T* p = row + x;
  if (x + V <= WC && ((unsigned long long)p & 15) == 0) {
    store_global16(reinterpret_cast<uint4*>(p), make_uint4(o[0], o[1], o[2], o[3]));
  } else {
    raw_t<T>* q = reinterpret_cast<raw_t<T>*>(p);
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (x + i < WC) q[i] = (raw_t<T>)(o[i * B / 32] >> (i * B % 32));
  }
}

// A thread's RY packed output rows, from row y of plane p at element column x (rows past H skipped): the
// first row's address is found once and stepped by WC, not multiplied out a row.
template <typename T, int RY>
__device__ __forceinline__ void store_rows(T* out, int p, int y, int H, int x, int WC, const unsigned (&o)[RY][4]) {
  T* row = out + ((i64)p * H + y) * WC;
#pragma unroll
  for (int j = 0; j < RY; ++j, row += WC)
    if (y + j < H) store_bits<T>(row, x, WC, o[j]);
}

// Where chunk j (of V / 4) of thread tx's V floats sits in a row of float results (offset in floats): the
// chunks of a thread are permuted by an XOR of its lane bits, so that the 8 lanes of one 128-bit access
// phase hit 8 different 4-bank groups when each thread writes (or reads) V > 4 consecutive floats.
template <int V>
__device__ __forceinline__ int swizzled_chunk(int tx, int j) {
  constexpr int Q = V / 4;
  const int q = Q * tx + j;
  return 4 * (q ^ ((q >> 3) & (Q - 1)));
}

}  // namespace kk
