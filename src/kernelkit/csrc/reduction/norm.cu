// layer_norm and rms_norm over the last `len` elements of a contiguous (rows, len) tensor, with
// optional per-element weight (and bias for layer_norm) of the input's type; fp32 statistics.
// `rms` selects RMS normalization at run time (a uniform branch), so both ops share every kernel.
//
// The ladder:
//   norm_welford  one block per row: a read with a Welford (count, mean, M2) per thread, merged over
//                 the block with Chan's formula, then a read and a write for the output (any length)
//   norm_rows     the row held in registers (RowTile, configured by a RowConfig): per warp the mean, then
//                 the sum of squared deviations from it (two passes over registers, no cancellation),
//                 warps merged by Chan's formula, then the output: one read, one write. Rows belong to
//                 kGroup lanes of a warp, to one CTA, or to a cluster of kCluster CTAs (sm_90) that merge
//                 their (mean, M2) with Chan's formula through distributed shared memory (ClusterShare:
//                 pushed by st.async, no cluster barrier); at any row alignment (the window forms).
//   norm_packed   short rows (rows_packed.cuh): a CTA moves a block of whole rows through shared memory as
//                 16-byte vectors of one contiguous stream, a few lanes reducing each row there.
//   norm_bulk     long aligned rows on sm_90: persistent clusters (or one-CTA rings taking rows handed out
//                 at run time: norm_bulk_dyn) whose row slices arrive in a ring of
//                 shared-memory stages by bulk copies issued rows ahead (norm_bulk.cuh, bulk.cuh).
//   norm_smem     long aligned rows on sm_90 kept whole in shared memory (rows_smem.cuh): a CTA (or a
//                 cluster of 2) a row, registers free for loads in flight.
#include "norm.cuh"
#include "norm_bulk.cuh"
#include "rows_smem.cuh"
#include "rows_packed.cuh"

namespace kk {

template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
norm_welford(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
             const T* __restrict__ bias, i64 len, float eps, int rms) {
  __shared__ float smem[96];
  const T* x = in + (i64)blockIdx.x * len;
  T* y = out + (i64)blockIdx.x * len;
  float mean = 0.0f, rstd;
  if (rms) {
    float ss = 0.0f;
    for (i64 i = threadIdx.x; i < len; i += kBlock) {
      const float v = to_float(x[i]);
      ss += v * v;
    }
    ss = block_allreduce<SumOp, kBlock>(ss, smem);
    rstd = rms_rstd(ss, len, eps);
  } else {
    Welford w{0.0f, 0.0f, 0.0f};
    for (i64 i = threadIdx.x; i < len; i += kBlock) w.add(to_float(x[i]));
    w = block_allmerge<kBlock>(w, smem);
    mean = w.mean;
    rstd = rsqrtf(w.m2 / (float)len + eps);
  }
  for (i64 i = threadIdx.x; i < len; i += kBlock) y[i] = norm_out(to_float(x[i]), mean, rstd, weight, bias, i);
}


// norm_rows: the row held in registers, configured by one RowConfig (reduce.cuh).
//
// The values stay as loaded (16-byte words) and are converted to float at each use, with every choice
// between data and fill made on whole words where the form allows: converted once, 16-bit rows take twice
// the registers, and the budget (row_registers: the words a thread holds plus a fixed overhead, at most 64)
// is what keeps enough threads an SM to hold the bytes in flight a row kernel lives on.
//
// Weight and bias (kWeights):
//   kWeightsGlobal  read at the output from global memory (L1 holds a one-CTA row's whole weight and bias,
//                   shared by the CTAs of an SM); rows at any alignment read them shifted (ColumnChunks)
//   kWeightsStaged  persistent CTAs (kRowsStride, kRowsHandout) copy their slice of the arrays' memory into
//                   shared memory once, by asynchronous copies issued behind the first row's loads: cluster
//                   rows need it (the CTAs of an SM hold different slices, which L1 cannot keep, and reading
//                   them from L2 at every row adds two streams as large as the row). Aligned rows copy each
//                   thread's own chunks (no barrier); rows at any alignment copy the slice's chunks together
//                   and read them shifted.
//   kWeightsPhased  rows at any alignment in a fixed stride that keeps each group's row phase (the host makes the
//                   stride a multiple of the phases, 16 / sizeof(T) rows): each thread reads its vectors of weight
//                   and bias shifted to its phase once, keeps them in its own shared-memory slots and reads them
//                   back at every row by one 16-byte load each, no shift (it shifts them again if its phase
//                   changes, so any grid is correct). The shifted global reads cost the window forms ~35
//                   instructions a vector and array, one L1 round trip after another, and 16 registers.
// Rows (kRows): a group (or cluster) a row; persistent CTAs in a fixed stride; persistent clusters taking rows
// handed out at run time (RowHandout: the SMs under a cluster differ in load, and a fixed stride runs at the
// pace of the slowest). The loop bound is uniform per block and per cluster, so groups sharing a warp run the
// same iterations and every CTA of a cluster the same barriers; rows past the end run as empty groups.
template <typename T, typename C>
__host__ __device__ constexpr int norm_min_blocks() {
  // 4 words a 16-byte vector; 16-bit values convert a pair at a time through temporaries, the shifted weight
  // and bias reads of the window forms hold two chunks each, and staged weight and bias take their
  // shared-memory addresses
  // (phased weights: no shifted reads past the first row, the slots' addresses as staged)
  constexpr bool kShifted = C::kForm >= kRowWindow && C::kWeights != kWeightsPhased;
  return row_budget_blocks(C::kBlock, 4 * C::kVecs, (sizeof(T) == 2 ? 8 : 0) + (kShifted ? 16 : 0) +
                                                        (C::kWeights != kWeightsGlobal ? 8 : 0));
}

template <typename T, typename C>
__global__ void __launch_bounds__(C::kBlock, (norm_min_blocks<T, C>()))
norm_rows(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight, const T* __restrict__ bias,
          i64 rows, i64 len, float eps, int rms, unsigned* __restrict__ counters) {
  constexpr int kGroup = C::kGroup, kVecs = C::kVecs, kCluster = C::kCluster, kForm = C::kForm, kBlock = C::kBlock;
  using Tile = WordTile<T, kGroup, kVecs>;
  using V = Vec<T, Tile::N>;
  constexpr int N = Tile::N;
  constexpr int kSlice = kGroup * kVecs * N;  // window elements of a CTA's slice
  constexpr int kUnits = kGroup <= 32 ? kBlock / kGroup : 1;  // rows a block holds at once
  constexpr bool kVec = kForm == kRowAligned;
  constexpr bool kWindow = kForm >= kRowWindow;
  constexpr bool kStaged = C::kWeights == kWeightsStaged;
  constexpr bool kPhased = C::kWeights == kWeightsPhased;
  constexpr bool kPersistent = C::kRows != kRowsEach;
  constexpr bool kHandout = C::kRows == kRowsHandout;
  static_assert(kForm != kRowElems, "norm rows move as 16-byte vectors (aligned or window forms)");
  static_assert(!kStaged || (kPersistent && kGroup > 32), "weight and bias are staged by persistent CTA rows");
  static_assert(kCluster == 1 || kStaged, "cluster rows stage their slices of weight and bias");
  static_assert(!kHandout || kCluster > 1, "rows are handed out to clusters");
  static_assert(!kPhased || (C::kRows == kRowsStride && kCluster == 1),
                "phased weights: persistent groups in a fixed stride");
  constexpr int kStagedChunks = kSlice / N + 2;  // a slice's chunks, and one more each side (window phases)
  __shared__ float smem[96];  // group reductions: 32 floats (sums) or 96 (Welford triples)
  __shared__ float2 slots[2][kCluster];
  __shared__ unsigned long long pushed[2];
  extern __shared__ __align__(16) unsigned char staged[];  // kStaged: weight chunks, then bias chunks
  const RowPlace<kGroup, kBlock, kCluster> p;
  ClusterShare<kCluster> share{slots, pushed, p.rank};
  constexpr int kHandoutCluster = kHandout ? kCluster : 2;  // (an unused RowHandout<2> otherwise)
  __shared__ float2 handout_slots[2][kHandoutCluster];
  __shared__ unsigned long long handout_bars[2];
  RowHandout<kHandoutCluster> handout{counters, ClusterShare<kHandoutCluster>{handout_slots, handout_bars, p.rank}};
  handout.share.joined = true;  // the statistics' ClusterShare arrives and waits for both
  if constexpr (kHandout) {
    if (threadIdx.x == 0) handout.init_barriers();  // announced by share.init()'s fence
  }
  if constexpr (kCluster > 1) share.init();

  const int slice0 = (int)p.rank * kSlice;  // the CTA's first window element
  const int lane = p.lane;
  // staged chunks: those of the arrays' memory from q0 = slice0 / N - 1 (columns slice0 - N + 1 ..
  // slice0 + kSlice - 1 at any phase)
  uint4* const wst = reinterpret_cast<uint4*>(staged);
  uint4* const bst = wst + kStagedChunks;
  const int q0 = slice0 / N - 1;
  const ColumnChunks<T, false> wg = global_columns(weight, len), bg = global_columns(bias, len);
  const ColumnChunks<T, true> ws{wst - q0, wg.phase, max(wg.lo, q0), min(wg.hi, q0 + kStagedChunks - 1)};
  const ColumnChunks<T, true> bs{bst - q0, bg.phase, max(bg.lo, q0), min(bg.hi, q0 + kStagedChunks - 1)};

  const i64 first = kGroup <= 32 ? (i64)blockIdx.x * kUnits : (i64)blockIdx.x / kCluster;
  const i64 stride = !kPersistent ? rows : kGroup <= 32 ? (i64)gridDim.x * kUnits : (i64)gridDim.x / kCluster;
  const int unit = kGroup <= 32 ? threadIdx.x / kGroup : 0;
  // kPhased: this thread's slots (vector k of the weight at k * kBlock + threadIdx.x, the bias kVecs * kBlock
  // further: conflict-free 16-byte loads) and the row phase they were shifted for (-1: none yet)
  uint4* const wph = reinterpret_cast<uint4*>(staged) + threadIdx.x;
  uint4* const bph = wph + kVecs * kBlock;
  int phased_a = -1;
  Tile t;
  for (i64 r0 = first; r0 < rows;) {
    const i64 row = r0 + unit;
    const bool live = row < rows;  // groups past the end run empty: the shuffles stay full-warp
    const T* const xrow = in + (live ? row : 0) * len;
    // the row starts `a` elements into its first window vector (0 but in the window forms); the slice's
    // valid window elements are [lo, n), this thread's first column `col`
    const int a = row_phase<kForm>(xrow);
    const int lo = live ? max(0, a - slice0) : 0;
    const int n = live ? (int)max((i64)0, min((i64)kSlice, (i64)a + len - slice0)) : 0;
    const int rem = n - lane * N, head = lo - lane * N;
    const int col = slice0 + lane * N - a;  // (a row in registers is far shorter than 2^31 elements)
    t.template load<kForm>(xrow + col, rem, from_float<T>(0.0f), head);
    if constexpr (kStaged) {
      if (r0 == first) {  // behind the first row's loads: the grid's copies do not queue ahead of its reads
        if constexpr (kVec) {  // each thread its own chunks, read back by it alone
#pragma unroll
          for (int k = 0; k < kVecs; ++k) {
            if (Tile::valid(k, 0, rem)) {
              const int j = lane + k * kGroup + 1;
              if (weight) cp_async16(wst + j, wg.chunks + q0 + j);
              if (bias) cp_async16(bst + j, bg.chunks + q0 + j);
            }
          }
        } else {  // the slice's chunks, read back by every thread at row-dependent shifts
          for (int j = threadIdx.x; j < kStagedChunks; j += kBlock) {
            if (weight && ws.lo <= q0 + j && q0 + j <= ws.hi) cp_async16(wst + j, wg.chunks + q0 + j);
            if (bias && bs.lo <= q0 + j && q0 + j <= bs.hi) cp_async16(bst + j, bg.chunks + q0 + j);
          }
        }
      }
    }
    if constexpr (kHandout) handout.take(rows);
    const float2 st = row_stats<kGroup, kCluster, kVec, true, true>(TileValues<Tile>{t}, n, rem, len, kSlice, eps,
                                                                    rms, smem, share, lo, a);
    const i64 next_r0 = kHandout ? handout.next(stride) : r0 + stride;  // after row_stats' block barriers
    if constexpr (kStaged) {
      if (r0 == first) {
        staged_wait();  // this thread's copies
        if constexpr (!kVec) __syncthreads();  // and every other thread's
      }
    }
    // weight and bias chunks and shift of this thread's vector 0 (the window forms)
    const int wq = wg.first(col), wb = wg.shift(col), bq = bg.first(col), bb = bg.shift(col);
    if constexpr (kPhased) {
      if (a != phased_a) {  // the first row (and any change of phase): shift once, into this thread's slots
        const auto put = [](uint4* slot, const V& v) {
          uint4 u;
          memcpy(&u, &v, 16);
          sts_volatile(slot, u);
        };
#pragma unroll 1
        for (int k = 0; k < kVecs; ++k) {
          if (weight) put(wph + k * kBlock, wg.at(wq + k * kGroup, wb));
          if (bias) put(bph + k * kBlock, bg.at(bq + k * kGroup, bb));
        }
        phased_a = a;
      }
    }
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      V wv, bv;
      if constexpr (kPhased) {
        wv = lds_volatile_if(weight != nullptr, reinterpret_cast<const V*>(wph + k * kBlock));
        bv = lds_volatile_if(bias != nullptr, reinterpret_cast<const V*>(bph + k * kBlock));
      } else if constexpr (kVec && kStaged) {
        wv = lds_volatile_if(weight != nullptr, reinterpret_cast<const V*>(wst + lane + k * kGroup + 1));
        bv = lds_volatile_if(bias != nullptr, reinterpret_cast<const V*>(bst + lane + k * kGroup + 1));
      } else if constexpr (kVec) {
        // a vector past the row reads the row's first (never stored): no predicated loads
        load_weight_bias_words(wv, bv, weight, bias, (i64)(Tile::valid(k, 0, rem) ? col + k * Tile::kStride : 0));
      } else if constexpr (kStaged) {
        if (weight) wv = ws.at(wq + k * kGroup, wb);
        if (bias) bv = bs.at(bq + k * kGroup, bb);
      } else {
        if (weight) wv = wg.at(wq + k * kGroup, wb);
        if (bias) bv = bg.at(bq + k * kGroup, bb);
      }
      float x[N];
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = TileValues<Tile>{t}(k, j);
      V o;
      affine_words(o, x, st, wv, bv, weight, bias);
      memcpy(&t.v[k], &o, 16);
      if (live) t.template store_one<kForm>(k, out + row * len + col, rem, head);
    }
    r0 = next_r0;
  }
  if constexpr (kStaged) staged_wait();  // a CTA given no row leaves no copy in flight
}

// norm_smem: a persistent CTA (kCluster == 1) or cluster per row, the CTA's slice resident in shared
// memory (rows_smem.cuh, NormRow in norm.cuh). Rows move as 16-byte vectors (aligned, length a multiple
// of N); weight and bias are read at the output from global memory (L2: the ring leaves L1 little
// room), a chunk ahead.
template <typename T, int kBlock, int kPer, int kChunks, int kStages, int kCluster>
__global__ void __launch_bounds__(kBlock, (smem_rows_min_blocks<T, kBlock, kPer, kStages>()))
norm_smem(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
          const T* __restrict__ bias, i64 rows, i64 len, float eps, int rms) {
  constexpr int kSlice = kBlock * kPer * (16 / (int)sizeof(T)) * kChunks;
  NormRow<T, kBlock, kCluster, kSlice> op{weight, bias, len, eps, rms};
  smem_rows<T, kBlock, kPer, kChunks, kStages, kCluster>(in, out, rows, len, op);
}

// Short rows, a block of them at a time through shared memory (rows_packed.cuh). A lane takes the same
// columns g + e kG of every row, so which of them lie in the row is known once, and their weight and bias
// (kE of each) are read into registers once. The statistics are two passes (the mean, then the squared
// deviations from it) over kE values a lane and shuffles within kG lanes; `rms` is branched on once a
// launch (two copies of the row loop), not once a row.
// Why this shape: the kernel is bound by instruction issue (Nsight Compute, 16-bit rows of 100: 0.95 warps
// issued a cycle a scheduler), and a row loop that read weight and bias from shared memory, compared 64-bit
// column indices against the length at every use, found each element's shared addresses again and
// branched on `rms` and divided by the length every row ran 223 warp instructions a row where
// softmax_packed runs 147 (docs/design/row-reductions.md).
template <bool kRms, typename T, typename C>
__device__ __forceinline__ void norm_packed_rows(const T* __restrict__ in, T* __restrict__ out,
                                                 const T* __restrict__ weight, const T* __restrict__ bias, i64 rows,
                                                 i64 len64, float eps, i64 per_block, const PackedRows<T, C>& pr) {
  constexpr int kG = C::kG, kE = C::kE;
  const int len = (int)len64;  // a packed row holds at most kG kE <= 256 elements
  const int g = (int)threadIdx.x % kG;
  bool in_row[kE];
  float wt[kE], bs[kE];
#pragma unroll
  for (int e = 0; e < kE; ++e) {
    const int j = g + e * kG;
    in_row[e] = j < len;
    wt[e] = weight && in_row[e] ? to_float(weight[j]) : 1.0f;
    bs[e] = bias && in_row[e] ? to_float(bias[j]) : 0.0f;
  }
  const float flen = (float)len, inv_len = 1.0f / flen;
  packed_blocks<T, C>(in, out, rows, len64, per_block, pr, [&](int nr, int a) {
    for (int i0 = 0; i0 < nr; i0 += C::kBlock / kG) {  // every thread runs every pass (whole-warp shuffles)
      const int i = i0 + (int)threadIdx.x / kG;
      T* const row = pr.buf + a + (i < nr ? i : 0) * len + g;  // rows past the block reduce row 0, unstored
      float x[kE];
#pragma unroll
      for (int e = 0; e < kE; ++e) x[e] = in_row[e] ? to_float(row[e * kG]) : 0.0f;
      float rstd;
      if constexpr (kRms) {
        float ss = 0.0f;
#pragma unroll
        for (int e = 0; e < kE; ++e) ss += x[e] * x[e];
        rstd = rms_rstd(warp_allreduce<SumOp, kG>(ss), flen, eps);  // the length converted once, not every row
      } else {
        // the deviations from the row's first element (exact where the values are close), then from their
        // mean: rows of a few nearly equal values (their variance below eps, where rstd multiplies every
        // rounding up to 1 / sqrt(eps)) keep the float64 result to ~3e-6 of the sweep's measure, where
        // deviations from an fp32 mean lose it to 4e-4 (docs/design/row-reductions.md)
        const float x0 = __shfl_sync(0xffffffffu, x[0], 0, kG);
        float sum = 0.0f;
#pragma unroll
        for (int e = 0; e < kE; ++e) {
          if (in_row[e]) x[e] -= x0;
          sum += x[e];
        }
        const float c = warp_allreduce<SumOp, kG>(sum) * inv_len;
        float m2 = 0.0f;
#pragma unroll
        for (int e = 0; e < kE; ++e) {
          x[e] -= c;
          if (in_row[e]) m2 += x[e] * x[e];
        }
        rstd = rsqrtf(warp_allreduce<SumOp, kG>(m2) * inv_len + eps);
      }
      if (i < nr) {
#pragma unroll
        for (int e = 0; e < kE; ++e)
          if (in_row[e]) row[e * kG] = from_float<T>(fmaf(x[e] * rstd, wt[e], bs[e]));
      }
    }
  });
}

template <typename T, typename C>
__global__ void __launch_bounds__(C::kBlock, C::kMinBlocks)
norm_packed(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight, const T* __restrict__ bias,
            i64 rows, i64 len, float eps, int rms, i64 per_block) {
  __shared__ __align__(16) T buf[PackedRows<T, C>::kElems];
  const PackedRows<T, C> pr{buf};
  if (rms)
    norm_packed_rows<true, T, C>(in, out, weight, bias, rows, len, eps, per_block, pr);
  else
    norm_packed_rows<false, T, C>(in, out, weight, bias, rows, len, eps, per_block, pr);
}

}  // namespace kk
