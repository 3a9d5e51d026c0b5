// Split-K for the Hopper GEMM kernels (wgmma.cu): when the output tiles leave SMs idle, the blocks of
// one tile each take a slice of K (grid y = the slices) and meet in a global workspace.
//
// Combined in the kernel, not by a second one: every block writes its fp32 partial, takes a ticket on
// the tile's counter, and the block taking the last ticket sums the partials and runs the epilogue. A
// second kernel would cost a launch and a full read of every partial on kernels of 10-20 us; here a
// tile's rows past M are neither written nor read (at M = 1 a partial is one row, 512 bytes), and the
// only serial part is the last block's read of its tile's S partials.
//
// Deterministic: the last block sums the S partials in slice order 0, 1, ..., S-1 (its own included,
// read back from the workspace), whichever block arrives last, so every run gives the same bits.
// atomicInc wraps the counter back to 0 at the last ticket: the counters are ready for the next launch
// in stream order without a memset (and a replayed CUDA graph finds them at 0).
//
// Workspace layout: partial (tile, slice) is BM x BN floats in the accumulators' own fragment order,
// float2 pair p of consumer thread ct at pair index p * 256 + ct: a warp's stores and loads of one pair
// cover 256 contiguous bytes, and the summing thread reads exactly the values it would hold itself.
#pragma once
#include "hopper.cuh"

namespace kk {
namespace hop {

// K slice `slice` of `slices`: K tiles [first, first + count) of `ktiles`, as even as whole tiles allow.
__device__ __forceinline__ void k_slice(int ktiles, int slice, int slices, int& first, int& count) {
  first = (int)((long long)ktiles * slice / slices);
  count = (int)((long long)ktiles * (slice + 1) / slices) - first;
}

// The meeting of a tile's slices, by the 256 consumer threads (ct: the thread's index among them)
// synchronised on named barrier `bar`. `rows`: the tile's rows inside C. Returns true in the block that
// finishes the tile, with d holding the sum over every slice; false in the others (they are done).
template <int BM, int BN>
__device__ __forceinline__ bool split_meet(float (&d)[BN / 2], float* __restrict__ ws, unsigned* __restrict__ tickets,
                                           int tile, int slice, int slices, int rows, int ct, int bar) {
  constexpr int PAIRS = BN / 4, PART = BM * BN / 2;  // float2 pairs a thread, float2 pairs a partial
  __shared__ unsigned last;
  const int g = (ct % 32) / 4, r = (ct / 128) * 64 + ((ct % 128) / 32) * 16 + g;
  const bool live0 = r < rows, live1 = r + 8 < rows;  // pair p holds row r (p even) or r + 8 (p odd)
  float2* base = reinterpret_cast<float2*>(ws) + (i64)tile * slices * PART + ct;
  float2* mine = base + (i64)slice * PART;
#pragma unroll
  for (int p = 0; p < PAIRS; ++p)
    if (p % 2 ? live1 : live0) __stcg(mine + p * 256, make_float2(d[2 * p], d[2 * p + 1]));
  __threadfence();  // this thread's partial is visible device-wide before the ticket says so
  named_sync(bar, 256);
  if (ct == 0) last = atomicInc(tickets + tile, (unsigned)(slices - 1)) == (unsigned)(slices - 1);
  named_sync(bar, 256);
  if (!last) return false;
  __threadfence();  // and the last block sees every other block's partial
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    if (p % 2 ? live1 : live0) {
      const float2 v = __ldcg(base + p * 256);
      d[2 * p] = v.x;
      d[2 * p + 1] = v.y;
    }
  }
  for (int s = 1; s < slices; ++s) {
    const float2* src = base + (i64)s * PART;
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      if (p % 2 ? live1 : live0) {
        const float2 v = __ldcg(src + p * 256);
        d[2 * p] += v.x;
        d[2 * p + 1] += v.y;
      }
    }
  }
  return true;
}

}  // namespace hop
}  // namespace kk
