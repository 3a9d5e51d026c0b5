// norm_bulk (norm.cu's long-row kernels on sm_90): row slices reach a ring of shared-memory stages by bulk
// copies (bulk.cuh); persistent clusters over rows dealt in a fixed stride (norm_bulk) or one-CTA rings
// over rows handed out at run time (norm_bulk_dyn). Instantiated through norm.cu.
#pragma once
#include "bulk.cuh"
#include "norm.cuh"

namespace kk {

// Long rows on sm_90 (norm_bulk): a persistent cluster per row as above, but the row slices reach
// shared memory by bulk copies into a ring of kStages stages, issued kStages rows ahead. Only the
// values of the row being reduced occupy registers, so the copies of the next rows overlap this
// row's reductions, cluster exchange and stores (the register-tile kernels above leave the SM
// without loads in flight from the end of one row's loads to the start of the next). Rows move as
// 16-byte vectors (aligned, length a multiple of N). Weight and bias are read at the output from
// global memory: the bulk copies do not pass through L1, which keeps the CTA's slice of them.
//
// kStageWB: weight and bias are staged once in shared memory after the ring (each thread copies its
// own elements), for CTAs whose slice of them L1 cannot keep beside the ring: read from L2 every row
// they add as much L2 traffic as the row itself.
//
// kChunks: each slice arrives as kChunks copies (a thread's vectors k of chunk c are consecutive), and
// a stage holds one chunk, released as soon as its values are in registers: with a slice of 64 KB
// (clusters of 2, which all 132 SMs take; clusters of 4 or 8 leave 12 idle) the ring keeps one and a
// half rows in flight in 96 KB and leaves room for the staged weight and bias.
//
// Two CTAs share an SM where their shared memory allows (<= 100 KB each) and their block is <= 512
// threads: one CTA's reductions and exchange then overlap the other's loads and stores (64 registers).
template <typename T, int kBlock, int kVecs, int kCluster, int kStages, bool kStageWB, int kChunks>
__host__ __device__ constexpr int bulk_min_blocks() {
  constexpr int kSliceBytes = kBlock * kVecs * 16;
  return kBlock <= 512 && (kStages * kSliceBytes / kChunks + (kStageWB ? 2 * kSliceBytes : 0)) <= 100 * 1024 ? 2 : 1;
}

// kDynamic (norm_bulk_dyn, one-CTA rows): the rows past the grid's first are handed out at run time, as
// RowHandout does for clusters: the filling thread takes a number for each row it starts to copy, the
// number a launch's last take gets resets the counter, and the row of each ring row slot reaches the other
// threads through shared memory, written before the arrival that completes the slot's first stage.
// Why: SMs differ in speed, and in a fixed stride the one-CTA rings of a long launch end tens of
// microseconds apart, the fast ones idle (docs/design/row-reductions-long.md).
template <typename T, int kBlock, int kVecs, int kCluster, int kStages, bool kStageWB, int kChunks, bool kDynamic>
__device__ __forceinline__ void norm_bulk_body(const T* __restrict__ in, T* __restrict__ out,
                                               const T* __restrict__ weight, const T* __restrict__ bias, i64 rows,
                                               i64 len, float eps, int rms, unsigned* __restrict__ counters) {
  using Tile = RowTile<T, kBlock, kVecs>;
  using V = Vec<T, Tile::N>;
  constexpr int N = Tile::N;
  constexpr int kSlice = kBlock * kVecs * N;
  static_assert(kVecs % kChunks == 0, "whole vectors a thread per chunk");
  // 16-bit rows read, choose and convert values on whole words (as the tight rows): 2113 -> 1505 SASS
  // instructions for 32K-element fp16 rows, +1.3-2.0%; fp32 rows keep the element-wise code (the same
  // change measured -4% at 1024 x 65536 fp32)
  constexpr bool kWords = sizeof(T) == 2;
  constexpr int kChunk = kSlice / kChunks, kPer = kVecs / kChunks;  // elements, vectors a thread
  __shared__ float smem[96];
  __shared__ float2 slots[2][kCluster];
  __shared__ unsigned long long pushed[2], full[kStages];
  extern __shared__ __align__(128) unsigned char dyn[];
  const BulkRing<T, kChunk, kStages> ring{reinterpret_cast<T*>(dyn), full};
  // staged weight, then staged bias (where present), after the ring; this thread's elements
  T* const ws = reinterpret_cast<T*>(dyn) + kStages * kChunk + threadIdx.x * N;
  T* const bs = ws + (weight ? kSlice : 0);
  const unsigned rank = blockIdx.x % kCluster;
  const i64 col = (i64)rank * kSlice + threadIdx.x * N;
  const int n = (int)max((i64)0, min((i64)kSlice, len - (i64)rank * kSlice));
  const int rem = n - threadIdx.x * N;
  const i64 first = blockIdx.x / kCluster, stride = gridDim.x / kCluster;
  if constexpr (kStageWB) stage_weight_bias<true, Tile>(weight, bias, col, rem, ws, bs);
  ClusterShare<kCluster> share{slots, pushed, rank};
  share.init();
  ring.init();
  static_assert(!kDynamic || kCluster == 1, "rows handed out to one-CTA rings only");
  constexpr int kRowSlots = kStages + 1;  // rows a ring can be copying ahead of the one reduced, plus it
  __shared__ i64 row_of[kDynamic ? kRowSlots : 1];
  i64 filling = first;  // thread 0 (kDynamic): the row its copies fill; >= rows once the handout is over
  // one thread: copy number q of this CTA's sequence of row chunks (BulkRing::fill_slice)
  const auto fill = [&](int q) {
    if constexpr (kDynamic) {
      const int j = q / kChunks, c = q % kChunks;
      if (c == 0) {
        if (j > 0) {  // a row slot past the first: the next number (one take a row done, plus the last)
          const unsigned taken = atomicAdd(counters, 1u);
          if ((i64)taken == rows - 1) atomicExch(counters, 0u);  // the launch's last take
          filling = stride + taken;
        }
        row_of[j % kRowSlots] = filling;  // published by the stage's arrival (release) below
      }
      if (filling < rows) {
        const int elems = max(0, min(kChunk, n - c * kChunk));
        ring.fill(q, in + filling * len + c * kChunk, (unsigned)elems * sizeof(T));
      } else if (c == 0) {
        ring.fill(q, in, 0u);  // no row: the phase completes on the arrival, the readers see the end
      }
    } else {
      ring.template fill_slice<kChunks>(q, in, rows, len, first, stride, (i64)rank * kSlice, n);
    }
  };
  if (threadIdx.x == 0 && n > 0) {
#pragma unroll
    for (int q = 0; q < kStages; ++q) {
      if (!kDynamic || q < kChunks || filling < rows) fill(q);
    }
  }
  int i = 0;
  for (i64 row = first;; row += stride, ++i) {
    if constexpr (kDynamic) {
      ring.wait(i * kChunks);
      row = row_of[i % kRowSlots];
    }
    if (row >= rows) break;
    float xs[kVecs][N];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int q = i * kChunks + c;
      if (n > 0 && !(kDynamic && c == 0)) ring.wait(q);
      const T* const mine = ring.stage(q) + threadIdx.x * N;
#pragma unroll
      for (int kk = 0; kk < kPer; ++kk) {
        const int k = c * kPer + kk;
        const bool valid = Tile::valid(k, 0, rem);
        if constexpr (kWords) {
          vec_to_floats(load_vec_or(valid, reinterpret_cast<const V*>(mine + kk * Tile::kStride), T{}), xs[k]);
        } else {
          const V v = load_vec(reinterpret_cast<const V*>(mine + (valid ? kk * Tile::kStride : 0)));
#pragma unroll
          for (int j = 0; j < N; ++j) xs[k][j] = valid ? to_float(v.v[j]) : 0.0f;
        }
      }
      __syncthreads();  // every thread holds this chunk's values: the stage may be refilled
      if (threadIdx.x == 0 && n > 0 && (!kDynamic || filling < rows)) fill(q + kStages);
    }
    // the warp passes where they fit without spilling (at 64 registers a thread, clusters of 8 spill)
    constexpr int kRegs = 65536 / (kBlock * bulk_min_blocks<T, kBlock, kVecs, kCluster, kStages, kStageWB, kChunks>());
    constexpr bool kWarpPasses = kRegs >= 128 || kCluster <= 4;
    const float2 st = row_stats<kBlock, kCluster, true, kWarpPasses>(FloatValues<kVecs, N>{xs}, n, rem, len, kSlice, eps,
                                                                     rms, smem, share);
    Tile t;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      V wv, bv;
      // from global memory, a vector past the row reads the row's first one (never stored): no
      // predicated loads
      const i64 at = Tile::valid(k, 0, rem) ? col + k * Tile::kStride : 0;
      if constexpr (kStageWB && kWords) {
        wv = load_vec_or(weight != nullptr, reinterpret_cast<const V*>(ws + k * Tile::kStride), T{});
        bv = load_vec_or(bias != nullptr, reinterpret_cast<const V*>(bs + k * Tile::kStride), T{});
      } else if constexpr (kStageWB) {
        if (weight) wv = load_vec(reinterpret_cast<const V*>(ws + k * Tile::kStride));
        if (bias) bv = load_vec(reinterpret_cast<const V*>(bs + k * Tile::kStride));
      } else if constexpr (kWords) {
        load_weight_bias_words(wv, bv, weight, bias, at);
      } else {
        load_weight_bias(wv, bv, weight, bias, at);
      }
      if constexpr (kWords) {
        affine_words<true>(t.v[k], xs[k], st, wv, bv, weight, bias);
      } else {
        affine(t.v[k], xs[k], st, wv, bv, weight, bias);
      }
    }
    t.template store<true>(out + row * len + col, rem);
  }
}

// Persistent clusters (kCluster > 1), rows dealt in a fixed stride.
template <typename T, int kBlock, int kVecs, int kCluster, int kStages, bool kStageWB, int kChunks>
__global__ void __launch_bounds__(kBlock, (bulk_min_blocks<T, kBlock, kVecs, kCluster, kStages, kStageWB, kChunks>()))
norm_bulk(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
          const T* __restrict__ bias, i64 rows, i64 len, float eps, int rms) {
  norm_bulk_body<T, kBlock, kVecs, kCluster, kStages, kStageWB, kChunks, false>(in, out, weight, bias, rows, len, eps,
                                                                                 rms, nullptr);
}

// Persistent one-CTA rings taking rows handed out at run time; `counters`: the stream's counter buffer
// (handout_counters on the host).
template <typename T, int kBlock, int kVecs, int kStages, bool kStageWB, int kChunks>
__global__ void __launch_bounds__(kBlock, (bulk_min_blocks<T, kBlock, kVecs, 1, kStages, kStageWB, kChunks>()))
norm_bulk_dyn(const T* __restrict__ in, T* __restrict__ out, const T* __restrict__ weight,
              const T* __restrict__ bias, i64 rows, i64 len, float eps, int rms, unsigned* __restrict__ counters) {
  norm_bulk_body<T, kBlock, kVecs, 1, kStages, kStageWB, kChunks, true>(in, out, weight, bias, rows, len, eps, rms,
                                                                         counters);
}

}  // namespace kk
