// The copy-only pipeline of the tensor-core kernels (mma_pipe.cu, dmma.cu): an operand's stage tile
// in XOR-swizzled shared memory filled by one cp.async a 16-byte chunk, and the epilogue through
// shared memory.
//
// A k-major tile is [r][k], KB / 16 chunks a row; an m- or n-major one [k][r], R * size / 16 chunks a
// row. Chunk c of a row lies at c ^ swz(row) (rows are whole multiples of 128 bytes), chosen so that the
// lanes of one fragment load fall in distinct 16-byte bank groups; a warp's copies write whole rows, so
// any permutation within a row leaves them conflict-free. Edges: rows past M or N and K past the
// operand are zero-filled by the copies' source size.
#pragma once
#include "mma.cuh"

namespace kk {
namespace pipe {

// The output tile of this block: blocks handed out in groups of 8 along M, so that the blocks running
// together share B's columns in L2. The block index is read through asm volatile, so that a call after
// the main loop recomputes the origin (a few integer instructions) instead of the compiler keeping it
// live, or spilled, across the loop for the epilogue.
template <int BM, int BN>
__device__ __forceinline__ void tile_origin(int M, int N, int& m0, int& n0) {
  unsigned b;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(b));
  const int bx = (int)b, tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int width = 8 * tiles_n, first = (bx / width) * 8, gsize = min(tiles_m - first, 8);
  m0 = (first + (bx % width) % gsize) * BM;
  n0 = ((bx % width) / gsize) * BN;
}

// One operand's tile of a stage and the thread's share of its copies: R rows (M or N) x KB bytes of
// K. kSmemK: stored [r][k]; else [k][r]. The thread copies CH chunks, all in one chunk column c and
// RSTEP rows apart.
template <typename T, int R, int KB, int THREADS, bool kSmemK>
struct PipeTile {
  static constexpr int V = 16 / (int)sizeof(T), KE = KB / (int)sizeof(T);
  static constexpr int ROWS = kSmemK ? R : KE, C = kSmemK ? KB / 16 : R / V;
  static constexpr int CH = ROWS * C / THREADS, RSTEP = THREADS / C, ELEMS = ROWS * C * V;
  static_assert(ROWS * C % THREADS == 0 && THREADS % C == 0, "whole chunk columns a thread");
  static_assert(C >= 8 && (C & (C - 1)) == 0, "8 chunks a row or more: the swizzle spans 8 bank groups");
  static_assert(CH <= 32, "one mask bit a chunk");

  // chunk c of row `row`: XORed with bits of the row so that the rows one fragment load reads fall in
  // distinct bank groups: 8 rows at one chunk (ldmatrix, 16-bit and k-major tiles); 4 consecutive rows
  // at two neighbouring chunks (tf32's [k][n] B, 16-byte loads of k row q at chunk g of lane g * 4 + q,
  // 8 lanes a phase; every fp64 fragment, 8-byte loads of 4 rows a half-warp)
  static constexpr int PERIOD = sizeof(T) == 8 || (!kSmemK && sizeof(T) == 4) ? 4 : 8;
  __device__ __forceinline__ static int swz(int row) { return PERIOD == 8 ? row & 7 : (row & 3) << 1; }
  __device__ __forceinline__ static int off(int row, int c) { return row * C * V + (c ^ swz(row)) * V; }
  __device__ __forceinline__ static T* chunk(T* s, int row, int c) { return s + row * C * V + (c ^ swz(row)) * V; }
  // the element offset of the thread's chunk i in the tile (one add where the rows share a swizzle)
  __device__ __forceinline__ int offset(int i) const {
    if constexpr (RSTEP % PERIOD == 0) return soff + i * RSTEP * C * V;
    else return (row0 + i * RSTEP) * C * V + (c ^ swz(row0 + i * RSTEP)) * V;
  }

  const T* base;  // the operand (a valid address for the copies that read nothing)
  const T* g;     // the thread's first chunk of the next stage to load
  i64 gstep;      // elements between the thread's chunks in memory (RSTEP rows)
  int soff;       // the first chunk's element offset in the tile
  int row0, c;    // the thread's first row and its chunk column
  int first;      // k-major: the chunk's first k in a stage; [k][r]: the first chunk's k row
  int rbytes;     // [k][r]: bytes of the chunk inside the operand along r (0 to 16)
  unsigned rmask; // [r][k]: bit i set where chunk i's row lies inside the operand

  // the tile at rows r0.. of an operand of `rows` rows (M or N), leading dimension ld
  __device__ __forceinline__ void init(const T* p, i64 ld, int r0, int rows) {
    row0 = (int)threadIdx.x / C;
    c = (int)threadIdx.x % C;
    base = p;
    soff = row0 * C * V + (c ^ swz(row0)) * V;
    gstep = (i64)RSTEP * ld;
    if constexpr (kSmemK) {
      g = p + (i64)(r0 + row0) * ld + c * V;
      first = c * V;
      rmask = 0;
#pragma unroll
      for (int i = 0; i < CH; ++i) rmask |= (r0 + row0 + i * RSTEP < rows ? 1u : 0u) << i;
      rbytes = 0;
    } else {
      g = p + (i64)row0 * ld + r0 + c * V;
      first = row0;
      rbytes = max(0, min(rows - (r0 + c * V), V)) * (int)sizeof(T);
      rmask = 0;
    }
  }

  // Copies the stage at k0 into tile s (K: the operand's depth) and moves on to the next stage;
  // kstep: elements from one stage to the next in memory (KE k-major, KE * ld else). A stage wholly
  // inside the operand (all but the edge blocks' and the last stage) takes unpredicated copies.
  __device__ __forceinline__ void load(T* s, int k0, int K, i64 kstep) {
    // the step read anew each stage: left visible, the compiler keeps a 64-bit pointer a chunk live
    // across the main loop (24 registers at 12 chunks)
    i64 step;
    asm volatile("mov.b64 %0, %1;" : "=l"(step) : "l"(gstep));
    const bool inside = (kSmemK ? rmask == (CH == 32 ? ~0u : (1u << CH) - 1) : rbytes == 16) && k0 + KE <= K;
    if (inside) {
#pragma unroll
      for (int i = 0; i < CH; ++i) mma::cp_async16(s + offset(i), g + i * step);
    } else {
#pragma unroll
      for (int i = 0; i < CH; ++i) {
        int bytes;
        if constexpr (kSmemK) {
          bytes = (rmask >> i) & 1 ? max(0, min(K - (k0 + first), V)) * (int)sizeof(T) : 0;
        } else {
          bytes = k0 + first + i * RSTEP < K ? rbytes : 0;
        }
        mma::cp_async16(s + offset(i), bytes ? g + i * step : base, bytes);
      }
    }
    g += kstep;
  }
};

// The pipeline's start: stages 0 .. STAGES - 2 of both operands (A's tile, then B's, kstep as
// PipeTile::load's) into the slots of the same numbers, a commit group each (an empty one past the
// last K tile, so that the wait counts stay those of the main loop). The main loops' refills stay
// written out: through a helper of this kind, ptxas scheduled those loops differently.
template <int STAGES, typename TA, typename TB, typename T>
__device__ __forceinline__ void load_prologue(TA& la, TB& lb, T* smem, int ktiles, int K, i64 astep, i64 bstep) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) {
      la.load(smem + s * (TA::ELEMS + TB::ELEMS), s * TA::KE, K, astep);
      lb.load(smem + s * (TA::ELEMS + TB::ELEMS) + TA::ELEMS, s * TA::KE, K, bstep);
    }
    mma::commit();
  }
}

// The epilogue through shared memory: each warp writes its accumulators to a BM x BN tile (rows of
// BN + 8 values: the 8-byte writes of a half-warp's 4 rows fall in distinct banks), then the block
// writes C a row at a time in 16-byte chunks, the bias (and EPI's activation and residual, the
// residual read as 16-byte chunks of the same columns) applied in the accumulator type before the one
// rounding, chunks crossing N or off 16-byte alignment element by element. Against per-fragment
// 2-element stores it keeps the register file free of the epilogue's addresses (the 64x64 warp tiles
// spilled with them) and stores whole 32-byte sectors. Shared memory: BM * (BN + 8) accumulators.
template <typename Tr, int BM, int BN, int WM, int WN, int THREADS, int EPI, bool kPermN = false, int MT, int NT>
__device__ __forceinline__ void store_tile(const typename Tr::Acc (&acc)[MT][NT][4], typename Tr::Acc* st,
                                           typename Tr::Out* c, const mm::Epi<typename Tr::Out>& ep,
                                           const mm::Problem& p, int m0, int n0) {
  using Acc = typename Tr::Acc;
  using Out = typename Tr::Out;
  // kPermN: rows of BN + 4, where a quarter-warp's 16-byte writes (rows g and g + 1, 4 chunks each) fall
  // in distinct bank groups
  constexpr int P = kPermN ? BN + 4 : BN + 8, OV = 16 / (int)sizeof(Out), CPR = BN / OV;
  static_assert(BN % OV == 0 && (BM * CPR) % THREADS == 0, "whole 16-byte chunks a thread");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int wm0 = (warp / (BN / WN)) * WM, wn0 = (warp % (BN / WN)) * WN;
  if constexpr (kPermN) {
    // n8 tile 4G + t holds columns wn0 + 32G + 4c + t (mma_pipe.cu's tf32 [k][n] B): accumulator e of
    // tile 4G + t is column 4 (2q + (e & 1)) + t, so four tiles' make one 16-byte write
    static_assert(sizeof(Acc) == 4 && NT % 4 == 0, "four fp32 tiles a 16-byte write");
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int G = 0; G < NT / 4; ++G)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          Acc* s0 = st + (wm0 + mt * 16 + g + (e >> 1) * 8) * P + wn0 + 32 * G + 4 * (2 * q + (e & 1));
          *reinterpret_cast<float4*>(s0) =
              make_float4(acc[mt][4 * G][e], acc[mt][4 * G + 1][e], acc[mt][4 * G + 2][e], acc[mt][4 * G + 3][e]);
        }
  } else {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        Acc* s0 = st + (wm0 + mt * 16 + g) * P + wn0 + nt * 8 + 2 * q;
        s0[0] = acc[mt][nt][0];
        s0[1] = acc[mt][nt][1];
        s0[8 * P] = acc[mt][nt][2];
        s0[8 * P + 1] = acc[mt][nt][3];
      }
  }
  __syncthreads();
  // two chunks a thread in flight for the plain epilogue; one with a fused activation and residual, whose
  // wider live ranges spilled 4 bytes at tf32's 128x128 tile on sm_80 when two were interleaved
  constexpr int kUnroll = EPI == mm::kPlain ? 2 : 1;
#pragma unroll kUnroll
  for (int idx = threadIdx.x; idx < BM * CPR; idx += THREADS) {
    const int row = idx / CPR, col = (idx % CPR) * OV, m = m0 + row, n = n0 + col;
    if (m >= p.M || n >= p.N) continue;
    Acc v[OV];
#pragma unroll
    for (int j = 0; j < OV; ++j) v[j] = st[row * P + col + j];
    if (ep.bias) {
#pragma unroll
      for (int j = 0; j < OV; ++j)
        if (n + j < p.N) v[j] += mm::widen<Acc>(ep.bias[n + j]);
    }
    if constexpr (EPI != mm::kPlain) {
#pragma unroll
      for (int j = 0; j < OV; ++j) v[j] = mm::activate<EPI>(v[j]);
      if (ep.res) {
        const Out* r = ep.res + (i64)m * ep.ldr + n;
        Out rv[OV];
        if (n + OV <= p.N && reinterpret_cast<unsigned long long>(r) % 16 == 0) {
          const uint4 w = *reinterpret_cast<const uint4*>(r);
          memcpy(rv, &w, 16);
        } else {
#pragma unroll
          for (int j = 0; j < OV; ++j) rv[j] = n + j < p.N ? r[j] : mm::zero_of<Out>();
        }
#pragma unroll
        for (int j = 0; j < OV; ++j) v[j] += mm::widen<Acc>(rv[j]);
      }
    }
    Out* dst = c + (i64)m * p.ldc + n;
    Out o[OV];
#pragma unroll
    for (int j = 0; j < OV; ++j) o[j] = mm::narrow<Out>(v[j]);
    if (n + OV <= p.N && reinterpret_cast<unsigned long long>(dst) % 16 == 0) {
      uint4 w;
      memcpy(&w, o, 16);
      *reinterpret_cast<uint4*>(dst) = w;
    } else {
#pragma unroll
      for (int j = 0; j < OV; ++j)
        if (n + j < p.N) dst[j] = o[j];
    }
  }
  __syncthreads();  // the tile's memory is the next batch entry's stages
}

}  // namespace pipe

}  // namespace kk
