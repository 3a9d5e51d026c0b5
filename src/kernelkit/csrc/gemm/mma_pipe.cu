// mma.sync fed by cp.async alone: the fast path of the mma rung for operands that 16-byte copies can
// read as they lie (aligned base, whole-vector leading dimension and batch stride; tf32 and int8
// k-major). Against the general kernel (mma.cu), which decides per chunk between a copy and an
// element-by-element load, every chunk here is one cp.async whose address advances by a constant a
// stage, and a stage is 128 bytes of K (four 32-byte mma steps a barrier instead of two). The loads
// of a stage then cost a few integer instructions a chunk, not tens: at 64x32 warp tiles and 64-byte
// stages the general kernel spent about as many issue slots on its loads as on its HMMAs.
//
// Shared memory: a stage holds an A and a B tile. A k-major tile is [r][k], 8 chunks of 16 bytes a
// row; an m- or n-major 16-bit tile is [k][r], R / 8 chunks a row, read by ldmatrix.trans. Chunk c of
// row `row` lies at c ^ (row & 7): the 8 rows an ldmatrix phase reads, and the 8 chunks of a row a
// warp's copies write, fall in 8 distinct 16-byte bank groups (rows are whole multiples of 128 bytes).
// Edges: rows past M or N and K past the operand are zero-filled by the copies' source size.
#include "mma.cuh"

namespace kk {
namespace pipe {

// One operand's tile of a stage and the thread's share of its copies: R rows (M or N) x KB bytes of
// K. kSmemK: stored [r][k]; else [k][r] (16-bit only). The thread copies CH chunks, all in one chunk
// column c and RSTEP rows apart (a multiple of the swizzle's period, so one swizzle serves them all).
template <typename T, int R, int KB, int THREADS, bool kSmemK>
struct PipeTile {
  static constexpr int V = 16 / (int)sizeof(T), KE = KB / (int)sizeof(T);
  static constexpr int ROWS = kSmemK ? R : KE, C = kSmemK ? KB / 16 : R / V;
  static constexpr int CH = ROWS * C / THREADS, RSTEP = THREADS / C, ELEMS = ROWS * C * V;
  static constexpr int PERIOD = kSmemK || sizeof(T) == 2 ? 8 : 4;  // rows after which the swizzle repeats
  static_assert(ROWS * C % THREADS == 0 && THREADS % C == 0 && RSTEP % PERIOD == 0, "whole chunk columns a thread");
  static_assert(C >= 8 && (C & (C - 1)) == 0, "8 chunks a row or more: the swizzle spans 8 bank groups");
  static_assert(CH <= 32, "one mask bit a chunk");

  // chunk c of row `row`: XORed with the row's low bits so that the rows one fragment load reads fall in
  // distinct bank groups: 8 rows at one chunk (ldmatrix), or for 32-bit [k][r] tiles 4 rows at two
  // neighbouring chunks (a tf32 B fragment read element-wise: k rows q, n columns g of a lane g * 4 + q)
  __device__ __forceinline__ static int swz(int row) { return kSmemK || sizeof(T) == 2 ? row & 7 : (row & 3) << 1; }
  __device__ __forceinline__ static T* chunk(T* s, int row, int c) { return s + row * C * V + (c ^ swz(row)) * V; }

  const T* base;  // the operand (a valid address for the copies that read nothing)
  const T* g;     // the thread's first chunk of the next stage to load
  i64 gstep;      // elements between the thread's chunks in memory (RSTEP rows)
  int soff;       // the first chunk's element offset in the tile
  int first;      // k-major: the chunk's first k in a stage; [k][r]: the first chunk's k row
  int rbytes;     // [k][r]: bytes of the chunk inside the operand along r (0 to 16)
  unsigned rmask; // [r][k]: bit i set where chunk i's row lies inside the operand

  // the tile at rows r0.. of an operand of `rows` rows (M or N), leading dimension ld
  __device__ __forceinline__ void init(const T* p, i64 ld, int r0, int rows) {
    const int row0 = (int)threadIdx.x / C, c = (int)threadIdx.x % C;
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
      for (int i = 0; i < CH; ++i) mma::cp_async16(s + soff + i * RSTEP * C * V, g + i * step);
    } else {
#pragma unroll
      for (int i = 0; i < CH; ++i) {
        int bytes;
        if constexpr (kSmemK) {
          bytes = (rmask >> i) & 1 ? max(0, min(K - (k0 + first), V)) * (int)sizeof(T) : 0;
        } else {
          bytes = k0 + first + i * RSTEP < K ? rbytes : 0;
        }
        mma::cp_async16(s + soff + i * RSTEP * C * V, bytes ? g + i * step : base, bytes);
      }
    }
    g += kstep;
  }
};

// The epilogue through shared memory: each warp writes its accumulators to a BM x BN tile (rows of
// BN + 8 values: the 8-byte writes of a half-warp's 4 rows fall in distinct banks), then the block
// writes C a row at a time in 16-byte chunks, the bias added in the accumulator type before the one
// rounding, chunks crossing N or off 16-byte alignment element by element. Against per-fragment
// 2-element stores it keeps the register file free of the epilogue's addresses (the 64x64 warp tiles
// spilled with them) and stores whole 32-byte sectors. Shared memory: BM * (BN + 8) accumulators.
template <typename Tr, int BM, int BN, int WM, int WN, int THREADS, int MT, int NT>
__device__ __forceinline__ void store_tile(const typename Tr::Acc (&acc)[MT][NT][4], typename Tr::Acc* st,
                                           typename Tr::Out* c, const typename Tr::Out* bias, const mm::Problem& p,
                                           int m0, int n0) {
  using Acc = typename Tr::Acc;
  using Out = typename Tr::Out;
  constexpr int P = BN + 8, OV = 16 / (int)sizeof(Out), CPR = BN / OV;
  static_assert(BN % OV == 0 && (BM * CPR) % THREADS == 0, "whole 16-byte chunks a thread");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int wm0 = (warp / (BN / WN)) * WM, wn0 = (warp % (BN / WN)) * WN;
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
  __syncthreads();
#pragma unroll 2
  for (int idx = threadIdx.x; idx < BM * CPR; idx += THREADS) {
    const int row = idx / CPR, col = (idx % CPR) * OV, m = m0 + row, n = n0 + col;
    if (m >= p.M || n >= p.N) continue;
    Acc v[OV];
#pragma unroll
    for (int j = 0; j < OV; ++j) v[j] = st[row * P + col + j];
    if (bias) {
#pragma unroll
      for (int j = 0; j < OV; ++j)
        if (n + j < p.N) v[j] += mm::widen<Acc>(bias[n + j]);
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

// C = A @ B on mma.sync with every operand chunk one cp.async: BM x BN outputs a block, warps of
// WM x WN (WM/16 x WN/8 instructions a 32-byte K step; WM*WN/32 accumulators a lane), K in stages of
// 128 bytes kept STAGES deep (STAGES - 1 in flight while one is computed). kAK / kBK: the operands are
// k-major in memory (always so for tf32 and int8). Blocks are handed out in groups of 8 along M, so
// that the blocks running together share B's columns in L2. Dynamic shared memory:
// max(STAGES * (BM + BN) * 128, BM * (BN + 8) * 4) bytes.
template <typename Tr, int BM, int BN, int WM, int WN, int STAGES, bool kAK, bool kBK>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 1)
mm_mma_pipe(const typename Tr::T* A, const typename Tr::T* B, typename Tr::Out* C, const typename Tr::Out* bias,
            i64 M, i64 N, i64 K, i64 lda, i64 ldb, i64 ldc, i64 bsa, i64 bsb, i64 bsc, i64 batch, i64 flags) {
  using T = typename Tr::T;
  using Acc = typename Tr::Acc;
  constexpr int KB = 128, THREADS = (BM / WM) * (BN / WN) * 32, WARPS_N = BN / WN, MT = WM / 16, NT = WN / 8;
  static_assert(NT % 2 == 0, "B fragments load two n8 tiles at a time");
  static_assert(sizeof(T) == 2 || (kAK && (kBK || Tr::kTf32)),
                "ldmatrix.trans moves 16-bit elements: tf32 takes an n-major B element-wise, int8 neither");
  using TA = pipe::PipeTile<T, BM, KB, THREADS, kAK>;
  using TB = pipe::PipeTile<T, BN, KB, THREADS, kBK>;
  constexpr int KE = TA::KE, V = TA::V, STAGE = TA::ELEMS + TB::ELEMS;
  extern __shared__ __align__(128) unsigned char dyn[];
  T* smem = reinterpret_cast<T*>(dyn);
  const mm::Problem p = mm::make_problem(M, N, K, lda, ldb, ldc, bsa, bsb, bsc, batch, flags);

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  const int width = 8 * tiles_n, group = blockIdx.x / width, first = group * 8;
  const int gsize = min(tiles_m - first, 8);
  const int m0 = (first + (blockIdx.x % width) % gsize) * BM, n0 = ((blockIdx.x % width) / gsize) * BN;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
  const int ktiles = (p.K + KE - 1) / KE;
  const i64 astep = kAK ? (i64)KE : (i64)KE * p.lda, bstep = kBK ? (i64)KE : (i64)KE * p.ldb;

  for (int z = blockIdx.z; z < p.batch; z += gridDim.z) {
    TA la;
    TB lb;
    la.init(A + z * p.bsa, p.lda, m0, p.M);
    lb.init(B + z * p.bsb, p.ldb, n0, p.N);
    Acc acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < ktiles) {
        la.load(smem + s * STAGE, s * KE, p.K, astep);
        lb.load(smem + s * STAGE + TA::ELEMS, s * KE, p.K, bstep);
      }
      mma::commit();
    }
    int slot = 0, next = STAGES - 1;  // the stage computed and the one loaded, as slots of the ring
    for (int kt = 0; kt < ktiles; ++kt) {
      mma::wait_pending<STAGES - 2>();
      __syncthreads();  // stage kt landed for every thread; the slot of kt - 1 is free for everyone
      if (kt + STAGES - 1 < ktiles) {
        la.load(smem + next * STAGE, (kt + STAGES - 1) * KE, p.K, astep);
        lb.load(smem + next * STAGE + TA::ELEMS, (kt + STAGES - 1) * KE, p.K, bstep);
      }
      mma::commit();
      T* sa = smem + slot * STAGE;
      T* sb = sa + TA::ELEMS;
#pragma unroll 1
      for (int ks = 0; ks < KB / 32; ++ks) {  // 32-byte mma steps
        unsigned fa[MT][4], fb[NT][2];
        const int j = lane >> 3, i = lane & 7;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const int r = wm0 + mt * 16;
          if constexpr (kAK) {
            mma::ldsm_x4(fa[mt], TA::chunk(sa, r + (lane & 15), ks * 2 + (lane >> 4)));
          } else {
            mma::ldsm_x4_trans(fa[mt], TA::chunk(sa, ks * 16 + i + (j >> 1) * 8, r / V + (j & 1)));
          }
          if constexpr (Tr::kTf32) mma::round_tf32(fa[mt]);
        }
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          const int r = wn0 + np * 16;
          unsigned x[4];
          if constexpr (kBK) {
            mma::ldsm_x4(x, TB::chunk(sb, r + i + (j >> 1) * 8, ks * 2 + (j & 1)));
          } else if constexpr (sizeof(T) == 2) {
            mma::ldsm_x4_trans(x, TB::chunk(sb, ks * 16 + i + (j & 1) * 8, r / V + (j >> 1)));
          } else {  // tf32 [k][n]: b0 = B[k = q][n = g], b1 = B[k = q + 4][n = g] of each n8 tile
            const int g = lane >> 2, q = lane & 3;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int n = r + h * 8 + g;
              x[2 * h] = __float_as_uint(*(TB::chunk(sb, ks * 8 + q, n / V) + n % V));
              x[2 * h + 1] = __float_as_uint(*(TB::chunk(sb, ks * 8 + q + 4, n / V) + n % V));
            }
          }
          if constexpr (Tr::kTf32) mma::round_tf32(x);
          fb[2 * np][0] = x[0];
          fb[2 * np][1] = x[1];
          fb[2 * np + 1][0] = x[2];
          fb[2 * np + 1][1] = x[3];
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) Tr::mma(acc[mt][nt], fa[mt], fb[nt]);
      }
      slot = slot + 1 == STAGES ? 0 : slot + 1;
      next = next + 1 == STAGES ? 0 : next + 1;
    }
    mma::wait_pending<0>();
    __syncthreads();  // every warp is done with the stages: the epilogue's tile reuses them

    pipe::store_tile<Tr, BM, BN, WM, WN, THREADS>(acc, reinterpret_cast<Acc*>(dyn), C + z * p.bsc, bias, p, m0, n0);
  }
}

}  // namespace kk
