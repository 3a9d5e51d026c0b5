// The best rung's batched transposes for the shapes the wide tile (transpose.cu) cannot take, with
// 16-byte global accesses and swizzled shared tiles at any alignment of rows and strides, for 1-, 2- and
// 4-byte elements: the window tile (output rows on 16-byte boundaries) and the skew tile (output rows
// anywhere); with the helpers only they use (load_window, shift_window, pack_elems). Problem statement, tile order,
// register transpose and store16: transpose.cuh.
#include "transpose.cuh"

namespace kk {

// Rung best on the shapes the wide tile cannot take (odd sides or strides, rows that do not start on
// 16-byte boundaries): the same 16-byte accesses and swizzled tile, at any alignment. E <= 4 bytes.
// Load: a tile row's TC elements start `s` bytes past a 16-byte boundary (s differs from row to row).
// Logical chunk k of the row (elements k*V .. k*V + V - 1) spans the aligned chunks W0 and W1 that hold
// its first and last byte: a thread loads both (the second is the next thread's first: an L1 hit) and
// funnel-shifts bytes [s, s + 16) of W0:W1 into one register vector, stored whole (STS.128) at the
// wide tile's swizzled place, chunk k ^ ((row / V) % XW) (XW = min(8, chunks a row)).
// Store: output row c (tile column cc) starts `o` elements past a 16-byte boundary. Its aligned output
// chunk q (q = 0 .. TR/V - 1) holds tile rows q*V - o + e (e < V); chunk 0 also takes, for e < o, the
// rows TR - o + e at the end of the column (the head and tail of the row segment: both partial, stored
// element by element). A thread reads the V elements of its chunk down tile column cc (one E-byte
// shared read each; the rows q*V - o + e for e < o lie in the previous group of V rows, whose swizzle
// is (q - 1) % XW), packs them and stores 16 bytes (STG.128) where the chunk lies wholly inside the
// tile's rows, element by element otherwise. Lanes j = lane % 8 take consecutive chunks q and lanes
// g = lane / 8 neighbouring 4-byte column units, as in the wide tile: for each g the 8 lanes read 8
// swizzle positions and the 4 g read 4 words of one chunk, so every shared read is conflict-free when
// rows hold 8 or more chunks (2-way for 4 chunks: 8 lanes over 4 swizzle positions), whatever o.
// kInAligned / kOutAligned: every input (output) row starts on a 16-byte boundary (s = 0, o = 0), the
// host's promise: no second load and shift, or only whole chunks.
template <int E>
__device__ __forceinline__ uint4 shift_window(uint4 a, uint4 b, unsigned s) {  // bytes [s, s + 16) of a:b
  const unsigned x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  unsigned z[6], y[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) z[i] = (s & 8) ? x[i + 2] : x[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) y[i] = (s & 4) ? z[i + 1] : z[i];
  if constexpr (E == 4) {  // whole words
    return make_uint4(y[0], y[1], y[2], y[3]);
  } else {
    const unsigned sh = (s & 3) * 8;
    return make_uint4(__funnelshift_r(y[0], y[1], sh), __funnelshift_r(y[1], y[2], sh),
                      __funnelshift_r(y[2], y[3], sh), __funnelshift_r(y[3], y[4], sh));
  }
}

// The aligned chunks that hold the 16 bytes from p, a tile row's elements first .. first + V - 1 (nc of
// them in the tile): W0 always, W1 where rows may be misaligned and it holds an element of the row (its
// first, first + (16 - s) / E, is < nc). A slot that is not `ok` reads `safe` (the aligned chunk of the
// tile's first element, never written out) instead, so every load is issued without waiting on a predicate.
template <int E, bool kAligned>
__device__ __forceinline__ void load_window(const void* p, bool ok, int first, int nc, const uint4* safe, uint4& w0,
                                            uint4& w1) {
  const unsigned long long a = reinterpret_cast<unsigned long long>(p);
  const uint4* c = reinterpret_cast<const uint4*>(a & ~15ull);
  w0 = __ldg(ok ? c : safe);
  if constexpr (!kAligned) {
    const unsigned s = (unsigned)(a & 15);
    const bool ok1 = ok && s != 0 && first + (int)((16 - s) / E) < nc;
    w1 = __ldg(ok1 ? c + 1 : (ok ? c : safe));
  }
}

template <int E, int V>
__device__ __forceinline__ uint4 pack_elems(const unsigned (&v)[V]) {  // V elements (low bits) -> 16 bytes
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (E == 4) {
      w[i] = v[i];
    } else if constexpr (E == 2) {
      w[i] = __byte_perm(v[2 * i], v[2 * i + 1], 0x5410);
    } else {
      w[i] = __byte_perm(__byte_perm(v[4 * i], v[4 * i + 1], 0x0040), __byte_perm(v[4 * i + 2], v[4 * i + 3], 0x0040),
                         0x5410);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <typename T, int TR, int TC, int THREADS, bool kInAligned, bool kOutAligned>
__global__ void __launch_bounds__(THREADS, (kInAligned ? 5 : 4) * 256 / THREADS) transpose_window(T* __restrict__ out, const T* __restrict__ in, i64 B, i64 R,
                                                            i64 C, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
  constexpr int E = sizeof(T), V = 16 / E, P = 4 / E;
  constexpr int CH = TC * E / 16, XW = CH < 8 ? CH : 8, PITCH = CH * 16;  // chunks and bytes a tile row
  constexpr int LOADS = TR * CH / THREADS;
  constexpr int NQ = TR / V, JB = NQ / 8, WARPS = THREADS / 32;
  constexpr int ITEMS = JB * CH / WARPS;  // warp-wide read items (8 chunks x 4 units) per warp
  static_assert(E <= 4 && CH >= 4 && (CH & (CH - 1)) == 0 && NQ % 8 == 0, "rows of 4+ chunks, 8V-row groups");
  static_assert(TR * CH % THREADS == 0 && JB * CH % WARPS == 0, "threads must divide the tile evenly");
  __shared__ uint4 tile[TR * CH];
  const unsigned char* tbytes = reinterpret_cast<const unsigned char*>(tile);
  const TileGrid g(B, R, C, TR, TC);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, j = lane & 7, gq = lane >> 3;
  for (i64 t = blockIdx.x; t < g.ntiles; t += gridDim.x) {
    i64 b, r0, c0;
    g.at(t, TR, TC, b, r0, c0);
    const int nr = (int)min((i64)TR, R - r0), nc = (int)min((i64)TC, C - c0);
    const T* src = in + b * in_sb + r0 * in_sr + c0;
    // every load issued before the first shift (slots outside the tile's rows or columns read `safe`)
    const uint4* safe = reinterpret_cast<const uint4*>(reinterpret_cast<unsigned long long>(src) & ~15ull);
    // (a row's place within 16 bytes, s, is taken from its pointer again at the shift: 4 registers fewer)
    uint4 w0[LOADS], w1[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int idx = threadIdx.x + i * THREADS, row = idx / CH, k = idx % CH;
      load_window<E, kInAligned>(src + row * in_sr + k * V, row < nr && k * V < nc, k * V, nc, safe, w0[i], w1[i]);
    }
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int idx = threadIdx.x + i * THREADS, row = idx / CH, k = idx % CH;
      uint4 v = w0[i];
      if constexpr (!kInAligned)
        v = shift_window<E>(v, w1[i], (unsigned)(reinterpret_cast<unsigned long long>(src + row * in_sr) & 15));
      tile[row * CH + (k ^ ((row / V) & (XW - 1)))] = v;
    }
    __syncthreads();
    T* dst = out + b * out_sb + r0;
    // one item at a time where the input side's two loads a chunk already take 32 registers (the 64 a
    // thread of 4 blocks an SM then hold the rest without spilling)
#pragma unroll(kInAligned ? ITEMS : 1)
    for (int it = 0; it < ITEMS; ++it) {
      const int item = warp + it * WARPS, q = item % JB * 8 + j, unit = item / JB * 4 + gq;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const int cc = unit * P + p;
        if (cc >= nc) continue;
        T* row = dst + (c0 + cc) * out_sc;  // output row c0 + cc, from tile row 0
        const int o = kOutAligned ? 0 : (int)((reinterpret_cast<unsigned long long>(row) & 15) / E);
        const int c16 = cc * E >> 4, within = cc * E & 15;
        // shared byte offsets of element 0 for e >= o (swizzle q) and e < o (swizzle q - 1; chunk 0
        // wraps to the column's last rows)
        const int a0 = (q * V - o) * PITCH + ((c16 ^ (q & (XW - 1))) << 4) + within;
        const int a1 = (q * V - o + (q == 0 ? TR : 0)) * PITCH + ((c16 ^ ((q - 1) & (XW - 1))) << 4) + within;
        unsigned v[V];
#pragma unroll
        for (int e = 0; e < V; ++e) v[e] = *reinterpret_cast<const T*>(tbytes + (e < o ? a1 : a0) + e * PITCH);
        const int first = q * V - o;  // tile row of element 0 of a whole chunk
        if ((q > 0 || o == 0) && first + V <= nr) store16(row + first, pack_elems<E, V>(v));
      }
    }
    // The elements no whole chunk holds, each column's head (before its first 16-byte boundary) and tail
    // (after its last whole chunk), element by element and spread over every thread: left to the chunk's
    // lane (up to V stores while the warp's other lanes waited) they cost the misaligned outputs a third
    // of their rate.
    for (int t = threadIdx.x; t < TC * 2 * V; t += THREADS) {
      const int cc = t / (2 * V), slot = t - cc * 2 * V;
      if (cc >= nc) break;
      T* row = dst + (c0 + cc) * out_sc;
      const int o = kOutAligned ? 0 : (int)((reinterpret_cast<unsigned long long>(row) & 15) / E);
      const int head = o == 0 ? 0 : min(V - o, nr);                // rows [0, head)
      const int tail = max(head, (nr + o) / V * V - o);             // rows [tail, nr)
      const int tr = slot < V ? slot : tail + slot - V;
      if (slot < V ? tr < head : tr < nr) {
        const int c16 = cc * E >> 4, within = cc * E & 15;
        row[tr] = *reinterpret_cast<const T*>(tbytes + (tr * CH + (c16 ^ ((tr / V) & (XW - 1)))) * 16 + within);
      }
    }
    __syncthreads();  // the next tile overwrites the buffer
  }
}

// Rung best where output rows do not start on 16-byte boundaries: the skew tile. The window tile builds
// such rows' whole chunks from V single-element shared reads each and stores their heads and tails
// element by element (55-75% of a copy); here every output chunk is one aligned STG.128 from two 16-byte
// shared reads, because each tile follows its output rows' own 16-byte grids.
// Tiles: tile s of a column block loads input rows [s*A - V, s*A + A) (TR = A + V rows, NQ = TR / V
// groups of V rows) and writes, for each column c, the A output elements from row s*A - o_c, where o_c
// is the place of output row c's start within 16 bytes, in elements: that range starts on a 16-byte
// boundary, holds A / V whole chunks and lies inside the loaded rows for every o_c < V. Neighbouring
// tiles share V loaded rows (L2 hits: the tile above runs at about the same time); only a matrix's first
// and last tiles hold partial chunks, stored element by element.
// Load: a thread reads V rows of one 16-byte column chunk k (funnel-shifted where input rows are
// misaligned, as in the window tile), transposes the V x V block in registers (pack_column) and stores V
// output-major chunks: shared chunk (column c, row group m) at c * NQ + (m ^ (c / V % 8)). The eight
// lanes of a quarter-warp hold eight k of one m (one input line): eight swizzles, no conflict.
// Store: slot (c, q) (q < NQ - 1; a column's last slot idles, so quarter-warps never straddle two
// columns) takes loaded positions [(q + 1) * V - o_c, + V), in row groups m and m + 1, shifts them into
// one vector and stores it at output row s*A + q*V - o_c. Eight consecutive q read eight swizzles.
// kInAligned: every input row starts on a 16-byte boundary (the host's promise): one load a row.
// Launch bound: 5 blocks of 128 threads (2-byte elements) or 4 of 256 (4-byte) an SM at least, 64-80 KB
// of loads in flight.
template <typename T, int TR, int TC, int THREADS, bool kInAligned>
__global__ void __launch_bounds__(THREADS, (sizeof(T) == 2 ? 640 : 1024) / THREADS) transpose_skew(T* __restrict__ out, const T* __restrict__ in, i64 B, i64 R,
                                                          i64 C, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
  constexpr int E = sizeof(T), V = 16 / E, EU = 4 / E, CH = TC * E / 16, NQ = TR / V, A = TR - V;
  constexpr int UNITS = NQ * CH, UPT = UNITS / THREADS, ITEMS = TC * NQ / THREADS;
  static_assert(E <= 4 && NQ % 8 == 0 && CH >= 1 && UNITS % THREADS == 0 && TC * NQ % THREADS == 0,
                "groups of 8 row chunks, threads dividing the tile evenly");
  __shared__ uint4 tile[TC * NQ];
  const TileGrid g(B, R + V - 1, C, A, TC);  // tiles cover rows [-o_c, R) of every output row
  for (i64 t = blockIdx.x; t < g.ntiles; t += gridDim.x) {
    i64 b, r0, c0;
    g.at(t, A, TC, b, r0, c0);
    const int nc = (int)min((i64)TC, C - c0);
    const T* src = in + b * in_sb + c0;
    const uint4* safe = reinterpret_cast<const uint4*>(reinterpret_cast<unsigned long long>(src) & ~15ull);
#pragma unroll
    for (int u = 0; u < UPT; ++u) {
      const int unit = threadIdx.x + u * THREADS, m = unit / CH, k = unit % CH;
      uint4 w0[V], w1[V];
#pragma unroll
      for (int e = 0; e < V; ++e) {  // every load issued before the first shift, as in the window tile
        const i64 r = r0 - V + m * V + e;
        load_window<E, kInAligned>(src + r * in_sr + k * V, k * V < nc && r >= 0 && r < R, k * V, nc, safe, w0[e], w1[e]);
      }
      // row e's place within 16 bytes, from the first row's and the stride's (32-bit: no pointer kept)
      const unsigned s0 = (unsigned)reinterpret_cast<unsigned long long>(src + (r0 - V + m * V) * in_sr),
                     ds = (unsigned)(in_sr * E);
      unsigned units[4][V];  // units[i][e]: 4-byte unit i of row e
#pragma unroll
      for (int e = 0; e < V; ++e) {
        uint4 v = w0[e];
        if constexpr (!kInAligned) v = shift_window<E>(v, w1[e], (s0 + e * ds) & 15);
        units[0][e] = v.x, units[1][e] = v.y, units[2][e] = v.z, units[3][e] = v.w;
      }
#pragma unroll
      for (int j = 0; j < V; ++j)  // column k*V + j, rows m*V .. m*V + V - 1 of the loaded rows
        tile[(k * V + j) * NQ + (m ^ (k & 7))] = pack_column<E>(units[j / EU], j % EU);
    }
    __syncthreads();
    T* dst = out + b * out_sb + c0 * out_sc;
#pragma unroll 2  // fully unrolled, the items' addresses spill at the launch bound
    for (int it = 0; it < ITEMS; ++it) {
      const int slot = threadIdx.x + it * THREADS, c = slot / NQ, q = slot % NQ;
      if (q == NQ - 1 || c >= nc) continue;
      T* row = dst + c * out_sc;
      const int o = (int)((reinterpret_cast<unsigned long long>(row) & 15) / E);
      const int pos = (q + 1) * V - o, m = pos / V, sw = (c / V) & 7;
      const uint4 v = shift_window<E>(tile[c * NQ + (m ^ sw)], tile[c * NQ + (min(m + 1, NQ - 1) ^ sw)],
                                      (unsigned)(pos % V * E));
      const i64 r = r0 + q * V - o;  // output row of the chunk's first element
      if (r >= 0 && r + V <= R) {
        store16(row + r, v);
      } else {  // a matrix's first or last chunk of this row: the elements inside it
        const unsigned x[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (r + e >= 0 && r + e < R) row[r + e] = (T)(x[e / EU] >> (e % EU * 8 * E));
      }
    }
    __syncthreads();  // the next tile overwrites the buffer
  }
}

}  // namespace kk
