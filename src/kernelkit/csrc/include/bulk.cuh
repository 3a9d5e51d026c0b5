// Hopper bulk copies (the TMA's one-dimensional form, cp.async.bulk) into a ring of shared-memory
// stages, each guarded by an mbarrier that counts the bytes still to land.
//
// Why: a row kernel that holds its row in registers cannot load the next row before it has reduced
// this one (the registers are taken), so between rows an SM has nothing in flight. A bulk copy
// writes shared memory without registers or load instructions: one thread asks for the next rows
// while every thread reduces the current one, and the SM's share of DRAM bandwidth stays busy.
//
// Compiled for sm_80 too (the ladders are compiled for both): there the copies trap, and the host
// launches the kernels using them only on sm_90 and later.
#pragma once
#include "mbarrier.cuh"

namespace kk {

// Copy `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to this CTA's shared
// memory; completion is counted on `bar`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
#if KK_SM90
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_addr(dst)),
               "l"(src), "r"(bytes), "r"(shared_addr(bar))
               : "memory");
#else
  __trap();
#endif
}

// kStages slices of kSlice elements in dynamic shared memory, filled by bulk copies in row order:
// row i of a CTA's sequence lands in stage i % kStages, in that stage's phase (i / kStages) & 1.
// One thread issues the copies; every thread waits on the barrier before reading a stage and the
// block synchronizes (everyone holding its values in registers) before the stage is refilled.
template <typename T, int kSlice, int kStages>
struct BulkRing {
  T* buf;                         // dynamic shared memory, kStages * kSlice elements
  unsigned long long* full;       // kStages barriers (static shared memory)

  __device__ __forceinline__ void init() const {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < kStages; ++s) mbar_init(&full[s]);
      mbar_init_fence();
    }
    __syncthreads();
  }
  __device__ __forceinline__ T* stage(int i) const { return buf + (i % kStages) * kSlice; }
  // called by one thread: `bytes` from src into the stage of sequence number i (0 bytes: the phase
  // completes on the arrival alone, so every sequence number keeps its phase)
  __device__ __forceinline__ void fill(int i, const T* src, unsigned bytes) const {
    unsigned long long* bar = &full[i % kStages];
    mbar_expect_bytes(bar, bytes);
    if (bytes) bulk_load(stage(i), src, bytes, bar);
  }
  __device__ __forceinline__ void wait(int i) const { mbar_wait(&full[i % kStages], (i / kStages) & 1); }
  // called by one thread of a persistent CTA whose rows are first, first + stride, ... and whose slice
  // of each row starts at column col0 and holds n elements, as kChunks stages: copy number q is chunk
  // q % kChunks of its row number q / kChunks, if that row exists. A chunk past the slice's end copies
  // nothing but still completes its phase. (norm_bulk and smem_rows fill their rings this way.)
  template <int kChunks>
  __device__ __forceinline__ void fill_slice(int q, const T* in, i64 rows, i64 len, i64 first, i64 stride,
                                             i64 col0, int n) const {
    const i64 row = first + (q / kChunks) * stride;
    const int c = q % kChunks;
    const int elems = max(0, min(kSlice, n - c * kSlice));
    if (row < rows) fill(q, in + row * len + col0 + c * kSlice, (unsigned)elems * sizeof(T));
  }
};

}  // namespace kk
