// Rearrangement kernels (transpose and permute): the batched-transpose ladder and a strided gather.
//
// Nothing here looks at values: every dtype moves as the unsigned integer of its size (uint8 for
// bool/int8/fp8, uint16 for fp16/bf16, ..., uint64 for fp64/complex64; uint4 for 16-byte runs in
// the gather), so one instantiation per element size serves every dtype, bit for bit.
//
// The tile kernels share one problem statement, a batch of 2D transposes with free strides:
//   out[b*out_sb + c*out_sc + r] = in[b*in_sb + r*in_sr + c]   for b < B, r < R, c < C
// (strides in elements; the unit-stride dims are the input's columns and the output's rows). A
// contiguous (B, R, C) -> (B, C, R) is in_sb = out_sb = R*C, in_sr = C, out_sc = R; NCHW -> NHWC is
// that with B = N, R = C, C = H*W. Tiles are numbered b-major, then tile rows, then tile columns,
// over a 1D grid (no 65535 limit on any dimension); a block loops if the grid is short of tiles.
#include "common.cuh"

namespace kk {

struct TileGrid {
  i64 ntr, ntc, ntiles;
  __device__ TileGrid(i64 B, i64 R, i64 C, int TR, int TC)
      : ntr((R + TR - 1) / TR), ntc((C + TC - 1) / TC), ntiles(B * ntr * ntc) {}
  // Tile t -> its batch and its first row / column (64-bit divisions, once per tile).
  __device__ void at(i64 t, int TR, int TC, i64& b, i64& r0, i64& c0) const {
    if (ntiles <= 0xffffffffLL) {  // the common case: 32-bit divides, not the 64-bit subroutine
      const unsigned tt = (unsigned)t, nc = (unsigned)ntc, nr = (unsigned)ntr, rest = tt / nc, bb = rest / nr;
      c0 = (i64)(tt - rest * nc) * TC;
      r0 = (i64)(rest - bb * nr) * TR;
      b = bb;
      return;
    }
    const i64 rest = t / ntc;
    c0 = (t - rest * ntc) * TC;
    b = rest / ntr;
    r0 = (rest - b * ntr) * TR;
  }
};

// Rung naive: one element per thread, read along the input row (coalesced), written straight to its
// transposed place: consecutive lanes write addresses R elements apart, so every warp's store touches
// 32 different sectors.
template <typename T>
__global__ void __launch_bounds__(256) transpose_naive(T* __restrict__ out, const T* __restrict__ in, i64 B, i64 R,
                                                       i64 C, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
  constexpr int TR = 8, TC = 32;  // a 32 x 8 block covers a tile of 8 rows x 32 columns
  const TileGrid g(B, R, C, TR, TC);
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  for (i64 t = blockIdx.x; t < g.ntiles; t += gridDim.x) {
    i64 b, r0, c0;
    g.at(t, TR, TC, b, r0, c0);
    const i64 r = r0 + ty, c = c0 + tx;
    if (r < R && c < C) out[b * out_sb + c * out_sc + r] = in[b * in_sb + r * in_sr + c];
  }
}

// Rungs shared and padded (the classic shared-memory transpose): a 32 x 32 tile read along input rows
// into shared memory, then read down its columns so that the global store runs along output rows; both
// global accesses are coalesced. The column read of an unpadded tile (PAD = 0) conflicts: for 4-byte
// elements the 32 lanes are 32 words apart, all in one bank (32-way). Padding skews each row by one
// 4-byte bank word, an odd number of words per row, so the 32 lanes land in 32 banks: PAD = 1 element
// for 4 and 8 bytes (8: a half-warp per wavefront), but 2 for 2-byte and 4 for 1-byte elements, where a
// one-element pad leaves 2-way conflicts (docs/design/rearrangement.md). 256 threads, 4 elements a thread.
template <typename T, int PAD>
__global__ void __launch_bounds__(256) transpose_tile(T* __restrict__ out, const T* __restrict__ in, i64 B, i64 R,
                                                      i64 C, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
  constexpr int TILE = 32;
  __shared__ T tile[TILE][TILE + PAD];
  const TileGrid g(B, R, C, TILE, TILE);
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  for (i64 t = blockIdx.x; t < g.ntiles; t += gridDim.x) {
    i64 b, r0, c0;
    g.at(t, TILE, TILE, b, r0, c0);
    const T* src = in + b * in_sb;
#pragma unroll
    for (int i = 0; i < TILE; i += 8) {
      const i64 r = r0 + ty + i, c = c0 + tx;
      if (r < R && c < C) tile[ty + i][tx] = src[r * in_sr + c];
    }
    __syncthreads();
    T* dst = out + b * out_sb;
#pragma unroll
    for (int i = 0; i < TILE; i += 8) {
      const i64 c = c0 + ty + i, r = r0 + tx;
      if (c < C && r < R) dst[c * out_sc + r] = tile[tx][ty + i];
    }
    __syncthreads();  // the next tile overwrites the buffer
  }
}

// Rung wide: 16-byte global accesses both ways and a swizzled shared tile.
// Load: each thread reads 16-byte vectors (V = 16/E elements) along input rows and stores them whole
// (STS.128). Chunk ch of tile row `row` sits at chunk position ch ^ ((row / V) & 7): an XOR inside
// each aligned group of 8 chunks (128 bytes, all 32 banks), so a quarter-warp's 8 chunks of one row
// still fill 32 banks. Read: a thread builds P output vectors (P = U/E columns, U = max(4, E) bytes
// per shared read) from V consecutive tile rows: V reads of U bytes down one column of units, then a
// register transpose (byte/half permutes for 1- and 2-byte elements). Lanes j = lane % 8 take 8
// consecutive groups of V rows (one 128-byte output line), lanes g = lane / 8 take 4 neighbouring
// column units; j is also the swizzle of all of a thread's rows, so the 8 j's hit 8 different chunk
// positions and every read is conflict-free (128 bytes per wavefront for U = 8, 4/8/32 lanes sharing
// words for smaller units). Needs R, C and every stride to be multiples of V and 16-byte aligned
// pointers; the host checks, and the best rung falls back to the padded tile otherwise.
template <int E> struct Unit { using type = unsigned int; };
template <> struct Unit<8> { using type = unsigned long long; };

// A plain 16-byte global store (STG.E.128). A uint4 assignment compiles to four STG.E for 4-byte
// elements (the SASS claims check the width) and __stwb to STG.E.128.STRONG.SM. No "memory" clobber:
// nothing in these kernels reads what they store, so later shared reads may move above it.
__device__ __forceinline__ void store16(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}

// Output vector p of a thread's V units (V rows x P columns): column p of the little V x P block.
template <int E, typename W>
__device__ __forceinline__ uint4 pack_column(const W* w, int p) {
  if constexpr (E == 8) {  // two 8-byte elements: the vector is the two units
    return make_uint4((unsigned)w[0], (unsigned)(w[0] >> 32), (unsigned)w[1], (unsigned)(w[1] >> 32));
  } else if constexpr (E == 4) {
    return make_uint4(w[0], w[1], w[2], w[3]);
  } else if constexpr (E == 2) {  // word q: halves p of rows 2q and 2q+1
    const unsigned sel = p == 0 ? 0x5410 : 0x7632;
    return make_uint4(__byte_perm(w[0], w[1], sel), __byte_perm(w[2], w[3], sel), __byte_perm(w[4], w[5], sel),
                      __byte_perm(w[6], w[7], sel));
  } else {  // E == 1, word q: bytes p of rows 4q..4q+3, two permutes (pairs of rows, then pairs of pairs)
    const unsigned lo = p < 2 ? 0x5140 : 0x7362, hi = (p & 1) ? 0x7632 : 0x5410;
    unsigned q[4];
#pragma unroll
    for (int m = 0; m < 4; ++m)
      q[m] = __byte_perm(__byte_perm(w[4 * m], w[4 * m + 1], lo), __byte_perm(w[4 * m + 2], w[4 * m + 3], lo), hi);
    return make_uint4(q[0], q[1], q[2], q[3]);
  }
}

template <typename T, int TR, int TC, int THREADS>
__global__ void __launch_bounds__(THREADS) transpose_wide(T* __restrict__ out, const T* __restrict__ in, i64 B, i64 R,
                                                          i64 C, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
  constexpr int E = sizeof(T), V = 16 / E, U = E < 4 ? 4 : E, P = U / E;
  constexpr int CH = TC * E / 16;                // 16-byte chunks per tile row
  constexpr int LOADS = TR * CH / THREADS;       // vectors per thread in the load phase
  constexpr int JB = TR / (8 * V), CB = TC / (4 * P), WARPS = THREADS / 32;
  constexpr int ITEMS = JB * CB / WARPS;         // warp-wide read items per warp
  static_assert(TC * E % 128 == 0 && TR % (8 * V) == 0, "tile rows must span whole 128-byte groups");
  static_assert(TR * CH % THREADS == 0 && JB * CB % WARPS == 0, "threads must divide the tile evenly");
  using W = typename Unit<E>::type;
  __shared__ uint4 tile[TR * CH];
  const unsigned char* tbytes = reinterpret_cast<const unsigned char*>(tile);
  const TileGrid g(B, R, C, TR, TC);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, j = lane & 7, gq = lane >> 3;
  for (i64 t = blockIdx.x; t < g.ntiles; t += gridDim.x) {
    i64 b, r0, c0;
    g.at(t, TR, TC, b, r0, c0);
    const T* src = in + b * in_sb;
    // Every load is issued before the first shared store: an out-of-range vector reads the tile's
    // first vector instead (always in range), so the loads need no predicate the scheduler would
    // otherwise serialise them on, and what such a lane stores is never written out.
    const uint4* vsrc[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int idx = threadIdx.x + i * THREADS, row = idx / CH, ch = idx % CH;
      const i64 r = r0 + row, c = c0 + ch * V;
      vsrc[i] = reinterpret_cast<const uint4*>(src + ((r < R && c < C) ? r * in_sr + c : r0 * in_sr + c0));
    }
    uint4 v[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) v[i] = __ldg(vsrc[i]);
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int idx = threadIdx.x + i * THREADS, row = idx / CH, ch = idx % CH;
      tile[row * CH + (ch ^ ((row / V) & 7))] = v[i];
    }
    __syncthreads();
    T* dst = out + b * out_sb;
    W w[ITEMS][V];  // every shared read first, then the stores: no store waits on a later read
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const int item = warp + it * WARPS, row0 = (item % JB * 8 + j) * V, byte = (item / JB * 4 + gq) * P * E;
      const unsigned char* base = tbytes + (((byte >> 4) ^ j) << 4) + (byte & 15);
#pragma unroll
      for (int k = 0; k < V; ++k) w[it][k] = *reinterpret_cast<const W*>(base + (row0 + k) * (CH * 16));
    }
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const int item = warp + it * WARPS, row0 = (item % JB * 8 + j) * V, col = (item / JB * 4 + gq) * P;
      const i64 r = r0 + row0;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const i64 c = c0 + col + p;
        if (c < C && r < R) store16(dst + c * out_sc + r, pack_column<E>(w[it], p));
      }
    }
    __syncthreads();  // the next tile overwrites the buffer
  }
}

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
    // every load issued before the first shift: a slot outside the tile's rows or columns reads the
    // aligned chunk of the tile's first element instead (never written out), so no load waits on a predicate
    const uint4* safe = reinterpret_cast<const uint4*>(reinterpret_cast<unsigned long long>(src) & ~15ull);
    // (a row's place within 16 bytes, s, is taken from its pointer again at the shift: 4 registers fewer)
    uint4 w0[LOADS], w1[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int idx = threadIdx.x + i * THREADS, row = idx / CH, k = idx % CH;
      const unsigned long long a = reinterpret_cast<unsigned long long>(src + row * in_sr + k * V);
      const uint4* c = reinterpret_cast<const uint4*>(a & ~15ull);
      const bool ok0 = row < nr && k * V < nc;
      w0[i] = __ldg(ok0 ? c : safe);
      if constexpr (!kInAligned) {  // W1 holds an element of the row: its first one, k*V + (16 - s)/E, is < nc
        const unsigned s = (unsigned)(a & 15);
        const bool ok1 = ok0 && s != 0 && k * V + (int)((16 - s) / E) < nc;
        w1[i] = __ldg(ok1 ? c + 1 : (ok0 ? c : safe));
      }
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

// Skinny transposes (best rung): a tile kernel wastes most of its tile when one side has 2 to 4
// elements (NCHW -> NHWC of an RGB image: R = 3), so each thread moves whole 16-byte vectors and
// transposes an N x V block in registers (V = 16/E; indices are compile-time, so no local memory).
// Rows: R == N, output rows of N contiguous elements (out_sc == N). A thread loads V columns of each
// of the N rows (N coalesced 16-byte loads) and stores N*V contiguous output elements (N stores).
// Cols: C == N, input rows of N contiguous elements (in_sr == N). A thread loads V whole input rows
// (N vectors) and stores V elements to each of the N output rows. The host checks alignment.
// Bits of element m of a run of 16-byte vectors, and a vector built from element bits: word
// selects and shifts with constant operands once unrolled (a byte-addressed view of the registers
// would put the array in local memory).
template <int E>
__device__ __forceinline__ unsigned long long elem_bits(const uint4* v, int m) {
  constexpr int V = 16 / E;
  const uint4& x = v[m / V];
  const int byte = (m % V) * E;
  auto word = [&](int w) -> unsigned { return w == 0 ? x.x : w == 1 ? x.y : w == 2 ? x.z : x.w; };
  if constexpr (E == 8) {
    return word(byte / 4) | ((unsigned long long)word(byte / 4 + 1) << 32);
  } else {
    return (word(byte / 4) >> (8 * (byte % 4))) & ((1ull << (8 * E)) - 1);
  }
}

template <int E, typename F>
__device__ __forceinline__ uint4 build_vec(F bits_of) {  // bits_of(i): the bits of element i
  unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 16 / E; ++i) {
    const unsigned long long b = bits_of(i);
    if constexpr (E == 8) {
      w[2 * i] = (unsigned)b;
      w[2 * i + 1] = (unsigned)(b >> 32);
    } else {
      w[i * E / 4] |= (unsigned)b << (8 * (i * E % 4));
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Thread t of B * n -> (batch, index of its vector within the batch); 32-bit divides when they fit.
__device__ __forceinline__ bool split_thread(i64 B, i64 n, i64& b, i64& j) {
  const i64 t = global_thread();
  if (t >= B * n) return false;
  if (B * n <= 0xffffffffLL) {
    b = (unsigned)t / (unsigned)n;
    j = (unsigned)t - (unsigned)b * (unsigned)n;
  } else {
    b = t / n;
    j = t - b * n;
  }
  return true;
}

template <typename T, int N>
__global__ void __launch_bounds__(256) transpose_skinny_rows(T* __restrict__ out, const T* __restrict__ in, i64 B,
                                                             i64 R, i64 C, i64 in_sb, i64 in_sr, i64 out_sb,
                                                             i64 out_sc) {
  constexpr int V = 16 / sizeof(T);
  i64 b, j;
  if (!split_thread(B, C / V, b, j)) return;
  const T* src = in + b * in_sb + j * V;
  uint4 v[N], o[N];
#pragma unroll
  for (int r = 0; r < N; ++r) v[r] = __ldg(reinterpret_cast<const uint4*>(src + r * in_sr));
#pragma unroll
  for (int q = 0; q < N; ++q)  // output element m = q*V + i is column m / N of row m % N
    o[q] = build_vec<sizeof(T)>([&](int i) { return elem_bits<sizeof(T)>(v + (q * V + i) % N, (q * V + i) / N); });
  T* dst = out + b * out_sb + j * V * N;
#pragma unroll
  for (int q = 0; q < N; ++q) store16(dst + q * V, o[q]);
}

template <typename T, int N>
__global__ void __launch_bounds__(256) transpose_skinny_cols(T* __restrict__ out, const T* __restrict__ in, i64 B,
                                                             i64 R, i64 C, i64 in_sb, i64 in_sr, i64 out_sb,
                                                             i64 out_sc) {
  constexpr int V = 16 / sizeof(T);
  i64 b, j;
  if (!split_thread(B, R / V, b, j)) return;
  const uint4* src = reinterpret_cast<const uint4*>(in + b * in_sb + j * V * N);
  uint4 v[N];
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = __ldg(src + k);
  T* dst = out + b * out_sb + j * V;
#pragma unroll
  for (int cc = 0; cc < N; ++cc)  // output element i of row cc is input row j*V + i, column cc
    store16(dst + cc * out_sc, build_vec<sizeof(T)>([&](int i) { return elem_bits<sizeof(T)>(v, i * N + cc); }));
}

// The general path: out (contiguous, n elements) gathered from any strided view of up to 6 dims,
// given innermost first (sizes[0] is the fastest-varying output dim). One element per thread of a
// grid-stride loop; Idx is 32-bit when the element count allows (a 32-bit divide is a handful of
// instructions, a 64-bit one a subroutine). T may be uint4: the host widens the element to 16 bytes
// where the innermost dim is a contiguous run on both sides, so row moves go at 16 bytes a thread.
template <typename T, typename Idx>
__global__ void __launch_bounds__(256) gather(T* __restrict__ out, const T* __restrict__ in, i64 n, int nd,
                                              i64 n0, i64 n1, i64 n2, i64 n3, i64 n4, i64 n5,
                                              i64 s0, i64 s1, i64 s2, i64 s3, i64 s4, i64 s5) {
  const Idx size[6] = {(Idx)n0, (Idx)n1, (Idx)n2, (Idx)n3, (Idx)n4, (Idx)n5};
  const i64 stride[6] = {s0, s1, s2, s3, s4, s5};
  for (i64 i = global_thread(); i < n; i += grid_threads()) {
    Idx rest = (Idx)i;
    i64 off = 0;
#pragma unroll
    for (int d = 0; d < 6; ++d) {
      if (d < nd) {
        const Idx q = rest / size[d];
        off += (i64)(rest - q * size[d]) * stride[d];
        rest = q;
      }
    }
    out[i] = in[off];
  }
}

}  // namespace kk
