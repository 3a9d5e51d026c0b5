// Rearrangement kernels (transpose and permute): the batched-transpose rungs naive, shared/padded and wide,
// the skinny transposes and a strided gather. The best rung's window and skew tiles (16-byte accesses at
// any alignment) are in transpose_window.cu; the tile kernels' problem statement, their tile order
// (TileGrid), the register transpose (pack_column) and store16 are in transpose.cuh.
//
// Nothing here looks at values: every dtype moves as the unsigned integer of its size (uint8 for
// bool/int8/fp8, uint16 for fp16/bf16, ..., uint64 for fp64/complex64; uint4 for 16-byte runs in
// the gather), so one instantiation per element size serves every dtype, bit for bit.
#include "transpose.cuh"

namespace kk {

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
